#!/usr/bin/env bash
# Engine vs hand-written code: runs tether_bench and prints the table of
# docs/benchmarks.md ("Engine vs hand-written code").
#
#   bench/run_engine_bench.sh [extra Google Benchmark flags]
#
# BUILD_DIR (default build-bench) is configured and built when it has no
# tether_bench yet. Runs every benchmark 3 times, randomly interleaved so
# background load hits all variants alike; the table uses the medians and
# computes every ratio from this one run. Takes about 2-3 minutes on 2 cores.
# The raw JSON is kept in $OUT (default $BUILD_DIR/engine_bench.json).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-bench}
BIN="$BUILD_DIR/bin/tether_bench"
OUT=${OUT:-$BUILD_DIR/engine_bench.json}
if [[ ! -x "$BIN" ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTETHER_BUILD_SERVICE=OFF \
    -DTETHER_BUILD_TESTS=OFF -DTETHER_BUILD_BENCH=ON >&2
  cmake --build "$BUILD_DIR" -j2 --target tether_bench >&2
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" >&2
# The benchmark's own console output (and its agreement check) go to stderr.
"$BIN" --benchmark_repetitions=3 --benchmark_min_time=0.4 \
  --benchmark_enable_random_interleaving=true \
  --benchmark_display_aggregates_only=true \
  --benchmark_out="$OUT" --benchmark_out_format=json "$@" >&2
/usr/bin/python3 bench/engine_bench_table.py "$OUT"
