#!/usr/bin/env bash
# `tether --server` over TLS and mTLS and with tokens: certificates made at
# test time (tests/support/make_pki.sh), a tether-server serving TLS on a
# free loopback port. Checks the right CA (flag and environment), a wrong
# CA and a plaintext client (exit 1, a message that says TLS), mTLS with and
# without a client certificate (from TETHER_CLIENT_TLS_*, or from the
# deprecated TETHER_TLS_CERT/KEY with a warning), and the usage errors of the --tls-* and
# --token* flags and their variables (exit 2 naming the flag or variable);
# the token never shows in a message.
#
# Usage: cli_tls_test.sh TETHER TETHER_SERVER SOURCE_DIR
set -uo pipefail
tether="$1"
server_bin="$2"
src="$3"
example="$src/examples/circle_pendulum.json"
token="s3cr3t-T0ken.cli_42"

work="$(mktemp -d)"
server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT
# A developer's settings must not leak in.
unset TETHER_TLS_CA TETHER_CLIENT_TLS_CERT TETHER_CLIENT_TLS_KEY TETHER_TLS_CERT TETHER_TLS_KEY \
  TETHER_TLS_SERVER_NAME TETHER_TOKEN TETHER_TOKEN_FILE TETHER_ALLOW_PLAINTEXT_TOKEN

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

pki="$work/pki"
mkdir "$pki"
if ! sh "$src/tests/support/make_pki.sh" "$pki"; then
  echo "make_pki.sh failed:"; cat "$pki/openssl.log"; exit 1
fi

