#!/usr/bin/python3
"""Throughput of 1, 2 and 3 replicas behind HAProxy, and the failover time
at a given lease TTL (docs/benchmarks.md, "Sessions in a shared store").

Throughput: three clusters of scripts/local-cluster.sh run side by side
(1, 2 and 3 replicas, one worker each, each cluster its own Redis and
HAProxy on free loopback ports), and a fourth of 1 replica with 3 workers
("1x3w": as many stepping threads as 3 replicas, in one process); idle, a
cluster costs no CPU, so each round measures them in turn on the same
machine under the same load, and the figure is each cluster's rate and its
ratio to the 1-replica cluster in the same round (median over rounds). A
round, per cluster, per mode:

  - cosimulate: SESSIONS sessions, each driven by its own client thread
    through the proxy, STEPS lockstep CoSimulate steps of one RK4 step
    (H = 0.001 s) of examples/circle_pendulum.json; the rate is
    sessions x steps / wall time (a new session each round, the first step,
    which loads it, not timed);
  - run: SESSIONS sessions, each a Run of RUN_STEPS steps at once (one frame
    at the end); the rate is sessions x steps / wall time.

Failover: a 3-replica cluster with --write-through true (and --lease-ttl S
with --failover-ttl S; without it, the server's default); a CoSimulate
stream runs, its replica is killed (SIGKILL), and the time from the kill to
the first frame of the resumed stream through the proxy is measured,
--failover-runs times.

Store commands (--command-rate N,N,...): a 1-replica cluster at the
server's defaults holds N sessions (N CoSimulate streams open, one step
each, then idle), and the commands Redis processes per second are counted
over --window seconds (INFO's total_commands_processed and commandstats,
less the INFO calls themselves): what keeping N sessions costs the store
when nothing runs.

Usage: /usr/bin/python3 bench/cluster_bench.py --server-binary BIN
           [--source-dir DIR] [--rounds 5] [--sessions 6] [--steps 300]
           [--run-steps 20000] [--failover-ttl S] [--failover-runs 3]
           [--command-rate 1,10,100 [--window 6]]
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

H = 0.001


class LocalCluster:
    """scripts/local-cluster.sh start/stop in a directory of its own."""

    def __init__(self, args, replicas, *flags):
        self.dir = tempfile.mkdtemp(prefix="tether-cluster-bench-")
        self.script = os.path.join(args.source_dir, "scripts", "local-cluster.sh")
        self.env = dict(os.environ, TETHER_SERVER=args.server_binary)
        out = subprocess.run([self.script, "start", "--replicas", str(replicas), "--dir",
                              self.dir, "--"] + list(flags), env=self.env, capture_output=True,
                             text=True)
        if out.returncode != 0:
            self.stop()
            raise RuntimeError("local-cluster.sh start: " + out.stderr)
        lines = [line.split() for line in out.stdout.splitlines()]
        self.proxy = next(line[2] for line in lines if line[0] == "proxy")
        self.replicas = [(int(line[1]), line[2]) for line in lines if line[0] == "replica"]

    def holder(self, session_id):
        """The pid of the replica whose log says it runs the session's
        CoSimulate stream."""
        for k, (pid, _) in enumerate(self.replicas):
            with open(os.path.join(self.dir, "replica-%d.log" % (k + 1)), errors="replace") as f:
                if any("cosimulation started" in line and "session=" + session_id in line
                       for line in f):
                    return pid
        raise RuntimeError("no replica runs session " + session_id)

    def stop(self):
        subprocess.run([self.script, "stop", "--dir", self.dir], env=self.env, check=False,
                       capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def in_threads(count, body):
    """Runs body(i) for i < count in threads; the wall time from the
    barrier to the last one's end."""
    barrier = threading.Barrier(count + 1)
    errors = []

    def run(i):
        try:
            body(i, barrier)
        except Exception as e:  # reported after the join
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - start


def cosimulate_rate(tether_client, proxy, spec, sessions, steps):
    clients = [tether_client.Client(proxy, timeout=60) for _ in range(sessions)]
    ids = [c.create_session(spec).id for c in clients]

    def body(i, barrier):
        with clients[i].cosimulate(ids[i]) as cosim:
            cosim.step(H)  # loads the session: not timed
            barrier.wait()
            for _ in range(steps):
                cosim.step(H)

    wall = in_threads(sessions, body)
    for c, i in zip(clients, ids):
        c.delete_session(i)
        c.close()
    return sessions * steps / wall


def run_rate(tether_client, proxy, spec, sessions, steps):
    clients = [tether_client.Client(proxy, timeout=120) for _ in range(sessions)]
    ids = [c.create_session(spec).id for c in clients]
    for c, i in zip(clients, ids):
        c.run(i, steps=1).result()  # loads the session: not timed

    def body(i, barrier):
        barrier.wait()
        clients[i].run(ids[i], steps=steps, every=steps).result()

    wall = in_threads(sessions, body)
    for c, i in zip(clients, ids):
        c.delete_session(i)
        c.close()
    return sessions * steps / wall


