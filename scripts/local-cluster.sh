#!/usr/bin/env bash
# A cluster on this machine's loopback for trying --session-store: a Redis
# (the shared session store), N tether-server replicas and HAProxy in front
# of them with deploy/haproxy.cfg (deploy/README.md, "Several replicas").
#
#   scripts/local-cluster.sh start --replicas N [--dir DIR] [-- SERVER FLAGS...]
#   scripts/local-cluster.sh add [--dir DIR]
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
# --lease-ttl 0.5). TETHER_SERVER names the server binary (default
# build/bin/tether-server); `start` fails, stopping what it started, when a
# process does not come up within 10 s.
#
# add starts one more replica (with the flags `start` was given) while the
# cluster runs and puts it into HAProxy's ring without a reload, over
# HAProxy's runtime API (the admin socket DIR/haproxy.sock): the proxy's
# configuration declares 16 replica slots (as deploy/haproxy.cfg's
# server-template does for Kubernetes, where DNS fills them); `start` fills
# the first N and leaves the others in maintenance, `add` sets the next
# free slot's address (`set server replicas/replicaK addr ... port ...`)
# and makes it ready (`set server ... state ready`), then waits until its
# health checks pass (`show stat`: UP). Why not a reload: a reload starts
# a new HAProxy process and the old one keeps the open streams, so the
# stats and the ring are split between two processes for as long as a
# stream lives; why not `add server`: a dynamic server in HAProxy 2.6 does
# not inherit default-server (the checks) and must repeat every setting.
# It prints `replica PID ADDRESS`. At most 16 replicas in all.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() {
  echo "usage: $0 start --replicas N [--dir DIR] [-- SERVER FLAGS...] | add [--dir DIR] | stop [--dir DIR]" >&2
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
SLOTS=16  # replica slots in HAProxy's configuration

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

admin() {  # admin COMMAND: HAProxy's runtime API answer to COMMAND
  /usr/bin/python3 - "$DIR/haproxy.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while chunk := s.recv(65536):
    out += chunk
sys.stdout.write(out.decode())
PY
}

start_replica() {  # start_replica K PORT: replica K on PORT, listed in $PIDS
  "$SERVER" --listen "127.0.0.1:$2" --session-store "$(cat "$DIR/store")" \
    --workers 1 --shutdown-grace 2 "${EXTRA[@]}" >"$DIR/replica-$1.log" 2>&1 &
  echo "replica $! 127.0.0.1:$2" >>"$PIDS"
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
  add)
    [[ -f "$PIDS" && -S "$DIR/haproxy.sock" ]] || {
      echo "local-cluster: no cluster runs in $DIR (start one first)" >&2
      exit 1
    }
    mapfile -t EXTRA <"$DIR/server-flags"
    k=$(($(grep -c '^replica ' "$PIDS") + 1))
    [[ $k -le $SLOTS ]] || { echo "local-cluster: all $SLOTS replica slots are in use" >&2; exit 1; }
    port="$(free_ports 1)"
    start_replica "$k" "$port"
    pid="$(tail -n 1 "$PIDS" | cut -d' ' -f2)"
    for _ in $(seq 100); do
      grep -q "^listening on" "$DIR/replica-$k.log" && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    grep -q "^listening on" "$DIR/replica-$k.log" || {
      echo "local-cluster: replica $k did not come up within 10 s (log $DIR/replica-$k.log)" >&2
      exit 1
    }
    answer="$(admin "set server replicas/replica$k addr 127.0.0.1 port $port")"
    [[ "$answer" == *"changed"* ]] || { echo "local-cluster: haproxy: $answer" >&2; exit 1; }
    admin "set server replicas/replica$k state ready" >/dev/null
    # `show stat` CSV: pxname,svname,...,status (field 18).
    for _ in $(seq 100); do
      admin "show stat" | awk -F, -v s="replica$k" '$1 == "replicas" && $2 == s && $18 == "UP" { up = 1 } END { exit !up }' && break
      sleep 0.1
    done
    admin "show stat" | awk -F, -v s="replica$k" '$1 == "replicas" && $2 == s && $18 == "UP" { up = 1 } END { exit !up }' || {
      echo "local-cluster: haproxy did not mark replica$k UP within 10 s" >&2
      exit 1
    }
    tail -n 1 "$PIDS"
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
    echo "$STORE" >"$DIR/store"
    printf '%s\n' "${EXTRA[@]}" >"$DIR/server-flags"
    [[ ${#EXTRA[@]} -gt 0 ]] || : >"$DIR/server-flags"
    # No RDB snapshots, no AOF: a scratch store for one machine (the
    # Kubernetes manifest turns AOF on).
    redis-server --bind 127.0.0.1 --port "$STORE_PORT" --save "" --appendonly no \
      --dir "$DIR" >"$DIR/redis.log" 2>&1 &
    echo "store $! 127.0.0.1:$STORE_PORT" >>"$PIDS"
    wait_for "redis-server" redis-cli -p "$STORE_PORT" ping
    [[ $REPLICAS -le $SLOTS ]] || {
      echo "local-cluster: --replicas: at most $SLOTS (the proxy's replica slots)" >&2
      exit 2
    }
    SERVERS=""
    for k in $(seq "$REPLICAS"); do
      port="${PORTS[$((k + 2))]}"
      start_replica "$k" "$port"
      SERVERS+="    server replica$k 127.0.0.1:$port proto h2"$'\n'
    done
    # The free slots, for `add`: in maintenance (out of the ring, not
    # checked) until it gives one an address.
    for k in $(seq $((REPLICAS + 1)) "$SLOTS"); do
      SERVERS+="    server replica$k 127.0.0.1:1 proto h2 disabled"$'\n'
    done
    for k in $(seq "$REPLICAS"); do
      wait_for "replica $k" grep -q "^listening on" "$DIR/replica-$k.log"
    done
    # deploy/haproxy.cfg with this cluster's servers (one source of truth).
    # deploy/haproxy.cfg with plaintext loopback addresses (one source of
    # truth for the rest).
    awk -v servers="$SERVERS" -v sock="$DIR/haproxy.sock" -v bind="    bind 127.0.0.1:$PROXY_PORT proto h2" '
      /# BEGIN servers/ { print; printf "%s", servers; skip = 1; next }
      /# BEGIN bind/ { print; print bind; skip = 1; next }
      /# END (servers|bind)/ { skip = 0 }
      /^global/ { print; print "    stats socket " sock " mode 600 level admin"; next }
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
