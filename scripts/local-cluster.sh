#!/usr/bin/env bash
# A cluster on this machine's loopback for trying --session-store: a Redis
# (the shared session store), N tether-server replicas and HAProxy in front
# of them with deploy/haproxy.cfg (deploy/README.md, "Several replicas").
#
#   scripts/local-cluster.sh start --replicas N [--dir DIR] [-- SERVER FLAGS...]
#   scripts/local-cluster.sh stop [--dir DIR]
#
# start prints one line per process, and the store's address:
#   store redis://127.0.0.1:PORT
#   replica PID 127.0.0.1:PORT        (one per replica)
#   proxy PID 127.0.0.1:PORT
# Every port is a free ephemeral one. DIR (default
# ${TMPDIR:-/tmp}/tether-cluster-$UID) holds the logs (redis.log,
# replica-K.log, haproxy.log), haproxy.cfg and `pids`; stop ends exactly
# the processes listed there (SIGTERM, then SIGKILL after 10 s; the
# replicas and the proxy first, then the store) and removes the file. Flags after `--` go to every replica (e.g. --write-through true
# --lease-ttl 1). TETHER_SERVER names the server binary (default
# build/bin/tether-server); `start` fails, stopping what it started, when a
# process does not come up within 10 s.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() {
  echo "usage: $0 start --replicas N [--dir DIR] [-- SERVER FLAGS...] | stop [--dir DIR]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
CMD="$1"
shift
DIR="${TMPDIR:-/tmp}/tether-cluster-$(id -u)"
REPLICAS=""
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --replicas) REPLICAS="${2:-}"; shift 2 ;;
    --dir) DIR="${2:-}"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) usage ;;
  esac
done
SERVER="${TETHER_SERVER:-$ROOT/build/bin/tether-server}"
PIDS="$DIR/pids"

stop_all() {  # stop_all: ends the processes listed in $PIDS, the store last
  [[ -f "$PIDS" ]] || return 0
  local pid alive kind
  # The replicas write their sessions to the store as they drain: the
  # store goes once they are gone.
  for kind in "replica|proxy" "store"; do
    while read -r k pid _; do
      [[ "$k" =~ ^($kind)$ ]] && kill -TERM "$pid" 2>/dev/null || true
    done <"$PIDS"
    for _ in $(seq 100); do
      alive=0
      while read -r k pid _; do
        [[ "$k" =~ ^($kind)$ ]] && kill -0 "$pid" 2>/dev/null && alive=1
      done <"$PIDS"
      [[ $alive == 0 ]] && break
      sleep 0.1
    done
    while read -r k pid _; do
      [[ "$k" =~ ^($kind)$ ]] && kill -KILL "$pid" 2>/dev/null || true
    done <"$PIDS"
  done
  rm -f "$PIDS"
}

free_ports() {  # free_ports N: N free loopback ports, one a line
  /usr/bin/python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
PY
}

wait_for() {  # wait_for WHAT COMMAND...: retries COMMAND for 10 s
  local what="$1"
  shift
  for _ in $(seq 100); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "local-cluster: $what did not come up within 10 s (logs in $DIR)" >&2
  stop_all
  exit 1
}

case "$CMD" in
  stop)
    stop_all
    ;;
  start)
    [[ "$REPLICAS" =~ ^[1-9][0-9]?$ ]] || {
      echo "local-cluster: --replicas: expected 1..99, found '$REPLICAS'" >&2
      exit 2
    }
    [[ -x "$SERVER" ]] || { echo "local-cluster: no server binary $SERVER (TETHER_SERVER)" >&2; exit 2; }
    mkdir -p "$DIR"
    if [[ -f "$PIDS" ]]; then
      echo "local-cluster: $PIDS exists: a cluster of this DIR runs (stop it first)" >&2
      exit 1
    fi
    : >"$PIDS"
    mapfile -t PORTS < <(free_ports $((REPLICAS + 3)))
    STORE_PORT="${PORTS[0]}"
    PROXY_PORT="${PORTS[1]}"
    STATS_PORT="${PORTS[2]}"
    STORE="redis://127.0.0.1:$STORE_PORT"
    # No RDB snapshots, no AOF: a scratch store for one machine (the
    # Kubernetes manifest turns AOF on).
    redis-server --bind 127.0.0.1 --port "$STORE_PORT" --save "" --appendonly no \
      --dir "$DIR" >"$DIR/redis.log" 2>&1 &
    echo "store $! 127.0.0.1:$STORE_PORT" >>"$PIDS"
    wait_for "redis-server" redis-cli -p "$STORE_PORT" ping
    SERVERS=""
    for k in $(seq "$REPLICAS"); do
      port="${PORTS[$((k + 2))]}"
      "$SERVER" --listen "127.0.0.1:$port" --session-store "$STORE" --lease-ttl 1 \
        --workers 1 --shutdown-grace 2 "${EXTRA[@]}" >"$DIR/replica-$k.log" 2>&1 &
      echo "replica $! 127.0.0.1:$port" >>"$PIDS"
      SERVERS+="    server replica$k 127.0.0.1:$port proto h2"$'\n'
    done
    for k in $(seq "$REPLICAS"); do
      wait_for "replica $k" grep -q "^listening on" "$DIR/replica-$k.log"
    done
    # deploy/haproxy.cfg with this cluster's servers (one source of truth).
    # deploy/haproxy.cfg with plaintext loopback addresses (one source of
    # truth for the rest).
    awk -v servers="$SERVERS" -v bind="    bind 127.0.0.1:$PROXY_PORT proto h2" '
      /# BEGIN servers/ { print; printf "%s", servers; skip = 1; next }
      /# BEGIN bind/ { print; print bind; skip = 1; next }
      /# END (servers|bind)/ { skip = 0 }
      !skip' "$ROOT/deploy/haproxy.cfg" >"$DIR/haproxy.cfg"
    TETHER_STATS_BIND="127.0.0.1:$STATS_PORT" \
      haproxy -db -f "$DIR/haproxy.cfg" >"$DIR/haproxy.log" 2>&1 &
    echo "proxy $! 127.0.0.1:$PROXY_PORT" >>"$PIDS"
    wait_for "haproxy" /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $PROXY_PORT), 1)"
    echo "store $STORE"
    grep -E '^(replica|proxy) ' "$PIDS"
    echo "stats http://127.0.0.1:$STATS_PORT/stats"
    ;;
  *) usage ;;
esac
