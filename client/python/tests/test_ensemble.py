"""Client.run_ensemble against a real tether-server: numpy arrays in and
out, each instance the bits of a session run alone, a session as the
template, frames on an output grid, an instance failing alone, instances in
groups on the lane path, and errors naming the field."""

import copy

import numpy as np
import pytest

from conftest import example
from tether_client import Client, TetherError, load_spec


def test_values_in_arrays_out_each_instance_a_sessions_bits(client):
    spec = load_spec(example("pendulum_force_input.json"))
    forces = np.array([0.0, 0.5, -1.25])
    result = client.run_ensemble(spec, until_time=0.1, values={"Fx": forces},
                                 sweeps={"der(x)": (-0.5, 0.5, 2)})
    assert len(result) == 6 and result.ok.all()
    assert result.value_names == ("Fx", "der(x)")
    np.testing.assert_array_equal(result.value("Fx"), np.repeat(forces, 2))
    np.testing.assert_array_equal(result.value("der(x)"), [-0.5, 0.5] * 3)
    assert result.q.shape == (6, 2) and result.v.shape == (6, 2)
    assert (result.steps == 100).all() and result.step_stable.all()
    assert np.all(result.max_position_residual <= result.position_bound)
    # Instance 3 (Fx = 0.5, der(x) = 0.5) as a session run alone.
    s = copy.deepcopy(spec)
    s.initial.v[0] = 0.5
    session = client.create_session(s)
    client.update_session(session.id, inputs={"Fx": 0.5})
    last = client.run(session.id, until_time=0.1, every=1000).frames()[-1]
    assert tuple(last.q) == tuple(result.q[3]) and tuple(last.v) == tuple(result.v[3])


def test_a_stream_gives_the_results_one_by_one_in_instance_order(client):
    # stream_ensemble: the instance results as they arrive, in order, the
    # same as run_ensemble's rows; done and total follow the messages.
    spec = load_spec(example("pendulum_force_input.json"))
    sweeps = {"Fx": (-1.0, 1.0, 40)}
    whole = client.run_ensemble(spec, until_time=0.05, sweeps=sweeps)
    seen = []
    stream = client.stream_ensemble(spec, until_time=0.05, sweeps=sweeps,
                                    progress=lambda done, total: seen.append((done, total)))
    q = []
    for k, row in enumerate(stream):
        assert row.index == k and row.ok
        q.append(tuple(row.final_state.q))
    assert q == [tuple(x) for x in whole.q]
    assert stream.done == stream.total == 40 and seen[-1] == (40, 40)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    # result() of a fresh stream is run_ensemble's result.
    again = client.stream_ensemble(spec, until_time=0.05, sweeps=sweeps).result()
    np.testing.assert_array_equal(again.q, whole.q)
    np.testing.assert_array_equal(again.value("Fx"), whole.value("Fx"))


def test_a_session_template_with_frames_and_seeded_draws(client):
    spec = load_spec(example("pendulum_force_input.json"))
    session = client.create_session(spec)
    client.run(session.id, until_time=0.05).frames()  # the template's state moves on
    kwargs = dict(random={"Fx": ("normal", 0.0, 2.0)}, count=4, seed=11,
                  output_interval=0.01)
    first = client.run_ensemble(session.id, until_time=0.1, **kwargs)
    again = client.run_ensemble(session.id, until_time=0.1, **kwargs)
    np.testing.assert_array_equal(first.values, again.values)  # the seed repeats
    np.testing.assert_array_equal(first.q, again.q)
    assert len(set(first.value("Fx"))) == 4 and first.seed == 11
    # Frames from the session's time 0.05 to 0.1 every 0.01 s.
    assert len(first.trajectories) == 4
    np.testing.assert_allclose(first.trajectories[0].t, np.linspace(0.05, 0.1, 6), atol=1e-12)
    assert first.trajectories[0].names.outputs == ("angle", "omega")
    np.testing.assert_array_equal(first.trajectories[2].q[-1], first.q[2])


