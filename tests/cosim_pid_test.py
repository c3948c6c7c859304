"""The coupling example of docs/COSIMULATION.md "A pipeline of two FMUs"
(issue 27 point 6), run briefly: examples/python/cosim_pid.py couples
Tether's pendulum FMU with the PID controller FMU of
examples/cosim_fmu/pid_controller.c. Checked against physics, not against
Tether:

1. held at the set point: after 8 s the angle is the set point 0.3 rad
   within 1e-4 rad, at rest (|omega| < 1e-3 rad/s), and the controller's
   force is the static equilibrium's m grav tan(0.3) within 1e-4 N (the
   integral action removes the offset a P or PD controller would leave);
2. the transient: the co-simulated angle stays within 0.02 rad of the
   continuous closed loop integrated by scipy (cosim_pid_reference.py;
   the difference is the co-simulation's one-step delay of the force,
   O(h) with h = 0.01 s);
3. rollback: with the controller's max_step = 0.02 s and communication
   steps of 0.04 s, the master's first steps are discarded, both FMUs
   rolled back and the steps retried shorter (rollbacks > 0), and the
   result is held at the set point all the same.

Usage: cosim_pid_test.py --tether PATH --pid-fmu PATH --source-dir DIR
"""
import argparse
import math
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tether", required=True)
    ap.add_argument("--pid-fmu", required=True)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.source_dir, "examples", "python"))
    from cosim_pid import run
    from cosim_pid_reference import closed_loop

    setpoint, held_force = 0.3, 9.81 * math.tan(0.3)
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok   " if ok else "FAIL ") + what)
        failures += 0 if ok else 1

    r = run(args.tether, args.pid_fmu, stop=8.0, step=0.01, setpoint=setpoint, max_step=0.0,
            source_dir=args.source_dir)
    check(abs(r["angle"] - setpoint) < 1e-4, f"angle at t = 8: {r['angle']!r} (set point 0.3)")
    check(abs(r["omega"]) < 1e-3, f"omega at t = 8: {r['omega']!r}")
    check(abs(r["F"] - held_force) < 1e-4, f"F at t = 8: {r['F']!r} (m g tan 0.3 = {held_force!r})")
    check(r["rollbacks"] == 0 and r["steps"] == 800, f"{r['steps']} steps, {r['rollbacks']} rollbacks")
    times = [row[0] for row in r["rows"]]
    theta, _, _ = closed_loop(times, setpoint)
    worst = max(abs(row[1] - th) for row, th in zip(r["rows"], theta))
    check(worst < 0.005, f"largest |angle - scipy's continuous closed loop|: {worst:.2e} rad")
    peak = max(row[1] for row in r["rows"])
    check(peak > setpoint, f"the angle overshoots (peak {peak:.3f} rad): the loop did move")

    r = run(args.tether, args.pid_fmu, stop=8.0, step=0.04, setpoint=setpoint, max_step=0.02,
            source_dir=args.source_dir)
    check(r["rollbacks"] > 0, f"with max_step 0.02 and steps of 0.04: {r['rollbacks']} rollbacks")
    check(abs(r["angle"] - setpoint) < 1e-4 and abs(r["F"] - held_force) < 1e-4,
          f"and still held: angle {r['angle']!r}, F {r['F']!r}")
    print(f"{'1 passed, 0 failed' if failures == 0 else f'0 passed, {failures} checks failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
