#!/usr/bin/env bash
# Deterministic companion of run_mechanism_bench.sh: instructions per step
# (valgrind --tool=callgrind) of Tether's engine (certificate off and on)
# and of MuJoCo's mj_step on the same URDF, for the models of
# bench/mechanism_bench.cc. Instruction counts do not depend on machine load,
# so they confirm the timed ratios on a noisy machine (they are not times:
# the two programs need not run at the same instructions per cycle).
#
#   bench/mechanism_bench_instructions.sh [case ...]   (default: arm7 chain/5 chain/10)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD_DIR:-build}/bin/tether_mechanism_bench
STEPS=100  # kStepsPerIteration in mechanism_bench.cc
# shellcheck source=bench/callgrind_count.sh
source bench/callgrind_count.sh
count() { callgrind_count "$BIN" "$STEPS" "$1" "$2"; }  # $1 benchmark name, $2 function
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(arm7 chain/5 chain/10)
echo "| model | MuJoCo instr/step | Tether cert off instr/step | Tether cert on instr/step | Tether cert on / MuJoCo |"
echo "|---|---:|---:|---:|---:|"
for c in "${cases[@]}"; do
  mj=$(count "$c/mujoco" '*TimedMujocoIteration*')
  off=$(count "$c/tether_cert_off" '*TimedTetherIteration*')
  on=$(count "$c/tether_cert_on" '*TimedTetherIteration*')
  awk -v c="$c" -v m="$mj" -v f="$off" -v o="$on" \
    'BEGIN {printf "| %s | %d | %d | %d | %.2fx |\n", c, m, f, o, o / m}'
done
