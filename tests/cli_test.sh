#!/usr/bin/env bash
# The `tether` CLI (offline path) run as a user runs it: exit codes
# (0 ok, 1 I/O failure, 2 bad input, 3 the simulation failed numerically),
# stderr messages that name the field path (and the column for expressions)
# and say what was expected, validate's warnings, evaluate's JSON, and run's
# jsonl/csv output, --until/--every/--output/--no-certificate, and runs that
# blow up. Every command runs under `timeout 60`; a hang (exit 124) or a crash
# (exit >= 128, a signal) is always a failure.
#
# Usage: cli_test.sh TETHER SOURCE_DIR [SECTION...]
#        cli_test.sh --list
# The checks are grouped in sections (the section_NAME functions below, in
# file order); with SECTION names only those run, else all of them. --list
# prints the names, one a line: tests/CMakeLists.txt registers one ctest
# test per name from it. A name that is no section is an error (exit 2).
# Last line: "N passed, M failed"; exits 1 when anything failed.
set -u
# The section names, read from this file's own definitions.
list_sections() {
  sed -n 's/^section_\([a-z0-9_]*\)() {$/\1/p' "${BASH_SOURCE[0]}"
}
if [[ "${1:-}" == "--list" && $# -eq 1 ]]; then
  list_sections
  exit 0
fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 TETHER SOURCE_DIR [SECTION...] | $0 --list" >&2
  exit 2
fi
tether="$1"
src="$2"
shift 2
mapfile -t all_sections < <(list_sections)
if [[ $# -eq 0 ]]; then
  selected=("${all_sections[@]}")
else
  selected=("$@")
  for name in "${selected[@]}"; do
    if ! printf '%s\n' "${all_sections[@]}" | grep -qx -- "$name"; then
      echo "$0: no section named '$name'; sections: ${all_sections[*]}" >&2
      exit 2
    fi
  done
fi
py=/usr/bin/python3
export LC_ALL=C

work="$(mktemp -d "${TMPDIR:-/tmp}/tether-cli-test.XXXXXX")" || exit 1
trap 'rm -rf "$work"' EXIT
out="$work/stdout"
err="$work/stderr"

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# cli ARGS...: runs tether under timeout 60; stdout in $out, stderr in $err,
# exit code in $rc.
rc=0
cli() {
  timeout 60 "$tether" "$@" >"$out" 2>"$err" </dev/null
  rc=$?
}

# Describes $rc when it is a hang or a crash (and returns 0), else returns 1.
abnormal() {
  if [[ "$rc" == 124 ]]; then
    why="hung (killed by timeout 60)"
  elif [[ "$rc" -ge 128 ]]; then
    why="crashed (exit $rc, signal $((rc - 128)))"
  else
    return 1
  fi
  return 0
}

show() {  # show FILE LABEL: the first lines of FILE, indented
  sed "s/^/    $2: /" "$1" | head -n 8 | cut -c1-400
}

# expect NAME CODE [--stdout|--both] [PATTERN...]: checks the last cli run.
# Patterns are fixed strings, or extended regexps when prefixed with "re:".
# They are looked for on stderr (default), stdout (--stdout), or both
# (--both). A pattern prefixed with "!" must NOT appear.
expect() {
  local name="$1" want="$2"
  shift 2
  local where="stderr" text="$err"
  if [[ "${1:-}" == "--stdout" ]]; then where="stdout"; text="$out"; shift; fi
  if [[ "${1:-}" == "--both" ]]; then
    where="output"
    cat "$out" "$err" >"$work/both"
    text="$work/both"
    shift
  fi
  local problems=() why=""
  if abnormal; then
    problems+=("$why")
  elif [[ "$rc" != "$want" ]]; then
    problems+=("exit $rc, expected $want")
  fi
  local p neg
  for p in "$@"; do
    neg=0
    if [[ "$p" == '!'* ]]; then neg=1; p="${p:1}"; fi
    local found=1
    if [[ "$p" == re:* ]]; then
      grep -qE -- "${p#re:}" "$text" || found=0
    else
      grep -qF -- "$p" "$text" || found=0
    fi
    if [[ $neg == 0 && $found == 0 ]]; then problems+=("$where lacks '$p'"); fi
    if [[ $neg == 1 && $found == 1 ]]; then problems+=("$where has '$p' (it should not)"); fi
  done
  if [[ ${#problems[@]} -eq 0 ]]; then
    pass "$name (exit $rc)"
  else
    local IFS=';'
    fail "$name: ${problems[*]}"
    show "$err" stderr
    show "$out" stdout
  fi
}

# check NAME COMMAND...: a check done by COMMAND (e.g. a Python script);
# its output is shown when it fails.
check() {
  local name="$1"
  shift
  if "$@" >"$work/check.out" 2>&1; then
    pass "$name"
  else
    fail "$name"
    sed 's/^/    /' "$work/check.out" | head -n 20 | cut -c1-400
  fi
}

# ---------------------------------------------------------------------------
# Helpers in Python (standard library only).

# mkspec.py OUT CODE: the base description (a pendulum of length l on the
# circle, RK4), modified by the Python statements CODE (s = the whole spec,
# sy = s["system"]), written as JSON to OUT.
cat >"$work/mkspec.py" <<'EOF'
import json, sys
s = {
    "system": {
        "coordinates": ["x", "y"],
        "parameters": [{"name": "l", "value": 1}, {"name": "grav", "value": 9.81}],
        "masses": {"values": [1, 1]},
        "potentialEnergy": "grav*y",
        "constraints": [{"name": "rod", "expression": "(x^2 + y^2 - l^2)/2"}],
        "baumgarte": {"alpha": 10, "beta": 10},
    },
    "initial": {"q": [1, 0], "v": [0, 0]},
    "integrator": {"method": "RK4", "stepSize": 0.001},
}
sy = s["system"]
exec(sys.argv[2])
with open(sys.argv[1], "w") as f:
    f.write(s if isinstance(s, str) else json.dumps(s))
EOF

# check_jsonl.py FILE [options]: every line valid JSON; frames carry every
# Frame field (zero defaults included) with the right lengths; frame steps
# are exactly --steps; with --cert the last line is {"certificate": {...}}
# with every Certificate field; --last-t T: the last frame (and the
# certificate's tEnd) is exactly at T.
cat >"$work/check_jsonl.py" <<'EOF'
import argparse, json, math, sys
ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--steps", required=True, help="comma-separated frame steps")
ap.add_argument("--nq", type=int, required=True)
ap.add_argument("--nc", type=int, required=True)
ap.add_argument("--ny", type=int, default=0)
ap.add_argument("--cert", choices=["yes", "no"], required=True)
ap.add_argument("--last-t")
ap.add_argument("--cert-steps", type=int)
a = ap.parse_args()
errors = []
lines = open(a.file).read().split("\n")
if lines and lines[-1] == "":
    lines.pop()
else:
    errors.append("output does not end with a newline")
docs = []
for i, line in enumerate(lines, 1):
    try:
        docs.append(json.loads(line))
    except ValueError as e:
        errors.append("line %d is not valid JSON (%s): %.120s" % (i, e, line))
if errors:
    print("\n".join(errors)); sys.exit(1)
FRAME = {"step", "t", "q", "v", "a", "lambda", "residuals", "outputs"}
RESID = {"position", "velocity", "dynamics", "constraint"}
CERT = {"tStart", "tEnd", "steps", "initialConsistent", "initialPositionResidual",
        "initialVelocityResidual", "feedbackVerified", "maxKktResidual",
        "maxRelativeKktResidual", "maxWCondition", "stepStable", "stabilityMargin",
        "maxStepSize", "maxPositionResidual", "maxVelocityResidual", "defectBound",
        "defectSamples", "positionBound", "finalPositionBound", "sampling", "constraints",
        "kktBackwardError", "kktBackwardErrorTolerance", "worstKktRow", "worstKktTime",
        "worstWConditionTime", "worstWConditionConstraints", "conditioningWarning",
        "defectJumps", "mode", "unenclosedSteps", "firstUnenclosedTime", "enclosurePieces",
        "supremumPositionBound", "maxLocalErrorEstimate", "worstLocalErrorCoordinate",
        "worstLocalErrorTime", "accuracyWarning", "maxMethodErrorEstimate",
        "worstMethodErrorCoordinate", "worstMethodErrorTime", "maxMethodErrorNorm",
        "refutedBounds"}
CCERT = {"name", "alpha", "beta", "initialPositionResidual", "initialVelocityResidual",
         "maxPositionResidual", "maxVelocityResidual", "defectBound", "homogeneousBound",
         "defectGain", "positionBound", "finalPositionBound", "spectralRadius",
         "residualDecayRate", "gainsDecayRate", "defectJumpCount", "supremumPositionBound",
         "convolutionPositionBound", "stepMeanDefectBound", "defectDeviationBound",
         "boundRefuted"}
cert = None
if a.cert == "yes":
    if not docs or set(docs[-1]) != {"certificate"}:
        errors.append("last line is not {\"certificate\": ...}: %.200s" % (lines[-1] if lines else "(no lines)"))
    else:
        cert = docs.pop()["certificate"]
        if set(cert) != CERT:
            errors.append("certificate fields: missing %s, unexpected %s" %
                          (sorted(CERT - set(cert)), sorted(set(cert) - CERT)))
        if len(cert.get("constraints", [])) != a.nc:
            errors.append("certificate has %d constraint entries, expected %d" %
                          (len(cert.get("constraints", [])), a.nc))
        for k in cert.get("constraints", []):
            if set(k) != CCERT:
                errors.append("certificate constraint fields: missing %s, unexpected %s" %
                              (sorted(CCERT - set(k)), sorted(set(k) - CCERT)))
for i, d in enumerate(docs):
    if "certificate" in d:
        errors.append("frame line %d is a certificate (only the last line may be)" % (i + 1))
        continue
    if set(d) != FRAME:
        errors.append("frame %d fields: missing %s, unexpected %s" %
                      (i, sorted(FRAME - set(d)), sorted(set(d) - FRAME)))
        continue
    if set(d["residuals"]) != RESID:
        errors.append("frame %d residuals fields: missing %s" % (i, sorted(RESID - set(d["residuals"]))))
        continue
    for key, n in (("q", a.nq), ("v", a.nq), ("a", a.nq), ("lambda", a.nc), ("outputs", a.ny)):
        if len(d[key]) != n:
            errors.append("frame %d: %s has %d entries, expected %d" % (i, key, len(d[key]), n))
    for key, n in (("position", a.nc), ("velocity", a.nc)):
        if len(d["residuals"][key]) != n:
            errors.append("frame %d: residuals.%s has %d entries, expected %d" %
                          (i, key, len(d["residuals"][key]), n))
    values = [d["t"]] + d["q"] + d["v"] + d["a"] + d["lambda"] + d["outputs"]
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in values):
        errors.append("frame %d has a non-number or non-finite value: %.200s" % (i, json.dumps(d)))
steps = [int(d["step"]) for d in docs if "step" in d]
want = [int(x) for x in a.steps.split(",")] if a.steps else []
if steps != want:
    errors.append("frame steps %s, expected %s" % (steps[:20] + (["..."] if len(steps) > 20 else []), want[:20] + (["..."] if len(want) > 20 else [])))
ts = [d["t"] for d in docs if "t" in d]
if any(not (t1 > t0) for t0, t1 in zip(ts, ts[1:]) if isinstance(t0, (int, float)) and isinstance(t1, (int, float))):
    errors.append("frame times are not strictly increasing")
if a.last_t is not None and docs:
    if docs[-1].get("t") != float(a.last_t):
        errors.append("last frame at t = %r, expected exactly %r" % (docs[-1].get("t"), float(a.last_t)))
    if cert is not None and cert.get("tEnd") != float(a.last_t):
        errors.append("certificate tEnd = %r, expected exactly %r" % (cert.get("tEnd"), float(a.last_t)))
if cert is not None and a.cert_steps is not None and int(cert.get("steps", -1)) != a.cert_steps:
    errors.append("certificate steps = %r, expected %d" % (cert.get("steps"), a.cert_steps))
if errors:
    print("\n".join(errors)); sys.exit(1)
EOF

# check_csv.py FILE HEADER STEPS [JSONL]: the header is exactly HEADER, every
# row has as many numeric columns, the step column is STEPS, and (with JSONL)
# every value equals the jsonl frames' value.
cat >"$work/check_csv.py" <<'EOF'
import json, sys
path, header, steps = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(path).read().split("\n")
errors = []
if lines[-1] != "":
    errors.append("csv does not end with a newline")
lines = [l for l in lines if l != ""]
if not lines or lines[0] != header:
    errors.append("header %r, expected %r" % (lines[0] if lines else None, header))
ncol = len(header.split(","))
rows = []
for i, l in enumerate(lines[1:], 2):
    cells = l.split(",")
    if len(cells) != ncol:
        errors.append("line %d has %d columns, expected %d" % (i, len(cells), ncol))
        continue
    try:
        rows.append([float(c) for c in cells])
    except ValueError:
        errors.append("line %d is not all numbers: %.200s" % (i, l))
want = [int(x) for x in steps.split(",")]
if [int(r[0]) for r in rows] != want:
    errors.append("csv steps %s, expected %s" % ([int(r[0]) for r in rows][:20], want[:20]))
if len(sys.argv) > 4:
    frames = [json.loads(l) for l in open(sys.argv[4]) if l.strip()]
    frames = [f for f in frames if "certificate" not in f]
    for r, f in zip(rows, frames):
        flat = [float(f["step"]), f["t"]] + f["q"] + f["v"] + f["a"] + f["lambda"] + \
            f["residuals"]["position"] + f["residuals"]["velocity"] + \
            [f["residuals"]["dynamics"], f["residuals"]["constraint"]] + f["outputs"]
        if [float(x) for x in flat] != r:
            errors.append("csv row for step %s differs from the jsonl frame" % f["step"])
            break
if errors:
    print("\n".join(errors)); sys.exit(1)
EOF

# ends_at.py FILE T: a jsonl run whose last frame and certificate (its
# last line) end exactly at t = T.
cat >"$work/ends_at.py" <<'EOF'
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
t = float(sys.argv[2])
assert "certificate" in d[-1], "no certificate line"
assert d[-2]["t"] == t, d[-2]["t"]
assert d[-1]["certificate"]["tEnd"] == t, d[-1]["certificate"]["tEnd"]
EOF

# mk NAME CODE: writes $work/NAME.json (see mkspec.py).
mk() { "$py" "$work/mkspec.py" "$work/$1.json" "$2" || { echo "mkspec failed for $1"; exit 1; }; }

# bad NAME SPECFILE PATTERN...: the description is bad input: validate,
# evaluate and run all exit 2, never crash or hang, and their messages carry
# every PATTERN (validate: on stdout or stderr; evaluate, run: on stderr);
# run writes no frames.
bad() {
  local name="$1" spec="$2"
  shift 2
  cli validate "$spec"
  expect "$name [validate]" 2 --both "$@"
  cli evaluate "$spec"
  expect "$name [evaluate]" 2 "$@"
  cli run "$spec" --steps 2 --quiet
  expect "$name [run]" 2 "$@"
  if [[ -s "$out" ]]; then fail "$name [run]: wrote output on bad input"; show "$out" stdout; fi
}

example="$src/examples/circle_pendulum.json"
seed004="$src/examples/seed004_point_mass.json"
force_example="$src/examples/pendulum_force_input.json"
for f in "$example" "$seed004" "$force_example"; do
  [[ -f "$f" ]] || { echo "missing $f"; exit 1; }
done
[[ -x "$tether" ]] || { echo "not executable: $tether"; exit 1; }
# The integration methods, from the engine's table as `tether methods`
# prints it (a name first on each line): the checks over every method take
# them from there, so a new row of the table is covered by them.
mapfile -t methods < <("$tether" methods 2>/dev/null | awk '{print $1}')
[[ ${#methods[@]} -gt 0 ]] || { echo "tether methods listed no integration method"; exit 1; }

# ===========================================================================
section_command_line() {
echo "== command line"
cli --help
expect "--help" 0 --stdout "usage: tether" "Exit codes"
expect "--help has every section of the usage" 0 --stdout "Options for run:" "Options for fmu:" \
  "With --server" "TETHER_TLS_CA" "TETHER_CLIENT_TLS_CERT" "TETHER_TOKEN_FILE" \
  "TETHER_ALLOW_PLAINTEXT_TOKEN=true|false" "TETHER_TLS_CERT and TETHER_TLS_KEY" "TETHER_FMU_LIBRARY"
# Each command's own help, for every command --help lists.
mapfile -t commands < <(sed -n '/^Commands:$/,/^$/s/^  \([a-z]\+\)\( .*\)\?$/\1/p' "$out")
if [[ ${#commands[@]} -ge 8 ]]; then pass "--help lists ${#commands[@]} commands"; else fail "--help lists ${#commands[@]} commands: ${commands[*]}"; fi
for command in "${commands[@]}"; do
  cli "$command" --help
  expect "$command --help" 0 --stdout "re:^usage: tether .*$command" "--help" "Exit codes"
done
cli run --help
expect "run --help: run's options and the connection's, not fmu's" 0 --stdout \
  "--steps N" "--output-interval DT" "-o, --output FILE" "TETHER_TLS_CA" "!--fmi" "!NAME.fmu"
cli fmu --help
expect "fmu --help: fmu's options, no connection flags" 0 --stdout \
  "--output NAME.fmu" "--fmi 2" "TETHER_FMU_LIBRARY" "!--steps" "!TETHER_TLS_CA"
cli methods
expect "methods" 0 --stdout "re:^RK4 +order 4, fixed step" "re:^DOPRI5 +order 5, adaptive step"
cli methods extra
expect "methods with an argument" 2 "methods: expected no arguments, found 1"
cli --server 127.0.0.1:1 methods
expect "methods with --server" 2 "methods: runs in this process; not with --server"
cli --version
expect "--version" 0 --stdout "tether "
cli
expect "no command" 2 "expected a command"
cli frobnicate "$example"
expect "unknown command" 2 "unknown command 'frobnicate'"
cli run
expect "run without a file" 2 "expected exactly one description file, found 0"
cli run "$example" "$example"
expect "run with two files" 2 "expected exactly one description file, found 2"
cli run "$example" --steps 0
expect "--steps 0" 2 "--steps" "expected a positive integer" "'0'"
cli run "$example" --steps -3
expect "--steps -3" 2 "--steps" "expected a positive integer" "'-3'"
cli run "$example" --steps 1.5
expect "--steps 1.5" 2 "--steps" "'1.5'"
cli run "$example" --steps
expect "--steps without a value" 2 "--steps" "expected a positive integer"
cli run "$example" --every abc
expect "--every abc" 2 "--every" "expected a positive integer" "'abc'"
cli run "$example" --every 0
expect "--every 0" 2 "--every" "'0'"
cli run "$example" --until abc
expect "--until abc" 2 "--until" "expected a finite time" "'abc'"
cli run "$example" --until inf
expect "--until inf" 2 "--until" "'inf'"
cli run "$example" --until -1
expect "--until before the initial time" 2 "--until" "later than the initial time 0"
cli run "$example" --until 0
expect "--until at the initial time" 2 "--until" "later than the initial time 0"
cli run "$example" --format xml
expect "--format xml" 2 "--format" "expected jsonl or csv" "'xml'"
cli run "$example" --bogus
expect "unknown option" 2 "unknown option '--bogus'"
cli validate "$example" --frobnicate=1
expect "unknown option on validate" 2 "unknown option '--frobnicate=1'"
}

# ===========================================================================
section_io_failures() {
echo "== I/O failures (exit 1)"
cli run "$work/no-such-file.json"
expect "missing file [run]" 1 "$work/no-such-file.json" "cannot open"
cli validate "$work/no-such-file.json"
expect "missing file [validate]" 1 "$work/no-such-file.json"
cli evaluate "$work/no-such-file.json"
expect "missing file [evaluate]" 1 "$work/no-such-file.json"
mkdir -p "$work/a-directory.json"
cli validate "$work/a-directory.json"
expect "a directory as the description file" 1 "a-directory.json"
# Every file argument is read with a bound, found before reading further:
# a device or a pipe without end (/dev/zero took 24 GB before) is refused
# at once, and a directory is an I/O failure naming it.
for c in validate run evaluate; do
  cli $c /dev/zero
  expect "/dev/zero as the description [$c]" 2 "/dev/zero" "more than 67108864 bytes"
done
cli fmu /dev/zero --output "$work/zero.fmu"
expect "/dev/zero as the description [fmu]" 2 "/dev/zero" "more than 67108864 bytes"
cli urdf /dev/zero
expect "/dev/zero as the URDF" 2 "/dev/zero" "more than 16777216 bytes"
for c in urdf expand; do
  cli $c "$work/a-directory.json"
  expect "a directory [$c]" 1 "a-directory.json" "is a directory"
done
cli ensemble "$example" --until 0.01 --instances "$work/a-directory.json"
expect "a directory as --instances" 2 "--instances" "is a directory"
cli ensemble "$example" --until 0.01 --instances /dev/zero
expect "/dev/zero as --instances" 2 "--instances" "more than 67108864 bytes"
cli --server 127.0.0.1:1 sessions import "$work/a-directory.json"
expect "a directory to sessions import" 1 "sessions import" "is a directory"
cli --server 127.0.0.1:1 sessions import /dev/zero
expect "/dev/zero to sessions import" 2 "sessions import" "more than 67108864 bytes"
cli --server 127.0.0.1:1 --token-file "$work/a-directory.json" health
expect "a directory as --token-file" 2 "--token-file" "is a directory"
cli run "$example" --steps 2 --quiet --output "$work/no-such-dir/frames.jsonl"
expect "--output into a missing directory" 1 "--output" "no-such-dir/frames.jsonl" "cannot open"
if [[ -w /dev/full ]]; then
  timeout 60 "$tether" run "$example" --steps 3000 --quiet >/dev/full 2>"$err"; rc=$?
  expect "run: write error on stdout (/dev/full)" 1 "write error"
  cli run "$example" --steps 5 --quiet --output /dev/full
  expect "run --output /dev/full" 1 "write error" "/dev/full"
  timeout 60 "$tether" evaluate "$example" >/dev/full 2>"$err"; rc=$?
  expect "evaluate: write error on stdout (/dev/full)" 1 "write error"
  timeout 60 "$tether" validate "$example" >/dev/full 2>"$err"; rc=$?
  expect "validate: write error on stdout (/dev/full)" 1 "write error"
fi
}

# ===========================================================================
section_malformed_json() {
echo "== malformed JSON, unknown fields, wrong types"
: >"$work/empty.json"
bad "empty file" "$work/empty.json" "empty.json"
printf '  \n\t\n' >"$work/blank.json"
bad "whitespace-only file" "$work/blank.json" "blank.json"
printf '{"system": {"coordinates": ["x"],\n "masses": {"values": [1]}' >"$work/truncated.json"
bad "truncated JSON" "$work/truncated.json" "truncated.json" "JSON"
printf '{"system": {"coordinates": ["x"] "masses": {"values": [1]}}}' >"$work/nocomma.json"
bad "missing comma" "$work/nocomma.json" "nocomma.json" "JSON"
mk valid1 's = json.dumps(s)'
cp "$work/valid1.json" "$work/garbage.json"; printf ' garbage' >>"$work/garbage.json"
bad "trailing garbage after the object" "$work/garbage.json" "garbage.json"
mk comment 's = json.dumps(s).replace("\"initial\"", "/* c */ \"initial\"")'
bad "comment in JSON" "$work/comment.json" "comment.json"
mk nanliteral 's = json.dumps(s).replace("\"values\": [1, 1]", "\"values\": [NaN, 1]")'
bad "bare NaN literal" "$work/nanliteral.json" "nanliteral.json"
# Lenient extensions that are not JSON must be rejected too.
mk trailingcomma 's = json.dumps(s).replace("[1, 1]", "[1, 1,]")'
bad "trailing comma in an array (not JSON)" "$work/trailingcomma.json" "trailingcomma.json"
mk singlequotes 's = json.dumps(s).replace("\"", "\x27")'
bad "single-quoted strings (not JSON)" "$work/singlequotes.json" "singlequotes.json"

mk unknown_top 's["frobnicate"] = 1'
bad "unknown top-level field" "$work/unknown_top.json" "frobnicate"
mk unknown_sys 'sy["bogus"] = 1'
bad "unknown field in system" "$work/unknown_sys.json" "system" "bogus"
# Duplicate keys: JSON leaves them undefined and protobuf keeps the last.
mk dup_key 's = json.dumps(s).replace("\"system\": {", "\"system\": {\"coordinates\": [\"z\"], ", 1)'
bad "duplicate key in system" "$work/dup_key.json" "system.coordinates" "duplicate field 'coordinates'"
mk dup_key_alias 's["integrator"]["step_size"] = 0.01; s["integrator"]["stepSize"] = 0.02'
bad "duplicate key by proto and JSON name" "$work/dup_key_alias.json" "integrator.step_size" "duplicate field 'step_size'"
mk unknown_con 'sy["constraints"].append({"name": "c2", "expr": "y"})'
bad "unknown field in constraints[1]" "$work/unknown_con.json" "system.constraints[1]" "expr"
mk wt_mass 'sy["masses"]["values"] = ["abc", 1]'
bad "string for a number (mass)" "$work/wt_mass.json" "system.masses.values[0]" "abc"
mk wt_step 's["integrator"]["stepSize"] = "fast"'
bad "string for a number (step_size)" "$work/wt_step.json" "integrator.step_size" "fast"
mk wt_expr 'sy["constraints"].append({"name": "c2", "expression": 5})'
bad "number for a string (expression)" "$work/wt_expr.json" "system.constraints[1].expression"
mk wt_bool 's["initial"]["q"] = [True, 0]'
bad "boolean for a number (initial.q)" "$work/wt_bool.json" "initial.q[0]"
mk wt_obj 'sy["masses"] = [1, 1]'
bad "list for a message (masses)" "$work/wt_obj.json" "masses"
mk wt_enum 's["integrator"]["method"] = "LEAPFROG"'
bad "unknown method name" "$work/wt_enum.json" "integrator.method" "LEAPFROG"
mk wt_scalar_list 'sy["coordinates"] = "x"; sy["masses"]["values"] = [1]; s["initial"] = {"q": [0]}; sy["constraints"] = []; sy["potentialEnergy"] = ""'
bad "string for a list (coordinates)" "$work/wt_scalar_list.json" "system.coordinates"
mk wt_scalar_q 's["initial"]["q"] = 1; s["initial"]["v"] = [0]; sy["coordinates"] = ["x"]; sy["masses"]["values"] = [1]; sy["constraints"] = []; sy["potentialEnergy"] = ""'
bad "number for a list (initial.q)" "$work/wt_scalar_q.json" "initial.q"
mk wt_nested_list 's["initial"]["q"] = [[1], [0]]'
bad "nested arrays for a list of numbers (initial.q)" "$work/wt_nested_list.json" "initial.q"
mk wt_uint 's["certificate"] = {"samplesPerStep": -1}'
bad "negative value for an unsigned field" "$work/wt_uint.json" "certificate.samples_per_step"
}

# ===========================================================================
section_deep_nesting() {
echo "== deep nesting"
"$py" -c 'import sys; n = 100000; open(sys.argv[1], "w").write("[" * n + "]" * n)' "$work/deep_arrays.json"
bad "100000 nested arrays (whole file)" "$work/deep_arrays.json" "deep_arrays.json"
"$py" -c 'import sys; n = 100000; open(sys.argv[1], "w").write("{\"system\":" + "{\"a\":" * n + "1" + "}" * n + "}")' "$work/deep_objects.json"
bad "100000 nested objects (under system)" "$work/deep_objects.json" "deep_objects.json" "system" "'a'"
mk deep_gains 'n = 100000; s = json.dumps(s).replace("{\"alpha\": 10, \"beta\": 10}", "{\"alpha\": 10, \"beta\": 10, \"x\": " + "{\"x\":" * n + "1" + "}" * n + "}")'
bad "100000 nested objects (in system.baumgarte)" "$work/deep_gains.json" "system.baumgarte" "'x'"
mk deep_q_arrays 'n = 100000; s = json.dumps(s).replace("\"q\": [1, 0]", "\"q\": " + "[" * n + "1, 0" + "]" * n)'
bad "100000 nested arrays (in initial.q)" "$work/deep_q_arrays.json" "initial.q"
mk deep_parens 'sy["constraints"].append({"name": "c2", "expression": "(" * 10000 + "x" + ")" * 10000})'
bad "10000 nested parentheses in an expression" "$work/deep_parens.json" \
  "system.constraints[1].expression" "re:column [0-9]+" "nests deeper than"
mk deep_calls 'sy["potentialEnergy"] = "sin(" * 10000 + "y" + ")" * 10000'
bad "10000 nested function calls" "$work/deep_calls.json" "system.potential_energy" "re:column [0-9]+" "nests deeper"
mk deep_unary 'sy["potentialEnergy"] = "-" * 10000 + "y"'
bad "10000 unary minus signs" "$work/deep_unary.json" "system.potential_energy" "re:column [0-9]+"
mk deep_pow 'sy["potentialEnergy"] = "y^" * 10000 + "y"'
bad "10000 chained ^ (right associative)" "$work/deep_pow.json" "system.potential_energy" "re:column [0-9]+"
mk long_expr 'sy["potentialEnergy"] = "y" + " " * 200000'
bad "expression longer than the limit" "$work/long_expr.json" "system.potential_energy" "characters long"
# A long flat sum is too deep for the compiler: the error belongs to that
# expression only, not to the (fine) constraint compiled alongside it.
mk long_sum 'sy["potentialEnergy"] = "+".join(["y"] * 30000)'
bad "30000-term sum in the potential (too large)" "$work/long_sum.json" "system.potential_energy" \
  '!system.constraints[0]'
mk long_sum_ok 'sy["potentialEnergy"] = "+".join(["grav*y"] * 5000)'
cli run "$work/long_sum_ok.json" --steps 2 --quiet
expect "5000-term sum compiles and runs" 0
}

# ===========================================================================
section_huge_numbers() {
echo "== huge and non-finite numbers"
mk huge_json 's = json.dumps(s).replace("\"values\": [1, 1]", "\"values\": [1e999, 1]")'
bad "1e999 in JSON (mass)" "$work/huge_json.json" "system.masses.values"
mk huge_json_q 's = json.dumps(s).replace("\"q\": [1, 0]", "\"q\": [1, -1e999]")'
bad "-1e999 in JSON (initial.q)" "$work/huge_json_q.json" "initial.q"
mk huge_expr 'sy["constraints"].append({"name": "c2", "expression": "x - 1e999"})'
bad "1e999 inside an expression" "$work/huge_expr.json" \
  "system.constraints[1].expression" "column 5" "1e999" "out of range"
mk huge_digits 'sy["potentialEnergy"] = "9" * 400 + "*y"'
bad "400-digit literal in an expression" "$work/huge_digits.json" "system.potential_energy" "column 1" "out of range"
mk nan_mass 'sy["masses"]["values"] = ["NaN", 1]'
bad "\"NaN\" mass" "$work/nan_mass.json" "system.masses.values[0]" "finite"
mk inf_mass 'sy["masses"]["values"] = [1, "Infinity"]'
bad "\"Infinity\" mass" "$work/inf_mass.json" "system.masses.values[1]" "finite"
mk inf_q 's["initial"]["q"] = [1, "Infinity"]'
bad "\"Infinity\" in initial.q" "$work/inf_q.json" "initial.q[1]" "finite"
mk nan_v 's["initial"]["v"] = ["NaN", 0]'
bad "\"NaN\" in initial.v" "$work/nan_v.json" "initial.v[0]" "finite"
mk inf_t 's["initial"]["t"] = "-Infinity"'
bad "\"-Infinity\" initial.t" "$work/inf_t.json" "initial.t" "finite"
mk nan_param 'sy["parameters"][1]["value"] = "NaN"'
bad "\"NaN\" parameter value" "$work/nan_param.json" "system.parameters[1].value" "finite"
mk nan_alpha 'sy["baumgarte"]["alpha"] = "NaN"'
bad "\"NaN\" alpha" "$work/nan_alpha.json" "system.baumgarte.alpha"
mk inf_step 's["integrator"]["stepSize"] = "Infinity"'
bad "\"Infinity\" step_size" "$work/inf_step.json" "integrator.step_size" "finite"
mk nan_mm 'del sy["masses"]; sy["massMatrix"] = {"values": [1, 0, 0, "NaN"]}'
bad "\"NaN\" in mass_matrix" "$work/nan_mm.json" "system.mass_matrix.values[3]" "finite"
}

# ===========================================================================
section_wrong_lengths() {
echo "== wrong lengths"
mk len_masses 'sy["masses"]["values"] = [1]'
bad "masses shorter than coordinates" "$work/len_masses.json" "system.masses.values" "expected 2" "found 1"
mk len_masses3 'sy["masses"]["values"] = [1, 1, 1]'
bad "masses longer than coordinates" "$work/len_masses3.json" "system.masses.values" "expected 2" "found 3"
mk len_q 's["initial"]["q"] = [1]'
bad "initial.q too short" "$work/len_q.json" "initial.q" "expected 2" "found 1"
mk len_q0 's["initial"]["q"] = []'
bad "initial.q missing" "$work/len_q0.json" "initial.q" "expected 2" "found 0"
mk len_v 's["initial"]["v"] = [0, 0, 0]'
bad "initial.v too long" "$work/len_v.json" "initial.v" "expected 2" "found 3"
mk len_gf 'sy["generalizedForces"] = ["0"]'
bad "generalized_forces count" "$work/len_gf.json" "system.generalized_forces" "expected none or 2" "found 1"
mk len_mm 'del sy["masses"]; sy["massMatrix"] = {"values": [1, 0, 0]}'
bad "mass_matrix size" "$work/len_mm.json" "system.mass_matrix.values" "expected 4" "found 3"
mk no_coords 'sy["coordinates"] = []; sy["masses"]["values"] = []; s["initial"]["q"] = []; s["initial"]["v"] = []; sy["constraints"] = []; sy["potentialEnergy"] = ""'
bad "no coordinates" "$work/no_coords.json" "system.coordinates" "at least one"
mk no_inertia 'del sy["masses"]'
bad "no inertia" "$work/no_inertia.json" "system.inertia" "masses, mass_matrix or kinetic_energy"
}

# ===========================================================================
section_expressions() {
echo "== expressions: unknown names and functions, arity, syntax"
mk unk_name 'sy["constraints"].append({"name": "c2", "expression": "x + zz"})'
bad "unknown name in constraints[1]" "$work/unk_name.json" \
  "system.constraints[1].expression" "column 5" "unknown name 'zz'" "x, y" "grav, l" "t or pi"
mk unk_name_force 'sy["generalizedForces"] = ["0", "u + 1"]'
bad "unknown name in generalized_forces[1]" "$work/unk_name_force.json" \
  "system.generalized_forces[1]" "column 1" "unknown name 'u'"
mk unk_func 'sy["potentialEnergy"] = "grav*y + foo(x)"'
bad "unknown function" "$work/unk_func.json" "system.potential_energy" "column 10" "unknown function 'foo'" "sin" "atan2"
mk arity_atan2 'sy["constraints"][0]["expression"] = "x - atan2(y)"'
bad "atan2 with 1 argument" "$work/arity_atan2.json" "system.constraints[0].expression" "column 5" "atan2() expects 2 arguments, found 1"
mk arity_sin 'sy["potentialEnergy"] = "sin(x, y)"'
bad "sin with 2 arguments" "$work/arity_sin.json" "system.potential_energy" "column 1" "sin() expects 1 argument, found 2"
mk arity_zero 'sy["potentialEnergy"] = "y*exp()"'
bad "exp with no argument" "$work/arity_zero.json" "system.potential_energy" "column 3" "exp() expects 1 argument, found 0"
mk func_noargs 'sy["potentialEnergy"] = "y + cos"'
bad "function name without arguments" "$work/func_noargs.json" "system.potential_energy" "column 5" "cos"
mk syntax_op 'sy["constraints"][0]["expression"] = "x + * y"'
bad "two operators in a row" "$work/syntax_op.json" "system.constraints[0].expression" "column 5" "found '*'"
mk syntax_paren 'sy["constraints"][0]["expression"] = "(x + y"'
bad "unclosed parenthesis" "$work/syntax_paren.json" "system.constraints[0].expression" "column 7" "expected ')'"
mk syntax_empty 'sy["constraints"][0]["expression"] = "   "'
bad "blank constraint expression" "$work/syntax_empty.json" "system.constraints[0].expression" "re:column [0-9]+" "expected an expression"
mk syntax_num 'sy["potentialEnergy"] = "1.2.3*y"'
bad "malformed number" "$work/syntax_num.json" "system.potential_energy" "column 1" "1.2.3"
mk syntax_byte 'sy["potentialEnergy"] = "y + \u00e9"'
bad "non-ASCII byte" "$work/syntax_byte.json" "system.potential_energy" "column 5"
mk output_bad 'sy["outputs"] = [{"name": "ok", "expression": "x"}, {"name": "bad", "expression": "der(zz)"}]'
bad "der() of an unknown coordinate in outputs[1]" "$work/output_bad.json" "system.outputs[1].expression" "column 5" "der()" "zz"
# An energy whose derivatives nest too deep is named, not the constraint
# derived after it (found by an audit).
mk deep_energy 'sy["potentialEnergy"] = "*".join(["(x+y)"] * 16000)'
bad "an energy too deep to differentiate" "$work/deep_energy.json" "system.potential_energy: too deep to compile" "!system.constraints"
}

# ===========================================================================
section_names() {
echo "== names: clashes and reserved names"
mk clash_param 'sy["parameters"][0]["name"] = "x"'
bad "parameter named like a coordinate" "$work/clash_param.json" "system.parameters[0].name" "'x'" "coordinate"
mk clash_coords 'sy["coordinates"] = ["x", "x"]'
bad "duplicate coordinates" "$work/clash_coords.json" "system.coordinates[1]" "'x'" "unique"
mk clash_input 'sy["inputs"] = [{"name": "grav"}]'
bad "input named like a parameter" "$work/clash_input.json" "system.inputs[0].name" "'grav'"
mk reserved_t 'sy["parameters"][0]["name"] = "t"'
bad "parameter named t" "$work/reserved_t.json" "system.parameters[0].name" "'t' is reserved"
mk reserved_sin 'sy["coordinates"] = ["sin", "y"]'
bad "coordinate named sin" "$work/reserved_sin.json" "system.coordinates[0]" "'sin' is reserved"
mk reserved_pi 'sy["parameters"][1]["name"] = "pi"'
bad "parameter named pi" "$work/reserved_pi.json" "system.parameters[1].name" "'pi' is reserved"
mk reserved_der 'sy["inputs"] = [{"name": "der"}]'
bad "input named der" "$work/reserved_der.json" "system.inputs[0].name" "'der' is reserved"
mk bad_ident 'sy["parameters"][0]["name"] = "2l"'
bad "parameter name not an identifier" "$work/bad_ident.json" "system.parameters[0].name" "'2l'" "not a valid name"
mk dup_constraint_names 'sy["constraints"] = [{"name": "a", "expression": "x - 1"}, {"name": "a", "expression": "y"}]'
bad "duplicate constraint names" "$work/dup_constraint_names.json" "system.constraints[1].name" "'a'"
mk dup_output_names 'sy["outputs"] = [{"name": "o", "expression": "x"}, {"name": "o", "expression": "y"}]'
bad "duplicate output names" "$work/dup_output_names.json" "system.outputs[1].name" "'o'"
# An output is a frame column under its bare name: one named as another
# column (a coordinate, v_x, a constraint's g_, the time) made two columns
# of one name in csv and in Python's Trajectory (found by an audit).
mk output_named_x 'sy["outputs"] = [{"name": "x", "expression": "y"}]'
bad "output named like a coordinate" "$work/output_named_x.json" "system.outputs[0].name" "'x' is the frames' column of coordinate 'x'"
mk output_named_vx 'sy["outputs"] = [{"name": "v_x", "expression": "y"}]'
bad "output named like a velocity column" "$work/output_named_vx.json" "system.outputs[0].name" "the velocity of coordinate 'x'"
mk output_named_t 'sy["outputs"] = [{"name": "t", "expression": "y"}]'
bad "output named t" "$work/output_named_t.json" "system.outputs[0].name" "'t'"
}

# ===========================================================================
section_inertia() {
echo "== inertia that is not SPD"
mk mass_zero 'sy["masses"]["values"] = [0, 1]'
bad "zero mass" "$work/mass_zero.json" "system.masses.values[0]" "mass > 0" "found 0"
mk mass_neg 'sy["masses"]["values"] = [1, -2]'
bad "negative mass" "$work/mass_neg.json" "system.masses.values[1]" "mass > 0" "found -2"
# Subnormal masses used to fail later as "dependent constraints".
mk mass_subnormal 'sy["masses"]["values"] = [1, 5e-324]'
bad "subnormal mass" "$work/mass_subnormal.json" "system.masses.values[1]" "mass 5e-324 is subnormal" "normal positive"
# Gains so large that h times them overflows the stability test system:
# the warning said "spectral radius -nan".
mk huge_gains 'sy["baumgarte"] = {"alpha": 1e150, "beta": 1e150}; s["integrator"]["stepSize"] = 0.01'
cli validate "$work/huge_gains.json"
expect "overflowing gains: the warning says so in words [validate]" 0 --both "integrator.step_size" "spectral radius is not a finite number" "!nan"
mk mm_subnormal 'del sy["masses"]; sy["massMatrix"] = {"values": [1e-310, 0, 0, 1e-310]}'
bad "subnormal mass_matrix pivot" "$work/mm_subnormal.json" "system.mass_matrix.values" "pivot 0 is 1e-310" "subnormal"
mk mm_nonsym 'del sy["masses"]; sy["massMatrix"] = {"values": [2, 0.5, 0.2, 1]}'
bad "non-symmetric mass_matrix" "$work/mm_nonsym.json" "system.mass_matrix.values" "not symmetric" "(0,1)"
mk mm_indef 'del sy["masses"]; sy["massMatrix"] = {"values": [1, 2, 2, 1]}'
bad "indefinite mass_matrix" "$work/mm_indef.json" "system.mass_matrix.values" "not positive definite"
mk mm_zero 'del sy["masses"]; sy["massMatrix"] = {"values": [0, 0, 0, 0]}'
bad "zero mass_matrix" "$work/mm_zero.json" "system.mass_matrix.values" "not positive definite"
mk ke_indef 'del sy["masses"]; sy["kineticEnergy"] = "der(x)*der(y)"'
bad "kinetic energy with an indefinite M(q)" "$work/ke_indef.json" "not positive definite" "kinetic energy"
mk ke_cubic 'del sy["masses"]; sy["kineticEnergy"] = "der(x)^4 + der(y)^2/2"'
bad "kinetic energy not quadratic in velocities" "$work/ke_cubic.json" "system.kinetic_energy" "not quadratic" "der(x)"
mk ke_input 'sy["inputs"] = [{"name": "u", "defaultValue": 1}]; del sy["masses"]; sy["kineticEnergy"] = "u*der(x)^2/2 + der(y)^2/2"'
bad "input in the kinetic energy" "$work/ke_input.json" "system.kinetic_energy" "column 1" "input 'u' is not allowed"
mk ke_ok 'del sy["masses"]; sy["kineticEnergy"] = "(der(x)^2 + der(y)^2)/2"'
cli evaluate "$work/ke_ok.json"
expect "kinetic energy (v^2/2) evaluates" 0 --stdout '"a":[0,-9.81]'
}

# ===========================================================================
section_constraints() {
echo "== constraints"
mk too_many 'sy["constraints"] += [{"name": "a", "expression": "x - 1"}, {"name": "b", "expression": "y"}]'
bad "more constraints than coordinates" "$work/too_many.json" "system.constraints" "3 constraints for 2 coordinates"
mk dep_identical 'sy["constraints"] = [{"name": "first", "expression": "x^2 + y^2 - 1"}, {"name": "second", "expression": "x^2 + y^2 - 1"}]'
bad "two identical constraints" "$work/dep_identical.json" "'first'" "'second'" "dependent"
mk dep_x_twice 'sy["constraints"] = [{"expression": "x"}, {"expression": "x"}]; s["initial"]["q"] = [0, 0]'
bad "x = 0 twice (default names c0, c1)" "$work/dep_x_twice.json" "'c0'" "'c1'" "dependent"
mk der_constraint 'sy["constraints"].append({"name": "vel", "expression": "der(x) - 1"})'
bad "der() in a constraint" "$work/der_constraint.json" "system.constraints[1].expression" "column 1" "der(x) is not allowed"
mk der_potential 'sy["potentialEnergy"] = "grav*y + der(y)^2"'
bad "der() in the potential" "$work/der_potential.json" "system.potential_energy" "column 10" "der(y) is not allowed"
mk input_constraint 'sy["inputs"] = [{"name": "u"}]; sy["constraints"][0]["expression"] = "x^2 + y^2 - u"'
bad "input in a constraint" "$work/input_constraint.json" "system.constraints[0].expression" "column 13" "input 'u' is not allowed"
mk neg_alpha 'sy["constraints"][0]["gains"] = {"alpha": -1, "beta": 1}'
bad "negative per-constraint alpha" "$work/neg_alpha.json" "system.constraints[0].gains.alpha" ">= 0"
}

# ===========================================================================
section_integrator_options() {
echo "== integrator and certificate options"
mk step_zero 's["integrator"]["stepSize"] = 0'
bad "zero step_size" "$work/step_zero.json" "integrator.step_size" "step > 0" "found 0"
mk step_neg 's["integrator"]["stepSize"] = -0.01'
bad "negative step_size" "$work/step_neg.json" "integrator.step_size" "step > 0" "found -0.01"
mk step_missing 'del s["integrator"]["stepSize"]'
bad "missing step_size for RK4" "$work/step_missing.json" "integrator.step_size"
mk method_missing 'del s["integrator"]["method"]'
bad "missing method" "$work/method_missing.json" "integrator.method" "${methods[@]}" "not set"
mk integrator_missing 'del s["integrator"]'
bad "missing integrator" "$work/integrator_missing.json" "integrator.method"
mk method_num 's["integrator"]["method"] = 99'
bad "method number 99" "$work/method_num.json" "integrator.method" "99"
mk dopri_neg 's["integrator"] = {"method": "DOPRI5", "rtol": -1}'
bad "negative DOPRI5 rtol" "$work/dopri_neg.json" "integrator.rtol"
mk sdirk_tol 's["integrator"] = {"method": "SDIRK3", "stepSize": 0.01, "newtonTolerance": -1, "maxNewtonIterations": 101}'
bad "SDIRK3 bad Newton settings" "$work/sdirk_tol.json" "integrator.newton_tolerance" \
  "integrator.max_newton_iterations" "at most 100"
mk sdirk_stiff 'sy["baumgarte"] = {"alpha": 1000, "beta": 1000}; s["integrator"] = {"method": "SDIRK3", "stepSize": 0.01}'
cli validate "$work/sdirk_stiff.json"
expect "SDIRK3 at h omega = 10 validates with no stability warning" 0 --both "!not stable"
cli run "$work/sdirk_stiff.json" --until 1 --every 100 --quiet
expect "SDIRK3 runs at stiff gains" 0
mk sdirk_one 'sy["baumgarte"] = {"alpha": 1000, "beta": 1000}; s["integrator"] = {"method": "SDIRK3", "stepSize": 0.01, "maxNewtonIterations": 1}'
cli run "$work/sdirk_one.json" --steps 10 --quiet
expect "SDIRK3 Newton failure exits 3 naming the step and time" 3 "step 1 (from t = 0)" \
  "SDIRK3 Newton iteration did not converge" "max_newton_iterations"
# Every method of the engine's table validates the pendulum and runs it to
# a time it lands on exactly, with the certificate (stepSize 0.001: the
# step of the fixed-step methods, the first of the adaptive ones).
for m in "${methods[@]}"; do
  mk "method_$m" "s[\"integrator\"][\"method\"] = \"$m\""
  cli validate "$work/method_$m.json"
  expect "$m validates the pendulum" 0 --both "valid ("
  cli run "$work/method_$m.json" --until 0.05 --every 1000000 --quiet
  expect "$m runs the pendulum to t = 0.05" 0
  check "$m: last frame and certificate exactly at t = 0.05" "$py" "$work/ends_at.py" "$out" 0.05
done
mk samples_65 's["certificate"] = {"samplesPerStep": 65}'
bad "samples_per_step 65" "$work/samples_65.json" "certificate.samples_per_step" "at most 64"
mk several 'sy["masses"]["values"] = [1, 0]; s["integrator"]["stepSize"] = -1; sy["potentialEnergy"] = "grav*yy"'
bad "several problems are all reported" "$work/several.json" \
  "system.masses.values[1]" "integrator.step_size" "system.potential_energy"
}

# ===========================================================================
section_validate_warnings() {
echo "== validate: warnings (exit 0)"
mk alpha0 'sy["baumgarte"]["alpha"] = 0'
cli validate "$work/alpha0.json"
expect "alpha = 0 warns" 0 --both "warning: system.baumgarte.alpha" "oscillates" "valid ("
mk beta0 'sy["baumgarte"]["beta"] = 0'
cli validate "$work/beta0.json"
expect "beta = 0 warns" 0 --both "warning: system.baumgarte.beta" "offset" "valid ("
# With beta = 0 the residual test system has the eigenvalue 0, whose RK4
# factor is exactly 1 for every h: no step is stable, so no step may be
# suggested (a suggestion here is a rounding artefact of the bisection).
expect "beta = 0: no bogus 'expected h <' suggestion" 0 --both '!expected h <'
mk nogains 'del sy["baumgarte"]'
cli validate "$work/nogains.json"
expect "no gains warns (no feedback)" 0 --both "warning: system.baumgarte" "drift grows linearly"
mk cgain_alpha0 'sy["constraints"][0]["gains"] = {"alpha": 0, "beta": 5}'
cli validate "$work/cgain_alpha0.json"
expect "per-constraint alpha = 0 warns" 0 --both "warning: system.constraints[0].gains" "'rod'" "alpha = 0"
cli validate "$src/examples/circle_pendulum_inconsistent.json"
expect "inconsistent initial state warns (example)" 0 --both "warning: initial" "not consistent" "initial state consistent   NO"
mk inconsistent 's["initial"]["q"] = [1.1, 0]; s["initial"]["v"] = [0, 0.5]'
cli validate "$work/inconsistent.json"
expect "inconsistent initial state warns" 0 --both "warning: initial" "not consistent" "|g|_inf = 0.105"
mk ee_unstable 's["integrator"] = {"method": "EXPLICIT_EULER", "stepSize": 0.3}'
cli validate "$work/ee_unstable.json"
expect "EXPLICIT_EULER h*omega = 3 warns (unstable)" 0 --both \
  "warning: integrator.step_size" "EXPLICIT_EULER" "not stable" "'rod'" "spectral radius 2" "step stable for the gains  NO"
mk ee_edge 's["integrator"] = {"method": "EXPLICIT_EULER", "stepSize": 0.2}'
cli validate "$work/ee_edge.json"
expect "EXPLICIT_EULER h*omega = 2 warns (Jordan block, radius 1)" 0 --both "warning: integrator.step_size" "not stable"
mk ee_stable 's["integrator"] = {"method": "EXPLICIT_EULER", "stepSize": 0.1}'
cli validate "$work/ee_stable.json"
expect "EXPLICIT_EULER h*omega = 1 is stable, no warning" 0 --both "valid (0 warnings)" "step stable for the gains  yes" "!warning:"
cli validate "$example"
expect "circle_pendulum validates without warnings" 0 --both "valid (0 warnings)" "initial state consistent   yes"
cli run "$work/ee_unstable.json" --steps 2
expect "run prints warnings on stderr" 0 "warning: integrator.step_size"
cli run "$work/ee_unstable.json" --steps 2 --quiet
expect "run --quiet prints no warnings" 0 "!warning:"
}

# ===========================================================================
section_evaluate() {
echo "== evaluate"
cli evaluate "$seed004"
expect "evaluate seed 004 point mass" 0
check "seed 004: a = (-1, -9.81), lambda = 0.5, zero residuals, every field" "$py" - "$out" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, "expected one line, found %d" % len(lines)
f = json.loads(lines[0])
assert set(f) == {"step", "t", "q", "v", "a", "lambda", "residuals", "outputs"}, sorted(f)
assert set(f["residuals"]) == {"position", "velocity", "dynamics", "constraint"}, sorted(f["residuals"])
close = lambda x, y: abs(x - y) <= 1e-12 * max(1, abs(y))
assert len(f["a"]) == 2 and close(f["a"][0], -1) and close(f["a"][1], -9.81), f["a"]
assert len(f["lambda"]) == 1 and close(f["lambda"][0], 0.5), f["lambda"]
assert f["q"] == [1, 0] and f["v"] == [0, 1], (f["q"], f["v"])
assert f["residuals"]["position"] == [0] and f["residuals"]["velocity"] == [0], f["residuals"]
assert f["residuals"]["dynamics"] <= 1e-12 and f["residuals"]["constraint"] <= 1e-12, f["residuals"]
assert int(f["step"]) == 0 and f["t"] == 0 and f["outputs"] == []
EOF
cli evaluate "$force_example"
expect "evaluate with outputs and inputs" 0
check "evaluate: outputs angle and omega present" "$py" -c '
import json, sys
f = json.loads(open(sys.argv[1]).read())
assert len(f["outputs"]) == 2 and f["outputs"] == [0, 0], f["outputs"]
assert len(f["lambda"]) == 1 and abs(f["lambda"][0] - 9.81) < 1e-12, f["lambda"]
' "$out"
cli evaluate "$example"
expect "evaluate without feedback warnings has empty stderr" 0 "!warning:"
}

# ===========================================================================
section_run_jsonl() {
echo "== run: jsonl"
cli run "$example" --steps 10 --every 3 --quiet
expect "run --steps 10 --every 3" 0
check "jsonl: frames 0,3,6,9,10 with every field, then the certificate" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,3,6,9,10 --nq 2 --nc 1 --cert yes --cert-steps 10 --last-t 0.01
cli run "$example" --steps 10 --every 5 --quiet
expect "run --steps 10 --every 5" 0
check "jsonl: frames 0,5,10 (the last step not repeated)" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,5,10 --nq 2 --nc 1 --cert yes --cert-steps 10
cli run "$example" --steps 7 --every 100 --quiet
expect "run --every larger than the run" 0
check "jsonl: frames 0 and 7" "$py" "$work/check_jsonl.py" "$out" --steps 0,7 --nq 2 --nc 1 --cert yes --cert-steps 7
cli run "$example" --steps 1 --quiet
check "jsonl: --steps 1 gives frames 0 and 1" "$py" "$work/check_jsonl.py" "$out" --steps 0,1 --nq 2 --nc 1 --cert yes
cli run "$example" --quiet
expect "run without --steps/--until" 0
check "jsonl: default is 1000 steps, every step written" \
  "$py" "$work/check_jsonl.py" "$out" --steps "$(seq -s, 0 1000)" --nq 2 --nc 1 --cert yes --cert-steps 1000
cli run "$force_example" --steps 4 --every 2 --quiet
expect "run with outputs" 0
check "jsonl: outputs in every frame" "$py" "$work/check_jsonl.py" "$out" --steps 0,2,4 --nq 2 --nc 1 --ny 2 --cert yes
mk unconstrained 'sy["constraints"] = []'
cli run "$work/unconstrained.json" --steps 3 --quiet
expect "run without constraints" 0
check "jsonl: empty lambda/residual lists are printed (zero defaults)" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,1,2,3 --nq 2 --nc 0 --cert yes
check "jsonl: zero defaults printed literally" grep -qF '"lambda":[],"residuals":{"position":[],"velocity":[],"dynamics":0,"constraint":0},"outputs":[]' "$out"
cli run "$example" --steps 5 --quiet --no-certificate
expect "run --no-certificate" 0
check "jsonl --no-certificate: no certificate line" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,1,2,3,4,5 --nq 2 --nc 1 --cert no
cli run "$example" --steps 5
expect "run prints the certificate summary on stderr" 0 "Residual certificate" "(a) initial state consistent" "(d) residuals"
cli run "$work/unconstrained.json" --steps 3
expect "run without constraints prints (a) and (c) as not applicable" 0 \
  "(a) initial state consistent     not applicable" "(c) step stable for the gains    not applicable" "!margin"
cli validate "$work/unconstrained.json"
expect "validate without constraints prints (a) and (c) as not applicable" 0 --both \
  "(a) initial state consistent   not applicable" "(c) step stable for the gains  not applicable" "!margin"
cli run "$example" --steps 5 --no-certificate
expect "run --no-certificate prints no summary" 0 "!Residual certificate"
mk disabled 's["certificate"] = {"disabled": True}'
cli run "$work/disabled.json" --steps 5
expect "certificate.disabled in the description: no summary" 0 "!Residual certificate"
check "jsonl with certificate.disabled: no certificate line" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,1,2,3,4,5 --nq 2 --nc 1 --cert no
cli run "$example" --steps 5 --quiet
expect "run --quiet prints nothing on stderr" 0 "!Residual"
[[ -s "$err" ]] && fail "run --quiet: stderr not empty" || pass "run --quiet: stderr empty"
# The summary of a model with many constraints: the worst N, not every one.
"$py" - "$work/chain12.json" <<'EOF'
import json, sys
n = 12
coords, cons, q = [], [], []
for i in range(n):
    coords += ["x%d" % i, "y%d" % i]
    q += [i + 1, 0]
    px, py = ("x%d" % (i - 1), "y%d" % (i - 1)) if i else ("0", "0")
    cons.append({"name": "c%d" % i, "expression": "((x%d-%s)^2+(y%d-%s)^2-1)/2" % (i, px, i, py)})
json.dump({"system": {"coordinates": coords, "masses": {"values": [1] * (2 * n)},
    "potentialEnergy": "9.81*(" + "+".join("y%d" % i for i in range(n)) + ")",
    "constraints": cons, "baumgarte": {"alpha": 10, "beta": 10}},
    "initial": {"q": q, "v": [0] * (2 * n)},
    "integrator": {"method": "RK4", "stepSize": 0.001}}, open(sys.argv[1], "w"))
EOF
# summary_constraints.py FILE N: exactly N constraint lines, bounds decreasing.
cat >"$work/summary_constraints.py" <<'EOF'
import re, sys
lines = [l for l in open(sys.argv[1]) if re.match(r"    c\d+ \(alpha", l)]
assert len(lines) == int(sys.argv[2]), "%d constraint lines, expected %s" % (len(lines), sys.argv[2])
bounds = [float(re.search(r"<= bound (\S+)", l).group(1)) for l in lines]
assert bounds == sorted(bounds, reverse=True), bounds
EOF
cli run "$work/chain12.json" --steps 20 --constraints 3
expect "run --constraints 3: the summary says it lists 3 of 12" 0 \
  "the 3 largest bounds of 12 constraints (--constraints all lists every one)"
check "run --constraints 3: three constraint lines, the largest bounds first" \
  "$py" "$work/summary_constraints.py" "$err" 3
cli run "$work/chain12.json" --steps 20
expect "run: the summary lists 10 constraints by default" 0 "the 10 largest bounds of 12 constraints"
check "run: ten constraint lines by default" "$py" "$work/summary_constraints.py" "$err" 10
cli run "$work/chain12.json" --steps 20 --constraints all
expect "run --constraints all: every constraint" 0 "!largest bounds"
check "run --constraints all: twelve constraint lines" "$py" "$work/summary_constraints.py" "$err" 12
cli run "$work/chain12.json" --steps 20 --constraints 0
expect "run --constraints 0 is refused, naming the flag" 2 "--constraints" "a positive integer or all"
}

# ===========================================================================
section_run_until() {
echo "== run: --until"
cli run "$example" --until 0.0105 --every 4 --quiet
expect "run --until 0.0105 (not a multiple of h = 0.001)" 0
check "--until 0.0105: frames 0,4,8,11, last exactly at t = 0.0105" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,4,8,11 --nq 2 --nc 1 --cert yes --last-t 0.0105 --cert-steps 11
cli run "$example" --until 0.01 --every 4 --quiet
check "--until 0.01: frames 0,4,8,10, last exactly at t = 0.01" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,4,8,10 --nq 2 --nc 1 --cert yes --last-t 0.01
mk h01 's["integrator"]["stepSize"] = 0.1'
for until_steps in 0.3:3 0.7:7 1:10 2.05:21 0.05:1; do
  u="${until_steps%%:*}" n="${until_steps##*:}"
  cli run "$work/h01.json" --until "$u" --quiet --every 1000
  check "--until $u with h = 0.1: $n steps, last frame exactly at t = $u" \
    "$py" "$work/check_jsonl.py" "$out" --steps "0,$n" --nq 2 --nc 1 --cert yes --last-t "$u" --cert-steps "$n"
done
cli run "$example" --until 1 --steps 5 --quiet
check "--until and --steps: the first limit (5 steps) wins" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,1,2,3,4,5 --nq 2 --nc 1 --cert yes --last-t 0.005
cli run "$example" --until 0.0035 --steps 1000 --quiet
check "--until and --steps: the first limit (t = 0.0035) wins" \
  "$py" "$work/check_jsonl.py" "$out" --steps 0,1,2,3,4 --nq 2 --nc 1 --cert yes --last-t 0.0035
mk dopri 's["integrator"] = {"method": "DOPRI5", "maxStep": 0.01}'
cli run "$work/dopri.json" --until 0.37 --quiet --every 1000000
expect "DOPRI5 run --until 0.37" 0
check "DOPRI5 --until 0.37: last frame exactly at t = 0.37" "$py" "$work/ends_at.py" "$out" 0.37
}

# ===========================================================================
section_output_interval() {
echo "== run: --output-interval"
mk dopri_grid 's["integrator"] = {"method": "DOPRI5"}; s["initial"] = {"q": [0.6, -0.8], "v": [0.5, 0.375]}'
cli run "$work/dopri_grid.json" --until 1 --output-interval 0.01 --quiet
expect "DOPRI5 --until 1 --output-interval 0.01" 0
check "DOPRI5 --output-interval 0.01 over 1 s: 101 frames at exactly k*0.01" "$py" -c '
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
assert "certificate" in d[-1], "no certificate line"
frames = d[:-1]
assert len(frames) == 101, len(frames)
for k, f in enumerate(frames):
    assert f["t"] == 0.0 + k * 0.01, (k, f["t"])
assert d[-1]["certificate"]["tEnd"] == 1, d[-1]["certificate"]["tEnd"]
assert int(frames[-1]["step"]) < 100, frames[-1]["step"]
' "$out"
cli run "$work/dopri_grid.json" --until 1 --output-interval 0.01 --every 1 --quiet --format csv
expect "DOPRI5 --output-interval with --every 1 (csv)" 0
check "--every 1 adds every step, in time order, each time once" "$py" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = [float(r["t"]) for r in rows]
assert all(a < b for a, b in zip(t, t[1:])), "times not increasing"
grid = {0.0 + k * 0.01 for k in range(101)}
assert grid <= set(t), sorted(grid - set(t))[:3]
assert len(t) > 101, len(t)
' "$out"
cli run "$example" --steps 10 --output-interval 0.0025 --quiet
check "RK4 --steps 10 --output-interval 0.0025: t = 0, 0.0025, ..., 0.01" "$py" -c '
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])][:-1]
t = [f["t"] for f in d]
assert t == [0.0 + k * 0.0025 for k in range(5)], t
' "$out"
for bad in 0 -0.01 inf nan; do
  cli run "$example" --steps 10 --output-interval "$bad" --quiet
  expect "--output-interval $bad" 2 "output_interval" "expected a finite interval > 0" "found"
done
cli run "$example" --steps 10 --output-interval abc --quiet
expect "--output-interval abc" 2 "--output-interval" "'abc'"
# Without --until, 2^53 output times a step at most: a grid of 1e-300 s
# emitted frames without end inside the first step (and the CLI held them
# all: std::bad_alloc, exit 134; found by an audit).
cli run "$example" --steps 5 --output-interval 1e-300 --quiet
expect "--steps 5 --output-interval 1e-300" 2 "output_interval" "at most 2^53 output times in a step"
}

# ===========================================================================
section_run_csv() {
echo "== run: csv and --output"
cli run "$force_example" --steps 6 --every 4 --quiet --format jsonl
cp "$out" "$work/force.jsonl"
cli run "$force_example" --steps 6 --every 4 --quiet --format csv
expect "run --format csv" 0
check "csv: header, 15 numeric columns, rows 0,4,6, same values as jsonl, no certificate" \
  "$py" "$work/check_csv.py" "$out" \
  "step,t,x,y,v_x,v_y,a_x,a_y,lambda_rod,g_rod,gdot_rod,dynamics_residual,constraint_residual,angle,omega" \
  0,4,6 "$work/force.jsonl"
cli run "$force_example" --steps 6 --every 4 --format csv
expect "run --format csv prints the certificate summary on stderr" 0 "Residual certificate"
cli run "$example" --steps 20 --every 7 --quiet
cp "$out" "$work/stdout.jsonl"
cli run "$example" --steps 20 --every 7 --quiet --output "$work/frames.jsonl"
expect "run --output FILE" 0
[[ -s "$out" ]] && fail "--output: stdout not empty" || pass "--output: stdout empty"
check "--output FILE: same bytes as standard output" cmp "$work/stdout.jsonl" "$work/frames.jsonl"
cli run "$example" --steps 3 --quiet --format csv -o "$work/frames.csv"
expect "run -o FILE --format csv" 0
check "-o FILE csv: 4 rows" "$py" "$work/check_csv.py" "$work/frames.csv" \
  "step,t,x,y,v_x,v_y,a_x,a_y,lambda_rod,g_rod,gdot_rod,dynamics_residual,constraint_residual" 0,1,2,3
}

# ===========================================================================
section_run_failures() {
echo "== runs that fail numerically (exit 3)"
# fail_run NAME SPEC EVERY FORMAT EXTRA_ARGS...: the run must exit 3 naming
# the step, the time and the quantity; the frames written before the
# failure (steps 0, K, 2K, ... before the failing step) must be in the output.
fail_run() {
  local name="$1" spec="$2" every="$3" format="$4" quantity="$5"
  shift 5
  cli run "$spec" --every "$every" --format "$format" --quiet "$@"
  expect "$name" 3 "re:step [0-9]+ \((from|at) t = [-+0-9.e]+\)" "$quantity"
  local n
  n="$(sed -n 's/.*step \([0-9][0-9]*\) (\(from\|at\) t = .*/\1/p' "$err" | head -n1)"
  if [[ -z "$n" ]]; then fail "$name: no failing step on stderr"; return; fi
  local frames
  frames="$(seq -s, 0 "$every" $((n - 1)))"
  if [[ "$format" == csv ]]; then
    check "$name: frames 0..$((n - 1)) every $every written before the failure (csv)" \
      "$py" "$work/check_csv.py" "$out" "$(head -n1 "$out")" "$frames"
  else
    check "$name: frames 0..$((n - 1)) every $every written before the failure" \
      "$py" "$work/check_jsonl.py" "$out" --steps "$frames" --nq 1 --nc 0 --cert yes --cert-steps $((n - 1))
  fi
}
mk blow_exp 's = {"system": {"coordinates": ["x"], "masses": {"values": [1]}, "potentialEnergy": "-exp(x)"}, "initial": {"q": [0], "v": [0]}, "integrator": {"method": "RK4", "stepSize": 0.01}}'
fail_run "force exp(x) overflows (RK4)" "$work/blow_exp.json" 10 jsonl "'x'" --steps 1000
fail_run "force exp(x) overflows (RK4, csv)" "$work/blow_exp.json" 10 csv "'x'" --steps 1000
cli run "$work/blow_exp.json" --steps 1000 --every 10 --quiet --output "$work/blow.jsonl"
expect "force exp(x) overflows (--output FILE)" 3 "re:step [0-9]+" "not finite"
check "--output FILE keeps the frames written before the failure" \
  "$py" -c 'import sys; n = sum(1 for l in open(sys.argv[1]) if "\"step\"" in l); assert n >= 20, n' "$work/blow.jsonl"
mk blow_step 's = {"system": {"coordinates": ["x"], "masses": {"values": [1]}, "potentialEnergy": "1e4*x^2/2"}, "initial": {"q": [1], "v": [0]}, "integrator": {"method": "EXPLICIT_EULER", "stepSize": 0.1}}'
fail_run "stiff spring, large explicit step (overflow)" "$work/blow_step.json" 25 jsonl "'x'" --steps 100000
mk blow_quartic 's = {"system": {"coordinates": ["x"], "masses": {"values": [1]}, "potentialEnergy": "-x^4"}, "initial": {"q": [1], "v": [0]}, "integrator": {"method": "EXPLICIT_EULER", "stepSize": 0.5}}'
fail_run "force 4x^3, large step" "$work/blow_quartic.json" 1 jsonl "'x'" --steps 1000
mk blow_dopri 's = {"system": {"coordinates": ["x"], "masses": {"values": [1]}, "potentialEnergy": "-exp(x)"}, "initial": {"q": [0], "v": [0]}, "integrator": {"method": "DOPRI5"}}'
fail_run "DOPRI5 on a finite-time blow-up" "$work/blow_dopri.json" 50 jsonl "DOPRI5" --until 10
# The step size in the message must be readable (not "%f" of a tiny h).
expect "DOPRI5 failure message prints the step size it gave up at" 3 "re:h = [0-9.e+-]+" '!re:h = 0\.000000 '
# A step so large that the time itself overflows: t must not become Infinity.
mk time_overflow 'sy["constraints"] = []; sy["potentialEnergy"] = ""; s["integrator"]["stepSize"] = 1e308'
cli run "$work/time_overflow.json" --steps 3 --quiet
expect "time overflows (h = 1e308): exit 3 naming the time" 3 "re:step [0-9]+" "time"
check "time overflow: no frame has a non-finite time" "$py" -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    t = d.get("t", 0)
    assert isinstance(t, (int, float)), "frame with t = %r" % t
' "$out"
}

# ===========================================================================
section_robustness() {
echo "== robustness: truncated and mutated descriptions never crash or hang"
# What the CLI adds to the engine here is the exit code: 2 for a truncated
# description, 0, 2 or 3 for a mutated one, never a crash or a hang. That
# the parsing, Validate, Simulation::Create and Evaluate underneath never
# crash or hang on such bytes is the fuzz targets' ground: spec_json_fuzz
# (ParseSpecJson on any bytes) and compile_evaluate_fuzz (JSON input:
# Validate, Create, Evaluate and 3 steps), whose seed corpora both hold
# circle_pendulum.json, fuzzed for 30 s each in CI (scripts/fuzz.sh) and
# replayed by ctest (fuzz_replay.*). So this section keeps a sample of its
# former 636 runs: every 8th proper prefix and the last 16 (the nearly
# complete documents), 56 instead of all 336, and the first 30 of the 300
# mutations (the same seeded generator, so the same 30 files as before).
"$py" - "$example" "$work/trunc" <<'EOF'
import os, sys
data = open(sys.argv[1], "rb").read().rstrip()
os.makedirs(sys.argv[2])
for n in range(len(data)):
    if n % 8 == 0 or n >= len(data) - 16:
        open(os.path.join(sys.argv[2], "%04d.json" % n), "wb").write(data[:n])
EOF
bad_prefix=()
for f in "$work"/trunc/*.json; do
  cli validate "$f"
  if abnormal || [[ "$rc" != 2 ]]; then bad_prefix+=("$(basename "$f"):exit $rc"); fi
done
if [[ ${#bad_prefix[@]} -eq 0 ]]; then
  pass "$(ls "$work"/trunc | wc -l) proper prefixes of circle_pendulum.json exit 2"
else
  fail "prefixes of circle_pendulum.json: ${bad_prefix[*]:0:10}"
fi
"$py" - "$example" "$work/mut" <<'EOF'
import os, random, sys
data = open(sys.argv[1], "rb").read()
os.makedirs(sys.argv[2])
rng = random.Random(20240601)
alphabet = b'{}[]",:-+.0123456789eExyz()^*/ \\\x00\xff'
for n in range(30):
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(b))
        op = rng.randrange(3)
        if op == 0:
            b[i] = rng.choice(alphabet)
        elif op == 1:
            del b[i]
        else:
            b.insert(i, rng.choice(alphabet))
    open(os.path.join(sys.argv[2], "%03d.json" % n), "wb").write(bytes(b))
EOF
bad_mut=()
for f in "$work"/mut/*.json; do
  cli evaluate "$f"
  if abnormal || { [[ "$rc" != 0 ]] && [[ "$rc" != 2 ]] && [[ "$rc" != 3 ]]; }; then
    bad_mut+=("$(basename "$f"):exit $rc")
  fi
done
if [[ ${#bad_mut[@]} -eq 0 ]]; then
  pass "30 mutated descriptions: evaluate exits 0, 2 or 3, never crashes or hangs"
else
  fail "mutated descriptions: ${bad_mut[*]:0:10}"
fi
}

# ===========================================================================
section_definitions() {
echo "== definitions: named expressions shared by the later ones (issue 23)"
defs_example="$src/examples/double_pendulum_definitions.json"
cli validate "$defs_example"
expect "the definitions example validates without warnings" 0 --both "valid (0 warnings)"
cli run "$defs_example" --steps 100 --every 100 --quiet --format csv
expect "the definitions example runs, its outputs from definitions" 0 --stdout "tip_x" "energy"
mk def_pendulum 'sy["definitions"] = [{"name": "r2", "expression": "x^2 + y^2"}, {"name": "h", "expression": "grav*y"}]; sy["potentialEnergy"] = "h"; sy["constraints"][0]["expression"] = "(r2 - l^2)/2"'
cli validate "$work/def_pendulum.json"
expect "definitions in the potential and a constraint" 0 --both "valid (0 warnings)"
mk def_unused 'sy["definitions"] = [{"name": "spare", "expression": "x*y"}]'
cli validate "$work/def_unused.json"
expect "an unused definition warns" 0 --both "warning: system.definitions[0]" "'spare' is not used" "valid (1 warning)"
mk def_order 'sy["definitions"] = [{"name": "a", "expression": "x + b"}, {"name": "b", "expression": "y"}]; sy["potentialEnergy"] = "a"'
bad "a definition used before it is defined" "$work/def_order.json" \
  "system.definitions[0].expression" "column 5" "definition 'b' is used before it is defined" "system.definitions[1]"
mk def_shadow 'sy["definitions"] = [{"name": "grav", "expression": "x"}]'
bad "a definition shadowing a parameter" "$work/def_shadow.json" \
  "system.definitions[0].name" "'grav' is already used by parameter system.parameters[1]"
mk def_dup 'sy["definitions"] = [{"name": "a", "expression": "x"}, {"name": "a", "expression": "y"}]'
bad "duplicate definitions" "$work/def_dup.json" "system.definitions[1].name" "definition system.definitions[0]"
mk def_velocity 'sy["definitions"] = [{"name": "speed2", "expression": "der(x)^2 + der(y)^2"}]; sy["constraints"][0]["expression"] = "(x^2 + y^2 - l^2)/2 + 0*speed2"'
bad "a velocity definition in a constraint" "$work/def_velocity.json" \
  "system.constraints[0].expression" "column 25" "definition 'speed2' uses der(x)" "not allowed here"
mk def_syntax 'sy["definitions"] = [{"name": "a", "expression": "x +"}]; sy["potentialEnergy"] = "a*grav"'
bad "a syntax error in a definition is reported there, once" "$work/def_syntax.json" \
  "system.definitions[0].expression" "column 4" "!system.potential_energy"
cli fmu "$defs_example" --output "$work/defs.fmu" --quiet
expect "fmu of a description with definitions" 0
}

# ===========================================================================
section_fmu() {
echo "== fmu: writing an FMI 2.0 Co-Simulation FMU (tests/fmu_test.cc imports one)"
cli fmu "$force_example"
expect "fmu without --output" 2 "fmu: --output NAME.fmu is required"
cli fmu "$force_example" --output "$work/model.zip"
expect "fmu --output without .fmu" 2 "--output" "ending in .fmu" "model.zip"
cli fmu "$force_example" --output "$work/.fmu"
expect "fmu --output with an empty name" 2 "--output" "ending in .fmu"
cli fmu --output "$work/p.fmu"
expect "fmu without a description" 2 "expected exactly one description file, found 0"
cli fmu "$force_example" --output "$work/p3.fmu" --fmi 3
expect "fmu --fmi 3 writes an FMI 3.0 FMU" 0 "FMI 3.0 Co-Simulation"
check "fmu --fmi 3: a 3.0 model description and the x86_64-linux binaries" "$py" - "$work/p3.fmu" <<'EOF2'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
assert "binaries/x86_64-linux/p3.so" in names, names
assert "binaries/x86_64-linux/libtether-fmi2.so.1" in names, names
xml = z.read("modelDescription.xml").decode()
assert 'fmiVersion="3.0"' in xml and "instantiationToken=" in xml, xml[:400]
EOF2
# A description's name that is the first part of the FMU's own structured
# names (q.x, tether.server) or FMI 3's independent variable time made an
# FMU with clashing variable names.
mk fmu_time 'sy["parameters"].append({"name": "time", "value": 1})'
cli fmu "$work/fmu_time.json" --output "$work/t3.fmu" --fmi 3
expect "fmu --fmi 3: a parameter named time" 2 "system.parameters[2].name" "'time' is a name the FMU gives its own variables"
cli fmu "$work/fmu_time.json" --output "$work/t2.fmu" --quiet
expect "fmu (FMI 2.0): a parameter named time is the description's" 0
mk fmu_q 'sy["outputs"] = [{"name": "lambda", "expression": "x"}]'
cli fmu "$work/fmu_q.json" --output "$work/q.fmu"
expect "fmu: an output named lambda" 2 "system.outputs[0].name" "'lambda' is a name the FMU gives"
cli fmu "$force_example" --output "$work/p.fmu" --fmi 4
expect "fmu --fmi 4" 2 "--fmi" "expected 2 or 3" "'4'"
cli fmu "$force_example" --output "$work/p.fmu" --fmi 1
expect "fmu --fmi 1" 2 "--fmi" "expected 2 or 3" "'1'"
cli fmu "$force_example" --output "$work/p.fmu" --fmi
expect "fmu --fmi without a value" 2 "--fmi" "expected 2"
cli run "$force_example" --steps 2 --fmi 2
expect "--fmi on run" 2 "--fmi: not an option of run; it is for fmu"
# Every flag is refused with a command none of its rows lists (it would do
# nothing there), naming the flag, the command and the ones it is for.
cli validate "$force_example" --steps 5
expect "--steps on validate" 2 "--steps: not an option of validate; it is for run and sessions"
cli methods --every 2
expect "--every on methods" 2 "--every: not an option of methods; it is for run and sessions"
cli --server 127.0.0.1:1 snapshots create x --steps 5
expect "--steps on snapshots" 2 "--steps: not an option of snapshots; it is for run and sessions"
cli fmu "$force_example" --output "$work/p.fmu" --timeout 3
expect "--timeout on fmu (no call is made)" 2 "--timeout: not an option of fmu" "validate, evaluate, run"
cli urdf "$work/none.urdf" --no-certificate
expect "--no-certificate on urdf" 2 "--no-certificate: not an option of urdf; it is for run, ensemble and sessions"
cli --server 127.0.0.1:1 fmu "$force_example" --output "$work/remote.fmu"
expect "fmu --server writes an FMU (no call is made)" 0 "wrote"
check "fmu --server bakes the address in as tether.server's start value" "$py" - "$work/remote.fmu" <<'EOF2'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.read("resources/server.txt") == b"127.0.0.1:1\n", z.namelist()
xml = z.read("modelDescription.xml").decode()
i = xml.index('name="tether.server"')
assert '<String start="127.0.0.1:1"/>' in xml[i:i + 600], xml[i:i + 600]
EOF2
cli fmu "$work/no-such-file.json" --output "$work/p.fmu"
expect "fmu: missing description file" 1 "no-such-file.json" "cannot open"
mk fmu_bad 'sy["constraints"].append({"name": "c2", "expression": "x + zz"})'
cli fmu "$work/fmu_bad.json" --output "$work/bad.fmu"
expect "fmu: bad description names the field" 2 "system.constraints[1].expression" "unknown name 'zz'"
[[ -e "$work/bad.fmu" ]] && fail "fmu: a bad description left $work/bad.fmu"
printf '{"system": {"coordinates": ["x"], "massez": 1}}' >"$work/fmu_unknown_field.json"
cli fmu "$work/fmu_unknown_field.json" --output "$work/bad.fmu"
expect "fmu: unknown field" 2 "massez"
cli fmu "$force_example" --output "$work/no-such-dir/p.fmu"
expect "fmu: --output into a missing directory" 1 "--output" "no-such-dir/p.fmu"
TETHER_FMU_LIBRARY="$work/nowhere.so" timeout 60 "$tether" fmu "$force_example" --output "$work/p.fmu" >"$out" 2>"$err" </dev/null; rc=$?
expect "fmu: TETHER_FMU_LIBRARY names a missing file" 1 "nowhere.so" "TETHER_FMU_LIBRARY"
TETHER_FMU_LIBRARY="$work/nowhere.so" timeout 60 "$tether" fmu "$force_example" --output "$work/p.fmu" --fmi 3 >"$out" 2>"$err" </dev/null; rc=$?
expect "fmu --fmi 3: a missing library names both" 1 "tether-fmi2.so" "tether-fmi3.so" "nowhere.so"
mkdir -p "$work/lonely"
: >"$work/lonely/tether-fmi2.so"
TETHER_FMU_LIBRARY="$work/lonely/tether-fmi2.so" timeout 60 "$tether" fmu "$force_example" --output "$work/p.fmu" >"$out" 2>"$err" </dev/null; rc=$?
expect "fmu: no engine library beside TETHER_FMU_LIBRARY" 1 "libtether-fmi2.so.1" "beside"
cli fmu "$force_example" --output "$work/my model.fmu"
expect "fmu writes the FMU" 0 "wrote" "modelIdentifier my_model"
check "the FMU is a zip with modelDescription.xml, the library and the spec" "$py" - "$work/my model.fmu" "$force_example" <<'EOF2'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
want = {"modelDescription.xml", "binaries/linux64/my_model.so",
        "binaries/linux64/libtether-fmi2.so.1", "resources/spec.json"}
assert want <= names, names
assert z.read("resources/spec.json") == open(sys.argv[2], "rb").read()
xml = z.read("modelDescription.xml").decode()
assert 'fmiVersion="2.0"' in xml and 'modelIdentifier="my_model"' in xml, xml[:400]
assert z.read("binaries/linux64/my_model.so")[:4] == b"\x7fELF"
assert z.read("binaries/linux64/libtether-fmi2.so.1")[:4] == b"\x7fELF"
assert "resources/server.txt" not in names  # no --server: in process by default
i = xml.index('name="tether.server"')
assert '<String start=""/>' in xml[i:i + 600], xml[i:i + 600]
EOF2
cp "$work/my model.fmu" "$work/first.fmu"
cli fmu "$force_example" --output "$work/my model.fmu" --fmi 2 --quiet
expect "fmu --fmi 2 --quiet: nothing on stderr" 0 '!wrote'
check "the same description gives the same FMU bytes" cmp "$work/first.fmu" "$work/my model.fmu"
}

# ===========================================================================
# The sections named on the command line (all by default), in the order
# given; each starts from the shared setup above and needs nothing from
# another section.
for name in "${selected[@]}"; do
  "section_$name"
done

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
