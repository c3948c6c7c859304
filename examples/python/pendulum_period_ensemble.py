#!/usr/bin/env python3
"""Sweeps a pendulum's amplitude in one RunEnsemble call and plots its
period against the amplitude beside the closed form

    T(theta0) = 4 K(m) / sqrt(g / l),   m = sin^2(theta0 / 2)

(K the complete elliptic integral of the first kind, scipy.special.ellipk,
which takes the parameter m).

The pendulum is one angle coordinate th (examples/python: the description
is built here), started at rest at th = theta0. Each instance's frames on a
1 ms grid come back as a Trajectory; its period is twice the time between
its first two zero crossings of th (each located by linear interpolation
between the two frames around it; near a crossing th'' = -(g/l) sin th is
about zero, so the interpolation error is far below the step's).

Usage (Debian's python3: python3-grpcio, python3-scipy, python3-matplotlib):
  /usr/bin/python3 examples/python/pendulum_period_ensemble.py [--server ADDR]
      [--count N] [--output out/pendulum_period.png]
Without --server it starts build/bin/tether-server on a free loopback port.
Prints the largest relative difference from the closed form, and exits 1
when it is above 1e-6.
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

from tether_client import Client, LocalServer, TetherError, parse_spec  # noqa: E402

GRAV, LENGTH = 9.81, 1.0
PENDULUM = """{"system": {"coordinates": ["th"],
  "parameters": [{"name": "l", "value": %r}, {"name": "grav", "value": %r}],
  "kineticEnergy": "l^2*der(th)^2/2", "potentialEnergy": "-grav*l*cos(th)"},
 "initial": {"q": [0.5], "v": [0]},
 "integrator": {"method": "RK4", "stepSize": 0.001}}""" % (LENGTH, GRAV)


def zero_crossings(t, x):
    """Times where x changes sign, by linear interpolation."""
    i = np.nonzero(np.signbit(x[:-1]) != np.signbit(x[1:]))[0]
    return t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])


def closed_form(theta0):
    from scipy.special import ellipk
    return 4 * ellipk(np.sin(theta0 / 2) ** 2) / np.sqrt(GRAV / LENGTH)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", help="tether-server HOST:PORT "
                        "(default: start build/bin/tether-server)")
    parser.add_argument("--count", type=int, default=30,
                        help="amplitudes from 0.1 to 3.0 rad (default 30)")
    parser.add_argument("--output", default=os.path.join(ROOT, "out", "pendulum_period.png"))
    args = parser.parse_args()

    spec = parse_spec(PENDULUM)
    # Three quarters of the longest period, and a margin.
    until = 0.8 * closed_form(3.0) + 0.2
    server = None
    address = args.server
    try:
        if address is None:
            server = LocalServer(binary=CHECKOUT_SERVER if os.path.exists(CHECKOUT_SERVER)
                                 else None)
            address = server.start()
        with Client(address) as client:
            result = client.run_ensemble(spec, until_time=until,
                                         sweeps={"th": (0.1, 3.0, args.count)},
                                         output_interval=0.001)
    except TetherError as error:
        print("pendulum_period_ensemble: %s" % error, file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()

    theta0 = result.value("th")
    periods = []
    for trajectory in result.trajectories:
        crossings = zero_crossings(trajectory.t, trajectory.q[:, 0])
        periods.append(2 * (crossings[1] - crossings[0]) if len(crossings) >= 2 else np.nan)
    periods = np.array(periods)
    exact = closed_form(theta0)
    relative = np.abs(periods - exact) / exact
    print("%d instances (all ok: %s), amplitude %.2f .. %.2f rad" % (
        len(result), bool(result.ok.all()), theta0[0], theta0[-1]))
    print("period %.6f .. %.6f s; largest relative difference from 4K(m)/w0: %.2e" % (
        periods[0], periods[-1], np.nanmax(relative)))
    print("largest drift bound (certificate): %.2e" % np.nanmax(result.position_bound))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        fine = np.linspace(0.05, 3.05, 300)
        ax.plot(fine, closed_form(fine), "-", label="closed form 4K(sin^2(θ0/2))/√(g/l)")
        ax.plot(theta0, periods, "o", label="RunEnsemble (RK4, h = 1 ms)")
        ax.set_xlabel("amplitude θ0 (rad)")
        ax.set_ylabel("period (s)")
        ax.legend()
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        fig.tight_layout()
        fig.savefig(args.output, dpi=120)
        print("plot written to %s" % os.path.abspath(args.output))
    except ImportError:
        print("(no matplotlib: no plot)")
    return 0 if np.nanmax(relative) <= 1e-6 and result.ok.all() else 1


if __name__ == "__main__":
    sys.exit(main())
