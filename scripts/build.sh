#!/usr/bin/env bash
# Configures and builds Tether (Release) into ./build, the benchmarks
# included (scripts/test.sh builds it without them). Extra arguments go to
# the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTETHER_BUILD_BENCH=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
