#!/usr/bin/env python3
"""The mechanism examples written with the Python builder (issue 23 point 6):
examples/python/mechanisms/NAME.py and the examples/NAME.json it writes.

- each script writes today exactly the JSON committed beside it;
- each JSON runs through `tether run` for 1 s with a consistent start, a
  verified feedback law and its energy conserved (no dampers, no push);
- spatial_arm and branched_tree are the mechanisms of the MuJoCo comparison's
  URDF files (tests/data/mechanism/, read by tether_client.urdf);
- the cart-pole with a constant push agrees with its textbook Lagrangian
  integrated by scipy (DOP853, rtol 1e-12);
- the slider-crank's pin multipliers are the force on the slider as
  docs/MECHANISMS.md says: body_b receives -(lambda_u u + lambda_v v), so
  along the slider's axis m a = -(lambda_u u_x + lambda_v v_x) at every
  frame (u, v the rod's x and y axes);
- the builder's errors name the element, and the engine rejects the same
  mechanism (`tether validate`) at the same field.
The slider-crank's and four-bar's crank against scipy, and the spherical
pendulum against its Cartesian form, are tests/mechanism_loops_test.py's,
run on these examples' builders (its reference solutions and runner are
reused here).

  mechanism_examples_test.py --tether build/bin/tether --source-dir .
"""
import argparse
import filecmp
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.integrate import solve_ivp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mechanism_loops_test import G, Checks, example, run_frames, run_tether, to_json  # noqa: E402

EXAMPLES = ("spatial_arm", "branched_tree", "slider_crank", "four_bar", "spherical_pendulum", "cart_pole")


def without_defaults(d):
    """A protobuf JSON dict without its empty and zero entries (a submessage
    set to zeros and an unset one mean the same to the engine)."""
    if isinstance(d, dict):
        r = {k: without_defaults(v) for k, v in d.items()}
        return {k: v for k, v in r.items() if v not in ({}, [], 0, "")}
    if isinstance(d, list):
        return [without_defaults(x) for x in d]
    return d


