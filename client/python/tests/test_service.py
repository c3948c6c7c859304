"""The client against a real tether-server on loopback: results as arrays
from Run, CoSimulate and Evaluate, and what a client does when its server
is killed and restarted on the same port, or stopped with a client left
open."""

import os
import socket
import subprocess
import sys
import time

import grpc
import numpy as np
import pytest

from conftest import PACKAGE_ROOT, example
from tether_client import (Client, LocalServer, Names, TetherError, Trajectory,
                           load_spec, pb)


def test_run_result_is_named_arrays_with_the_certificate(client):
    spec = load_spec(example("pendulum_force_input.json"))
    session = client.create_session(spec)
    stream = client.run(session.id, steps=205, every=10)
    frames = stream.frames()
    result = Trajectory.from_frames(frames, Names.from_spec(spec), stream.certificate)
    again = client.run(session.id, steps=200, every=10).result()
    assert again.names == Names(("x", "y"), ("rod",), ("angle", "omega"))
    # Steps 0, 10, ..., 200 and the last, 205.
    assert len(result) == 22 and list(result.step[-2:]) == [200, 205]
    np.testing.assert_array_equal(result.q[:, 0], [f.q[0] for f in frames])
    np.testing.assert_array_equal(result.multipliers[:, 0], [f.multipliers[0] for f in frames])
    assert result.certificate.steps == 205
    # every is counted from the start of each run: the second, from step
    # 205, emits 215, 225, ... (not 210, 220).
    assert list(again.step[:2]) == [215, 225] and again.t[0] > result.t[-1]
    assert again.certificate.constraints[0].name == "rod"
    assert np.all(np.abs(again.position_residuals) <= again.certificate.position_bound)


def test_cosimulation_and_evaluate_as_arrays(client):
    spec = load_spec(example("pendulum_force_input.json"))
    session = client.create_session(spec)
    with client.cosimulate(session.id) as cosim:
        for k in range(5):
            cosim.step(0.01, {"Fx": 0.5})
        traj = cosim.trajectory()
    assert len(traj) == 5 and traj.names.outputs == ("angle", "omega")
    np.testing.assert_allclose(traj.t, 0.01 * np.arange(1, 6), rtol=0, atol=1e-12)
    assert np.all(np.diff(traj.outputs[:, 0]) > 0)  # pushed: the angle grows
    # A saved snapshot and a discarded step repeat the current state: not
    # kept. A restore moves the session back: kept, at the snapshot's time.
    with client.cosimulate(session.id) as cosim:
        saved = cosim.save_snapshot("at 0.05")
        cosim.step(0.01)
        discarded = cosim.try_step(0.01, {"Fx": 1e308})
        cosim.restore_snapshot(saved.snapshot_id)
        cosim.step(0.01)
        traj = cosim.trajectory()
    assert saved.t == pytest.approx(0.05) and discarded.discarded
    np.testing.assert_allclose(traj.t, [0.06, 0.05, 0.06], rtol=0, atol=1e-12)
    response = client.evaluate(spec)
    one = Trajectory.from_frames([response.frame], Names.from_spec(spec))
    assert one.multipliers[0, 0] == pytest.approx(9.81)


def test_get_session_gives_the_current_frame_on_request(client):
    spec = load_spec(example("pendulum_force_input.json"))
    session = client.create_session(spec)
    assert not client.get_session(session.id).HasField("frame")
    last = client.run(session.id, steps=25, every=1000).frames()[-1]
    full = client.get_session(session.id, frame=True)
    assert full.frame == last and full.frame.multipliers[0] == last.multipliers[0]
    # A session this client did not create: its names come from the server.
    other = Client(client.address)
    assert other.run(session.id, steps=1).result().names.outputs == ("angle", "omega")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("trial", [1, 2, 3])
