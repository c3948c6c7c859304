#!/usr/bin/env python3
"""Draws docs/images/slider_crank_mechanism.png, the picture of
docs/MECHANISMS.md, from a Tether run of the slider-crank built by
examples/python/mechanisms/slider_crank.py.

Left: the mechanism at t = 0 with its frames and conventions (the world
frame, each joint's frame and axis, the positive sense of each coordinate,
the pin's constraint directions u and v fixed in the rod, and the force the
pin exerts on the slider, -(lambda_u u + lambda_v v), from the run's
multipliers), over faded positions of the run. Right: the multipliers
lambda_u, lambda_v (N) over the run.

Usage (Debian's python3, which sees python3-grpcio and python3-matplotlib):
  /usr/bin/python3 examples/python/slider_crank_picture.py [--server-binary PATH]
      [--until 1.5] [--output docs/images/slider_crank_mechanism.png]
Starts a tether-server (this checkout's build/bin/tether-server when there is
one, else $TETHER_SERVER or tether-server on PATH) on a free loopback port
and stops it at the end.
"""

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
try:
    import tether_client  # noqa: F401  (installed: pip install ./client/python)
except ImportError:  # not installed: this checkout's copy
    sys.path.insert(0, os.path.join(ROOT, "client", "python", "src"))
sys.path.insert(0, os.path.join(HERE, "mechanisms"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Arc, FancyArrowPatch  # noqa: E402

import slider_crank  # noqa: E402
from tether_client import Client, LocalServer  # noqa: E402

# What the picture reads from each frame, besides q and the multipliers.
OUTPUTS = {"ax": "rod_px", "ay": "rod_py",                       # the crank's tip, the rod's joint
           "bx": "rod_px + rod_R11*%r" % slider_crank.ROD,       # the rod's far end, B
           "by": "rod_py + rod_R21*%r" % slider_crank.ROD,
           "ux": "rod_R11", "uy": "rod_R21",                     # the rod's x axis: pin_u
           "vx": "rod_R12", "vy": "rod_R22"}                     # the rod's y axis: pin_v


def arrow(ax, start, vector, color, label=None, width=1.5, label_at=1.12, **kw):
    end = (start[0] + vector[0], start[1] + vector[1])
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color=color, lw=width, **kw))
    if label:
        ax.text(start[0] + label_at * vector[0], start[1] + label_at * vector[1], label, color=color,
                ha="center", va="center", fontsize=8)


def turn_arrow(ax, centre, radius, start_deg, end_deg, color, label, label_xy, ha="left"):
    """An arc from start_deg to end_deg with its head at end_deg: positive
    angles turn counterclockwise, about +z (out of the page)."""
    lo, hi = min(start_deg, end_deg), max(start_deg, end_deg)
    ax.add_patch(Arc(centre, 2 * radius, 2 * radius, theta1=lo, theta2=hi, color=color, lw=1))
    a = math.radians(end_deg)
    sense = 1 if end_deg >= start_deg else -1
    tip = (centre[0] + radius * math.cos(a), centre[1] + radius * math.sin(a))
    d = (-sense * math.sin(a) * 0.012, sense * math.cos(a) * 0.012)
    ax.add_patch(FancyArrowPatch((tip[0] - d[0], tip[1] - d[1]), tip, arrowstyle="-|>", mutation_scale=8,
                                 color=color, lw=1))
    ax.text(*label_xy, label, color=color, fontsize=8, ha=ha, va="center")


