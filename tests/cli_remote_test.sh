#!/usr/bin/env bash
# The `tether --server` path end to end: starts tether-server on a free
# loopback port and checks that remote runs print the same bytes as offline
# runs, that `tether health` works as a health check, and that exit codes
# match (2 for bad input through the server).
#
# Usage: cli_remote_test.sh TETHER TETHER_SERVER SOURCE_DIR
set -uo pipefail
tether="$1"
server_bin="$2"
src="$3"
example="$src/examples/circle_pendulum.json"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# Starts the server; sets $server_pid and $address.
start_server() {
  "$server_bin" --listen 127.0.0.1:0 >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  address=""
  for _ in $(seq 1 300); do
    address="$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$work/server.out" | head -n1)"
    [[ -n "$address" ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "tether-server did not start:"; cat "$work/server.err"
  exit 1
}

# expect_exit CODE NAME -- COMMAND...: runs COMMAND, checks its exit code.
expect_exit() {
  local want="$1" name="$2"
  shift 3
  "$@" >"$work/stdout" 2>"$work/stderr"
  local got=$?
  if [[ "$got" == "$want" ]]; then
    pass "$name (exit $got)"
  else
    fail "$name: exit $got, expected $want"
    sed 's/^/  stderr: /' "$work/stderr" | head -n 20
  fi
}

# same_stdout NAME ARGS...: offline `tether ARGS` and `tether --server ADDR
# ARGS` must exit alike and print identical bytes.
same_stdout() {
  local name="$1"
  shift
  "$tether" "$@" >"$work/offline.out" 2>"$work/offline.err"
  local offline_exit=$?
  "$tether" --server "$address" "$@" >"$work/remote.out" 2>"$work/remote.err"
  local remote_exit=$?
  if [[ "$offline_exit" != "$remote_exit" ]]; then
    fail "$name: offline exit $offline_exit, remote exit $remote_exit"
    sed 's/^/  remote stderr: /' "$work/remote.err" | head -n 20
  elif ! cmp -s "$work/offline.out" "$work/remote.out"; then
    fail "$name: stdout differs between offline and remote"
    diff "$work/offline.out" "$work/remote.out" | head -n 10
  elif [[ ! -s "$work/offline.out" ]]; then
    fail "$name: empty stdout"
  else
    pass "$name (exit $offline_exit, $(wc -l <"$work/offline.out") identical lines)"
  fi
}

# same_failure NAME ARGS...: offline `tether ARGS --output FILE` and the
# same through the server must exit alike (non-zero), print identical
# stderr and leave no FILE behind.
same_failure() {
  local name="$1"
  shift
  rm -f "$work/offline.file" "$work/remote.file"
  "$tether" "$@" --output "$work/offline.file" >"$work/offline.out" 2>"$work/offline.err"
  local offline_exit=$?
  "$tether" --server "$address" "$@" --output "$work/remote.file" >"$work/remote.out" 2>"$work/remote.err"
  local remote_exit=$?
  if [[ "$offline_exit" != "$remote_exit" || "$offline_exit" == 0 ]]; then
    fail "$name: offline exit $offline_exit, remote exit $remote_exit (expected equal, non-zero)"
    sed 's/^/  remote stderr: /' "$work/remote.err" | head -n 20
  elif ! cmp -s "$work/offline.err" "$work/remote.err"; then
    fail "$name: stderr differs between offline and remote"
    diff "$work/offline.err" "$work/remote.err" | head -n 10
  elif [[ ! -s "$work/offline.err" ]]; then
    fail "$name: empty stderr"
  elif [[ -e "$work/offline.file" || -e "$work/remote.file" ]]; then
    fail "$name: an output file was created (offline: $([[ -e "$work/offline.file" ]] && echo yes || echo no), remote: $([[ -e "$work/remote.file" ]] && echo yes || echo no))"
  else
    pass "$name (exit $offline_exit, same stderr, no output file)"
  fi
}

start_server
echo "server at $address"

# Byte-identical runs: jsonl (frames + certificate line) and csv.
same_stdout "run jsonl identical" run "$example" --steps 200 --every 10 --quiet
if tail -n 1 "$work/remote.out" | grep -q '^{"certificate":'; then
  pass "last jsonl line is the certificate"
else
  fail "last jsonl line is not {\"certificate\": ...}"
fi
frames="$(grep -vc '^{"certificate":' "$work/remote.out")"
if [[ "$frames" == 21 ]]; then pass "21 frames (steps 0, 10, ..., 200)"; else fail "$frames frames, expected 21"; fi
same_stdout "run csv identical" run "$example" --steps 200 --every 10 --format csv --quiet
same_stdout "run --until identical" run "$example" --until 0.05 --every 7 --quiet
sed 's/"method":"RK4","stepSize":0.001/"method":"DOPRI5"/' "$example" >"$work/dopri.json"
if grep -q DOPRI5 "$work/dopri.json"; then pass "DOPRI5 variant written"; else fail "DOPRI5 variant: no method to replace in $example"; fi
same_stdout "run DOPRI5 --output-interval identical" run "$work/dopri.json" --until 1 --output-interval 0.01 --quiet
frames="$(grep -vc '^{"certificate":' "$work/remote.out")"
if [[ "$frames" == 101 ]]; then pass "101 grid frames remote"; else fail "$frames grid frames, expected 101"; fi
same_stdout "run RK4 --output-interval --every identical" run "$example" --until 0.05 --output-interval 0.0037 --every 7 --format csv --quiet
same_failure "run --output-interval 0" run "$example" --steps 10 --output-interval 0 --quiet
# Every method of the engine's table (`tether methods`, a name first on each
# line) gives the same bytes remote as offline.
mapfile -t methods < <("$tether" methods | awk '{print $1}')
if [[ ${#methods[@]} -gt 0 ]]; then pass "tether methods lists ${#methods[@]} methods"; else fail "tether methods listed none"; fi
for m in "${methods[@]}"; do
  sed "s/\"method\":\"RK4\"/\"method\":\"$m\"/" "$example" >"$work/method_$m.json"
  grep -q "\"method\":\"$m\"" "$work/method_$m.json" || fail "$m: no method to replace in $example"
  same_stdout "run $m identical" run "$work/method_$m.json" --until 0.05 --every 10 --quiet
done
same_stdout "validate identical" validate "$example"
same_stdout "evaluate identical" evaluate "$example"

# Validation warnings (alpha = 0, an inconsistent start) reach stderr as
# offline, before the run; --quiet silences both.
sed 's/"alpha":10/"alpha":0/; s/"q":\[1,0\]/"q":[1.01,0]/' "$example" >"$work/warn.json"
same_stdout "run with warnings identical" run "$work/warn.json" --steps 20 --every 10
grep '^warning: ' "$work/offline.err" >"$work/offline.warn"
grep '^warning: ' "$work/remote.err" >"$work/remote.warn"
if [[ "$(wc -l <"$work/offline.warn")" -ge 2 ]] && cmp -s "$work/offline.warn" "$work/remote.warn"; then
  pass "run warnings on stderr identical ($(wc -l <"$work/remote.warn") lines)"
else
  fail "run warnings differ between offline and remote"
  diff "$work/offline.warn" "$work/remote.warn" | head -n 6
fi
"$tether" --server "$address" run "$work/warn.json" --steps 20 --quiet >/dev/null 2>"$work/stderr"
if grep -q '^warning: ' "$work/stderr"; then fail "--quiet still prints warnings"; else pass "--quiet silences warnings"; fi

# --output FILE through the server.
"$tether" --server "$address" run "$example" --steps 200 --every 10 --quiet \
  --output "$work/remote_file.jsonl" >/dev/null 2>&1
"$tether" run "$example" --steps 200 --every 10 --quiet >"$work/offline_run.jsonl" 2>/dev/null
if cmp -s "$work/remote_file.jsonl" "$work/offline_run.jsonl"; then
  pass "--output through the server"
else
  fail "--output through the server differs"
fi

# --until at or before the initial time (0): rejected before any output,
# alike offline and remote.
same_failure "run --until at the initial time" run "$example" --until 0 --quiet
same_failure "run --until before the initial time" run "$example" --until -0.5 --quiet

# A description past a compile limit (a kinetic energy whose mass matrix
# is dense: 1024 coordinates, about 3n^2/2 distinct nodes whatever the
# compiler does; tests/support/hostile_specs.h) is the description's error,
# exit 2, remote as offline; neither side runs for more than a few seconds.
python3 - "$work/swelling.json" <<'PY'
import json, sys
n = 1024
q = ["q%d" % i for i in range(n)]
C = "+".join("(2+cos(%s))*der(%s)" % (x, x) for x in q)
S = "+".join("(2+sin(%s))*der(%s)" % (x, x) for x in q)
V = "+".join("der(%s)^2" % x for x in q)
json.dump({"system": {"coordinates": q,
                      "kineticEnergy": "0.5*(%s)^2+0.5*(%s)^2+0.5*(%s)" % (C, S, V)},
           "initial": {"q": [0.1] * n, "v": [0] * n},
           "integrator": {"method": "RK4", "stepSize": 0.001}}, open(sys.argv[1], "w"))
PY
same_failure "run past a compile limit" run "$work/swelling.json" --steps 1 --quiet
"$tether" run "$work/swelling.json" --steps 1 --quiet >/dev/null 2>&1
if [[ $? == 2 ]]; then pass "offline run past a compile limit exits 2"; else fail "offline run past a compile limit: expected exit 2"; fi
if [[ "$(head -c 200 "$work/offline.err")" == *"RESOURCE_EXHAUSTED"*"system.kinetic_energy"*"max_nodes"* ]]; then
  pass "the compile limit's message names the code, the expression and the limit"
else
  fail "compile limit message: $(head -c 300 "$work/offline.err")"
fi
"$tether" --server "$address" validate "$work/swelling.json" >/dev/null 2>&1
remote_exit=$?
if [[ "$remote_exit" == 2 ]]; then
  pass "remote validate past a compile limit exits 2"
else
  fail "remote validate past a compile limit: exit $remote_exit, expected 2"
fi

# A full stdout: validate and evaluate exit 1 with a write error, remote
# as offline.
if [[ -w /dev/full ]]; then
  for command in validate evaluate; do
    "$tether" "$command" "$example" >/dev/full 2>"$work/offline.err"
    offline_exit=$?
    "$tether" --server "$address" "$command" "$example" >/dev/full 2>"$work/remote.err"
    remote_exit=$?
    if [[ "$remote_exit" == 1 && "$offline_exit" == 1 ]] && grep -q "write error" "$work/remote.err" \
        && cmp -s "$work/offline.err" "$work/remote.err"; then
      pass "remote $command to /dev/full: exit 1, write error, as offline"
    else
      fail "$command to /dev/full: offline exit $offline_exit '$(cat "$work/offline.err")', remote exit $remote_exit '$(cat "$work/remote.err")'"
    fi
  done
else
  echo "skip: /dev/full is not writable"
fi

# Bad input: exit 2 through the server, for a spec the server rejects and
# for malformed JSON (read locally with the engine's parser, as offline).
cat >"$work/bad_expression.json" <<'EOF'
{"system":{"coordinates":["x","y"],"masses":{"values":[1,1]},"constraints":[{"name":"rod","expression":"(x^2 + y^2 - 1"}],"baumgarte":{"alpha":10,"beta":10}},"initial":{"q":[1,0]},"integrator":{"method":"RK4","stepSize":0.001}}
EOF
printf '{"system": {"coordinates": ["x"' >"$work/malformed.json"
expect_exit 2 "remote run of a bad spec" -- "$tether" --server "$address" run "$work/bad_expression.json" --steps 10
if grep -q "constraints\[0\]" "$work/stderr"; then pass "error names the field"; else fail "error does not name system.constraints[0]"; sed 's/^/  /' "$work/stderr"; fi
expect_exit 2 "offline run of a bad spec" -- "$tether" run "$work/bad_expression.json" --steps 10
expect_exit 2 "remote evaluate of a bad spec" -- "$tether" --server "$address" evaluate "$work/bad_expression.json"
expect_exit 2 "remote run of malformed JSON" -- "$tether" --server "$address" run "$work/malformed.json" --steps 10
cp "$work/stderr" "$work/remote_malformed.err"
"$tether" run "$work/malformed.json" --steps 10 >/dev/null 2>"$work/offline_malformed.err"
if cmp -s "$work/remote_malformed.err" "$work/offline_malformed.err"; then
  pass "malformed JSON: same message offline and remote"
else
  fail "malformed JSON: messages differ"
  diff "$work/offline_malformed.err" "$work/remote_malformed.err" | head -n 6
fi

# A run that fails numerically (the force is infinite at t = 0.0505, an
# RK4 stage time): exit 3 both ways, the frames before the failure (and the
# certificate line) identical.
cat >"$work/fails.json" <<'EOF'
{"system":{"coordinates":["x","y"],"parameters":[{"name":"l","value":1},{"name":"grav","value":9.81}],"masses":{"values":[1,1]},"potentialEnergy":"grav*y","generalizedForces":["1/(t - 0.0505)","0"],"constraints":[{"name":"rod","expression":"(x^2 + y^2 - l^2)/2"}],"baumgarte":{"alpha":10,"beta":10}},"initial":{"q":[1,0],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}}
EOF
same_stdout "failed run identical" run "$work/fails.json" --steps 200 --every 10 --quiet
if [[ "$(cat "$work/remote.err")" == "$(cat "$work/offline.err")" ]] && grep -q "simulation failed at step" "$work/remote.err"; then
  pass "failed run: same message offline and remote"
else
  fail "failed run messages: offline '$(cat "$work/offline.err")' remote '$(cat "$work/remote.err")'"
fi

# Sessions: the CLI deletes its sessions after a run.
expect_exit 0 "sessions list" -- "$tether" sessions list --server "$address"
if grep -q '"sessions"' "$work/stdout"; then pass "sessions list prints JSON"; else fail "sessions list output: $(cat "$work/stdout")"; fi
expect_exit 1 "sessions get of an unknown id" -- "$tether" sessions get 0123456789abcdef --server "$address"

# Snapshots and portable state: create, run, snapshot, export, import.
expect_exit 0 "sessions create" -- "$tether" sessions create "$example" demo --server "$address"
sid=$(sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p' "$work/stdout")
if [[ ${#sid} == 32 ]]; then pass "sessions create prints the session"; else fail "sessions create output: $(cat "$work/stdout")"; fi
expect_exit 0 "snapshots create" -- "$tether" snapshots create "$sid" start --server "$address"
if grep -q '"snapshotId":"1"' "$work/stdout"; then pass "snapshots create prints it"; else fail "snapshots create output: $(cat "$work/stdout")"; fi
expect_exit 0 "snapshots list" -- "$tether" snapshots list "$sid" --server "$address"
if grep -q '"label":"start"' "$work/stdout"; then pass "snapshots list shows it"; else fail "snapshots list output: $(cat "$work/stdout")"; fi
expect_exit 0 "snapshots restore" -- "$tether" snapshots restore "$sid" 1 --server "$address"
expect_exit 1 "snapshots restore of an unknown snapshot" -- "$tether" snapshots restore "$sid" 9 --server "$address"
expect_exit 2 "snapshots restore of a bad id" -- "$tether" snapshots restore "$sid" x --server "$address"
expect_exit 2 "sessions export without --output" -- "$tether" sessions export "$sid" --server "$address"
expect_exit 0 "sessions export" -- "$tether" sessions export "$sid" --output "$work/session.bin" --server "$address"
expect_exit 0 "sessions import" -- "$tether" sessions import "$work/session.bin" copy --server "$address"
if grep -q '"displayName":"copy"' "$work/stdout"; then pass "sessions import prints the new session"; else fail "sessions import output: $(cat "$work/stdout")"; fi
printf 'XXXX' | dd of="$work/session.bin" bs=1 seek=40 conv=notrunc 2>/dev/null
expect_exit 2 "sessions import of damaged bytes" -- "$tether" sessions import "$work/session.bin" --server "$address"
if grep -q "checksum" "$work/stderr"; then pass "damaged import names the checksum"; else fail "damaged import stderr: $(cat "$work/stderr")"; fi
expect_exit 0 "snapshots delete" -- "$tether" snapshots delete "$sid" 1 --server "$address"

# sessions run: an existing session goes on from its state, and stays; two
# runs of 50 steps end on the same bytes as one offline run of 100.
expect_exit 0 "sessions create for run" -- "$tether" sessions create "$example" runner --server "$address"
rid=$(sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p' "$work/stdout")
expect_exit 0 "sessions run" -- "$tether" sessions run "$rid" --steps 50 --every 50 -q --server "$address"
expect_exit 0 "sessions run again" -- "$tether" sessions run "$rid" --steps 50 --every 50 -q --server "$address"
grep '"step":"100"' "$work/stdout" > "$work/resumed.jsonl"
"$tether" run "$example" --steps 100 --every 100 -q | grep '"step":"100"' > "$work/straight.jsonl"
if [[ -s "$work/resumed.jsonl" ]] && cmp -s "$work/resumed.jsonl" "$work/straight.jsonl"; then
  pass "sessions run twice ends on the bytes of one run"
else
  fail "sessions run resumed: $(head -c 300 "$work/resumed.jsonl") vs $(head -c 300 "$work/straight.jsonl")"
fi
expect_exit 0 "sessions get after sessions run" -- "$tether" sessions get "$rid" --server "$address"
if grep -q '"step":"100"' "$work/stdout"; then pass "the session stays, at step 100"; else fail "sessions get: $(cat "$work/stdout")"; fi
expect_exit 0 "sessions update" -- "$tether" sessions update "$rid" --parameter l=2 --gains 5,5 --certificate off --server "$address"
expect_exit 2 "sessions update of an unknown parameter" -- "$tether" sessions update "$rid" --parameter nope=1 --server "$address"
if grep -q "parameters\[nope\]" "$work/stderr"; then pass "the unknown parameter is named"; else fail "sessions update stderr: $(cat "$work/stderr")"; fi
expect_exit 2 "sessions update with nothing to change" -- "$tether" sessions update "$rid" --server "$address"
expect_exit 2 "--parameter without a value" -- "$tether" sessions update "$rid" --parameter l --server "$address"
expect_exit 2 "--gains with one number" -- "$tether" sessions update "$rid" --gains 5 --server "$address"
expect_exit 1 "sessions run of an unknown id" -- "$tether" sessions run 0123456789abcdef0123456789abcdef --steps 1 --server "$address"

# Health: SERVING against the live server, failure once it is gone.
expect_exit 0 "health against a live server" -- "$tether" health --server "$address"
if grep -q SERVING "$work/stdout"; then pass "health prints SERVING"; else fail "health printed: $(cat "$work/stdout")"; fi

kill "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null
server_pid=""
start=$(date +%s)
"$tether" health --server "$address" >/dev/null 2>"$work/stderr"
code=$?
if [[ "$code" != 0 ]]; then pass "health against a closed port (exit $code)"; else fail "health against a closed port exited 0"; fi
if (( $(date +%s) - start <= 10 )); then pass "health gives up quickly"; else fail "health took more than 10 s"; fi
expect_exit 1 "remote run against a closed port" -- "$tether" --server "$address" run "$example" --steps 10 --timeout 5

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
