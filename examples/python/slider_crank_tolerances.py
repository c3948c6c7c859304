#!/usr/bin/env python3
"""Monte Carlo of a slider-crank's link-length tolerances in one
RunEnsemble call, with a histogram.

examples/slider_crank_coordinates.json (crank angle th, slider position s,
one loop-closure constraint ((s - r cos th)^2 + (r sin th)^2 - l^2)/2 = 0,
a damper on the slider) with the crank radius r ~ N(0.1, 0.0005) m and the
rod length l ~ N(0.3, 0.001) m, drawn here with numpy (Generator(PCG64),
--seed) and passed as arrays of explicit instance values, with each
instance's consistent start: the crank at th = pi/2 turning at 30 rad/s,
so s = sqrt(l^2 - r^2) and der(s) = -30 r.

The slider's stroke (max s - min s over the frames, 0.5 ms apart, once the
crank has turned more than a revolution) must be 2r for each instance:
the script checks that, plots the histogram of the strokes beside the
normal density of 2r, and prints the largest drift bound.

Usage (Debian's python3: python3-grpcio, python3-matplotlib):
  /usr/bin/python3 examples/python/slider_crank_tolerances.py [--server ADDR]
      [--count N] [--seed S] [--output out/slider_crank_tolerances.png]
Without --server it starts build/bin/tether-server on a free loopback port.
Exits 1 when a stroke differs from 2r by more than 1e-5 m or an instance
failed.
"""

import argparse
import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
try:
    import tether_client  # noqa: F401  (installed: pip install ./client/python)
except ImportError:  # not installed: this checkout's copy
    sys.path.insert(0, os.path.join(ROOT, "client", "python", "src"))
CHECKOUT_SERVER = os.path.join(ROOT, "build", "bin", "tether-server")

from tether_client import Client, LocalServer, TetherError, load_spec  # noqa: E402

R, SIGMA_R = 0.1, 0.0005
L, SIGMA_L = 0.3, 0.001


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", help="tether-server HOST:PORT "
                        "(default: start build/bin/tether-server)")
    parser.add_argument("--count", type=int, default=200, help="instances (default 200)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--output",
                        default=os.path.join(ROOT, "out", "slider_crank_tolerances.png"))
    args = parser.parse_args()

    spec = load_spec(os.path.join(ROOT, "examples", "slider_crank_coordinates.json"))
    server = None
    address = args.server
    try:
        if address is None:
            server = LocalServer(binary=CHECKOUT_SERVER if os.path.exists(CHECKOUT_SERVER)
                                 else None)
            address = server.start()
        with Client(address) as client:
            rng = np.random.Generator(np.random.PCG64(args.seed))
            r = rng.normal(R, SIGMA_R, args.count)
            length = rng.normal(L, SIGMA_L, args.count)
            result = client.run_ensemble(
                spec, until_time=0.5, output_interval=0.0005,
                values={"r": r, "l": length, "s": np.sqrt(length**2 - r**2),
                        "der(s)": -30 * r})
    except TetherError as error:
        print("slider_crank_tolerances: %s" % error, file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()

    r = result.value("r")
    strokes = np.array([np.ptp(tr.q[:, 1]) for tr in result.trajectories])
    turned = np.array([np.ptp(tr.q[:, 0]) for tr in result.trajectories])
    difference = np.abs(strokes - 2 * r)
    print("%d instances (numpy seed %d), all ok: %s; crank turned at least %.2f rad" % (
        len(result), args.seed, bool(result.ok.all()), turned.min()))
    print("stroke %.5f +- %.5f m (2r: %.5f +- %.5f); largest |stroke - 2r| = %.2e m" % (
        strokes.mean(), strokes.std(), 2 * r.mean(), 2 * r.std(), difference.max()))
    print("consistent starts: %d of %d; largest drift bound %.2e m" % (
        int(result.initial_consistent.sum()), len(result), np.nanmax(result.position_bound)))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.hist(strokes * 1000, bins=25, density=True, alpha=0.7,
                label="slider stroke, %d instances" % len(result))
        x = np.linspace(strokes.min(), strokes.max(), 200)
        sd = 2 * SIGMA_R
        ax.plot(x * 1000, np.exp(-0.5 * ((x - 2 * R) / sd) ** 2) / (sd * np.sqrt(2 * np.pi)) / 1000,
                label="density of 2r, r ~ N(%g, %g)" % (R, SIGMA_R))
        ax.set_xlabel("stroke (mm)")
        ax.set_ylabel("density (1/mm)")
        ax.legend()
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        fig.tight_layout()
        fig.savefig(args.output, dpi=120)
        print("plot written to %s" % os.path.abspath(args.output))
    except ImportError:
        print("(no matplotlib: no plot)")
    ok = result.ok.all() and difference.max() <= 1e-5 and turned.min() > 2 * np.pi
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
