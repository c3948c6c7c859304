#!/usr/bin/env bash
# Configures and builds Tether (Release) into ./build. Extra arguments go to
# the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
