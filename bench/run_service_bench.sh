#!/usr/bin/env bash
# Service benchmark: runs tether_service_bench (bench/service_bench*.cc) and
# prints its table (the table of docs/benchmarks.md, "Service").
#
#   bench/run_service_bench.sh [BUILD_DIR] [extra tether_service_bench flags]
#
# BUILD_DIR (default build) must already hold bin/tether_service_bench and
# bin/tether-server; this script builds nothing. Build them with e.g.
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
#   cmake --build build -j2 --target tether_service_bench tether-server
# The benchmark starts its own tether-server and reference server on
# 127.0.0.1 (ephemeral ports) and stops them; it takes about 1 minute on
# 2 cores (bounded at ~5 minutes). Progress goes to stderr, the table to
# stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
[[ $# -gt 0 ]] && shift
BIN="$BUILD_DIR/bin/tether_service_bench"
SERVER="$BUILD_DIR/bin/tether-server"
for f in "$BIN" "$SERVER"; do
  if [[ ! -x "$f" ]]; then
    echo "run_service_bench.sh: $f not found; build the tether_service_bench and" \
         "tether-server targets in $BUILD_DIR first" >&2
    exit 1
  fi
done
exec timeout --signal=TERM 330 "$BIN" --server "$SERVER" \
  --spec examples/circle_pendulum.json "$@"
