#!/usr/bin/env python3
"""A spatial arm of four links (tests/data/mechanism/spatial_arm.urdf, the
MuJoCo comparison's arm, written with the builder): joints about z, y, an
oblique x+z axis and z of a tilted frame, offset and rotated joint origins,
tilted inertial frames and full inertia tensors (ixx, ixy, ixz, iyy, iyz,
izz as URDF writes them), gravity along -z. It starts moving.

    python3 examples/python/mechanisms/spatial_arm.py [OUT.json]   # default examples/spatial_arm.json
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
    m.add_body("world")
    m.add_body("upper", mass=1.2, com=(0.02, 0.01, 0.15), inertia_rpy=(0.1, -0.2, 0.3),
               inertia=(0.05, 0.004, -0.003, 0.06, 0.002, 0.03))
    m.add_body("fore", mass=0.9, com=(0.2, 0.01, -0.02), inertia_rpy=(0.3, 0.1, -0.2),
               inertia=(0.004, -0.0005, 0.0004, 0.03, 0.0003, 0.028))
    m.add_body("hand", mass=0.6, com=(0.1, 0, 0.03), inertia_rpy=(-0.2, 0.4, 0.1),
               inertia=(0.002, 0.0002, -0.0001, 0.006, 0.0003, 0.0055))
    m.add_body("tool", mass=0.3, com=(0.03, 0.02, 0.05), inertia_rpy=(0.5, 0, -0.3),
               inertia=(0.0011, 0.0001, 0.0002, 0.0009, -0.0001, 0.0006))
    m.add_joint("shoulder_yaw", "revolute", "world", "upper", xyz=(0, 0, 0.1), axis=(0, 0, 1), q0=0.3, v0=0.5)
    m.add_joint("shoulder_pitch", "revolute", "upper", "fore", xyz=(0.05, 0, 0.3), rpy=(0.2, 0, 0.1),
                axis=(0, 1, 0), q0=-0.7, v0=-0.3)
    m.add_joint("elbow", "revolute", "fore", "hand", xyz=(0.4, 0.02, 0), rpy=(0, 0.3, 0), axis=(1, 0, 1),
                q0=1.1, v0=0.8)
    m.add_joint("wrist", "continuous", "hand", "tool", xyz=(0.2, 0, 0.05), rpy=(0, -0.5, 0.2), axis=(0, 0, 1),
                q0=0.4, v0=1.0)
    return m.spec(step_size=1e-3)


if __name__ == "__main__":
    Mechanism.write_json(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "spatial_arm.json"),
                         build())