def test_the_first_call_after_a_restart_succeeds(server_binary, tmp_path, trial):
    spec = load_spec(example("circle_pendulum.json"))
    server = LocalServer(binary=server_binary, port=free_port(),
                         log_path=tmp_path / "server.log")
    server.start()
    # The clients close before the server stops (tidy; a connection left
    # open no longer holds a stopping server: the last test).
    old = Client(server.address, timeout=30)
    clients = [old]
    try:
        session = old.create_session(spec)
        assert old.get_session(session.id).status == pb.READY
        server.kill()
        server.start()  # the same port
        # The old client's first call, and a new client's, succeed.
        assert old.validate(spec).valid
        clients.append(Client(server.address, timeout=30))
        assert clients[-1].health() == "SERVING"
        fresh = old.create_session(spec)
        assert fresh.id != session.id
        with pytest.raises(TetherError) as gone:
            old.get_session(session.id)  # in memory: it died with the server
        assert gone.value.code == grpc.StatusCode.NOT_FOUND
    finally:
        for c in clients:
            c.close()
        server.stop()


def test_a_server_gone_mid_stream_is_not_blamed_on_tls(server_binary, tmp_path):
    server = LocalServer(binary=server_binary, log_path=tmp_path / "server.log")
    server.start()
    client = Client(server.address, timeout=30)
    session = client.create_session(load_spec(example("circle_pendulum.json")))
    stream = client.run(session.id, steps=10_000_000, every=1000)
    frames = iter(stream)
    next(frames)
    server.kill()
    with pytest.raises(TetherError) as error:
        for _ in frames:
            pass
    assert error.value.code == grpc.StatusCode.UNAVAILABLE
    assert "TLS" not in error.value.message and "tls_ca" not in error.value.message