def test_an_instance_fails_alone_and_bad_ensembles_name_the_field(client):
    spec = load_spec(example("pendulum_force_input.json"))
    result = client.run_ensemble(spec, until_time=0.05, values={"Fx": [0, 1e308, 0]})
    assert list(result.ok) == [True, False, True]
    assert result.errors[1] and not result.errors[0]
    assert result.failed_step[1] < 50 and result.failed_time[1] == result.t[1]
    np.testing.assert_array_equal(result.q[0], result.q[2])
    with pytest.raises(TetherError) as error:
        client.run_ensemble(spec, until_time=1, sweeps={"k": (0, 1, 3)})
    assert error.value.code.name == "INVALID_ARGUMENT"
    assert "ensemble.sweeps[0].name" in str(error.value)
    # The request's own paths: ensemble and until_time are RunEnsembleRequest's
    # fields (the template's are under spec.).
    assert [f for f, _ in error.value.field_violations] == ["ensemble.sweeps[0].name"]
    with pytest.raises(TetherError) as error:
        client.run_ensemble(spec, until_time=1, random={"grav": ("normal", 9.81, -1)}, count=2)
    assert "ensemble.random[0].b" in str(error.value)
    assert [f for f, _ in error.value.field_violations] == ["ensemble.random[0].b"]
    with pytest.raises(TetherError) as error:
        client.run_ensemble(spec, until_time=-1, sweeps={"Fx": (0, 1, 2)})
    assert [f for f, _ in error.value.field_violations] == ["until_time"]
    with pytest.raises(TetherError) as error:
        client.run_ensemble("no-such-session", until_time=1, sweeps={"l": (1, 2, 2)})
    assert error.value.code.name == "NOT_FOUND"


def test_a_deadline_stops_an_ensemble_and_the_server_goes_on(server, client):
    spec = load_spec(example("circle_pendulum.json"))
    with Client(server.address, timeout=0.5) as hurried:
        with pytest.raises(TetherError) as error:
            # 50,000 instances x 10,000 steps: far more than half a second.
            hurried.run_ensemble(spec, until_time=10, sweeps={"der(y)": (-1, 1, 50000)})
    assert error.value.code.name == "DEADLINE_EXCEEDED"
    result = client.run_ensemble(spec, until_time=0.01, sweeps={"der(y)": (-1, 1, 3)})
    assert result.ok.all() and (result.steps == 10).all()


