#!/usr/bin/env python3
"""A tree (tests/data/mechanism/branched_tree.urdf, the MuJoCo comparison's
tree, written with the builder): a cart on a tilted prismatic joint carries
two branches, a pendulum about y with a tip on a fixed joint (merged into
its link) and a two-link arm about x then an oblique axis; gravity along -z.
It starts moving.

    python3 examples/python/mechanisms/branched_tree.py [OUT.json]   # default examples/branched_tree.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import tether_client  # noqa: F401  (installed: pip install ./client/python)
except ImportError:  # not installed: this checkout's copy
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "client", "python", "src"))
from tether_client.mechanism import Mechanism  # noqa: E402


def build():
    m = Mechanism(gravity=(0, 0, -9.81))
    m.add_body("base")
    m.add_body("cart", mass=2.0, com=(0, 0, 0.02), inertia_rpy=(0, 0, 0.4),
               inertia=(0.02, 0.001, 0, 0.03, -0.002, 0.04))
    m.add_body("left_rod", mass=0.5, com=(0, 0, -0.2), inertia_rpy=(0.1, 0.2, 0.3),
               inertia=(0.007, 0.0003, -0.0002, 0.0068, 0.0001, 0.0009))
    m.add_body("left_tip", mass=0.25, com=(0.01, 0.01, 0), inertia=(0.0003, 0.0002, 0.00025))
    m.add_body("right_upper", mass=0.7, com=(0, -0.1, 0.05), inertia_rpy=(0.2, -0.1, 0),
               inertia=(0.006, 0.0002, 0.0001, 0.002, -0.0004, 0.0055))
    m.add_body("right_fore", mass=0.4, com=(0.05, -0.1, 0), inertia_rpy=(0, 0.3, 0.2),
               inertia=(0.003, -0.0002, 0.0001, 0.0012, 0.0002, 0.0035))
    m.add_joint("slide", "prismatic", "base", "cart", xyz=(0, 0, 0.5), rpy=(0, 0.2, 0), axis=(1, 0, 0.1),
                q0=0.1, v0=0.3)
    m.add_joint("left_swing", "revolute", "cart", "left_rod", xyz=(0.1, 0.15, 0), axis=(0, 1, 0), q0=0.4, v0=-1)
    m.add_joint("left_tip_mount", "fixed", "left_rod", "left_tip", xyz=(0.02, 0, -0.4), rpy=(0.3, 0, 0))
    m.add_joint("right_shoulder", "revolute", "cart", "right_upper", xyz=(-0.1, -0.15, 0.05), rpy=(0, 0, 0.3),
                axis=(1, 0, 0), q0=-0.6, v0=0.7)
    m.add_joint("right_elbow", "continuous", "right_upper", "right_fore", xyz=(0, -0.25, 0.02), rpy=(0.4, 0, 0),
                axis=(0.3, 0, 1), q0=0.9, v0=2)
    return m.spec(step_size=1e-3)


if __name__ == "__main__":
    Mechanism.write_json(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "branched_tree.json"),
                         build())
