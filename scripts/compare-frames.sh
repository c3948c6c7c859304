#!/usr/bin/env bash
# Bit-identity check for refactors: runs two `tether` binaries on the same
# descriptions with every integrator and compares every byte they print
# (frames, certificate, evaluate, validate, exit codes).
#
#   scripts/compare-frames.sh OLD_TETHER NEW_TETHER
#
# Descriptions: examples/*.json, plus models written here that reach the
# general-size kernel and every expression function: a Cartesian double
# pendulum, a polar (kinetic-energy) model with a time-dependent
# constraint, a 12-link chain, a model using every function, and three
# models on the sparse KKT path (a 20-link chain, a kinetic-energy chain
# and a 5 x 5 net). Each runs
# with EXPLICIT_EULER, SEMI_IMPLICIT_EULER, RK4, DOPRI5 and SDIRK3 to
# t = 1.5, every 37th step; then with an output grid (--output-interval
# 0.07: frames interpolated inside steps) under DOPRI5 and RK4, and with
# the ENCLOSED certificate under RK4. Then each CLI's FMI 2 FMU of five of
# them under RK4, DOPRI5 and SDIRK3 (fmu_dump: every variable at every
# communication point, and after a serialized state is restored). Exit 0
# when all outputs are identical.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: $0 OLD_TETHER NEW_TETHER" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/specs"
cp examples/*.json "$work/specs/"
python3 - "$work/specs" <<'PY'
import json, os, sys
out = sys.argv[1]
def dump(name, spec):
    json.dump(spec, open(os.path.join(out, name + ".json"), "w"))
rk4 = {"method": "RK4", "stepSize": 0.001}
dump("double", {"system": {"coordinates": ["x1", "y1", "x2", "y2"],
    "parameters": [{"name": "g", "value": 9.81}], "masses": {"values": [1, 1, 1, 1]},
    "potentialEnergy": "g*(y1+y2)",
    "constraints": [{"name": "r1", "expression": "(x1^2+y1^2-1)/2"},
                    {"name": "r2", "expression": "((x2-x1)^2+(y2-y1)^2-1)/2"}],
    "baumgarte": {"alpha": 5, "beta": 5},
    "outputs": [{"name": "e", "expression": "der(x1)^2+der(y1)^2+der(x2)^2+der(y2)^2 + 2*g*(y1+y2)"}]},
    "initial": {"q": [1, 0, 2, 0], "v": [0, 0, 0, 0]}, "integrator": rk4})
dump("kinetic", {"system": {"coordinates": ["r", "th"], "parameters": [{"name": "k", "value": 3}],
    "kineticEnergy": "(der(r)^2 + r^2*der(th)^2)/2",
    "potentialEnergy": "k*(r-1)^2/2 + cos(th)*exp(-r)",
    "generalizedForces": ["-0.1*der(r)", "sin(t)*tanh(th)"],
    "constraints": [{"name": "c", "expression": "r - 1 - 0.1*sin(2*t) + 0.01*atan(th) + 0.001*sqrt(1+th^2)"}],
    "baumgarte": {"alpha": 4, "beta": 6}},
    "initial": {"q": [1, 0], "v": [0, 1]}, "integrator": {"method": "RK4", "stepSize": 0.002}})
n = 12
coords, cons, q = [], [], []
for i in range(n):
    coords += ["x%d" % i, "y%d" % i]
    q += [i + 1, 0]
    prev = ("x%d" % (i - 1), "y%d" % (i - 1)) if i else ("0", "0")
    cons.append({"name": "c%d" % i,
                 "expression": "((x%d-%s)^2+(y%d-%s)^2-1)/2" % (i, prev[0], i, prev[1])})
dump("chain12", {"system": {"coordinates": coords, "masses": {"values": [1] * (2 * n)},
    "potentialEnergy": "9.81*(" + "+".join("y%d" % i for i in range(n)) + ")",
    "constraints": cons, "baumgarte": {"alpha": 10, "beta": 10}},
    "initial": {"q": q, "v": [0] * (2 * n)}, "integrator": rk4})
# The sparse KKT path (>= 16 constraints, diagonal mass): a 20-link chain
# (natural order), a 5 x 5 net (AMD order) and a chain whose diagonal mass
# matrix comes from a kinetic energy.
def net(name, masses, links, anchors, kinetic=None):
    coords, q = [], []
    for i, (x, y) in enumerate(masses):
        coords += ["x%d" % i, "y%d" % i]
        q += [x, y]
    mass = [1.0 + 0.5 * (i % 3) for i in range(len(masses))]
    sq = lambda a, b: "(%s-%s)^2" % (a, b)
    cons = [{"name": "a%d" % i, "expression": "(%s+%s-1)/2" % (sq("x%d" % i, px), sq("y%d" % i, py))}
            for i, px, py in anchors]
    cons += [{"name": "l%d_%d" % (a, b), "expression": "(%s+%s-1)/2" % (
        sq("x%d" % a, "x%d" % b), sq("y%d" % a, "y%d" % b))} for a, b in links]
    system = {"coordinates": coords,
              "potentialEnergy": "9.81*(" + "+".join("%g*y%d" % (m, i) for i, m in enumerate(mass)) + ")",
              "constraints": cons, "baumgarte": {"alpha": 10, "beta": 10}}
    if kinetic:
        system["kineticEnergy"] = "(" + "+".join("%g*((1+x%d^2/10)*der(x%d)^2+der(y%d)^2)" % (m, i, i, i)
                                                 for i, m in enumerate(mass)) + ")/2"
    else:
        system["masses"] = {"values": [m for m in mass for _ in (0, 1)]}
    dump(name, {"system": system, "initial": {"q": q, "v": [0] * len(q)}, "integrator": rk4})
chain = [(i + 1, 0) for i in range(20)]
net("sparse_chain20", chain, [(i - 1, i) for i in range(1, 20)], [(0, "0", "0")])
net("sparse_kinetic_chain16", chain[:16], [(i - 1, i) for i in range(1, 16)], [(0, "0", "0")], True)
k = 5
net("sparse_net5", [(c, -r) for r in range(k) for c in range(k)],
    [(r * k + c - 1, r * k + c) for r in range(k) for c in range(1, k)] +
    [((r - 1) * k + c, r * k + c) for r in range(1, k) for c in range(k)],
    [(c, "%g" % (c - 0.6), "0.8") for c in range(k)])
dump("functions", {"system": {"coordinates": ["x", "y"], "masses": {"values": [1, 2]},
    "potentialEnergy": "0.5*x^2 + 0.3*cosh(y) + 0.1*log(2+sin(x)) + 0.05*tan(0.3*y)"
        " + 0.01*asin(0.5*sin(x)) + 0.01*acos(0.5*cos(y)) + 0.02*sinh(0.2*x)"
        " + 0.01*pow(1+x^2,1.5) + 0.01*abs(x) + 0.01*min(x,y) + 0.01*max(x,-y) + 0.01*atan2(y,2+x)",
    "constraints": [{"name": "c", "expression": "x + y^3 - 0.5"}], "baumgarte": {"alpha": 3, "beta": 3}},
    "initial": {"q": [0.5, 0], "v": [0.1, 0.2]}, "integrator": rk4})
PY
differ=0 runs=0
# A variant: METHOD, or METHOD+grid (an output grid), or METHOD+enclosed
# (the ENCLOSED certificate).
for spec in "$work"/specs/*.json; do
  for variant in EXPLICIT_EULER SEMI_IMPLICIT_EULER RK4 DOPRI5 SDIRK3 DOPRI5+grid RK4+grid \
                 RK4+enclosed; do
    method=${variant%%+*}
    case_file="$work/case.json"
    python3 - "$spec" "$variant" "$case_file" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
method, _, extra = sys.argv[2].partition("+")
spec.setdefault("integrator", {})["method"] = method
if method == "DOPRI5":
    spec["integrator"].update({"rtol": 1e-7, "atol": 1e-9})
if extra == "enclosed":
    spec["certificate"] = {"mode": "ENCLOSED"}
json.dump(spec, open(sys.argv[3], "w"))
PY
    grid=()
    if [[ $variant == *+grid ]]; then grid=(--output-interval 0.07); fi
    for bin in old new; do
      exe=${!bin}
      {
        "$exe" run "$case_file" --until 1.5 --every 37 "${grid[@]}" --quiet 2>&1; echo "exit $?"
        "$exe" evaluate "$case_file" 2>&1; echo "exit $?"
        "$exe" validate "$case_file" 2>&1; echo "exit $?"
      } >"$work/$bin.out" || true
    done
    runs=$((runs + 1))
    if ! cmp -s "$work/old.out" "$work/new.out"; then
      differ=$((differ + 1))
      echo "DIFFERS: $(basename "$spec") $variant"
      diff "$work/old.out" "$work/new.out" | head -n 6 || true  # diff exits 1: not a failure of the script
    fi
  done
done
# The FMI 2 FMU each CLI writes (with its own FMU library, next to it in
# ../lib/tether), driven by fmu_dump (tests/support/fmu_dump.cc, of the new
# build): every variable at every communication point of 40 steps with
# varying step sizes and inputs, then again after a state serialized halfway
# is restored.
unset TETHER_FMU_LIBRARY
dump=${FMU_DUMP:-$(dirname "$new")/fmu_dump}
for bin in old new; do
  lib="$(dirname "${!bin}")/../lib/tether/tether-fmi2.so"
  [[ -f $lib ]] || { echo "compare-frames: no FMU library at $lib (build the tether_fmi2 target)" >&2; exit 2; }
done
[[ -x $dump ]] || { echo "compare-frames: no fmu_dump at $dump (build the fmu_dump target)" >&2; exit 2; }
fmu_runs=0
for spec in "$work"/specs/{pendulum_force_input,double,chain12,sparse_net5,kinetic}.json; do
  for method in RK4 DOPRI5 SDIRK3; do
    case_file="$work/case.json"
    python3 - "$spec" "$method" "$case_file" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec.setdefault("integrator", {})["method"] = sys.argv[2]
if sys.argv[2] == "DOPRI5":
    spec["integrator"].update({"rtol": 1e-7, "atol": 1e-9})
json.dump(spec, open(sys.argv[3], "w"))
PY
    for bin in old new; do
      { "$dump" "${!bin}" "$case_file" 40 2>&1; echo "exit $?"; } >"$work/$bin.out" || true
    done
    runs=$((runs + 1)) fmu_runs=$((fmu_runs + 1))
    if ! cmp -s "$work/old.out" "$work/new.out"; then
      differ=$((differ + 1))
      echo "DIFFERS: FMU $(basename "$spec") $method"
      diff "$work/old.out" "$work/new.out" | head -n 6 || true  # diff exits 1: not a failure of the script
    fi
  done
done
if [[ $differ -ne 0 ]]; then
  echo "compare-frames: $differ of $runs cases differ"
  exit 1
fi
echo "compare-frames: $runs cases (run, evaluate, validate; $fmu_runs of them FMUs) identical"
