#!/usr/bin/env bash
# The main job: start tether-server on a free loopback port, run
# the circle pendulum through it with `tether --server` (printing its
# residual certificate), plot an inconsistent start's position residual
# against the certificate's bounds (examples/python/plot_residuals.py), and
# stop the server.
#
# Installs and builds first (both idempotent); set
# TETHER_SKIP_BUILD=1 to use existing binaries, TETHER_BUILD_DIR to use
# another build folder than ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${TETHER_BUILD_DIR:-build}"
if [[ "${TETHER_SKIP_BUILD:-0}" != 1 ]]; then
  ./scripts/install-deps.sh
  ./scripts/build.sh
  build=build
fi
mkdir -p out

server_out="$(mktemp)"
"$build/bin/tether-server" --listen 127.0.0.1:0 >"$server_out" 2>out/tether-server.log &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -f "$server_out"
}
trap stop_server EXIT

address=""
for _ in $(seq 1 300); do
  address="$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$server_out" | head -n1)"
  [[ -n "$address" ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$address" ]]; then
  echo "tether-server did not start; see out/tether-server.log" >&2
  exit 1
fi
echo "tether-server listening on $address (log: out/tether-server.log)"
"$build/bin/tether" health --server "$address"

echo
echo "== circle pendulum through the server: certificate =="
"$build/bin/tether" --server "$address" run examples/circle_pendulum.json \
  --until 2 --every 100 --output out/circle_pendulum_remote.jsonl
echo "frames and certificate written to out/circle_pendulum_remote.jsonl"

echo
echo "== inconsistent start: residual decay against the certificate's bounds =="
/usr/bin/python3 examples/python/plot_residuals.py --server "$address" \
  --output out/residuals.png

stop_server
trap - EXIT
echo
echo "server stopped; plot: $(pwd)/out/residuals.png"
