#!/usr/bin/env bash
# Deterministic companion of run_engine_bench.sh: instructions per RK4 step
# (valgrind --tool=callgrind) of the engine (certificate off/on) and the
# hand-written reference, for models small enough to run under valgrind.
# Instruction counts do not depend on machine load, so they confirm the
# ratios of the timed table on a noisy machine (they are not times: the
# engine's code has a higher IPC than the latency-bound reference).
#
#   bench/engine_bench_instructions.sh [benchmark name prefix ...]
#   (default: circle/1 double/2 chain/1 chain/2 chain/4 chain/8)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD_DIR:-build-bench}/bin/tether_bench
STEPS=1000  # kStepsPerIteration in engine_bench.cc
# shellcheck source=bench/callgrind_count.sh
source bench/callgrind_count.sh
count() { callgrind_count "$BIN" "$STEPS" "$1" "$2"; }  # $1 benchmark name, $2 function
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(circle/1 double/2 chain/1 chain/2 chain/4 chain/8)
echo "| model/N | reference instr/step | engine cert off instr/step | engine cert on instr/step | certificate.disabled instr/step | reference/engine (cert off) | cert on/off | disabled/off |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for c in "${cases[@]}"; do
  # One iteration = SetState/Reset + BeginRun + 1000 steps.
  ref=$(count "$c/reference" '*Register*lambda(benchmark::State&)#1*')
  off=$(count "$c/engine_cert_off" '*TimedEngineIteration*')
  on=$(count "$c/engine_cert_on" '*TimedEngineIteration*')
  dis=$(count "$c/engine_cert_disabled" '*TimedEngineIteration*')
  awk -v c="$c" -v r="$ref" -v f="$off" -v o="$on" -v x="$dis" \
    'BEGIN {printf "| %s | %d | %d | %d | %d | %.3fx | %.2fx | %.3fx |\n", c, r, f, o, x, r / f, o / f, x / f}'
done
