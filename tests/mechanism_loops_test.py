#!/usr/bin/env python3
"""Loop closures and a spherical joint, each against an independent solution
(issue 23 point 4): a slider-crank and a four-bar (mechanisms with a planar
POINT_TO_POINT loop closure, run by `tether run`) against their one-degree-
of-freedom Lagrangian in the crank angle, integrated by scipy (DOP853,
rtol 1e-12), and a spherical pendulum (a SPHERICAL joint, unit quaternion and
norm constraint) against the Cartesian form (a point on a sphere). The
descriptions are examples/slider_crank.json, examples/four_bar.json and
examples/spherical_pendulum.json; --write-examples regenerates them.

  mechanism_loops_test.py --tether build/bin/tether --source-dir . [--write-examples]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.integrate import solve_ivp

G = 9.81


def vec(x=0.0, y=0.0, z=0.0):
    return {"x": x, "y": y, "z": z}


def rod_body(name, m, length, thin=1e-4):
    """A slender rod along x from the body origin: COM at length/2, I_zz = I_yy = m L^2/12."""
    i = m * length**2 / 12
    return {"name": name, "mass": m, "inertialOrigin": {"xyz": vec(length / 2)},
            "inertia": {"ixx": thin, "iyy": i, "izz": i}}


def revolute_z(name, parent, child, x=0.0, y=0.0):
    return {"name": name, "type": "REVOLUTE", "parent": parent, "child": child,
            "origin": {"xyz": vec(x, y)}, "axis": vec(z=1)}


def spec(mech, q, v, outputs=(), h=1e-4):
    return {"system": {"mechanism": mech, "baumgarte": {"alpha": 20, "beta": 20},
                       "outputs": [{"name": "energy", "expression": "mechanism_T + mechanism_V"}] + list(outputs)},
            "initial": {"q": list(q), "v": list(v)},
            "integrator": {"method": "RK4", "stepSize": h}}


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


# ---- slider-crank: crank r about z at the origin, rod l, slider on x.
SC = dict(m1=1.0, r=0.2, m2=0.5, l=0.5, m3=0.8)


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


def slider_crank_spec(th0, w0):
    r, l = SC["r"], SC["l"]
    phi, dphi, x, dx = slider_crank_geometry(th0)
    mech = {"bodies": [{"name": "ground"}, rod_body("crank", SC["m1"], r), rod_body("rod", SC["m2"], l),
                       {"name": "slider", "mass": SC["m3"], "inertia": {"ixx": 1e-3, "iyy": 1e-3, "izz": 1e-3}}],
            "joints": [revolute_z("crank_angle", "ground", "crank"),
                       revolute_z("rod_angle", "crank", "rod", x=r),
                       {"name": "slider_x", "type": "PRISMATIC", "parent": "ground", "child": "slider",
                        "axis": vec(1)}],
            "gravity": vec(y=-G),
            "loopClosures": [{"name": "pin", "type": "POINT_TO_POINT", "bodyA": "rod", "pointA": vec(l),
                              "bodyB": "slider", "planeNormal": vec(z=1)}]}
    return spec(mech, [th0, phi - th0, x], [w0, dphi * w0 - w0, dx * w0])


# ---- four-bar: crank a at O1 = 0, coupler b, rocker c at O2 = (d, 0).
FB = dict(a=0.1, b=0.35, c=0.25, d=0.3, ma=0.4, mb=0.9, mc=0.6)


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


def four_bar_spec(th0, w0):
    a, b, c, d = FB["a"], FB["b"], FB["c"], FB["d"]
    beta, dbeta, gamma, dgamma = four_bar_geometry(th0)
    mech = {"bodies": [{"name": "ground"}, rod_body("crank", FB["ma"], a), rod_body("coupler", FB["mb"], b),
                       rod_body("rocker", FB["mc"], c)],
            "joints": [revolute_z("crank_angle", "ground", "crank"),
                       revolute_z("coupler_angle", "crank", "coupler", x=a),
                       revolute_z("rocker_angle", "ground", "rocker", x=d)],
            "gravity": vec(y=-G),
            "loopClosures": [{"name": "pin", "type": "POINT_TO_POINT", "bodyA": "coupler", "pointA": vec(b),
                              "bodyB": "rocker", "pointB": vec(c), "planeNormal": vec(z=1)}]}
    return spec(mech, [th0, beta - th0, gamma], [w0, (dbeta - 1) * w0, dgamma * w0])


# ---- spherical pendulum: a rod of length L (its COM at L/2 down -z of the
# joint frame... here along x) hanging from a SPHERICAL joint; axisymmetric
# (I_yy = I_zz = i, I_xx tiny) and without spin about the rod, so its centre
# of mass moves as a point of mass m + i/(L/2)^2 under gravity on m.
SP = dict(m=1.0, L=0.8, ixx=1e-3)


def spherical_specs(n0, w0):
    """n0: the rod's initial unit direction; w0: its angular velocity (perpendicular to n0)."""
    m, L = SP["m"], SP["L"]
    rc = L / 2
    i = m * L * L / 12
    n0 = np.array(n0) / np.linalg.norm(n0)
    # Quaternion turning x onto n0 (no spin about the rod).
    ex = np.array([1.0, 0, 0])
    axis = np.cross(ex, n0)
    s = np.linalg.norm(axis)
    ang = math.atan2(s, ex.dot(n0))
    axis = axis / s
    q = [math.cos(ang / 2)] + list(math.sin(ang / 2) * axis)
    # dq/dt = 1/2 q (x) (0, w_body), w_body = R^T w0.
    w = np.array(w0, dtype=float)
    qw, qv = q[0], np.array(q[1:])
    R = (qw * qw - qv.dot(qv)) * np.eye(3) + 2 * np.outer(qv, qv) + 2 * qw * np.array(
        [[0, -qv[2], qv[1]], [qv[2], 0, -qv[0]], [-qv[1], qv[0], 0]])
    wb = R.T @ w
    dqw = -0.5 * qv.dot(wb)
    dqv = 0.5 * (qw * wb + np.cross(qv, wb))
    mech = {"bodies": [{"name": "pivot"},
                       {"name": "rod", "mass": m, "inertialOrigin": {"xyz": vec(rc)},
                        "inertia": {"ixx": SP["ixx"], "iyy": i, "izz": i}}],
            "joints": [{"name": "ball", "type": "SPHERICAL", "parent": "pivot", "child": "rod"}],
            "gravity": vec(z=-G)}
    outputs = [{"name": n, "expression": e} for n, e in
               (("cx", "rod_R11*%r" % rc), ("cy", "rod_R21*%r" % rc), ("cz", "rod_R31*%r" % rc))]
    sph = spec(mech, q, [dqw] + list(dqv), outputs)
    meff = m + i / (rc * rc)
    p0 = rc * n0
    v0 = np.cross(w, p0)
    cart = {"system": {"coordinates": ["x", "y", "z"],
                       "parameters": [{"name": "r", "value": rc}],
                       "masses": {"values": [meff] * 3},
                       "potentialEnergy": "%r*z" % (m * G),
                       "constraints": [{"name": "rod", "expression": "(x^2 + y^2 + z^2 - r^2)/2"}],
                       "baumgarte": {"alpha": 20, "beta": 20}},
            "initial": {"q": list(p0), "v": list(v0)},
            "integrator": {"method": "RK4", "stepSize": 1e-4}}
    return sph, cart