def test_reductions_per_output_time_match_numpy_over_the_frames(client):
    spec = load_spec(example("pendulum_force_input.json"))
    kwargs = dict(sweeps={"der(x)": (-1, 1, 7)}, random={"Fx": ("uniform", -2, 2)},
                  count=3, seed=5, output_interval=0.02)
    full = client.run_ensemble(spec, until_time=0.1, **kwargs)
    reduced = client.run_ensemble(spec, until_time=0.1, reduce=True, **kwargs)
    assert reduced.trajectories == [] and full.reduction is None
    red = reduced.reduction
    assert red.columns == ("q_x", "q_y", "v_x", "v_y", "angle", "omega")
    np.testing.assert_allclose(red.t, np.arange(6) * 0.02, atol=1e-15)
    assert (red.count == 21).all()
    for name, values in (("q_x", [tr.q[:, 0] for tr in full.trajectories]),
                         ("v_y", [tr.v[:, 1] for tr in full.trajectories]),
                         ("omega", [tr.outputs[:, 1] for tr in full.trajectories])):
        stack = np.array(values)  # instances x times
        c = red.column(name)
        np.testing.assert_allclose(red.mean[:, c], stack.mean(axis=0), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(red.std[:, c], stack.std(axis=0), rtol=1e-10, atol=1e-14)
        np.testing.assert_array_equal(red.min[:, c], stack.min(axis=0))
        np.testing.assert_array_equal(red.max[:, c], stack.max(axis=0))
    with pytest.raises(TetherError) as error:
        client.run_ensemble(spec, until_time=0.1, sweeps={"l": (1, 2, 2)}, reduce=True)
    assert "reduce" in str(error.value)


def test_an_ensemble_holds_one_stream_slot_of_its_tenant_until_it_ends(server_binary, tmp_path):
    import threading
    from tether_client import LocalServer
    spec = load_spec(example("circle_pendulum.json"))
    with LocalServer(binary=server_binary, log_path=tmp_path / "server.log",
                     extra_args=["--tenant-max-streams", "1"]) as server:
        errors = []
        running = threading.Event()  # the first has sent progress: it holds the slot

        def long_ensemble():
            with Client(server.address, timeout=3) as first:
                try:
                    first.run_ensemble(spec, until_time=10,
                                       sweeps={"der(y)": (-1, 1, 50000)},
                                       progress=lambda done, total: running.set())
                except TetherError as error:
                    errors.append(error)
                running.set()

        worker = threading.Thread(target=long_ensemble)
        worker.start()
        assert running.wait(30)
        with Client(server.address, timeout=30) as second:
            with pytest.raises(TetherError) as refused:
                second.run_ensemble(spec, until_time=0.001, sweeps={"der(y)": (0, 1, 2)})
            worker.join()
            assert refused.value.code.name == "RESOURCE_EXHAUSTED"
            assert "stream" in refused.value.message
            assert errors and errors[0].code.name == "DEADLINE_EXCEEDED"
            # The slot comes back when the first ends on the server: after
            # the client's deadline, once the server has seen the
            # cancellation and the stream's quantum and lanes have stopped
            # (asynchronously: under the sanitizers at load 4 that took
            # longer than the client's next call).
            import time
            deadline = time.monotonic() + 20
            while True:
                try:
                    result = second.run_ensemble(spec, until_time=0.01,
                                                 sweeps={"der(y)": (0, 1, 2)})
                    break
                except TetherError as error:
                    if (error.code.name != "RESOURCE_EXHAUSTED"
                            or time.monotonic() > deadline):
                        raise
                    time.sleep(0.05)
            assert result.ok.all()


def test_in_groups_on_lanes_each_instance_a_sessions_bits_and_a_deadline_stops_it(
        server, client):
    # Without the certificate the server runs the instances in groups of
    # eight on the lane path, whatever the steps (docs/ENSEMBLES.md
    # "Lanes"): each one still the bits of a session run alone, and a
    # deadline still ends the call (a group is advanced in chunks).
    spec = load_spec(example("circle_pendulum.json"))
    spec.certificate.disabled = True
    result = client.run_ensemble(spec, until_time=0.2, sweeps={"der(y)": (-0.5, 0.5, 11)})
    assert len(result) == 11 and result.ok.all() and (result.steps == 200).all()
    for i in (0, 7, 10):  # lanes 0 and 7 of the first group, the short last group
        s = copy.deepcopy(spec)
        s.initial.v[1] = result.value("der(y)")[i]
        session = client.create_session(s)
        last = client.run(session.id, until_time=0.2, every=1000).frames()[-1]
        client.delete_session(session.id)
        assert tuple(last.q) == tuple(result.q[i]) and tuple(last.v) == tuple(result.v[i])
    with Client(server.address, timeout=0.5) as hurried:
        with pytest.raises(TetherError) as error:
            # 100,000 instances x 2,000 steps: far more than half a second.
            hurried.run_ensemble(spec, until_time=2, sweeps={"der(y)": (-1, 1, 100000)})
    assert error.value.code.name == "DEADLINE_EXCEEDED"


def test_fast_functions_within_the_bound_and_said_per_row_and_bad_values_refused(client):
    # functions="fast": the double pendulum's sin and cos vectorised on the
    # lane path; within docs/ENSEMBLES.md's bound of the exact (a session's)
    # bits, and each row and message says which functions ran.
    spec = load_spec(example("double_pendulum_definitions.json"))
    spec.certificate.disabled = True
    sweeps = {"th1": (0.5, 1.5, 6)}
    fast = client.run_ensemble(spec, until_time=0.2, sweeps=sweeps, functions="fast")
    exact = client.run_ensemble(spec, until_time=0.2, sweeps=sweeps)
    assert fast.fast_functions.all() and not exact.fast_functions.any()
    np.testing.assert_allclose(fast.q, exact.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.v, exact.v, rtol=0, atol=1e-12)
    assert not np.array_equal(fast.v, exact.v)  # not the same bits
    from tether_client._proto.tether.v1 import ensemble_pb2, simulator_pb2
    request = simulator_pb2.RunEnsembleRequest(
        spec=spec, until_time=0.01, include_certificate=False,
        functions=ensemble_pb2.ENSEMBLE_FUNCTIONS_FAST)
    request.ensemble.sweeps.add(name="th1", start=0.5, stop=1.5, count=4)
    assert [r.functions for r in client.stub.RunEnsemble(request)] == [
        ensemble_pb2.ENSEMBLE_FUNCTIONS_FAST]
    request.functions = 7
    with pytest.raises(Exception) as error:
        list(client.stub.RunEnsemble(request))
    assert "functions" in str(error.value) and "found 7" in str(error.value)
    with pytest.raises(ValueError, match="functions"):
        client.run_ensemble(spec, until_time=0.1, sweeps=sweeps, functions="quick")


def test_ensembles_too_large_to_hold_are_refused_before_anything_runs(client):
    # A free coordinate with 4096 outputs at 10^6 output times: reductions
    # of 131 GB (the server died of std::bad_alloc), frames of 33 GB per
    # instance (each instance kept them all). Both are now refused before
    # anything is allocated or run, naming output_interval, and the server
    # stays up.
    spec = load_spec(example("circle_pendulum.json"))
    del spec.system.constraints[:]
    for k in range(4096):
        out = spec.system.outputs.add()
        out.name = f"o{k}"
        out.expression = "x"
    interval = 1 / 999999.5
    for reduce in (True, False):
        with pytest.raises(TetherError) as refused:
            client.run_ensemble(spec, until_time=1, output_interval=interval, reduce=reduce,
                                sweeps={"der(y)": (0, 1, 2)})
        assert refused.value.code.name == "INVALID_ARGUMENT"
        assert "output_interval" in str(refused.value)
        assert "larger output_interval" in refused.value.message
    result = client.run_ensemble(spec, until_time=0.01, sweeps={"der(y)": (0, 1, 2)})
    assert result.ok.all()


def test_bad_arguments_are_value_errors_naming_them_before_any_call():
    # As the server and the command line say: count needs random, random
    # needs a count >= 1, a sweep's count >= 1; a negative every is not
    # protobuf's "Value out of range" (found by an audit).
    from tether_client.ensemble import ensemble_spec
    with pytest.raises(ValueError, match="count: draws per grid point need random"):
        ensemble_spec(sweeps={"l": (1, 2, 2)}, count=5)
    with pytest.raises(ValueError, match=r"count: expected an integer in 1\.\."):
        ensemble_spec(random={"l": ("uniform", 1, 2)}, count=0)
    with pytest.raises(ValueError, match=r"sweeps\['l'\] count: expected an integer in 1\.\."):
        ensemble_spec(sweeps={"l": (1, 2, -3)})
    assert ensemble_spec(random={"l": ("uniform", 1, 2)}).random_count == 1
    # Nor is a fractional count truncated, a count or seed beyond the
    # message's integers left to protobuf's bare "Value out of range", an
    # empty array run as the template alone, or a 2-D array flattened into
    # instances (found by an audit).
    with pytest.raises(ValueError, match=r"sweeps\['x'\] count: .* found 2\.5"):
        ensemble_spec(sweeps={"x": (0, 1, 2.5)})
    with pytest.raises(ValueError, match=r"sweeps\['x'\] count: .* found 10000000000"):
        ensemble_spec(sweeps={"x": (0, 1, 10**10)})
    with pytest.raises(ValueError, match=r"seed: expected an integer in 0\.\..* found -1"):
        ensemble_spec(sweeps={"x": (0, 1, 2)}, seed=-1)
    with pytest.raises(ValueError, match=r"values\['l'\]: expected at least one value"):
        ensemble_spec(values={"l": []})
    with pytest.raises(ValueError, match=r"values\['l'\]: expected a one-dimensional array"):
        ensemble_spec(values={"l": [[1, 2]]})
    assert [s.count for s in ensemble_spec(sweeps={"x": (0, 1, 3.0)}).sweeps] == [3]
    client = Client("127.0.0.1:1")  # no call is made
    with pytest.raises(ValueError, match="every: expected an integer >= 0, found -1"):
        client.run("id", steps=10, every=-1)


def test_explicit_instances_beyond_the_request_bound_say_how_many_fit(client):
    # 90 000 instances of two values hold 270 000 objects, above the
    # server's bound on any request (262 144): refused before parsing, and
    # the message says what fits and what to do (it said neither; found by
    # an audit).
    spec = load_spec(example("circle_pendulum.json"))
    n = 90_000
    with pytest.raises(TetherError) as refused:
        client.run_ensemble(spec, until_time=0.001,
                            values={"der(x)": np.zeros(n), "der(y)": np.zeros(n)})
    assert refused.value.code.name == "RESOURCE_EXHAUSTED"
    assert "explicit instances of k values take k + 1 each" in refused.value.message
    assert [s[2] for s in refused.value.error_subjects] == ["request objects"]
