"""Plots the coupled pendulum and PID controller of cosim_pid.py (CSV from
its --csv) against the continuous closed loop integrated by scipy, as
docs/images/cosim_pid.png (docs/COSIMULATION.md "A pipeline of two FMUs").

Usage: plot_cosim_pid.py TRAJECTORY.csv OUT.png [--setpoint 0.3]
"""
import argparse
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cosim_pid_reference import closed_loop  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--setpoint", type=float, default=0.3)
    args = ap.parse_args()
    with open(args.csv) as f:
        rows = [[float(x) for x in r] for r in list(csv.reader(f))[1:]]
    t = [r[0] for r in rows]
    ref = closed_loop(t, args.setpoint)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6, 4.2), sharex=True)
    a1.plot(t, [r[1] for r in rows], label="co-simulation (Tether FMU + PID FMU)")
    a1.plot(t, ref[0], "--", label="continuous closed loop (scipy)")
    a1.axhline(args.setpoint, color="grey", lw=0.8, label="set point")
    a1.set_ylabel("angle (rad)")
    a1.legend(fontsize=7)
    a2.plot(t, [r[3] for r in rows], label="PID output F")
    a2.axhline(9.81 * math.tan(args.setpoint), color="grey", lw=0.8, label="m g tan(set point)")
    a2.set_ylabel("F (N)")
    a2.set_xlabel("t (s)")
    a2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.png, dpi=80)
    return 0


if __name__ == "__main__":
    sys.exit(main())