def throughput(args, tether_client, spec):
    clusters = {}
    try:
        for n in (1, 2, 3):
            clusters[str(n)] = LocalCluster(args, n)
        clusters["1x3w"] = LocalCluster(args, 1, "--workers", "3")
        for c in clusters.values():
            tether_client.Client(c.proxy, timeout=10).wait_until_ready(10)
        rates = {(mode, n): [] for mode in ("cosimulate", "run") for n in clusters}
        for _ in range(args.rounds):
            for n, c in clusters.items():
                rates["cosimulate", n].append(
                    cosimulate_rate(tether_client, c.proxy, spec, args.sessions, args.steps))
                rates["run", n].append(
                    run_rate(tether_client, c.proxy, spec, args.sessions, args.run_steps))
        load = os.getloadavg()
        print("# cluster_bench throughput: %d rounds, %d sessions, %d CoSimulate steps or "
              "%d Run steps each, load average %.2f %.2f %.2f, %d CPUs"
              % (args.rounds, args.sessions, args.steps, args.run_steps, *load, os.cpu_count()))
        print("%-11s %9s %22s %18s" % ("mode", "replicas", "session-steps/s", "ratio to 1"))
        for mode in ("cosimulate", "run"):
            for n in clusters:
                ratios = [r / one for r, one in zip(rates[mode, n], rates[mode, "1"])]
                print("%-11s %9s %22.0f %18.2f" % (mode, n, statistics.median(rates[mode, n]),
                                                   statistics.median(ratios)))
    finally:
        for c in clusters.values():
            c.stop()


def failover(args, tether_client, spec):
    times = []
    for _ in range(args.failover_runs):
        ttl = [] if args.failover_ttl is None else ["--lease-ttl", str(args.failover_ttl)]
        cluster = LocalCluster(args, 3, "--write-through", "true", *ttl)
        try:
            client = tether_client.Client(cluster.proxy, timeout=60)
            session = client.create_session(spec)
            cosim = client.cosimulate(session.id)
            for _ in range(20):
                cosim.step(H)
            os.kill(cluster.holder(session.id), signal.SIGKILL)
            killed = time.monotonic()
            try:
                cosim.step(H)
            except tether_client.TetherError:
                pass
            client.resume(session.id, timeout=30)
            with client.cosimulate(session.id) as again:
                again.step(H)
                times.append(time.monotonic() - killed)
            client.close()
        finally:
            cluster.stop()
    load = os.getloadavg()
    ttl = "the default" if args.failover_ttl is None else "%s s" % args.failover_ttl
    print("# cluster_bench failover: %s, lease TTL %s, HAProxy checks every 0.25 s, load "
          "average %.2f %.2f %.2f" % (args.server_binary, ttl, *load))
    print("kill to next frame (s): " + " ".join("%.3f" % t for t in times))


def redis_stats(cluster):
    """(total commands processed, {command: calls}) of the cluster's Redis."""
    with open(os.path.join(cluster.dir, "store")) as f:
        port = f.read().strip().rsplit(":", 1)[1]
    out = subprocess.run(["redis-cli", "-p", port, "info", "all"], capture_output=True,
                         text=True, check=True).stdout
    total, calls = 0, {}
    for line in out.splitlines():
        if line.startswith("total_commands_processed:"):
            total = int(line.split(":")[1])
        elif line.startswith("cmdstat_"):
            name, fields = line[len("cmdstat_"):].split(":", 1)
            calls[name] = int(fields.split("calls=")[1].split(",")[0])
    return total, calls


def command_rate(args, tether_client, spec):
    print("# cluster_bench store commands: %s, 1 replica at the defaults, %g s window, load "
          "average %.2f %.2f %.2f" % (args.server_binary, args.window, *os.getloadavg()))
    print("%9s %18s  %s" % ("sessions", "commands/s", "by command (calls/s)"))
    for n in [int(x) for x in args.command_rate.split(",")]:
        cluster = LocalCluster(args, 1)
        try:
            client = tether_client.Client(cluster.proxy, timeout=60)
            streams = []
            for _ in range(n):
                session = client.create_session(spec)
                streams.append(client.cosimulate(session.id))
                streams[-1].step(H)
            time.sleep(1.0)  # the loads' writes are over
            total0, calls0 = redis_stats(cluster)
            time.sleep(args.window)
            total1, calls1 = redis_stats(cluster)
            # Less the INFO call that the second sample counts.
            rate = (total1 - total0 - 1) / args.window
            by = {k: (v - calls0.get(k, 0)) / args.window for k, v in calls1.items()
                  if k != "info" and v != calls0.get(k, 0)}
            print("%9d %18.1f  %s" % (n, rate, " ".join(
                "%s=%.1f" % (k, v) for k, v in sorted(by.items()))))
            for stream in streams:
                stream.close()
            client.close()
        finally:
            cluster.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--source-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--run-steps", type=int, default=20000)
    parser.add_argument("--failover-ttl", type=float, default=None)
    parser.add_argument("--failover-runs", type=int, default=3)
    parser.add_argument("--command-rate", default="")
    parser.add_argument("--window", type=float, default=6.0)
    parser.add_argument("--only", choices=("throughput", "failover", "commands"))
    args = parser.parse_args()
    args.source_dir = os.path.abspath(args.source_dir)
    sys.path.insert(0, os.path.join(args.source_dir, "client", "python", "src"))
    import tether_client
    spec = tether_client.load_spec(
        os.path.join(args.source_dir, "examples", "circle_pendulum.json"))
    if args.only in (None, "throughput"):
        throughput(args, tether_client, spec)
    if args.only in (None, "failover") and args.failover_runs > 0:
        failover(args, tether_client, spec)
    if args.only in (None, "commands") and args.command_rate:
        command_rate(args, tether_client, spec)


if __name__ == "__main__":
    main()