def cart_pole_reference(cp, theta0, push, T):
    """(x, theta, dx/dt, dtheta/dt) at T of the cart-pole's own Lagrangian:
    cart M on x, pole a uniform rod (mass m, length l, centre lc = l/2,
    I = m l^2/12 about it) at angle theta from upright, tipping towards +x:
      (M + m) x'' + m lc cos(th) th'' - m lc sin(th) th'^2 = F
      m lc cos(th) x'' + (m lc^2 + I) th'' - m g lc sin(th) = 0."""
    M, m, l = cp.CART_MASS, cp.POLE_MASS, cp.POLE_LENGTH
    lc, inertia = l / 2, m * l * l / 12

    def rhs(t, y):
        x, th, dx, dth = y
        c, s = np.cos(th), np.sin(th)
        A = np.array([[M + m, m * lc * c], [m * lc * c, m * lc * lc + inertia]])
        b = np.array([push + m * lc * s * dth * dth, m * G * lc * s])
        ddx, ddth = np.linalg.solve(A, b)
        return [dx, dth, ddx, ddth]
    sol = solve_ivp(rhs, (0, T), [0.0, theta0, 0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-12)
    return sol.y[:, -1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tether", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    src = a.source_dir
    sys.path.insert(0, os.path.join(src, "client", "python", "src"))
    from google.protobuf import json_format
    from tether_client import load_spec, pb
    from tether_client.mechanism import Mechanism, MechanismError
    from tether_client.urdf import load_urdf
    check = Checks()
    scripts = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(src, "examples", "python", "mechanisms",
                                                                            "*.py")))
    check("the example scripts", scripts == sorted(EXAMPLES), ", ".join(scripts))
    with tempfile.TemporaryDirectory() as tmp:
        for name in EXAMPLES:
            out = os.path.join(tmp, name + ".json")
            subprocess.run([sys.executable, os.path.join(src, "examples", "python", "mechanisms", name + ".py"), out],
                           check=True)
            committed = os.path.join(src, "examples", name + ".json")
            check(name + ".py writes examples/%s.json" % name, filecmp.cmp(out, committed, shallow=False),
                  "%d bytes" % os.path.getsize(out))

    for name in EXAMPLES:
        spec = json.load(open(os.path.join(src, "examples", name + ".json")))
        first, last, cert = run_tether(a.tether, spec)
        ok = cert["initialConsistent"] and cert["feedbackVerified"] and all(np.isfinite(last["q"]))
        check(name + " runs 1 s", ok and abs(last["t"] - 1) < 1e-12,
              "%d steps, max |g| %.2g" % (int(last["step"]), cert["maxPositionResidual"]))
        drift = abs(last["outputs"][0] - first["outputs"][0])
        check(name + " energy", drift < 1e-6 * max(1.0, abs(first["outputs"][0])),
              "drift %.2g of %.6g J (RK4, h = 1e-3)" % (drift, first["outputs"][0]))

    for name in ("spatial_arm", "branched_tree"):
        urdf, _ = load_urdf(os.path.join(src, "tests", "data", "mechanism", name + ".urdf"))
        for j in urdf.system.mechanism.joints:
            if j.type == pb.Joint.FIXED:
                j.ClearField("axis")  # URDF's default axis on a fixed joint, which ignores it
        built = load_spec(os.path.join(src, "examples", name + ".json"))
        same = (without_defaults(json_format.MessageToDict(urdf.system.mechanism)) ==
                without_defaults(json_format.MessageToDict(built.system.mechanism)))
        check(name + " is the URDF file's mechanism", same, "%d bodies, %d joints" % (
            len(built.system.mechanism.bodies), len(built.system.mechanism.joints)))

    # The cart-pole pushed by 1.5 N against its Lagrangian.
    cp = example(src, "cart_pole")
    push, theta0 = 1.5, 0.2
    spec = to_json(cp.build(pole_angle=theta0, push=push, step_size=1e-4))
    _, last, cert = run_tether(a.tether, spec)
    ref = cart_pole_reference(cp, theta0, push, 1.0)
    got = np.array(last["q"] + last["v"])
    err = np.abs(got - ref).max()
    check("cart_pole pushed by %g N at t = 1 s vs scipy" % push, err < 1e-8,
          "(x, th, dx, dth) = (%.9f, %.9f, %.9f, %.9f), |error| %.2g" % (*got, err))

    # The slider-crank's pin force on the slider.
    sc = example(src, "slider_crank")
    spec = to_json(sc.build())
    spec["system"]["outputs"] += [{"name": n, "expression": "rod_" + n} for n in ("R11", "R12")]
    frames, _ = run_frames(a.tether, spec, until=1.0, every=50)
    worst = max(abs(sc.SLIDER_MASS * f["a"][2] + f["lambda"][0] * f["outputs"][1] + f["lambda"][1] * f["outputs"][2])
                for f in frames)
    scale = max(abs(sc.SLIDER_MASS * f["a"][2]) for f in frames)
    check("slider_crank pin multipliers are the slider's force", worst < 1e-9 * max(1.0, scale),
          "max |m a_x + lambda_u u_x + lambda_v v_x| = %.2g N over %d frames (|m a_x| up to %.3g N)" % (
              worst, len(frames), scale))

    # The builder's errors, and the engine's on the same mechanism.
    def build_error(make):
        try:
            make()
        except MechanismError as e:
            return str(e)
        return "no error"

    def bad_axis():
        m = Mechanism()
        m.add_body("ground")
        m.add_body("arm", mass=1, inertia=(1, 1, 1))
        m.add_joint("hinge", "revolute", "ground", "arm", axis=(0, 0, 0))

    def bad_inertia():
        Mechanism().add_body("plate", mass=1, inertia=(1, 1, 3))

    def no_parent():
        m = Mechanism()
        m.add_body("arm", mass=1, inertia=(1, 1, 1))
        m.add_joint("hinge", "revolute", "base", "arm", axis=(0, 0, 1))

    for what, make, field in (("axis", bad_axis, "system.mechanism.joints[0].axis"),
                              ("inertia", bad_inertia, "system.mechanism.bodies[0].inertia"),
                              ("parent", no_parent, "system.mechanism.joints[0].parent")):
        text = build_error(make)
        check("builder error (%s)" % what, text.startswith(field.rsplit(".", 1)[0]) and field.rsplit(".", 1)[1] in text,
              text)
    # The same zero axis sent to the engine: rejected at the same field.
    m = Mechanism()
    m.add_body("ground")
    m.add_body("arm", mass=1, inertia=(1, 1, 1))
    m.add_joint("hinge", "revolute", "ground", "arm", axis=(0, 0, 1))
    spec = m.spec()
    spec.system.mechanism.joints[0].axis.z = 0
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(json_format.MessageToJson(spec))
    try:
        r = subprocess.run([a.tether, "validate", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    check("the engine rejects the zero axis at the builder's field",
          r.returncode != 0 and "system.mechanism.joints[0].axis" in r.stdout + r.stderr,
          (r.stdout + r.stderr).strip().splitlines()[0] if (r.stdout + r.stderr).strip() else "no output")
    return check.exit()


if __name__ == "__main__":
    sys.exit(main())
