#!/usr/bin/python3
"""The Python client (client/python/tether_client) and the Python examples
end to end against a real tether-server on a free loopback port.

Usage: /usr/bin/python3 tests/python_client_test.py
           --server-binary build/bin/tether-server [--source-dir .]
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--source-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    args, rest = parser.parse_known_args()
    args.source_dir = os.path.abspath(args.source_dir)
    return args, rest


class PythonClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(ARGS.source_dir, "client", "python", "src"))
        global tether_client, grpc
        import grpc
        import tether_client
        cls.log = tempfile.NamedTemporaryFile(prefix="tether-server-",
                                              suffix=".log", delete=False)
        cls.server = tether_client.LocalServer(binary=ARGS.server_binary,
                                               log_path=cls.log.name)
        cls.address = cls.server.start()
        cls.client = tether_client.Client(cls.address, timeout=60)
        cls.examples = os.path.join(ARGS.source_dir, "examples")
        cls.spec = tether_client.load_spec(
            os.path.join(cls.examples, "circle_pendulum.json"))

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()
        cls.log.close()
        os.unlink(cls.log.name)

    def bad_spec(self):
        spec = tether_client.pb.SimulationSpec()
        spec.CopyFrom(self.spec)
        spec.system.constraints[0].expression = "(x^2 + y^2 - 1"
        return spec

    def test_health(self):
        self.assertEqual(self.client.health(), "SERVING")

    def test_load_spec_accepts_both_field_spellings(self):
        spec = tether_client.parse_spec(
            '{"system": {"coordinates": ["x"], "potential_energy": "x^2"},'
            ' "integrator": {"method": "RK4", "stepSize": 0.01}}')
        self.assertEqual(spec.system.potential_energy, "x^2")
        self.assertAlmostEqual(spec.integrator.step_size, 0.01)

    def test_validate(self):
        report = self.client.validate(self.spec)
        self.assertTrue(report.valid)
        self.assertTrue(report.initial_consistent)
        self.assertTrue(report.step_stable)

        report = self.client.validate(self.bad_spec())
        self.assertFalse(report.valid)
        errors = [d for d in report.diagnostics
                  if d.severity == tether_client.pb.Diagnostic.ERROR]
        self.assertTrue(errors)
        self.assertTrue(any(d.field.startswith("system.constraints[0]")
                            for d in errors), report)

    def test_definitions_pass_through(self):
        # Named definitions (issue 23): load_spec keeps them, the server
        # compiles them, and built in Python they are the same message.
        spec = tether_client.load_spec(
            os.path.join(self.examples, "double_pendulum_definitions.json"))
        self.assertEqual([d.name for d in spec.system.definitions][:2],
                         ["x1", "y1"])
        report = self.client.validate(spec)
        self.assertTrue(report.valid, report)
        self.assertEqual(len(report.initial.outputs), 3)
        spec.system.definitions.add(name="spare", expression="x1*2")
        report = self.client.validate(spec)
        self.assertTrue(report.valid)
        self.assertEqual(
            [(d.field, d.severity) for d in report.diagnostics],
            [("system.definitions[6]", tether_client.pb.Diagnostic.WARNING)])

    def test_evaluate_seed_004_example(self):
        # Point mass on phi = x^2 + y^2 - 1 at (1, 0) moving with (0, 1)
        # under gravity 9.81: a = (-1, -9.81), lambda = 0.5 (our sign
        # convention; +G^T mu gives -0.5, docs/MATH.md section 12). The start
        # is consistent, so the gains do not matter.
        spec = tether_client.pb.SimulationSpec()
        spec.CopyFrom(self.spec)
        spec.system.constraints[0].expression = "x^2 + y^2 - 1"
        state = tether_client.pb.State(t=0, q=[1, 0], v=[0, 1])
        response = self.client.evaluate(spec, state=state)
        frame = response.frame
        self.assertAlmostEqual(frame.a[0], -1.0, places=9)
        self.assertAlmostEqual(frame.a[1], -9.81, places=9)
        # "lambda" is a Python keyword: the field is reached with getattr.
        self.assertAlmostEqual(getattr(frame, "lambda")[0], 0.5, places=9)

    def test_invalid_argument_carries_field_path(self):
        with self.assertRaises(tether_client.TetherError) as raised:
            self.client.evaluate(self.bad_spec())
        error = raised.exception
        self.assertEqual(error.code, grpc.StatusCode.INVALID_ARGUMENT)
        fields = [field for field, _ in error.field_violations]
        self.assertTrue(any(f.startswith("spec.system.constraints[0]")
                            for f in fields), fields)
        self.assertIn("spec.system.constraints[0]", str(error))

        with self.assertRaises(tether_client.TetherError) as raised:
            self.client.create_session(self.bad_spec())
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(raised.exception.field_violations)

    def test_session_lifecycle_and_run(self):
        session = self.client.create_session(self.spec, display_name="py-test")
        try:
            self.assertEqual(list(session.coordinates), ["x", "y"])
            self.assertEqual(list(session.constraints), ["rod"])
            self.assertEqual(session.display_name, "py-test")
            self.assertEqual(self.client.get_session(session.id).id, session.id)
            ids = [s.id for s in self.client.list_sessions(page_size=1)]
            self.assertIn(session.id, ids)

            stream = self.client.run(session.id, steps=100, every=10)
            frames = list(stream)
            self.assertEqual([f.step for f in frames], list(range(0, 101, 10)))
            certificate = stream.certificate
            self.assertIsNotNone(certificate)
            self.assertEqual(certificate.steps, 100)
            self.assertAlmostEqual(certificate.t_end, 0.1, places=12)
            self.assertTrue(certificate.initial_consistent)
            self.assertTrue(certificate.feedback_verified)
            self.assertLessEqual(certificate.max_position_residual,
                                 certificate.position_bound)
            for frame in frames:
                x, y = frame.q
                self.assertLess(abs(math.hypot(x, y) - 1), 1e-6)

            # A second run continues from step 100 and does not repeat it.
            frames = self.client.run(session.id, steps=20, every=10).frames()
            self.assertEqual([f.step for f in frames], [110, 120])
            self.assertEqual(self.client.get_session(session.id).step, 120)

            # An output grid from the session time 0.12: frames at
            # 0.12 + k * 0.0025 (every defaults to 0 with it), the last at until.
            frames = self.client.run(session.id, until_time=0.13,
                                     output_interval=0.0025).frames()
            self.assertEqual([f.t for f in frames],
                             [0.12 + k * 0.0025 for k in range(1, 4)] + [0.13])
            with self.assertRaises(tether_client.TetherError) as raised:
                self.client.run(session.id, steps=1, output_interval=-1).frames()
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("output_interval", str(raised.exception))
        finally:
            self.client.delete_session(session.id)
        with self.assertRaises(tether_client.TetherError) as raised:
            self.client.get_session(session.id)
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)
        # google.rpc.ResourceInfo names the session.
        self.assertEqual(raised.exception.error_subjects,
                         [("ResourceInfo", "tether.v1.Session", session.id,
                           "no such session")])

    def test_cosimulate(self):
        spec = tether_client.load_spec(
            os.path.join(self.examples, "pendulum_force_input.json"))
        session = self.client.create_session(spec)
        try:
            self.assertEqual(list(session.inputs), ["Fx"])
            angle = list(session.outputs).index("angle")
            with self.client.cosimulate(session.id) as cosim:
                for k in range(1, 11):
                    frame, certificate = cosim.step(0.01, {"Fx": 5.0})
                    self.assertAlmostEqual(frame.t, 0.01 * k, places=12)
                    self.assertAlmostEqual(certificate.t_end, frame.t, places=12)
                    self.assertLess(abs(frame.residuals.position[0]), 1e-6)
            # Pushed in +x from hanging at rest: the angle grew.
            self.assertGreater(frame.outputs[angle], 0.0)
            self.assertEqual(self.client.get_session(session.id).step, 100)

            with self.assertRaises(tether_client.TetherError) as raised:
                with self.client.cosimulate(session.id) as cosim:
                    cosim.step(0.01, {"no_such_input": 1.0})
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("no_such_input", str(raised.exception))
        finally:
            self.client.delete_session(session.id)

    def frames_of(self, session_id, steps):
        stream = self.client.run(session_id, steps=steps)
        frames = [f.SerializeToString() for f in stream]
        return frames, stream.certificate.SerializeToString()

    def test_snapshots_export_import_and_update(self):
        spec = tether_client.load_spec(
            os.path.join(self.examples, "pendulum_force_input.json"))
        session = self.client.create_session(spec)
        copy = None
        try:
            self.frames_of(session.id, 25)
            snap = self.client.create_snapshot(session.id, "after 25")
            self.assertEqual((snap.step, snap.label), (25, "after 25"))
            first = self.frames_of(session.id, 40)
            restored = self.client.restore_snapshot(session.id, snap.snapshot_id)
            self.assertEqual(restored.step, 25)
            self.assertEqual(self.frames_of(session.id, 40), first)
            # A snapshot's bytes: the state it was taken at (step 25).
            copy = self.client.import_session(
                self.client.export_session(session.id, snap.snapshot_id))
            self.assertEqual(copy.step, 25)
            self.client.delete_session(copy.id)
            listed = self.client.list_snapshots(session.id)
            self.assertEqual([s.snapshot_id for s in listed.snapshots],
                             [snap.snapshot_id])
            self.assertGreaterEqual(listed.max_snapshots, 1)

            # Portable bytes: a copy that continues bit for bit.
            data = self.client.export_session(session.id)
            copy = self.client.import_session(data, "copy")
            self.assertEqual(copy.step, 65)
            self.assertEqual(self.frames_of(session.id, 30),
                             self.frames_of(copy.id, 30))
            damaged = bytearray(data)
            damaged[len(damaged) // 2] ^= 0x40
            with self.assertRaises(tether_client.TetherError) as raised:
                self.client.import_session(bytes(damaged))
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.INVALID_ARGUMENT)
            self.assertTrue(any(field.startswith("data") for field, _ in
                                raised.exception.field_violations))

            # Updates keep the id, the step counter and the snapshots.
            updated = self.client.update_session(
                session.id, parameters={"grav": 1.62},
                constraint_gains={"rod": (20, 20)})
            self.assertEqual((updated.id, updated.step, updated.snapshot_count),
                             (session.id, 95, 1))
            with self.assertRaises(tether_client.TetherError) as raised:
                self.client.update_session(session.id, parameters={"g": 1})
            self.assertEqual([f for f, _ in raised.exception.field_violations],
                             ["parameters[g]"])
            self.client.delete_snapshot(session.id, snap.snapshot_id)
            self.assertEqual(len(self.client.list_snapshots(session.id).snapshots), 0)
        finally:
            self.client.delete_session(session.id)
            if copy is not None:
                self.client.delete_session(copy.id)

    def test_cosimulate_discard_and_in_stream_snapshots(self):
        spec = tether_client.load_spec(
            os.path.join(self.examples, "pendulum_force_input.json"))
        session = self.client.create_session(spec)
        try:
            with self.client.cosimulate(session.id) as cosim:
                good = cosim.try_step(0.01)
                self.assertFalse(good.discarded)
                snap = cosim.save_snapshot("mark")
                bad = cosim.try_step(0.02, {"Fx": 1e308})
                self.assertTrue(bad.discarded)
                self.assertEqual(bad.last_successful_time, good.frame.t)
                self.assertTrue(bad.discard_reason)
                a, _ = cosim.step(0.01, {"Fx": 0.0})
                cosim.restore_snapshot(snap.snapshot_id)
                b, _ = cosim.step(0.01, {"Fx": 0.0})
                self.assertEqual(a.SerializeToString(), b.SerializeToString())
            self.assertEqual(self.client.get_session(session.id).status,
                             tether_client.pb.READY)
        finally:
            self.client.delete_session(session.id)

    def run_example(self, name, *args):
        script = os.path.join(self.examples, "python", name)
        result = subprocess.run(
            [sys.executable, script, "--server", self.address] + list(args),
            capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_plot_residuals_example(self):
        with tempfile.TemporaryDirectory() as directory:
            png = os.path.join(directory, "residuals.png")
            out = self.run_example("plot_residuals.py", "--output", png)
            self.assertTrue(os.path.exists(png), out)
            self.assertGreater(os.path.getsize(png), 1000)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn("analytic envelope bounds every frame", out)

    def test_plot_residuals_starts_its_own_server(self):
        with tempfile.TemporaryDirectory() as directory:
            png = os.path.join(directory, "own.png")
            script = os.path.join(self.examples, "python", "plot_residuals.py")
            result = subprocess.run(
                [sys.executable, script, "--server-binary", ARGS.server_binary,
                 "--until", "1", "--output", png],
                capture_output=True, text=True, timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertGreater(os.path.getsize(png), 1000)

    def test_cosim_loop_example(self):
        out = self.run_example("cosim_loop.py", "--steps", "200")
        last = out.strip().splitlines()[-1]
        self.assertTrue(last.startswith("final angle"), out)
        final_angle = float(last.split()[2])
        self.assertAlmostEqual(final_angle, 0.5, delta=0.05)

    def test_cosim_retry_example(self):
        out = self.run_example("cosim_retry.py", "--until", "0.6")
        last = out.strip().splitlines()[-1].split()
        self.assertEqual(last[0], "accepted", out)
        # The kicks force rejections, each rolled back and retried.
        self.assertGreater(int(last[3].rstrip(",")), 0, out)
        self.assertEqual(last[-1], "0.6000", out)


if __name__ == "__main__":
    ARGS, rest = parse_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
