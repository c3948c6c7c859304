#!/usr/bin/env python3
"""End to end through gRPC: a sweep of N instances of the circle pendulum
over 1 s (1000 RK4 steps each) as one RunEnsemble call, against the same N
instances as sessions run one after another by the same client
(CreateSession, Run until 1 s with one frame at the end, DeleteSession).
Both from this Python client (tether_client) against one tether-server on
loopback started here (--workers 1). Before timing, checks that both give
the same final states, bit for bit.

Usage: /usr/bin/python3 bench/ensemble_grpc_bench.py [--instances N]
       [--repeats R] [--server-binary build/bin/tether-server]
Prints the wall time of each (best of R, alternating), instances/s, steps/s
and the ratio. Figures and load in docs/benchmarks.md "Ensembles".
"""

import argparse
import copy
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "client", "python", "src"))

from tether_client import Client, LocalServer, load_spec  # noqa: E402


def sessions_one_by_one(client, spec, speeds):
    states = []
    for vy in speeds:
        s = copy.deepcopy(spec)
        del s.initial.v[:]
        s.initial.v.extend([0.0, vy])
        session = client.create_session(s)
        frames = client.run(session.id, until_time=1.0, every=1000000).frames()
        states.append((frames[-1].t, tuple(frames[-1].q), tuple(frames[-1].v)))
        client.delete_session(session.id)
    return states


def ensemble(client, spec, n):
    result = client.run_ensemble(spec, until_time=1.0, sweeps={"der(y)": (-0.5, 0.5, n)})
    assert result.ok.all()
    return [(t, tuple(q), tuple(v)) for t, q, v in zip(result.t, result.q, result.v)], result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--server-binary", default=os.path.join(ROOT, "build", "bin", "tether-server"))
    args = parser.parse_args()
    spec = load_spec(os.path.join(ROOT, "examples", "circle_pendulum.json"))
    spec.certificate.disabled = False
    n = args.instances
    server = LocalServer(binary=args.server_binary, extra_args=["--workers", "1"])
    address = server.start()
    try:
        with Client(address) as client:
            states, result = ensemble(client, spec, n)
            speeds = list(result.value("der(y)"))
            one_by_one = sessions_one_by_one(client, spec, speeds)
            same = all(a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
                       for a, b in zip(states, one_by_one))
            print("final states bit-identical (ensemble vs sessions): %s" % same)
            if not same:
                return 1
            best_e, best_s = float("inf"), float("inf")
            for _ in range(args.repeats):
                start = time.perf_counter()
                ensemble(client, spec, n)
                best_e = min(best_e, time.perf_counter() - start)
                start = time.perf_counter()
                sessions_one_by_one(client, spec, speeds)
                best_s = min(best_s, time.perf_counter() - start)
    finally:
        server.stop()
    steps = n * 1000
    print("instances %d, steps %d, load %s" % (n, steps, os.getloadavg()))
    print("RunEnsemble:           %.3f s  %.0f instances/s  %.3g steps/s" % (
        best_e, n / best_e, steps / best_e))
    print("sessions one by one:   %.3f s  %.0f instances/s  %.3g steps/s" % (
        best_s, n / best_s, steps / best_s))
    print("ratio (sessions / RunEnsemble wall time): %.2f" % (best_s / best_e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