# start_server ARGS...: sets $server_pid and $port. The previous server's
# output goes first: the new one truncates it only once it runs, and a
# loaded machine let the loop below read the old port (CI, 2026-12-06:
# every mTLS check then found "Connection refused" on the first server's
# port).
start_server() {
  rm -f "$work/server.out" "$work/server.err"
  "$server_bin" --listen 127.0.0.1:0 "$@" >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  port=""
  for _ in $(seq 1 300); do
    port="$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$work/server.out" 2>/dev/null | head -n1)"
    [[ -n "$port" ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "tether-server did not start:"; cat "$work/server.err"
  exit 1
}

# expect NAME CODE PATTERN -- COMMAND...: COMMAND exits CODE and its stderr
# matches the grep -E PATTERN ("" for any); the token is not in its output.
expect() {
  local name="$1" want="$2" pattern="$3"
  shift 4
  "$@" >"$work/stdout" 2>"$work/stderr"
  local got=$?
  if [[ "$got" != "$want" ]]; then
    fail "$name: exit $got, expected $want"
    sed 's/^/  stderr: /' "$work/stderr" | head -n 10
  elif [[ -n "$pattern" ]] && ! grep -qE -- "$pattern" "$work/stderr"; then
    fail "$name: stderr does not match '$pattern'"
    sed 's/^/  stderr: /' "$work/stderr" | head -n 10
  elif grep -qF -- "$token" "$work/stdout" "$work/stderr"; then
    fail "$name: the token shows in the output"
  else
    pass "$name (exit $got)"
  fi
}

start_server --tls-cert "$pki/server.crt" --tls-key "$pki/server.key"
server="localhost:$port"
echo "TLS server at $server"

expect "health with the right CA" 0 "" -- "$tether" health --server "$server" --tls-ca "$pki/ca.crt"
if grep -q SERVING "$work/stdout"; then pass "health prints SERVING"; else fail "health printed $(cat "$work/stdout")"; fi
expect "health by IP with --tls-server-name" 0 "" -- \
  "$tether" health --server "127.0.0.1:$port" --tls-ca "$pki/ca.crt" --tls-server-name localhost
"$tether" run "$example" --steps 50 --every 10 --quiet >"$work/offline.jsonl" 2>/dev/null
TETHER_TLS_CA="$pki/ca.crt" "$tether" --server "$server" run "$example" --steps 50 --every 10 \
  --quiet >"$work/remote.jsonl" 2>"$work/stderr"
if [[ -s "$work/remote.jsonl" ]] && cmp -s "$work/offline.jsonl" "$work/remote.jsonl"; then
  pass "run over TLS (CA from TETHER_TLS_CA) prints the offline bytes"
else
  fail "run over TLS: $(head -c 300 "$work/stderr")"
fi
expect "a token over TLS is accepted by a server without tokens" 0 "" -- \
  env TETHER_TOKEN="$token" "$tether" sessions list --server "$server" --tls-ca "$pki/ca.crt"
expect "the flag overrides TETHER_TLS_CA" 0 "" -- \
  env TETHER_TLS_CA="$pki/wrong-ca.crt" "$tether" health --server "$server" --tls-ca "$pki/ca.crt"

expect "wrong CA: health" 1 "TLS handshake with $server failed.*$pki/wrong-ca.crt" -- \
  "$tether" health --server "$server" --tls-ca "$pki/wrong-ca.crt" --token "$token"
expect "wrong CA: sessions list" 1 "^error: the TLS handshake with $server failed" -- \
  "$tether" sessions list --server "$server" --tls-ca "$pki/wrong-ca.crt" --timeout 20
# The failure once, explained: none of gRPC core's own lines (one per
# reconnect attempt) unless GRPC_VERBOSITY asks for them.
if grep -q "ssl_transport_security" "$work/stderr"; then
  fail "wrong CA: gRPC core's log lines are printed: $(head -c 300 "$work/stderr")"
else
  pass "wrong CA: no gRPC core log lines"
fi
GRPC_VERBOSITY=ERROR "$tether" health --server "$server" --tls-ca "$pki/wrong-ca.crt" \
  >/dev/null 2>"$work/stderr"
if grep -q "ssl_transport_security" "$work/stderr"; then
  pass "wrong CA with GRPC_VERBOSITY=ERROR: gRPC core's lines are printed"
else
  fail "GRPC_VERBOSITY=ERROR did not bring gRPC core's lines back"
fi
expect "wrong CA: run" 1 "TLS handshake" -- \
  env TETHER_TLS_CA="$pki/wrong-ca.crt" "$tether" --server "$server" run "$example" --steps 5
expect "wrong server name" 1 "issued for the name 'elsewhere.example'" -- \
  "$tether" health --server "$server" --tls-ca "$pki/ca.crt" --tls-server-name elsewhere.example
expect "plaintext client of a TLS server" 1 "if it serves TLS, this plaintext client" -- \
  "$tether" sessions list --server "$server" --timeout 20
stop_server

start_server --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" --tls-client-ca "$pki/ca.crt"
server="localhost:$port"
expect "mTLS with a client certificate" 0 "" -- "$tether" sessions list --server "$server" \
  --tls-ca "$pki/ca.crt" --tls-cert "$pki/client.crt" --tls-key "$pki/client.key"
expect "mTLS, certificate from the environment" 0 "" -- env TETHER_TLS_CA="$pki/ca.crt" \
  TETHER_CLIENT_TLS_CERT="$pki/client.crt" TETHER_CLIENT_TLS_KEY="$pki/client.key" \
  "$tether" sessions list --server "$server" --timeout 20
if grep -q "deprecated" "$work/stderr"; then fail "the new names warn: $(cat "$work/stderr")"; fi
# TETHER_TLS_CERT and TETHER_TLS_KEY are tether-server's: still the client's
# when no TETHER_CLIENT_TLS_* is set, with a warning; ignored (and said so)
# when one is.
expect "mTLS, certificate from the deprecated server variables" 0 \
  "^tether: TETHER_TLS_CERT is deprecated for clients: use TETHER_CLIENT_TLS_CERT \(TETHER_TLS_CERT is tether-server's own certificate\)" -- \
  env TETHER_TLS_CA="$pki/ca.crt" TETHER_TLS_CERT="$pki/client.crt" TETHER_TLS_KEY="$pki/client.key" \
  "$tether" sessions list --server "$server" --timeout 20
if grep -q "^tether: TETHER_TLS_KEY is deprecated for clients: use TETHER_CLIENT_TLS_KEY" "$work/stderr"; then
  pass "the deprecated key variable warns too"
else
  fail "no warning for TETHER_TLS_KEY: $(cat "$work/stderr")"
fi
expect "the new variables win over the server's (wrong for a client)" 0 \
  "^tether: TETHER_TLS_CERT is deprecated for clients and ignored: TETHER_CLIENT_TLS_CERT is set and wins" -- \
  env TETHER_TLS_CA="$pki/ca.crt" TETHER_TLS_CERT="$pki/wrong-ca.crt" TETHER_TLS_KEY="$pki/wrong-ca.key" \
  TETHER_CLIENT_TLS_CERT="$pki/client.crt" TETHER_CLIENT_TLS_KEY="$pki/client.key" \
  "$tether" sessions list --server "$server" --timeout 20
expect "one new variable: the old pair is ignored" 2 \
  "^tether: --tls-key: missing; a client certificate needs its private key" -- \
  env TETHER_TLS_CA="$pki/ca.crt" TETHER_TLS_KEY="$pki/client.key" \
  TETHER_CLIENT_TLS_CERT="$pki/client.crt" "$tether" health --server "$server"
if grep -q "^tether: TETHER_TLS_KEY is deprecated for clients and ignored: TETHER_CLIENT_TLS_CERT is set and wins" "$work/stderr"; then
  pass "the ignored old key is named in a warning"
else
  fail "no warning for the ignored TETHER_TLS_KEY: $(cat "$work/stderr")"
fi
expect "the flag overrides the variables (no warning)" 0 "" -- \
  env TETHER_TLS_CERT=/nonexistent/server.crt TETHER_TLS_KEY=/nonexistent/server.key \
  "$tether" sessions list --server "$server" --tls-ca "$pki/ca.crt" --tls-cert "$pki/client.crt" \
  --tls-key "$pki/client.key" --timeout 20
if grep -q "deprecated" "$work/stderr"; then fail "flags: a warning: $(cat "$work/stderr")"; fi
expect "mTLS without a client certificate" 1 "no client certificate.*--tls-client-ca" -- \
  "$tether" sessions list --server "$server" --tls-ca "$pki/ca.crt" --timeout 20
# The shipped probes (deploy/): health needs no client certificate.
expect "mTLS: health without a client certificate (the probes)" 0 "" -- \
  "$tether" health --server "$server" --tls-ca "$pki/ca.crt" --timeout 20
expect "mTLS: readiness of tether.v1.Simulator without a client certificate" 0 "" -- \
  "$tether" health --server "$server" --tls-ca "$pki/ca.crt" --timeout 20 tether.v1.Simulator
expect "mTLS: a client certificate of another CA fails the handshake, health too" 1 \
  "accept the client certificate $pki/wrong-ca.crt" -- \
  "$tether" health --server "$server" --tls-ca "$pki/ca.crt" --tls-cert "$pki/wrong-ca.crt" \
  --tls-key "$pki/wrong-ca.key" --timeout 20
stop_server

# A private key others can read stops the server (exit 2, naming it).
chmod 0644 "$pki/server.key"
"$server_bin" --listen 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" \
  >"$work/server.out" 2>"$work/server.err" </dev/null &
refused_pid=$!
wait "$refused_pid"
refused_rc=$?
if [[ "$refused_rc" == 2 ]] && grep -qF -- "--tls-key $pki/server.key: UNPROTECTED SECRET FILE: mode 0644" "$work/server.err"; then
  pass "a 0644 --tls-key is refused (exit 2, naming the file and its mode)"
else
  fail "a 0644 --tls-key: exit $refused_rc, stderr $(head -c 300 "$work/server.err")"
fi
chmod 0600 "$pki/server.key"

# Usage errors: exit 2, naming the flag or the variable (and the file).
expect "--tls-ca without a value" 2 "^tether: --tls-ca: expected a PEM file" -- \
  "$tether" health --server "$server" --tls-ca
expect "--token without a value" 2 "^tether: --token: expected a token" -- \
  "$tether" health --server "$server" --token --quiet
expect "--tls-ca without --server" 2 "^tether: --tls-ca: needs --server ADDR" -- \
  "$tether" validate "$example" --tls-ca "$pki/ca.crt"
expect "TETHER_TLS_CA is ignored offline" 0 "" -- \
  env TETHER_TLS_CA=/nonexistent/ca.crt "$tether" validate "$example"
expect "unreadable --tls-ca" 2 "^tether: --tls-ca /nonexistent/ca.crt: cannot read it: No such file" -- \
  "$tether" health --server "$server" --tls-ca /nonexistent/ca.crt
expect "unreadable TETHER_TLS_CA" 2 "^tether: TETHER_TLS_CA /nonexistent/ca.crt: cannot read it" -- \
  env TETHER_TLS_CA=/nonexistent/ca.crt "$tether" --server "$server" run "$example"
expect "unreadable TETHER_CLIENT_TLS_CERT" 2 \
  "^tether: TETHER_CLIENT_TLS_CERT /nonexistent/c.crt: cannot read it" -- \
  env TETHER_CLIENT_TLS_CERT=/nonexistent/c.crt TETHER_CLIENT_TLS_KEY="$pki/client.key" \
  "$tether" health --server "$server"
expect "unreadable deprecated TETHER_TLS_CERT: the message names it" 2 \
  "^tether: TETHER_TLS_CERT /nonexistent/s.crt: cannot read it" -- \
  env TETHER_TLS_CERT=/nonexistent/s.crt TETHER_TLS_KEY="$pki/client.key" \
  "$tether" health --server "$server"
expect "--tls-ca not PEM" 2 "^tether: --tls-ca $example: not a PEM file" -- \
  "$tether" health --server "$server" --tls-ca "$example"
expect "--tls-cert without --tls-key" 2 "^tether: --tls-key: missing; a client certificate needs its private key" -- \
  "$tether" health --server "$server" --tls-ca "$pki/ca.crt" --tls-cert "$pki/client.crt"
expect "--token and --token-file" 2 "^tether: --token, --token-file: give one, not both" -- \
  "$tether" health --server "$server" --token "$token" --token-file "$pki/ca.crt"
expect "TETHER_TOKEN and TETHER_TOKEN_FILE" 2 "^tether: TETHER_TOKEN, TETHER_TOKEN_FILE: set one" -- \
  env TETHER_TOKEN="$token" TETHER_TOKEN_FILE=/x "$tether" health --server "$server"
printf '%s\n' "$token" >"$work/token"
printf '\n' >"$work/empty_token"
expect "empty --token-file" 2 "^tether: --token-file $work/empty_token: the token is empty" -- \
  "$tether" health --server "$server" --token-file "$work/empty_token"
expect "a token in plaintext to a non-loopback address" 2 \
  "^tether: --token: refusing to send a bearer token in plaintext to 192.0.2.1:50051.*--tls-ca FILE.*--allow-plaintext-token" -- \
  "$tether" health --server 192.0.2.1:50051 --token "$token"
expect "a token file in plaintext to a non-loopback address" 2 "^tether: TETHER_TOKEN_FILE: refusing" -- \
  env TETHER_TOKEN_FILE="$work/token" "$tether" health --server 192.0.2.1:50051
expect "TETHER_ALLOW_PLAINTEXT_TOKEN must be true or false" 2 \
  "^tether: TETHER_ALLOW_PLAINTEXT_TOKEN: expected true or false, found 'yes'" -- \
  env TETHER_ALLOW_PLAINTEXT_TOKEN=yes "$tether" health --server "$server"
# Allowed: the call is made (and fails: nothing listens there).
expect "--allow-plaintext-token lets it through" 1 "health check of 192.0.2.1:50051 failed" -- \
  "$tether" health --server 192.0.2.1:50051 --token-file "$work/token" --allow-plaintext-token \
  --timeout 0.5

# Plaintext loopback with a token: sent as metadata (a server without
# tokens ignores it).
start_server
expect "a token in plaintext to loopback" 0 "" -- \
  "$tether" sessions list --server "127.0.0.1:$port" --token-file "$work/token"
expect "--token-file overrides both token variables" 0 "" -- env TETHER_TOKEN=x \
  TETHER_TOKEN_FILE=/nonexistent "$tether" health --server "127.0.0.1:$port" --token-file "$work/token"
stop_server

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
