#!/usr/bin/env python3
"""RunEnsemble's lanes keep the worker pool fair between tenants: while one
tenant's ensemble (about a minute of work; instance by instance, then in
groups of eight on the lane path) runs on every worker of a 2-worker server, another tenant's small runs (1000 steps each) are served
within a bound far below the ensemble's length (2 s, generous for a loaded
machine; alone they take about 10 ms). It would fail if the lanes were
queued without their tenant as owner, or ahead of other tenants' tasks.

Usage: ensemble_fairness_test.py TETHER_SERVER SOURCE_DIR
"""

import os
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.join(sys.argv[2], "client", "python", "src"))

from tether_client import Client, LocalServer, load_spec  # noqa: E402
from tether_client._proto.tether.v1 import simulator_pb2  # noqa: E402

HEAVY = "heavy-0123456789abcdef0123"
LIGHT = "light-0123456789abcdef0123"


def one_ensemble(spec, heavy, light, until, count, lanes):
    """One ensemble of the heavy tenant and five small runs of the light
    one while it runs; the failures."""
    failures = []
    request = simulator_pb2.RunEnsembleRequest(until_time=until)
    request.spec.CopyFrom(spec)
    request.spec.certificate.disabled = lanes
    sweep = request.ensemble.sweeps.add()
    sweep.name, sweep.start, sweep.stop, sweep.count = "der(y)", -0.5, 0.5, count
    stream = heavy.stub.RunEnsemble(request, timeout=120)
    started = threading.Event()
    received = [0]

    def read():
        try:
            for response in stream:
                received[0] += len(response.results)
                started.set()
        except grpc.RpcError:
            pass
        started.set()

    reader = threading.Thread(target=read)
    reader.start()
    if not started.wait(60):
        failures.append("the ensemble sent nothing within 60 s")
    session = light.create_session(spec)
    latencies = []
    for _ in range(5):
        t = time.perf_counter()
        light.run(session.id, steps=1000, every=1000).frames()
        latencies.append(time.perf_counter() - t)
    still_running = reader.is_alive()
    stream.cancel()
    reader.join(30)
    if not still_running:
        failures.append("the ensemble ended before the small runs did: nothing measured")
    if max(latencies) > 2.0:
        failures.append("a small run of another tenant took %.2f s while the ensemble%s ran"
                        % (max(latencies), " (lanes)" if lanes else ""))
    print("small runs: %s s while the ensemble%s had sent %d results; load %s" % (
        ", ".join("%.3f" % x for x in latencies), " (lanes)" if lanes else "",
        received[0], os.getloadavg()))
    return failures


def main():
    server_binary, src = sys.argv[1], sys.argv[2]
    spec = load_spec(os.path.join(src, "examples", "circle_pendulum.json"))
    with tempfile.NamedTemporaryFile("w", suffix=".tokens", delete=False) as f:
        f.write("heavy %s\nlight %s\n" % (HEAVY, LIGHT))
        tokens = f.name
    os.chmod(tokens, 0o600)
    server = LocalServer(binary=server_binary,
                         extra_args=["--workers", "2", "--tokens-file", tokens])
    failures = []
    try:
        address = server.start()
        heavy = Client(address, token=HEAVY, allow_plaintext_token=True)
        light = Client(address, token=LIGHT, allow_plaintext_token=True)
        # Instance by instance (5000 steps, the certificate on), then in
        # groups of eight on the lane path (5000 steps, no certificate: a
        # group carried from quantum to quantum in chunks;
        # docs/ENSEMBLES.md "Lanes"); 20,000 then 100,000 instances: a
        # minute or more, then about 15 s (each cancelled once the small
        # runs are measured).
        for until, count, lanes in ((5.0, 20000, False), (5.0, 100000, True)):
            failures += one_ensemble(spec, heavy, light, until, count, lanes)
        heavy.close()
        light.close()
    finally:
        server.stop()
        os.unlink(tokens)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
