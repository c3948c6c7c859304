#!/usr/bin/env python3
"""A spherical pendulum from a spherical joint: a rod (0.8 m, 1 kg, its
centre of mass 0.4 m along its x axis) hangs from a ball joint at the
origin, gravity along -z. The joint's coordinates are a unit quaternion
(ball_qw, ball_qx, ball_qy, ball_qz) held by the constraint ball_norm. The
rod starts along (0.6, 0, -0.8) turning at (0.96, 1.5, 0.72) rad/s (across
the rod: no spin about it). Outputs cx, cy, cz: its centre of mass.

    python3 examples/python/mechanisms/spherical_pendulum.py [OUT.json]   # default examples/spherical_pendulum.json
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

LENGTH, MASS = 0.8, 1.0


def build(direction=(0.6, 0.0, -0.8), omega=(0.96, 1.5, 0.72), step_size=1e-3):
    n = np.array(direction, dtype=float) / np.linalg.norm(direction)
    # The quaternion turning x onto n about x cross n, and its rate for the
    # world angular velocity omega: dq/dt = 1/2 q (x) (0, w_body).
    axis = np.cross([1.0, 0.0, 0.0], n)
    half = math.atan2(np.linalg.norm(axis), n[0]) / 2
    qw, qv = math.cos(half), math.sin(half) * axis / np.linalg.norm(axis)
    skew = np.array([[0, -qv[2], qv[1]], [qv[2], 0, -qv[0]], [-qv[1], qv[0], 0]])
    rotation = (qw * qw - qv.dot(qv)) * np.eye(3) + 2 * np.outer(qv, qv) + 2 * qw * skew
    wb = rotation.T @ np.array(omega, dtype=float)
    dq = [-0.5 * qv.dot(wb)] + list(0.5 * (qw * wb + np.cross(qv, wb)))
    i = MASS * LENGTH ** 2 / 12
    m = Mechanism(gravity=(0, 0, -9.81))
    m.add_body("pivot")
    m.add_body("rod", mass=MASS, com=(LENGTH / 2, 0, 0), inertia=(1e-3, i, i))
    m.add_joint("ball", "spherical", "pivot", "rod", q0=[qw] + list(qv), v0=dq)
    c = LENGTH / 2
    return m.spec(step_size=step_size, baumgarte=(20, 20),
                  outputs={"cx": "rod_R11*%r" % c, "cy": "rod_R21*%r" % c, "cz": "rod_R31*%r" % c})


if __name__ == "__main__":
    Mechanism.write_json(sys.argv[1] if len(sys.argv) > 1 else
                         os.path.join(HERE, "..", "..", "spherical_pendulum.json"), build())
