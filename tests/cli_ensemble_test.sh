#!/usr/bin/env bash
# `tether ensemble` offline and through a tether-server (RunEnsemble) on a
# free loopback port: the same bytes either way (jsonl and csv, a grid over
# a parameter and an initial velocity, seeded normal draws of an input, an
# instance that fails alone), the same bytes whatever --workers offline and
# whatever the server's --workers (its instances then run on parallel
# lanes), without the certificate on the lane path offline and through the
# server (groups of eight) and on the scalar engine (--no-lanes) alike,
# explicit instances from a CSV file, per-instance frames
# (--output-interval) and reductions (--reduce) checked against those
# frames, and bad ensembles refused alike, naming the field.
#
# Usage: cli_ensemble_test.sh TETHER TETHER_SERVER SOURCE_DIR
set -uo pipefail
tether="$1"
server_bin="$2"
src="$3"
spec="$src/examples/pendulum_force_input.json"

work="$(mktemp -d)"
server_pid=""
server3_pid=""
cleanup() {
  local p
  for p in "$server_pid" "$server3_pid" "${pid:-}"; do
    if [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; then
      kill "$p" 2>/dev/null
      wait "$p" 2>/dev/null
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# start_server NAME ARGS...: a tether-server on a free loopback port, its
# output in $work/NAME.out and .err; sets $pid and $address.
start_server() {
  local name="$1"
  shift
  "$server_bin" --listen 127.0.0.1:0 "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pid=$!
  address=""
  for _ in $(seq 1 300); do
    address="$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$work/$name.out" | head -n1)"
    [[ -n "$address" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$address" ]]; then
    echo "tether-server did not start:"; cat "$work/$name.err"
    exit 1
  fi
}
start_server server
server_pid=$pid

# same NAME WANT_EXIT ARGS...: offline and remote exit WANT_EXIT and write
# identical, non-empty stdout; sets $lines.
same() {
  local name="$1" want="$2"
  shift 2
  timeout 120 "$tether" "$@" >"$work/offline.out" 2>"$work/offline.err"
  local offline_exit=$?
  timeout 120 "$tether" --server "$address" "$@" >"$work/remote.out" 2>"$work/remote.err"
  local remote_exit=$?
  lines=$(wc -l <"$work/offline.out")
  if [[ "$offline_exit" != "$want" || "$remote_exit" != "$want" ]]; then
    fail "$name: offline exit $offline_exit, remote exit $remote_exit, expected $want"
    sed 's/^/  offline stderr: /' "$work/offline.err" | head -n 5
    sed 's/^/  remote stderr: /' "$work/remote.err" | head -n 5
  elif ! cmp -s "$work/offline.out" "$work/remote.out"; then
    fail "$name: stdout differs between offline and remote"
    diff "$work/offline.out" "$work/remote.out" | head -n 6 | cut -c1-300
  elif [[ ! -s "$work/offline.out" ]]; then
    fail "$name: empty stdout"
  else
    pass "$name (exit $want, $lines identical lines)"
  fi
}

# refused NAME TEXT ARGS...: offline and remote exit 2 and name TEXT on stderr.
refused() {
  local name="$1" text="$2"
  shift 2
  local where
  for where in offline remote; do
    local server_args=()
    [[ "$where" == remote ]] && server_args=(--server "$address")
    timeout 60 "$tether" "${server_args[@]}" "$@" >"$work/out" 2>"$work/err"
    local code=$?
    if [[ "$code" != 2 ]] || ! grep -qF -- "$text" "$work/err"; then
      fail "$name ($where): exit $code, stderr:"
      sed 's/^/  /' "$work/err" | head -n 5
      return
    fi
  done
  pass "$name (exit 2 offline and remote, '$text')"
}

grid=(ensemble "$spec" --sweep l=0.8:1.2:3 --sweep "der(x)=-0.5:0.5:2"
      --random Fx=normal:0:0.5 --count 2 --seed 7 --until 0.2 --quiet)
same "grid x draws, jsonl" 0 "${grid[@]}"
if [[ "$lines" == 12 ]]; then pass "12 instances (3 x 2 x 2)"; else fail "$lines lines, expected 12"; fi
cp "$work/offline.out" "$work/grid.jsonl"
# Without the certificate the offline run and the server take the lane
# path (eight instances a group, docs/ENSEMBLES.md "Lanes"): the same bytes
# as each other and as the scalar engine (offline --no-lanes). Past a
# quantum's steps a group (8 x 1100 steps > 8192) the server still runs the
# instances in groups of eight, carried from quantum to quantum in chunks:
# the same bytes again.
group_logs() { cat "$work/server.out" "$work/server.err" | grep -c "$1"; }
# scalar NAME ARGS...: offline --no-lanes gives the bytes of the last `same`.
scalar() {
  local name="$1"
  shift
  timeout 120 "$tether" "$@" --no-lanes >"$work/scalar.out" 2>/dev/null
  if [[ -s "$work/scalar.out" ]] && cmp -s "$work/offline.out" "$work/scalar.out"; then
    pass "$name: the bytes of the scalar engine (--no-lanes)"
  else
    fail "$name: differs from the scalar engine (--no-lanes)"
  fi
}
before=$(group_logs "group=8 ")
lanes_grid=("${grid[@]}" --no-certificate)
same "grid x draws without certificate (lanes offline and remote)" 0 "${lanes_grid[@]}"
scalar "grid x draws without certificate" "${lanes_grid[@]}"
sweep9=(ensemble "$spec" --sweep "der(x)=-0.5:0.5:9" --until 0.2 --quiet --no-certificate)
same "a sweep of 9 without certificate (lanes offline and remote)" 0 "${sweep9[@]}"
scalar "a sweep of 9 without certificate" "${sweep9[@]}"
if [[ $(($(group_logs "group=8 ") - before)) == 2 ]]; then
  pass "the server ran both calls in groups of 8 (lane path)"
else
  fail "the server did not run both calls in groups of 8"
fi
before=$(group_logs "group=8 ")
long=(ensemble "$spec" --sweep "der(x)=-0.5:0.5:11" --until 1.1 --quiet --no-certificate)
same "a sweep of 11 over 1100 steps without certificate (lanes offline and remote, chunked)" 0 \
  "${long[@]}"
scalar "a sweep of 11 over 1100 steps" "${long[@]}"
if [[ $(($(group_logs "group=8 ") - before)) == 1 ]]; then
  pass "the server ran the 1100-step instances in groups of 8 (a group past a quantum's steps)"
else
  fail "the server did not run the 1100-step instances in groups of 8"
fi
# --functions fast (vectorised sin, cos, ... on the lane path): the same
# bytes offline and through the server, every line saying so, however
# many steps (a group past a quantum's steps is chunked on the server).
dp="$src/examples/double_pendulum_definitions.json"
fast=(ensemble "$dp" --sweep "th1=0.5:1.5:9" --until 0.2 --quiet --no-certificate --functions fast)
same "a double pendulum sweep of 9 with --functions fast" 0 "${fast[@]}"
if [[ $(grep -c '"fastFunctions":true' "$work/offline.out") == 9 ]]; then
  pass "--functions fast: all 9 lines say fastFunctions true"
else
  fail "--functions fast: expected 9 lines with fastFunctions true"
fi
fast_long=(ensemble "$dp" --sweep "th1=0.5:1.5:11" --until 1.5 --quiet --no-certificate --functions fast)
same "--functions fast over 1500 steps (chunked on the server)" 0 "${fast_long[@]}"
if [[ $(grep -c '"fastFunctions":true' "$work/offline.out") == 11 ]]; then
  pass "--functions fast over 1500 steps: all 11 lines say fastFunctions true"
else
  fail "--functions fast over 1500 steps: expected 11 lines with fastFunctions true"
fi
refused "--functions other" "exact or fast" ensemble "$dp" --sweep "th1=0.5:1.5:3" --until 0.1 \
  --functions fastest
timeout 120 "$tether" "${grid[@]}" --workers 3 >"$work/workers.out" 2>/dev/null
if cmp -s "$work/grid.jsonl" "$work/workers.out"; then
  pass "--workers 3 gives the bytes of --workers 1"
else
  fail "--workers 3 differs from --workers 1"
fi
/usr/bin/python3 - "$work/grid.jsonl" <<'PY' && pass "lines carry index, values, seed, state and certificate" || fail "jsonl content"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert [r["index"] for r in rows] == [str(i) for i in range(12)] or [r["index"] for r in rows] == list(range(12)), rows[0]["index"]
assert [v["name"] for v in rows[0]["values"]] == ["l", "der(x)", "Fx"], rows[0]["values"]
assert rows[0]["values"][0]["value"] == 0.8 and rows[11]["values"][0]["value"] == 1.2
assert all(r["ok"] for r in rows)
assert all(str(r["seed"]) == "7" for r in rows)
assert all(abs(r["finalState"]["t"] - 0.2) < 1e-12 for r in rows)
assert all(len(r["finalState"]["q"]) == 2 for r in rows)
assert all(r["certificate"]["stepStable"] for r in rows)
PY
timeout 120 "$tether" "${grid[@]}" --output "$work/offline.csv" 2>/dev/null
timeout 120 "$tether" --server "$address" "${grid[@]}" --output "$work/remote.csv" 2>/dev/null
if cmp -s "$work/offline.csv" "$work/remote.csv" && [[ $(wc -l <"$work/offline.csv") == 13 ]] &&
   head -n1 "$work/offline.csv" | grep -q '^index,l,der(x),Fx,ok,steps,t,q_x,q_y,v_x,v_y,'; then
  pass "csv (.csv output): header and 12 rows, identical offline and remote"
else
  fail "csv output"; head -n 2 "$work/offline.csv" "$work/remote.csv"
fi
same "an instance that fails numerically fails alone (exit 3)" 3 \
  ensemble "$spec" --sweep Fx=0:1e308:3 --until 0.05 --quiet
if [[ $(grep -c '"ok":false' "$work/offline.out") == 2 && $(grep -c '"ok":true' "$work/offline.out") == 1 ]] &&
   grep -q '"error":"[^"]' "$work/offline.out"; then
  pass "one instance ok, the two with Fx >= 5e307 failed with a cause"
else
  fail "failed instances"; cut -c1-300 "$work/offline.out"
fi
# A server with 3 workers runs one call's instances on 3 lanes (and a
# single instance on one): the same bytes as offline with one worker.
main_address="$address"
start_server server3 --workers 3
server3_pid=$pid
address3="$address"
address="$main_address"
wide=(ensemble "$spec" --sweep l=0.5:1.5:40 --sweep "der(x)=-1:1:5" --until 0.3 --quiet)
# (Without the certificate: groups of eight on the 3 lanes.)
for args in "${grid[*]}" "${wide[*]}" "${wide[*]} --no-certificate" "${fast_long[*]}"; do
  read -r -a argv <<<"$args"
  timeout 120 "$tether" "${argv[@]}" >"$work/w1.out" 2>/dev/null
  timeout 120 "$tether" --server "$address3" "${argv[@]}" >"$work/w3.out" 2>"$work/w3.err"
  if [[ -s "$work/w1.out" ]] && cmp -s "$work/w1.out" "$work/w3.out"; then
    pass "server --workers 3 (parallel lanes): the bytes of offline --workers 1 ($(wc -l <"$work/w1.out") lines)"
  else
    fail "server --workers 3 differs from offline --workers 1 (${argv[*]:0:6})"
    head -n 3 "$work/w3.err"
  fi
done
if grep -q "lanes=3" "$work/server3.err" "$work/server3.out"; then
  pass "the 3-worker server ran a call on 3 lanes"
else
  fail "no call ran on 3 lanes"
fi

printf 'l,der(x)\n1,0\n1,abc\n' >"$work/bad.csv"
printf 'l, der(x)\n0.9,0.1\n1.1,-0.2\n' >"$work/instances.csv"
same "--instances FILE.csv x a sweep" 0 \
  ensemble "$spec" --instances "$work/instances.csv" --sweep Fx=0:1:2 --until 0.2 --quiet
cp "$work/offline.out" "$work/explicit.jsonl"
timeout 60 "$tether" ensemble "$spec" --sweep l=1.1:1.1:1 --sweep "der(x)=-0.2:-0.2:1" \
  --sweep Fx=0:1:2 --until 0.2 --quiet >"$work/swept.jsonl" 2>/dev/null
/usr/bin/python3 - "$work/explicit.jsonl" "$work/swept.jsonl" <<'PY' && pass "explicit instances: values in file order, the states of the same values swept" || fail "explicit instances"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
swept = [json.loads(line) for line in open(sys.argv[2])]
assert len(rows) == 4
assert [[v["name"] for v in r["values"]] for r in rows] == [["l", "der(x)", "Fx"]] * 4
assert [r["values"][0]["value"] for r in rows] == [0.9, 0.9, 1.1, 1.1]
assert rows[2]["finalState"] == swept[0]["finalState"] and rows[3]["finalState"] == swept[1]["finalState"]
PY
printf '{"der(x)": 0.1, "l": 0.9}\n{"l": 1.1, "der(x)": -0.2}\n' >"$work/instances.jsonl"
same "--instances FILE.jsonl" 0 ensemble "$spec" --instances "$work/instances.jsonl" --until 0.2 --quiet
/usr/bin/python3 - "$work/explicit.jsonl" "$work/offline.out" <<'PY' && pass "jsonl instances: names sorted, the states of the csv's instances" || fail "jsonl instances"
import json, sys
csv_rows = [json.loads(line) for line in open(sys.argv[1])]
rows = [json.loads(line) for line in open(sys.argv[2])]
assert [[v["name"] for v in r["values"]] for r in rows] == [["der(x)", "l"]] * 2
assert rows[0]["finalState"] == csv_rows[0]["finalState"] and rows[1]["finalState"] == csv_rows[2]["finalState"]
PY
printf '{"l": 0.9}\n{"l": "x"}\n' >"$work/bad.jsonl"
refused "a bad --instances line" "bad.jsonl:2: 'l': expected a finite number, found \"x\"" \
  ensemble "$spec" --instances "$work/bad.jsonl" --until 1
same "--output-interval: each instance's frames" 0 \
  ensemble "$spec" --sweep l=0.8:1.2:3 --output-interval 0.05 --until 0.2 --quiet
cp "$work/offline.out" "$work/frames.jsonl"
same "--reduce" 0 ensemble "$spec" --sweep l=0.8:1.2:3 --output-interval 0.05 --until 0.2 --reduce --quiet
/usr/bin/python3 - "$work/frames.jsonl" "$work/offline.out" <<'PY' && pass "--reduce: 5 output times, mean/min/max of the frames, instances without frames" || fail "--reduce"
import json, sys
frames = [json.loads(line) for line in open(sys.argv[1])]
lines = [json.loads(line) for line in open(sys.argv[2])]
assert all(len(r["frames"]) == 5 for r in frames), [len(r["frames"]) for r in frames]
assert len(lines) == 4 and all(not r.get("frames") for r in lines[:3])
red = lines[3]["reduction"]
assert len(red["t"]) == 5 and abs(red["t"][2] - 0.1) < 1e-12, red["t"]
cols = len(red["columns"])
c = red["columns"].index("q_x") if "q_x" in red["columns"] else red["columns"].index("x")
qs = [r["frames"][2]["q"][0] for r in frames]  # t = 0.1
m = red["mean"][2 * cols + c]
assert abs(m - sum(qs) / 3) <= 4e-16 * max(1.0, abs(m)), (m, qs)
assert red["min"][2 * cols + c] == min(qs) and red["max"][2 * cols + c] == max(qs)
PY
refused "a bad --instances row" "bad.csv:3: column 'der(x)': expected a finite number, found 'abc'" \
  ensemble "$spec" --instances "$work/bad.csv" --until 1
refused "--reduce without --output-interval" "--reduce" ensemble "$spec" --sweep l=1:2:2 --reduce --until 1

refused "an unknown name" "ensemble.sweeps[0].name: no parameter, coordinate, der(coordinate) or input named 'k'" \
  ensemble "$spec" --sweep k=0:1:2 --until 1
refused "a negative sigma" "ensemble.random[0].b" \
  ensemble "$spec" --random grav=normal:9.81:-1 --count 3 --until 1
refused "too many instances" "ensemble.sweeps[1].count" \
  ensemble "$spec" --sweep l=1:2:1000 --sweep grav=1:2:1000 --until 1
refused "an end time before the start" "until_time" \
  ensemble "$spec" --sweep l=1:2:2 --until -1
# An end the fixed step cannot reach within the step counter is bad input,
# as for run, offline and on a server alike (offline every instance failed,
# exit 3; the server counted 2^64 steps against its limit, exit 1).
refused "an end beyond the step counter" "until_time: expected a time the fixed step h" \
  ensemble "$spec" --sweep l=1:2:3 --until 1e300

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
