#!/usr/bin/env python3
"""Loop closures and a spherical joint, each against an independent solution
(issue 23 point 4): a slider-crank and a four-bar (mechanisms with a planar
POINT_TO_POINT loop closure, run by `tether run`) against their one-degree-
of-freedom Lagrangian in the crank angle, integrated by scipy (DOP853,
rtol 1e-12), and a spherical pendulum (a SPHERICAL joint, unit quaternion and
norm constraint) against the Cartesian form (a point on a sphere). The
mechanisms are the examples' (examples/python/mechanisms/, written with
tether_client.mechanism; their JSON is examples/slider_crank.json,
four_bar.json, spherical_pendulum.json), built here at h = 1e-4; the
reference solutions below are this file's own.

  mechanism_loops_test.py --tether build/bin/tether --source-dir .
"""
import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.integrate import solve_ivp

G = 9.81


def example(source_dir, name):
    """examples/python/mechanisms/NAME.py as a module (its build() and constants)."""
    path = os.path.join(source_dir, "examples", "python", "mechanisms", name + ".py")
    spec = importlib.util.spec_from_file_location("example_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def to_json(spec):
    """A SimulationSpec as the dict `tether run` reads."""
    from google.protobuf import json_format
    return json_format.MessageToDict(spec)


def d5(f, x, h=1e-3):
    """Five-point central difference."""
    return (-f(x + 2 * h) + 8 * f(x + h) - 8 * f(x - h) + f(x - 2 * h)) / (12 * h)


def reduced_solution(mass, potential, th0, w0, T):
    """theta(T) of m(th) th'' + m'(th)/2 th'^2 + V'(th) = 0 by DOP853."""
    def rhs(t, y):
        th, w = y
        return [w, -(0.5 * d5(mass, th) * w * w + d5(potential, th)) / mass(th)]
    sol = solve_ivp(rhs, (0, T), [th0, w0], method="DOP853", rtol=1e-12, atol=1e-12)
    return sol.y[0, -1], sol.y[1, -1]


# ---- slider-crank: crank r about z at the origin, rod l, slider on x
# (set from the example's constants by main()).
SC = {}


def slider_crank_geometry(th):
    r, l = SC["r"], SC["l"]
    s = -r * math.sin(th) / l
    phi = math.asin(s)
    dphi = -r * math.cos(th) / (l * math.cos(phi))
    x = r * math.cos(th) + l * math.cos(phi)
    dx = -r * math.sin(th) - l * math.sin(phi) * dphi
    return phi, dphi, x, dx


def slider_crank_mass(th):
    r, l, m1, m2, m3 = SC["r"], SC["l"], SC["m1"], SC["m2"], SC["m3"]
    phi, dphi, x, dx = slider_crank_geometry(th)
    i1, i2 = m1 * r * r / 12, m2 * l * l / 12
    c2 = np.array([-r * math.sin(th), r * math.cos(th)]) + l / 2 * dphi * np.array([-math.sin(phi), math.cos(phi)])
    return m1 * r * r / 4 + i1 + m2 * c2.dot(c2) + i2 * dphi**2 + m3 * dx * dx


def slider_crank_potential(th):
    r, l, m1, m2 = SC["r"], SC["l"], SC["m1"], SC["m2"]
    phi = slider_crank_geometry(th)[0]
    return G * (m1 * r / 2 * math.sin(th) + m2 * (r * math.sin(th) + l / 2 * math.sin(phi)))


# ---- four-bar: crank a at O1 = 0, coupler b, rocker c at O2 = (d, 0) (set
# from the example's constants by main()).
FB = {}


def four_bar_geometry(th):
    a, b, c, d = FB["a"], FB["b"], FB["c"], FB["d"]
    A = np.array([a * math.cos(th), a * math.sin(th)])
    O2 = np.array([d, 0.0])
    # B on both circles |B - A| = b, |B - O2| = c: the upper intersection.
    D = O2 - A
    L = math.hypot(*D)
    k = (b * b - c * c + L * L) / (2 * L)
    hgt = math.sqrt(b * b - k * k)
    u = D / L
    B = A + k * u + hgt * np.array([-u[1], u[0]])
    beta = math.atan2(B[1] - A[1], B[0] - A[0])
    gamma = math.atan2(B[1], B[0] - d)
    # beta', gamma' from d/dth [A + b e(beta) - O2 - c e(gamma)] = 0.
    M = np.array([[-b * math.sin(beta), c * math.sin(gamma)], [b * math.cos(beta), -c * math.cos(gamma)]])
    dA = np.array([-a * math.sin(th), a * math.cos(th)])
    dbeta, dgamma = np.linalg.solve(M, -dA)
    return beta, dbeta, gamma, dgamma


def four_bar_mass(th):
    a, b, c = FB["a"], FB["b"], FB["c"]
    beta, dbeta, gamma, dgamma = four_bar_geometry(th)
    dA = np.array([-a * math.sin(th), a * math.cos(th)])
    dcb = dA + b / 2 * dbeta * np.array([-math.sin(beta), math.cos(beta)])
    ma, mb, mc = FB["ma"], FB["mb"], FB["mc"]
    return (ma * a * a / 3 + mb * dcb.dot(dcb) + mb * b * b / 12 * dbeta**2 + mc * c * c / 3 * dgamma**2)


def four_bar_potential(th):
    a, b, c = FB["a"], FB["b"], FB["c"]
    beta, _, gamma, _ = four_bar_geometry(th)
    return G * (FB["ma"] * a / 2 * math.sin(th) + FB["mb"] * (a * math.sin(th) + b / 2 * math.sin(beta)) +
                FB["mc"] * c / 2 * math.sin(gamma))


# ---- spherical pendulum: a rod of length L (its COM at L/2 along its x
# axis) hanging from a SPHERICAL joint; axisymmetric (I_yy = I_zz = i) and
# without spin about the rod, so its centre of mass moves as a point of mass
# m + i/(L/2)^2 under gravity on m (set from the example's constants by main()).
SP = {}


def cartesian_pendulum(n0, w0):
    """The point-on-a-sphere form; n0: the rod's initial direction, w0: its
    angular velocity (perpendicular to n0)."""
    m, L = SP["m"], SP["L"]
    rc = L / 2
    i = m * L * L / 12
    n0 = np.array(n0) / np.linalg.norm(n0)
    meff = m + i / (rc * rc)
    p0 = rc * n0
    v0 = np.cross(np.array(w0, dtype=float), p0)
    return {"system": {"coordinates": ["x", "y", "z"],
                       "parameters": [{"name": "r", "value": rc}],
                       "masses": {"values": [meff] * 3},
                       "potentialEnergy": "%r*z" % (m * G),
                       "constraints": [{"name": "rod", "expression": "(x^2 + y^2 + z^2 - r^2)/2"}],
                       "baumgarte": {"alpha": 20, "beta": 20}},
            "initial": {"q": list(p0), "v": list(v0)},
            "integrator": {"method": "RK4", "stepSize": 1e-4}}


def run_frames(tether, description, until=1.0, every=1000000):
    """`tether run` on a description (a dict): its frames (every `every`
    steps, the first and the last) and its certificate."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(description, f)
        path = f.name
    try:
        out = subprocess.run([tether, "run", path, "--until", str(until), "--every", str(every), "-q"],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    frames = [l for l in lines if "step" in l]
    cert = [l["certificate"] for l in lines if "certificate" in l]
    return frames, cert[0] if cert else None


def run_tether(tether, description, until=1.0):
    """The first and last frames of `tether run` and its certificate."""
    frames, cert = run_frames(tether, description, until)
    return frames[0], frames[-1], cert


class Checks:
    """Named checks, printed as they run; exit() is the process's status."""

    def __init__(self):
        self.failures = []

    def __call__(self, name, ok, text):
        print(("ok   " if ok else "FAIL ") + name + ": " + text)
        if not ok:
            self.failures.append(name)

    def exit(self):
        if self.failures:
            print("%d failed: %s" % (len(self.failures), ", ".join(self.failures)))
            return 1
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tether", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    check = Checks()
    sys.path.insert(0, os.path.join(a.source_dir, "client", "python", "src"))
    sc, fb, sp = (example(a.source_dir, n) for n in ("slider_crank", "four_bar", "spherical_pendulum"))
    SC.update(m1=sc.CRANK_MASS, r=sc.CRANK, m2=sc.ROD_MASS, l=sc.ROD, m3=sc.SLIDER_MASS)
    FB.update(a=fb.A, b=fb.B, c=fb.C, d=fb.D, ma=fb.MASSES["crank"], mb=fb.MASSES["coupler"],
              mc=fb.MASSES["rocker"])
    SP.update(m=sp.MASS, L=sp.LENGTH)
    cases = {"slider_crank": (to_json(sc.build(0.5, 2.0, step_size=1e-4)), slider_crank_mass,
                              slider_crank_potential, 0.5, 2.0),
             "four_bar": (to_json(fb.build(0.7, 3.0, step_size=1e-4)), four_bar_mass, four_bar_potential, 0.7, 3.0)}
    n0, w0 = [0.6, 0.0, -0.8], [0.96, 1.5, 0.72]
    sph, cart = to_json(sp.build(n0, w0, step_size=1e-4)), cartesian_pendulum(n0, w0)
    for name, (s, mass, pot, th0, w0) in cases.items():
        first, last, cert = run_tether(a.tether, s)
        th_ref, w_ref = reduced_solution(mass, pot, th0, w0, 1.0)
        err = max(abs(last["q"][0] - th_ref), abs(last["v"][0] - w_ref))
        check(name + " crank angle and rate at t = 1 s vs scipy", err < 1e-8,
              "theta %.12f (scipy %.12f), |error| %.2g" % (last["q"][0], th_ref, err))
        drift = abs(last["outputs"][0] - first["outputs"][0])
        check(name + " energy", drift < 1e-8, "drift %.2g of %.6g" % (drift, first["outputs"][0]))
        check(name + " certificate", cert["initialConsistent"] and cert["feedbackVerified"],
              "max |g| %.2g, position bound %.2g" % (cert["maxPositionResidual"], cert["positionBound"]))
    first, last, cert = run_tether(a.tether, sph)
    cfirst, clast, _ = run_tether(a.tether, cart)
    p = np.array(last["outputs"][1:4])
    err = np.abs(p - np.array(clast["q"])).max()
    check("spherical pendulum centre of mass at t = 1 s vs Cartesian", err < 1e-8,
          "(%.9f, %.9f, %.9f), |error| %.2g" % (*p, err))
    drift = abs(last["outputs"][0] - first["outputs"][0])
    check("spherical pendulum energy", drift < 1e-8, "drift %.2g" % drift)
    qn = np.linalg.norm(last["q"])
    check("spherical pendulum quaternion norm", abs(qn - 1) < 1e-9, "|q| - 1 = %.2g" % (qn - 1))
    # The Python client's URDF reader writes what `tether urdf` writes.
    from google.protobuf import json_format
    from tether_client import pb
    from tether_client.urdf import load_urdf, parse_urdf, UrdfError
    for name in ("spatial_arm", "branched_tree"):
        path = os.path.join(a.source_dir, "tests", "data", "mechanism", name + ".urdf")
        py, _ = load_urdf(path)
        cli = json_format.Parse(subprocess.run([a.tether, "urdf", path, "-q"], check=True, capture_output=True,
                                               text=True).stdout, pb.SimulationSpec())
        check("python load_urdf(%s) equals tether urdf" % name, py == cli, "%d joints" % len(py.system.mechanism.joints))
    try:
        parse_urdf('<robot name="r">\n<link name="b"/>\n<link name="a"/>\n<joint name="j" type="revolute">'
                   '<parent link="b"/><child link="a"/></joint>\n</robot>', "t.urdf")
        check("python load_urdf error", False, "no error")
    except UrdfError as e:
        check("python load_urdf error", "t.urdf:3: <link name='a'>: missing <inertial>" in str(e), str(e))
    return check.exit()


if __name__ == "__main__":
    sys.exit(main())
