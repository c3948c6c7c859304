#!/usr/bin/env python3
"""End to end through gRPC: a sweep of N instances of the circle pendulum
over 1 s (1000 RK4 steps each; --until T: T s) as one RunEnsemble call, against the same N
instances as sessions run one after another by the same client
(CreateSession, Run until 1 s with one frame at the end, DeleteSession).
Both from this Python client (tether_client) against tether-servers on
loopback started here, one per worker count of --workers (default "1,2":
the ensemble's instances run on one lane per worker; the sessions, one
after another, on the first server). Before timing, checks that all give
the same final states, bit for bit.

Usage: /usr/bin/python3 bench/ensemble_grpc_bench.py [--instances N]
       [--repeats R] [--workers 1,2] [--server-binary build/bin/tether-server]
       [--no-certificate] [--reference-binary OTHER/tether-server]
       [--until T] [--no-sessions]
--no-certificate: the instances without the certificate (where the server
runs them eight at a time on the lane path, docs/ENSEMBLES.md "Lanes").
--reference-binary: the ensembles also on servers of that binary (e.g. a
build of an earlier commit), timed in the same rounds, with the ratios.
--no-sessions: the ensembles only (the sessions are still run once, to
check the bits, unless --no-sessions; then the ensembles are compared with
each other only).
Prints the wall time of each (best of R, alternating), instances/s, steps/s
and the ratios. Figures and load in docs/benchmarks.md "Ensembles".
"""

import argparse
import copy
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "client", "python", "src"))

from tether_client import Client, LocalServer, load_spec  # noqa: E402


def sessions_one_by_one(client, spec, speeds, until):
    states = []
    for vy in speeds:
        s = copy.deepcopy(spec)
        del s.initial.v[:]
        s.initial.v.extend([0.0, vy])
        session = client.create_session(s)
        frames = client.run(session.id, until_time=until, every=10**12).frames()
        states.append((frames[-1].t, tuple(frames[-1].q), tuple(frames[-1].v)))
        client.delete_session(session.id)
    return states


def ensemble(client, spec, n, until):
    result = client.run_ensemble(spec, until_time=until, sweeps={"der(y)": (-0.5, 0.5, n)})
    assert result.ok.all()
    return [(t, tuple(q), tuple(v)) for t, q, v in zip(result.t, result.q, result.v)], result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--server-binary", default=os.path.join(ROOT, "build", "bin", "tether-server"))
    parser.add_argument("--no-certificate", action="store_true")
    parser.add_argument("--reference-binary")
    parser.add_argument("--until", type=float, default=1.0)
    parser.add_argument("--no-sessions", action="store_true")
    args = parser.parse_args()
    spec = load_spec(os.path.join(ROOT, "examples", "circle_pendulum.json"))
    spec.certificate.disabled = args.no_certificate
    n = args.instances
    workers = [int(w) for w in args.workers.split(",")]
    binaries = [args.server_binary] + ([args.reference_binary] if args.reference_binary else [])
    # Servers in the order: each worker count of --server-binary, then of
    # --reference-binary; clients[0] also runs the sessions.
    servers = [LocalServer(binary=b, extra_args=["--workers", str(w)])
               for b in binaries for w in workers]
    labels = ["%d worker(s)%s" % (w, "" if b == args.server_binary else ", reference")
              for b in binaries for w in workers]
    clients = []
    try:
        for server in servers:
            clients.append(Client(server.start()))
        until = args.until
        states, result = ensemble(clients[0], spec, n, until)
        steps = int(result.steps.sum())
        speeds = list(result.value("der(y)"))
        same = True
        if not args.no_sessions:
            one_by_one = sessions_one_by_one(clients[0], spec, speeds, until)
            same = all(a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
                       for a, b in zip(states, one_by_one))
        for client in clients[1:]:
            same = same and ensemble(client, spec, n, until)[0] == states
        print("final states bit-identical (ensembles on %s workers%s%s): %s" % (
            args.workers, ", reference" if args.reference_binary else "",
            "" if args.no_sessions else ", sessions", same))
        if not same:
            return 1
        best_e = [float("inf")] * len(clients)
        best_s = float("inf")
        for _ in range(args.repeats):
            for k, client in enumerate(clients):
                start = time.perf_counter()
                ensemble(client, spec, n, until)
                best_e[k] = min(best_e[k], time.perf_counter() - start)
            if args.no_sessions:
                continue
            start = time.perf_counter()
            sessions_one_by_one(clients[0], spec, speeds, until)
            best_s = min(best_s, time.perf_counter() - start)
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
    print("instances %d, steps %d, certificate %s, load %s, cores %d" % (
        n, steps, "off" if args.no_certificate else "on", os.getloadavg(), os.cpu_count()))
    for label, e in zip(labels, best_e):
        print("RunEnsemble, %s: %.3f s  %.0f instances/s  %.3g steps/s" % (
            label, e, n / e, steps / e))
    if not args.no_sessions:
        print("sessions one by one:       %.3f s  %.0f instances/s  %.3g steps/s" % (
            best_s, n / best_s, steps / best_s))
        for label, e in zip(labels, best_e):
            print("ratio sessions / RunEnsemble on %s: %.2f" % (label, best_s / e))
    for w, e in zip(workers[1:], best_e[1:]):
        print("scaling RunEnsemble %d -> %d workers: %.2fx" % (workers[0], w, best_e[0] / e))
    if args.reference_binary:
        for k, w in enumerate(workers):
            print("RunEnsemble reference / this binary, %d worker(s): %.2fx" % (
                w, best_e[len(workers) + k] / best_e[k]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
