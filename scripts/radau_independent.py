#!/usr/bin/env python3
"""RADAU_IIA at fixed h against an independent Radau IIA, under stiff gains.

    scripts/radau_independent.py [TETHER]   (default: build/bin/tether)

Is the stiff-gain error of RADAU_IIA at a fixed step (docs/benchmarks.md,
"Stiff gains") the engine's or the method's? This integrates the Cartesian
double pendulum of scripts/stiff_accuracy.py to t = 1 twice at each h:

- with a Radau IIA written here in numpy from the method's tableau (3
  stages, order 5, stage order 3, stiffly accurate), its stage equations
  solved by full Newton with central-difference Jacobians to 1e-15, its
  accelerations from the KKT system (docs/MATH.md (5.1)) solved by numpy;
- with the engine (`tether run`, RADAU_IIA with the error control off as in
  scripts/stiff_accuracy.py, frames at t = 0.01 k),

and prints, for alpha = beta = 10 and 1000, the largest error of q over
t = 0.01 k and the error of q(1) against scipy's DOP853 at rtol 1e-13, and
the ratio of the stiff to the mild error. Nothing here shares code with the
engine. About two minutes.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.integrate import solve_ivp

tether = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "build", "bin", "tether")
sys.path.insert(0, os.path.dirname(__file__))
from stiff_accuracy import spec  # noqa: E402  (the model, written once)

GRAVITY = 9.81
Y0 = np.array([1, 0, 2, 0, 0, 0, 0, 0], float)


def rhs(y, gain):
    """(v, a) with M = I, a = F - G^T lambda, G a = -H - 2 gain e' - gain^2 e."""
    x1, y1, x2, y2 = y[:4]
    v = y[4:]
    e = np.array([(x1 * x1 + y1 * y1 - 1) / 2, ((x2 - x1) ** 2 + (y2 - y1) ** 2 - 1) / 2])
    jac_g = np.array([[x1, y1, 0, 0], [x1 - x2, y1 - y2, x2 - x1, y2 - y1]])
    curvature = np.array([v[0] ** 2 + v[1] ** 2, (v[2] - v[0]) ** 2 + (v[3] - v[1]) ** 2])
    kkt = np.zeros((6, 6))
    kkt[:4, :4] = np.eye(4)
    kkt[:4, 4:] = jac_g.T
    kkt[4:, :4] = jac_g
    b = np.concatenate([[0, -GRAVITY, 0, -GRAVITY],
                        -curvature - 2 * gain * (jac_g @ v) - gain * gain * e])
    return np.concatenate([v, np.linalg.solve(kkt, b)[:4]])


def jacobian(y, gain):
    out = np.zeros((8, 8))
    for k in range(8):
        d = 1e-7 * max(1.0, abs(y[k]))
        up, down = y.copy(), y.copy()
        up[k] += d
        down[k] -= d
        out[:, k] = (rhs(up, gain) - rhs(down, gain)) / (2 * d)
    return out


S6 = np.sqrt(6.0)
TABLEAU = np.array([[(88 - 7 * S6) / 360, (296 - 169 * S6) / 1800, (-2 + 3 * S6) / 225],
                    [(296 + 169 * S6) / 1800, (88 + 7 * S6) / 360, (-2 - 3 * S6) / 225],
                    [(16 - S6) / 36, (16 + S6) / 36, 1 / 9]])


def radau_step(y, h, gain):
    z = np.zeros((3, 8))
    for _ in range(60):
        stages = y + z
        residual = z - h * (TABLEAU @ np.array([rhs(s, gain) for s in stages]))
        jacobians = [jacobian(s, gain) for s in stages]
        newton = np.eye(24)
        for i in range(3):
            for j in range(3):
                newton[8 * i:8 * i + 8, 8 * j:8 * j + 8] -= h * TABLEAU[i, j] * jacobians[j]
        dz = np.linalg.solve(newton, -residual.reshape(-1)).reshape(3, 8)
        z += dz
        if np.max(np.abs(dz)) < 1e-15 * (1 + np.max(np.abs(y))):
            break
    return y + z[2]  # stiffly accurate: the last stage is the step's end


def numpy_radau(gain, h):
    y, out = Y0.copy(), {0: Y0[:4].copy()}
    every = int(round(0.01 / h))
    for k in range(1, int(round(1 / h)) + 1):
        y = radau_step(y, h, gain)
        if k % every == 0:
            out[round(k * h * 100)] = y[:4].copy()
    return out


def reference(gain):
    sol = solve_ivp(lambda t, y: rhs(y, gain), (0, 1), Y0, method="DOP853", rtol=1e-13,
                    atol=1e-14, t_eval=np.linspace(0, 1, 101))
    return {k: sol.y[:4, k] for k in range(101)}


def engine(gain, h, work):
    path = os.path.join(work, "spec.json")
    with open(path, "w") as f:
        json.dump(spec(gain, "RADAU_IIA", h), f)
    out = subprocess.run([tether, "run", path, "--until", "1", "--output-interval", "0.01",
                          "--quiet", "--no-certificate"], capture_output=True, text=True,
                         check=True)
    frames = [json.loads(line) for line in out.stdout.splitlines() if '"q"' in line]
    return {round(frame["t"] * 100): np.array(frame["q"]) for frame in frames}


def errors(solution, ref):
    grid = max(np.max(np.abs(solution[k] - ref[k])) for k in solution if k in ref)
    return grid, np.max(np.abs(solution[100] - ref[100]))


def main():
    refs = {gain: reference(gain) for gain in (10, 1000)}
    print("%-8s %-7s %-31s %-31s" % ("h", "", "max over t = 0.01k", "at t = 1"))
    print("%-8s %-7s %-10s %-10s %-9s %-10s %-10s %-9s" %
          ("", "", "a=10", "a=1000", "ratio", "a=10", "a=1000", "ratio"))
    with tempfile.TemporaryDirectory() as work:
        for h in (0.01, 0.005, 0.0025, 0.00125):
            for name, run in (("numpy", numpy_radau), ("tether", lambda g, h: engine(g, h, work))):
                e = {gain: errors(run(gain, h), refs[gain]) for gain in (10, 1000)}
                print("%-8g %-7s %-10.2e %-10.2e %-9.2f %-10.2e %-10.2e %-9.2f" %
                      (h, name, e[10][0], e[1000][0], e[1000][0] / e[10][0], e[10][1],
                       e[1000][1], e[1000][1] / e[10][1]), flush=True)


if __name__ == "__main__":
    main()
