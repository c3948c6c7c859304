#!/usr/bin/env python3
"""Why the session store is Redis and not etcd (issue 25 point 1), measured.

Starts a redis-server and an etcd (Debian's `redis-server` and
`etcd-server`) on loopback ports in a temporary directory, each as the
cluster would run it (Redis without persistence, as deploy/k8s/cluster runs
it; etcd with its defaults: every write through its Raft log and an fsync),
and times what the session store does most: rewriting one session's record
(the export bytes: kilobytes for a pendulum, up to megabytes with snapshots
of a large model) one write after another, as a replica does at every Run's
end, checkpoint and write-through CoSimulate step. One client, one
connection, sequential writes: the round trip a write-through step waits
for.

Redis is spoken to in RESP over a socket (SET key value); etcd through its
JSON gateway (POST /v3/kv/put, the value base64-encoded, as etcdctl's v3
API over HTTP). No client library is needed, so nothing is added to the
project's dependencies; etcd-server is needed only to run this script:

    apt-get install -y etcd-server redis-server
    /usr/bin/python3 bench/store_choice_bench.py [--writes 200]

Prints, per record size, the median and 90th percentile write round trip
of each store, and etcd's over Redis's.
"""

import argparse
import base64
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not listen on port {port} within {seconds} s")


class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def set(self, key, value):
        parts = [b"SET", key.encode(), value]
        msg = b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        self.sock.sendall(msg)
        reply = self.sock.recv(64)
        if not reply.startswith(b"+OK"):
            sys.exit(f"redis SET answered {reply!r}")


class Etcd:
    # One kept-alive HTTP/1.1 connection, so a write is one round trip as
    # on Redis's socket (the gateway's JSON and base64 cost some of the
    # difference; etcd's own fsync per write is most of it: its p90).
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def set(self, key, value):
        body = json.dumps({"key": base64.b64encode(key.encode()).decode(),
                           "value": base64.b64encode(value).decode()}).encode()
        self.conn.request("POST", "/v3/kv/put", body=body,
                          headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        text = r.read()
        if r.status != 200:
            raise RuntimeError(f"etcd put answered HTTP {r.status}: {text[:200]!r}")
        if "header" not in json.loads(text):
            sys.exit(f"etcd put answered {text[:200]!r}")


def timed_writes(store, size, writes):
    value = os.urandom(size)
    store.set("tether:session:warmup", value)
    times = []
    for _ in range(writes):
        start = time.perf_counter()
        store.set("tether:session:bench", value)
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--sizes", default="4096,65536,1048576",
                        help="record sizes in bytes, comma-separated")
    args = parser.parse_args()
    for tool in ("redis-server", "etcd"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install -y redis-server etcd-server")
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="tether-store-choice.")
    procs = []
    try:
        rport = free_port()
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", work],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_port(rport, procs[-1], "redis-server")
        cport, pport = free_port(), free_port()
        procs.append(subprocess.Popen(
            ["etcd", "--data-dir", os.path.join(work, "etcd"), "--name", "bench",
             "--listen-client-urls", f"http://127.0.0.1:{cport}",
             "--advertise-client-urls", f"http://127.0.0.1:{cport}",
             "--listen-peer-urls", f"http://127.0.0.1:{pport}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{pport}",
             "--initial-cluster", f"bench=http://127.0.0.1:{pport}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_port(cport, procs[-1], "etcd")
        time.sleep(1.0)  # its leader election
        redis, etcd = Redis(rport), Etcd(cport)
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        print(f"# store_choice_bench: {args.writes} sequential writes of one record per size,"
              f" one connection, loopback, load average {load}")
        print(f"{'record':>10} {'redis median':>13} {'redis p90':>10} {'etcd median':>12}"
              f" {'etcd p90':>10} {'etcd/redis':>11}")
        for size in sizes:
            r_med, r_p90 = timed_writes(redis, size, args.writes)
            try:
                e_med, e_p90 = timed_writes(etcd, size, args.writes)
                ratio = f"{e_med / r_med:10.1f}x"
                e_cols = f"{e_med * 1e3:10.3f}ms {e_p90 * 1e3:8.3f}ms"
            except (RuntimeError, OSError, http.client.HTTPException):
                # etcd refuses a request over its limit (--max-request-bytes,
                # 1.5 MiB by default); the connection is then started again.
                etcd = Etcd(cport)
                ratio, e_cols = "refused", f"{'refused (over 1.5 MiB)':>21}"
            print(f"{size:>10} {r_med * 1e3:11.3f}ms {r_p90 * 1e3:8.3f}ms {e_cols} {ratio:>11}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
