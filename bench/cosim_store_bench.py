#!/usr/bin/python3
"""CoSimulate round trip with sessions in a shared store (--session-store),
with and without --write-through, against the in-memory server, in the same
run (docs/benchmarks.md, "Sessions in a shared store").

Starts a redis-server and three tether-servers on free loopback ports (one
worker each): `memory` (no store), `store` (--session-store) and
`write-through` (--session-store --write-through true). Each round runs
STEPS lockstep steps of one RK4 step (H = h = 0.001 s) of
examples/circle_pendulum.json on each server in turn, a new session each
round; the round trip is the median per step of a round, and the figure the
median over rounds of each server's ratio to `memory` in that round (the
machine is shared and noisy: only ratios within a round are compared).

Usage: /usr/bin/python3 bench/cosim_store_bench.py --server-binary BIN
           [--source-dir DIR] [--rounds 7] [--steps 300]
"""

import argparse
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--source-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.source_dir, "client", "python", "src"))
    import tether_client

    spec = tether_client.load_spec(
        os.path.join(args.source_dir, "examples", "circle_pendulum.json"))
    work = tempfile.mkdtemp(prefix="tether-store-bench-")
    procs = []
    try:
        redis_port = free_port()
        procs.append(subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        store = ["--session-store", "redis://127.0.0.1:%d" % redis_port]
        configs = {"memory": [], "store": store,
                   "write-through": store + ["--write-through", "true"]}
        clients = {}
        for name, flags in configs.items():
            port = free_port()
            log = open(os.path.join(work, name + ".log"), "wb")
            procs.append(subprocess.Popen(
                [args.server_binary, "--listen", "127.0.0.1:%d" % port, "--workers", "1"]
                + flags, stdout=log, stderr=subprocess.STDOUT))
            clients[name] = tether_client.Client("127.0.0.1:%d" % port, timeout=60)
        for c in clients.values():
            c.wait_until_ready(10)
        ratios = {name: [] for name in configs}
        medians = {name: [] for name in configs}
        for _ in range(args.rounds):
            per_step = {}
            for name, c in clients.items():
                session = c.create_session(spec)
                with c.cosimulate(session.id) as cosim:
                    cosim.step(0.001)  # the load (or first compile) is not timed
                    times = []
                    for _ in range(args.steps):
                        t0 = time.perf_counter()
                        cosim.step(0.001)
                        times.append(time.perf_counter() - t0)
                per_step[name] = statistics.median(times)
                c.delete_session(session.id)
            for name in configs:
                ratios[name].append(per_step[name] / per_step["memory"])
                medians[name].append(per_step[name])
        load = os.getloadavg()
        print("# cosim_store_bench: %d rounds of %d steps, load average %.2f %.2f %.2f, "
              "%d CPUs" % (args.rounds, args.steps, *load, os.cpu_count()))
        print("%-14s %18s %22s" % ("server", "round trip (us)", "ratio to memory"))
        for name in configs:
            print("%-14s %18.1f %22.2f" % (name, 1e6 * statistics.median(medians[name]),
                                           statistics.median(ratios[name])))
        for c in clients.values():
            c.close()
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
