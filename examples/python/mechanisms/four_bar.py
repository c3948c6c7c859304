#!/usr/bin/env python3
"""A four-bar linkage with a loop closure: a crank (a = 0.1 m) about z at
the origin, a coupler (b = 0.35 m) at its tip, a rocker (c = 0.25 m) about
z at (d, 0) = (0.3 m, 0); the closure `pin` joins the coupler's far end to
the rocker's in the xy-plane. Gravity along -y. The crank starts at 0.7 rad
turning at 3 rad/s, the coupler and rocker where the loop puts them (the
upper of the two assemblies).

    python3 examples/python/mechanisms/four_bar.py [OUT.json]   # default examples/four_bar.json
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import tether_client  # noqa: F401  (installed: pip install ./client/python)
except ImportError:  # not installed: this checkout's copy
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "client", "python", "src"))
from tether_client.mechanism import Mechanism  # noqa: E402

A, B, C, D = 0.1, 0.35, 0.25, 0.3    # crank, coupler, rocker, ground, m
MASSES = {"crank": 0.4, "coupler": 0.9, "rocker": 0.6}


def rod(m, name, length):
    """A slender rod along x from its body's origin."""
    i = MASSES[name] * length ** 2 / 12
    m.add_body(name, mass=MASSES[name], com=(length / 2, 0, 0), inertia=(1e-4, i, i))


def assembly(th, w):
    """The coupler's and rocker's world angles and rates for crank angle th, rate w."""
    pa = np.array([A * math.cos(th), A * math.sin(th)])
    gap = np.array([D, 0.0]) - pa
    L = np.linalg.norm(gap)
    k = (B * B - C * C + L * L) / (2 * L)
    u = gap / L
    pb = pa + k * u + math.sqrt(B * B - k * k) * np.array([-u[1], u[0]])   # the upper intersection
    beta, gamma = math.atan2(pb[1] - pa[1], pb[0] - pa[0]), math.atan2(pb[1], pb[0] - D)
    # d/dt (pa + B e(beta) - (D, 0) - C e(gamma)) = 0
    jac = np.array([[-B * math.sin(beta), C * math.sin(gamma)], [B * math.cos(beta), -C * math.cos(gamma)]])
    dbeta, dgamma = np.linalg.solve(jac, -w * np.array([-A * math.sin(th), A * math.cos(th)]))
    return beta, dbeta, gamma, dgamma


def build(crank_angle=0.7, crank_rate=3.0, step_size=1e-3):
    th, w = crank_angle, crank_rate
    beta, dbeta, gamma, dgamma = assembly(th, w)
    m = Mechanism(gravity=(0, -9.81, 0))
    m.add_body("ground")
    rod(m, "crank", A)
    rod(m, "coupler", B)
    rod(m, "rocker", C)
    m.add_joint("crank_angle", "revolute", "ground", "crank", axis=(0, 0, 1), q0=th, v0=w)
    m.add_joint("coupler_angle", "revolute", "crank", "coupler", xyz=(A, 0, 0), axis=(0, 0, 1),
                q0=beta - th, v0=dbeta - w)
    m.add_joint("rocker_angle", "revolute", "ground", "rocker", xyz=(D, 0, 0), axis=(0, 0, 1), q0=gamma, v0=dgamma)
    m.add_loop("pin", "point", "coupler", (B, 0, 0), "rocker", (C, 0, 0), plane_normal=(0, 0, 1))
    return m.spec(step_size=step_size, baumgarte=(20, 20))


if __name__ == "__main__":
    Mechanism.write_json(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "four_bar.json"),
                         build())
