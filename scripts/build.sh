#!/usr/bin/env bash
# Configures and builds Tether (Release) into ./build, the benchmarks
# included (scripts/test.sh builds it without them). Extra arguments go to
# the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cmake-generator.sh
# shellcheck disable=SC2046  # the generator's words
cmake -S . -B build $(generator_args build) -DCMAKE_BUILD_TYPE=Release -DTETHER_BUILD_BENCH=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