def run_tether(tether, description, until=1.0):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(description, f)
        path = f.name
    try:
        out = subprocess.run([tether, "run", path, "--until", str(until), "--every", "1000000", "-q"],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    frames = [l for l in lines if "step" in l]
    cert = [l["certificate"] for l in lines if "certificate" in l]
    return frames[0], frames[-1], cert[0] if cert else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tether", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--write-examples", action="store_true")
    a = ap.parse_args()
    failures = []

    def check(name, ok, text):
        print(("ok   " if ok else "FAIL ") + name + ": " + text)
        if not ok:
            failures.append(name)

    cases = {"slider_crank": (slider_crank_spec(0.5, 2.0), slider_crank_mass, slider_crank_potential, 0.5, 2.0),
             "four_bar": (four_bar_spec(0.7, 3.0), four_bar_mass, four_bar_potential, 0.7, 3.0)}
    sph, cart = spherical_specs([0.6, 0.0, -0.8], [0.96, 1.5, 0.72])
    if a.write_examples:
        for name, (s, *_rest) in cases.items():
            s = dict(s, integrator={"method": "RK4", "stepSize": 1e-3})
            with open(os.path.join(a.source_dir, "examples", name + ".json"), "w") as f:
                json.dump(s, f, indent=1)
                f.write("\n")
        with open(os.path.join(a.source_dir, "examples", "spherical_pendulum.json"), "w") as f:
            json.dump(dict(sph, integrator={"method": "RK4", "stepSize": 1e-3}), f, indent=1)
            f.write("\n")
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
    sys.path.insert(0, os.path.join(a.source_dir, "client", "python", "src"))
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
    if failures:
        print("%d failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
