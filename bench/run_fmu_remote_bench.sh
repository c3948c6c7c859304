#!/usr/bin/env bash
# The FMU's remote-mode benchmark: runs tether_fmu_remote_bench
# (bench/fmu_remote_bench.cc) and prints its table (docs/benchmarks.md,
# "FMU").
#
#   bench/run_fmu_remote_bench.sh [BUILD_DIR] [extra tether_fmu_remote_bench flags]
#
# BUILD_DIR (default build) must already hold the benchmark, its client,
# tether, tether-server and the FMU libraries; this script builds nothing.
# Build them with e.g.
#   cmake --build build -j2 --target tether_fmu_remote_bench
# It starts its own tether-server on 127.0.0.1 (ephemeral port) and stops
# it; about 10 s on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
[[ $# -gt 0 ]] && shift
for f in tether_fmu_remote_bench tether_fmu_remote_bench_client tether tether-server; do
  if [[ ! -x "$BUILD_DIR/bin/$f" ]]; then
    echo "run_fmu_remote_bench.sh: $BUILD_DIR/bin/$f not found; build the" \
         "tether_fmu_remote_bench target in $BUILD_DIR first" >&2
    exit 1
  fi
done
exec timeout --signal=TERM 300 "$BUILD_DIR/bin/tether_fmu_remote_bench" \
  --server "$BUILD_DIR/bin/tether-server" --cli "$BUILD_DIR/bin/tether" \
  --client "$BUILD_DIR/bin/tether_fmu_remote_bench_client" \
  --spec examples/pendulum_force_input.json "$@"