def test_plot_and_animate_from_the_command_line(cli_binary, tmp_path):
    pytest.importorskip("matplotlib")
    image = pytest.importorskip("PIL.Image")
    run = tmp_path / "run.jsonl"
    spec = example("pendulum_force_input.json")
    subprocess.run([cli_binary, "run", spec, "--until", "1", "--every", "10", "-q",
                    "-o", str(run)], check=True)
    png, gif = tmp_path / "run.png", tmp_path / "run.gif"
    env_python = [sys.executable, "-m", "tether_client"]
    env = {"PYTHONPATH": PACKAGE_ROOT + "/src", "PATH": "/usr/bin:/bin"}
    subprocess.run(env_python + ["plot", str(run), "--spec", spec, "-o", str(png)],
                   check=True, env=env)
    subprocess.run(env_python + ["animate", str(run), "--spec", spec, "--point", "x,y",
                                 "-o", str(gif), "--max-frames", "30"], check=True, env=env)
    assert png.read_bytes()[:4] == b"\x89PNG"
    with image.open(gif) as picture:
        assert picture.n_frames == 30
    bad = subprocess.run(env_python + ["animate", str(run), "--spec", spec, "--point",
                                       "x,q", "-o", str(gif)], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "'q' is neither a coordinate" in bad.stderr
    # The C++ CLI hands plot and animate to the package (TETHER_PYTHON: the
    # interpreter that has it).
    svg = tmp_path / "cli.svg"
    env["TETHER_PYTHON"] = sys.executable
    subprocess.run([cli_binary, "plot", str(run), "--spec", spec, "--output", str(svg)],
                   check=True, env=env)
    assert "<svg" in svg.read_text()
    env["TETHER_PYTHON"] = "/nonexistent/python3"
    missing = subprocess.run([cli_binary, "animate", str(run), "--point", "x,y", "-o",
                              str(gif)], env=env, capture_output=True, text=True)
    assert missing.returncode == 1 and "needs Python 3" in missing.stderr
    # An empty run file, and a --spec of another model, are errors (they
    # drew an empty figure, and labelled the columns with the wrong names).
    env["TETHER_PYTHON"] = sys.executable
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    refused = subprocess.run([cli_binary, "plot", str(empty), "--output", str(svg)], env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "no frames" in refused.stderr, refused.stderr
    other = example("circle_pendulum.json")
    refused = subprocess.run([cli_binary, "plot", str(run), "--spec", other, "--output",
                              str(svg)], env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "the run's frames" in refused.stderr, refused.stderr
    # Exit codes as the README's: bad input 2 (above), a file that cannot be
    # read 1.
    refused = subprocess.run([cli_binary, "plot", str(tmp_path / "none.jsonl"), "--output",
                              str(svg)], env=env, capture_output=True, text=True)
    assert refused.returncode == 1 and "none.jsonl" in refused.stderr, refused.stderr
    not_json = tmp_path / "bad.jsonl"
    not_json.write_text("{\"q\": [1,\n")
    refused = subprocess.run([cli_binary, "plot", str(not_json), "--output", str(svg)],
                             env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    # An interpreter without the package's dependencies (here: no site
    # packages at all) gets a line naming the missing module, not a
    # traceback (found by an audit).
    bare = tmp_path / "bare-python"
    bare.write_text("#!/bin/sh\nexec %s -S -I \"$@\"\n" % sys.executable)
    bare.chmod(0o755)
    env["TETHER_PYTHON"] = str(bare)
    without = subprocess.run([cli_binary, "plot", str(run), "--output", str(svg)], env=env,
                             capture_output=True, text=True)
    assert without.returncode != 0
    assert "needs Python 3 with the tether_client package" in without.stderr, without.stderr
    assert "not found" in without.stderr and "Traceback" not in without.stderr, without.stderr


# A client process that keeps its channel open and idle, and does not read
# it meanwhile (gRPC's backup poller off, as in a client busy elsewhere): it
# never sees the server's GOAWAY, so the connection stays until the server
# closes it.
HOLD_OPEN = """
import sys, time
from tether_client import Client
client = Client(sys.argv[1], timeout=30)
assert client.health() == "SERVING"
print("ready", flush=True)
time.sleep(120)
"""


def test_a_client_left_open_does_not_hold_a_stopping_server(server_binary, tmp_path):
    # With no call in progress the server stops at once (after its 1 s of
    # refusing new calls), however long its grace: gRPC's own shutdown waits
    # for an open connection until the grace runs out (30 s here).
    server = LocalServer(binary=server_binary, extra_args=["--shutdown-grace", "30"],
                         log_path=tmp_path / "server.log")
    server.start()
    env = dict(os.environ, GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS="0",
               PYTHONPATH=os.path.join(PACKAGE_ROOT, "src"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_OPEN, server.address], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        process = server.process
        started = time.monotonic()
        process.terminate()
        process.wait(25)  # raises TimeoutExpired past it
        took = time.monotonic() - started
        assert process.returncode == 0
        # About 1 s; 15 s is half the grace, a margin for a loaded machine.
        assert took < 15, took
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
        server.stop()


def test_a_failed_runs_frames_are_the_errors_partial_trajectory(client):
    # A force growing as exp(50 t) overflows the state within seconds: the
    # run streams every frame it computed, then ends ABORTED; result() kept
    # none of them (found by an audit).
    spec = load_spec(example("pendulum_force_input.json"))
    spec.system.generalized_forces[0] = "exp(50*t)"
    session = client.create_session(spec)
    with pytest.raises(TetherError) as error:
        client.run(session.id, until_time=30, every=10).result()
    assert error.value.code.name == "ABORTED"
    partial = error.value.partial
    assert partial is not None and len(partial.t) > 10
    assert np.all(np.diff(partial.t) > 0) and partial.q.shape == (len(partial.t), 2)
    assert error.value.partial is partial  # built once


def test_an_errors_partial_is_built_when_first_read_not_when_raised():
    # run_ensemble's partial of a huge stream took 17 s to build before the
    # error was raised, past the call's timeout (found by an audit).
    built = []
    error = TetherError(grpc.StatusCode.UNAVAILABLE, "drained")
    error.set_partial_lazily(lambda: built.append(1) or "the instances received")
    assert built == []
    assert error.partial == "the instances received"
    assert error.partial == "the instances received" and built == [1]  # built once
    error.partial = None
    assert error.partial is None and built == [1]
