#!/usr/bin/env python3
"""RunEnsemble at shutdown: SIGTERM while a long ensemble streams; when the
grace (--shutdown-grace 1) runs out, the call ends UNAVAILABLE after sending
every result computed in index order, and says how many: the client has
exactly that many results, instances 0 to K-1, each complete. Then the same
through tether_client's Client.run_ensemble: the error it raises carries
those results (error.partial), none dropped. The first part again with
instances in groups of eight on the lane path.

Usage: ensemble_drain_test.py TETHER_SERVER SOURCE_DIR
"""

import os
import re
import signal
import sys

import grpc

sys.path.insert(0, os.path.join(sys.argv[2], "client", "python", "src"))

from tether_client import Client, LocalServer, TetherError, load_spec  # noqa: E402
from tether_client._proto.tether.v1 import simulator_pb2, simulator_pb2_grpc  # noqa: E402


def main():
    server_binary, src = sys.argv[1], sys.argv[2]
    spec = load_spec(os.path.join(src, "examples", "circle_pendulum.json"))
    # 20,000 instances of 5,000 steps, instance by instance: about a minute
    # on one worker, far more than the grace. Then 100,000 of 5,000 steps
    # without the certificate, in groups of eight on the lane path, each
    # group carried from quantum to quantum in chunks (docs/ENSEMBLES.md
    # "Lanes"): about 15 s, over the grace; the groups in progress stop and
    # are dropped, and the same holds.
    failures = drain(server_binary, spec, 5.0, 20000, lanes=False)
    failures += drain(server_binary, spec, 5.0, 100000, lanes=True)
    failures += through_client(server_binary, spec)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


def drain(server_binary, spec, until, count, lanes):
    """SIGTERM after the second message of an ensemble of `count` instances
    until `until`; the failures."""
    request = simulator_pb2.RunEnsembleRequest(until_time=until, results_per_message=16)
    request.spec.CopyFrom(spec)
    request.spec.certificate.disabled = lanes
    sweep = request.ensemble.sweeps.add()
    sweep.name, sweep.start, sweep.stop, sweep.count = "der(y)", -0.5, 0.5, count
    server = LocalServer(binary=server_binary,
                         extra_args=["--workers", "2", "--shutdown-grace", "1"])
    address = server.start()
    received, messages, sigterm_at = [], 0, None
    status, message = grpc.StatusCode.OK, ""
    try:
        with grpc.insecure_channel(address) as channel:
            stub = simulator_pb2_grpc.SimulatorStub(channel)
            try:
                for response in stub.RunEnsemble(request, timeout=120):
                    messages += 1
                    received.extend(response.results)
                    if messages == 2:
                        sigterm_at = len(received)
                        server.process.send_signal(signal.SIGTERM)
            except grpc.RpcError as error:
                status, message = error.code(), error.details()
        exit_code = server.process.wait(30)
    finally:
        server.stop()
    failures = []
    if status != grpc.StatusCode.UNAVAILABLE:
        failures.append("status %s (%s), expected UNAVAILABLE" % (status, message))
    match = re.search(r"the results of instances 0 to (\d+) \(excluded\) of %d were sent" % count,
                      message)
    if not match:
        failures.append("the status does not say how many results were sent: %r" % message)
    elif int(match.group(1)) != len(received):
        failures.append("the status says %s results were sent, the client has %d" %
                        (match.group(1), len(received)))
    if [r.index for r in received] != list(range(len(received))):
        failures.append("the results are not instances 0 to %d in order" % (len(received) - 1))
    if not all(r.ok and abs(r.final_state.t - until) < 1e-9 for r in received):
        failures.append("a result sent is not a complete instance")
    if sigterm_at is None or len(received) <= sigterm_at or len(received) >= count:
        failures.append("expected results after SIGTERM and fewer than all: %s at SIGTERM, %d in all"
                        % (sigterm_at, len(received)))
    if exit_code != 0:
        failures.append("the server exited %s" % exit_code)
    print("%d results (%d at SIGTERM)%s, status %s: %s" % (
        len(received), sigterm_at or 0, " (lanes)" if lanes else "", status, message))
    return ["%s%s" % (f, " (lanes)" if lanes else "") for f in failures]


def through_client(server_binary, spec):
    """The drain seen from Client.run_ensemble: a TetherError whose partial
    holds the instances the status says were sent."""
    server = LocalServer(binary=server_binary,
                         extra_args=["--workers", "2", "--shutdown-grace", "1"])
    address = server.start()
    calls = []

    def progress(done, total):
        calls.append(done)
        if len(calls) == 2:
            server.process.send_signal(signal.SIGTERM)

    failures, error = [], None
    try:
        try:
            Client(address, timeout=120).run_ensemble(
                spec, 5.0, sweeps={"der(y)": (-0.5, 0.5, 20000)}, progress=progress)
        except TetherError as e:
            error = e
        server.process.wait(30)
    finally:
        server.stop()
    if error is None:
        return ["Client.run_ensemble: expected a TetherError at the drain, it returned"]
    match = re.search(r"instances 0 to (\d+) \(excluded\)", error.message)
    sent = int(match.group(1)) if match else -1
    got = len(error.partial.ok) if error.partial is not None else 0
    if sent <= 0 or got != sent:
        failures.append("Client.run_ensemble: the status says %d results were sent, "
                        "error.partial holds %d (%s)" % (sent, got, error.message))
    elif not (error.partial.ok.all() and (abs(error.partial.t - 5.0) < 1e-9).all()):
        failures.append("Client.run_ensemble: error.partial holds an incomplete instance")
    print("through Client.run_ensemble: %d results in error.partial" % got)
    return failures


if __name__ == "__main__":
    sys.exit(main())
