#!/usr/bin/env python3
"""A slider-crank with a loop closure (docs/MECHANISMS.md has its picture):
a crank (r = 0.2 m, 1 kg) turns about z at the origin, a rod (l = 0.5 m,
0.5 kg) turns about z at the crank's tip, a slider (0.8 kg) slides along x;
the closure `pin` puts the rod's far end on the slider's origin in the
xy-plane. Gravity along -y. The crank starts at 0.5 rad turning at 2 rad/s;
the rod angle and the slider's position and rates are the ones the loop
requires (closed-form geometry below).

    python3 examples/python/mechanisms/slider_crank.py [OUT.json]   # default examples/slider_crank.json
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import tether_client  # noqa: F401  (installed: pip install ./client/python)
except ImportError:  # not installed: this checkout's copy
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "client", "python", "src"))
from tether_client.mechanism import Mechanism  # noqa: E402

CRANK, ROD = 0.2, 0.5          # lengths, m
CRANK_MASS, ROD_MASS, SLIDER_MASS = 1.0, 0.5, 0.8


def rod(m, name, mass, length):
    """A slender rod along x from its body's origin."""
    i = mass * length ** 2 / 12
    m.add_body(name, mass=mass, com=(length / 2, 0, 0), inertia=(1e-4, i, i))


def build(crank_angle=0.5, crank_rate=2.0, step_size=1e-3):
    th, w = crank_angle, crank_rate
    phi = math.asin(-CRANK * math.sin(th) / ROD)            # the rod's world angle
    dphi = -CRANK * math.cos(th) * w / (ROD * math.cos(phi))
    x = CRANK * math.cos(th) + ROD * math.cos(phi)          # the slider
    dx = -CRANK * math.sin(th) * w - ROD * math.sin(phi) * dphi
    m = Mechanism(gravity=(0, -9.81, 0))
    m.add_body("ground")
    rod(m, "crank", CRANK_MASS, CRANK)
    rod(m, "rod", ROD_MASS, ROD)
    m.add_body("slider", mass=SLIDER_MASS, inertia=(1e-3, 1e-3, 1e-3))
    m.add_joint("crank_angle", "revolute", "ground", "crank", axis=(0, 0, 1), q0=th, v0=w)
    m.add_joint("rod_angle", "revolute", "crank", "rod", xyz=(CRANK, 0, 0), axis=(0, 0, 1), q0=phi - th, v0=dphi - w)
    m.add_joint("slider_x", "prismatic", "ground", "slider", axis=(1, 0, 0), q0=x, v0=dx)
    m.add_loop("pin", "point", "rod", (ROD, 0, 0), "slider", plane_normal=(0, 0, 1))
    return m.spec(step_size=step_size, baumgarte=(20, 20))


if __name__ == "__main__":
    Mechanism.write_json(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "slider_crank.json"),
                         build())
