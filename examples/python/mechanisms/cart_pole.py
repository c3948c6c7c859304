#!/usr/bin/env python3
"""A cart-pole with a force input: a cart (1 kg) slides along x, pushed by
the input `push` (N, along +x; set it during a run or a co-simulation), a
pole (0.6 m, 0.2 kg, a slender rod) turns about y on the cart, upright at
pole_angle = 0 (a positive angle tips it towards +x, by the right-hand
rule about +y); gravity along -z. It starts tipped by 0.2 rad at rest.

    python3 examples/python/mechanisms/cart_pole.py [OUT.json]   # default examples/cart_pole.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import tether_client  # noqa: F401  (installed: pip install ./client/python)
except ImportError:  # not installed: this checkout's copy
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "client", "python", "src"))
from tether_client.mechanism import Mechanism  # noqa: E402

CART_MASS, POLE_MASS, POLE_LENGTH = 1.0, 0.2, 0.6


def build(pole_angle=0.2, push=0.0, step_size=1e-3):
    i = POLE_MASS * POLE_LENGTH ** 2 / 12
    m = Mechanism(gravity=(0, 0, -9.81))
    m.add_body("track")
    m.add_body("cart", mass=CART_MASS, inertia=(0.01, 0.01, 0.01))
    m.add_body("pole", mass=POLE_MASS, com=(0, 0, POLE_LENGTH / 2), inertia=(i, i, 1e-5))
    m.add_input("push", push)
    m.add_joint("cart_x", "prismatic", "track", "cart", axis=(1, 0, 0), actuator="push")
    m.add_joint("pole_angle", "revolute", "cart", "pole", axis=(0, 1, 0), q0=pole_angle)
    return m.spec(step_size=step_size,
                  outputs={"tip_x": "pole_px + pole_R13*%r" % POLE_LENGTH, "tip_z": "pole_pz + pole_R33*%r" % POLE_LENGTH})


if __name__ == "__main__":
    Mechanism.write_json(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "cart_pole.json"),
                         build())