def draw(result, path):
    y = {name: result.outputs[:, i + 1] for i, name in enumerate(OUTPUTS)}  # output 0 is energy
    lam = result.multipliers  # pin_u, pin_v, N
    slider_x = result.q[:, 2]
    fig, (ax, axl) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1.55, 1]})
    # Faded positions over the run.
    for k in np.linspace(0, len(result.t) - 1, 9).astype(int)[1:]:
        ax.plot([0, y["ax"][k], y["bx"][k]], [0, y["ay"][k], y["by"][k]], "-", color="0.85", lw=1.5, zorder=1)
    k = 0
    A, B = (y["ax"][k], y["ay"][k]), (y["bx"][k], y["by"][k])
    ax.plot([0, A[0]], [0, A[1]], "-", color="C0", lw=4, solid_capstyle="round", zorder=3)
    ax.plot([A[0], B[0]], [A[1], B[1]], "-", color="C1", lw=4, solid_capstyle="round", zorder=3)
    ax.add_patch(plt.Rectangle((slider_x[k] - 0.05, -0.025), 0.1, 0.05, color="C2", alpha=0.8, zorder=2))
    ax.plot([-0.05, 0.75], [-0.03, -0.03], color="0.4", lw=1, zorder=0)
    ax.plot([0, A[0]], [0, A[1]], "o", color="k", ms=4, zorder=4)
    ax.plot([B[0]], [B[1]], "o", color="w", mec="k", ms=5, zorder=4)
    # The world frame (z out of the page) and the joints.
    arrow(ax, (0, 0), (0.12, 0), "k", "x", width=1)
    arrow(ax, (0, 0), (0, 0.12), "k", "y", width=1)
    ax.text(-0.035, -0.045, "z ⊙", fontsize=8)
    crank_dir = math.atan2(A[1], A[0])
    rod_dir = math.atan2(y["uy"][k], y["ux"][k])
    turn_arrow(ax, (0, 0), 0.07, 0, math.degrees(crank_dir), "C0", "crank_angle = %.2f rad" % result.q[k, 0],
               (-0.02, 0.035), ha="right")
    ax.plot([A[0], A[0] + 0.11 * math.cos(crank_dir)], [A[1], A[1] + 0.11 * math.sin(crank_dir)], ":", color="C0",
            lw=1)
    turn_arrow(ax, A, 0.085, math.degrees(crank_dir), math.degrees(rod_dir), "C1",
               "rod_angle = %.2f rad" % result.q[k, 1], (A[0] + 0.03, A[1] + 0.075))
    ax.annotate("", xy=(slider_x[k], -0.07), xytext=(0, -0.07),
                arrowprops=dict(arrowstyle="-|>", color="C2", lw=1, mutation_scale=8))
    ax.text(slider_x[k] / 2, -0.09, "slider_x = %.2f m" % slider_x[k], color="C2", fontsize=8, ha="center")
    ax.text(-0.25, 0.27, "positive angles: counterclockwise about +z\n(right-hand rule, z out of the page)",
            fontsize=8, va="top")
    # The pin's directions, fixed in the rod, and its force on the slider.
    u, v = (y["ux"][k], y["uy"][k]), (y["vx"][k], y["vy"][k])
    arrow(ax, B, (0.1 * u[0], 0.1 * u[1]), "C3", "u", width=1)
    arrow(ax, B, (0.1 * v[0], 0.1 * v[1]), "C3", "v", width=1)
    f = (-(lam[k, 0] * u[0] + lam[k, 1] * v[0]), -(lam[k, 0] * u[1] + lam[k, 1] * v[1]))
    scale = 0.1 / max(math.hypot(*f), 1e-9)
    arrow(ax, (B[0], B[1] - 0.005), (scale * f[0], scale * f[1]), "purple", width=2)
    ax.text(B[0] + 0.01, B[1] - 0.13,
            "pin on slider:\n−(λu u + λv v)\n= (%.2f, %.2f) N" % f, color="purple", fontsize=8, va="top")
    ax.text(0.5 * A[0] - 0.015, 0.5 * A[1] + 0.02, "crank", color="C0", fontsize=8, ha="right")
    ax.text((A[0] + B[0]) / 2 + 0.05, (A[1] + B[1]) / 2 + 0.01, "rod", color="C1", fontsize=8)
    ax.set_aspect("equal")
    ax.set_xlim(-0.27, 0.8)
    ax.set_ylim(-0.25, 0.3)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title("t = 0 (faded: the run to t = %.1f s)" % result.t[-1], fontsize=9)
    ax.grid(True, alpha=0.25)
    axl.plot(result.t, lam[:, 0], color="C3", label="λ pin_u (along the rod's x)")
    axl.plot(result.t, lam[:, 1], color="C3", ls="--", label="λ pin_v (along its y)")
    axl.set_xlabel("t [s]")
    axl.set_ylabel("multiplier [N]")
    axl.set_title("the pin's force (on the rod +λ, on the slider −λ)", fontsize=9)
    axl.grid(True, alpha=0.25)
    axl.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    try:  # A 64-colour palette keeps the file small (Pillow, with matplotlib).
        from PIL import Image
        with Image.open(path) as image:
            small = image.convert("RGB").quantize(64)
        small.save(path, optimize=True)
    except ImportError:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-binary", default=None)
    ap.add_argument("--until", type=float, default=1.5)
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "images", "slider_crank_mechanism.png"))
    a = ap.parse_args()
    checkout = os.path.join(ROOT, "build", "bin", "tether-server")
    binary = a.server_binary or (checkout if os.path.exists(checkout) else None)
    spec = slider_crank.build()
    for name, expression in OUTPUTS.items():
        spec.system.outputs.add(name=name, expression=expression)
    with LocalServer(binary) as server, Client(server.address, timeout=60) as client:
        session = client.create_session(spec)
        result = client.run(session.id, until_time=a.until, every=10).result()
        client.delete_session(session.id)
    draw(result, a.output)
    print("wrote %s (%d bytes) from %d frames" % (a.output, os.path.getsize(a.output), len(result.t)))


if __name__ == "__main__":
    main()
