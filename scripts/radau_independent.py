#!/usr/bin/env python3
"""RADAU_IIA at fixed h against an independent Radau IIA, under stiff gains.

    scripts/radau_independent.py [TETHER]   (default: build/bin/tether)
    scripts/radau_independent.py --stages S [H ...]
    scripts/radau_independent.py --bdf K [H ...]

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

With --stages S, the numpy Radau IIA only, with S stages (order 2S - 1,
stage order S), its tableau built here by collocation at the Radau points
(checked against the 3-stage one above), at the steps H (default 0.02 0.01
0.005): would a method of higher stage order keep the stiff-gain error
within a small factor of the mild one at the same h? (docs/benchmarks.md,
"the stiff-gain error at a fixed h is the method's".) About four minutes
for S = 5.

With --bdf K, the K-step BDF method at a fixed h instead (order K, no
stages: a multistep method has no stage order to lose), its first K - 1
values taken from the reference, its implicit equation solved by Newton
as above: the same question for a method whose order is not above its
stage order.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from numpy.polynomial import legendre, polynomial
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


def collocation_tableau(stages):
    """Radau IIA with `stages` stages: c the zeros of P_s(2x - 1) - P_{s-1}(2x - 1)
    (Legendre polynomials; c_s = 1), a_ij the integral from 0 to c_i of the
    Lagrange polynomial of c_j (Hairer & Wanner, vol. II, section IV.5)."""
    coefficients = np.zeros(stages + 1)
    coefficients[stages], coefficients[stages - 1] = 1, -1
    c = (np.sort(np.real(legendre.legroots(coefficients))) + 1) / 2
    a = np.zeros((stages, stages))
    for j in range(stages):
        others = np.delete(c, j)
        antiderivative = polynomial.polyint(polynomial.polyfromroots(others) /
                                            np.prod(c[j] - others))
        a[:, j] = polynomial.polyval(c, antiderivative)
    return a


def radau_step(y, h, gain, tableau=TABLEAU):
    n = len(tableau)
    z = np.zeros((n, 8))
    for _ in range(60):
        stages = y + z
        residual = z - h * (tableau @ np.array([rhs(s, gain) for s in stages]))
        jacobians = [jacobian(s, gain) for s in stages]
        newton = np.eye(8 * n)
        for i in range(n):
            for j in range(n):
                newton[8 * i:8 * i + 8, 8 * j:8 * j + 8] -= h * tableau[i, j] * jacobians[j]
        dz = np.linalg.solve(newton, -residual.reshape(-1)).reshape(n, 8)
        z += dz
        if np.max(np.abs(dz)) < 1e-15 * (1 + np.max(np.abs(y))):
            break
    return y + z[-1]  # stiffly accurate: the last stage is the step's end


def numpy_radau(gain, h, tableau=TABLEAU):
    """q at t = 0.01 k (those the steps reach exactly), keyed by k."""
    y, out = Y0.copy(), {0: Y0[:4].copy()}
    steps = int(round(1 / h))
    for k in range(1, steps + 1):
        y = radau_step(y, h, gain, tableau)
        hundredths = k * h * 100
        if abs(hundredths - round(hundredths)) < 1e-9:
            out[round(hundredths)] = y[:4].copy()
    return out


def reference_solution(gain):
    return solve_ivp(lambda t, y: rhs(y, gain), (0, 1), Y0, method="DOP853", rtol=1e-13,
                     atol=1e-14, dense_output=True)


def reference(gain):
    sol = reference_solution(gain)
    return {k: sol.sol(k / 100)[:4] for k in range(101)}


# BDF-K: y_n - sum_j alpha_j y_{n-j} = h beta f(y_n) (Hairer & Wanner, vol. II, III.1).
BDF = {1: ([1.0], 1.0), 2: ([4 / 3, -1 / 3], 2 / 3), 3: ([18 / 11, -9 / 11, 2 / 11], 6 / 11),
       4: ([48 / 25, -36 / 25, 16 / 25, -3 / 25], 12 / 25),
       5: ([300 / 137, -300 / 137, 200 / 137, -75 / 137, 12 / 137], 60 / 137)}


def numpy_bdf(gain, h, order):
    alpha, beta = BDF[order]
    start = reference_solution(gain)
    history = [start.sol(j * h) for j in range(order)]  # y_0 .. y_{K-1}, from the reference
    out = {0: Y0[:4].copy()}
    for k in range(order, int(round(1 / h)) + 1):
        known = sum(alpha[j] * history[-1 - j] for j in range(order))
        y = history[-1].copy()
        for _ in range(60):
            dy = np.linalg.solve(np.eye(8) - h * beta * jacobian(y, gain),
                                 known + h * beta * rhs(y, gain) - y)
            y += dy
            if np.max(np.abs(dy)) < 1e-15 * (1 + np.max(np.abs(y))):
                break
        history = history[1:] + [y]
        hundredths = k * h * 100
        if abs(hundredths - round(hundredths)) < 1e-9:
            out[round(hundredths)] = y[:4].copy()
    return out


def engine(gain, h, work, method="RADAU_IIA", binary=None):
    """The engine's q at t = 0.01 k (frames on that grid), keyed by k."""
    path = os.path.join(work, "spec.json")
    with open(path, "w") as f:
        json.dump(spec(gain, method, h), f)
    out = subprocess.run([binary or tether, "run", path, "--until", "1", "--output-interval", "0.01",
                          "--quiet", "--no-certificate"], capture_output=True, text=True,
                         check=True)
    frames = [json.loads(line) for line in out.stdout.splitlines() if '"q"' in line]
    return {round(frame["t"] * 100): np.array(frame["q"]) for frame in frames}


def errors(solution, ref):
    grid = max(np.max(np.abs(solution[k] - ref[k])) for k in solution if k in ref)
    return grid, np.max(np.abs(solution[100] - ref[100]))


def print_row(h, name, e):
    print("%-8g %-7s %-10.2e %-10.2e %-9.2f %-10.2e %-10.2e %-9.2f" %
          (h, name, e[10][0], e[1000][0], e[1000][0] / e[10][0], e[10][1], e[1000][1],
           e[1000][1] / e[10][1]), flush=True)


def main():
    stages = bdf = None
    if len(sys.argv) > 2 and sys.argv[1] in ("--stages", "--bdf"):
        try:
            count = int(sys.argv[2])
            steps = [float(h) for h in sys.argv[3:]] or [0.02, 0.01, 0.005]
        except ValueError:
            sys.exit("expected %s N (an integer) and steps H (numbers)" % sys.argv[1])
        if count < 1 or any(not 0 < h <= 1 or abs(1 / h - round(1 / h)) > 1e-9 for h in steps):
            sys.exit("expected %s N >= 1 and steps H that divide 1" % sys.argv[1])
        if sys.argv[1] == "--bdf":
            if count not in BDF:
                sys.exit("expected --bdf K with K from 1 to 5 (BDF-6 and up are not zero-stable)")
            bdf = count
        else:
            stages = count
            if np.max(np.abs(collocation_tableau(3) - TABLEAU)) > 1e-14:
                sys.exit("the collocation tableau for 3 stages is not Radau IIA's")
    refs = {gain: reference(gain) for gain in (10, 1000)}
    print("%-8s %-7s %-31s %-31s" % ("h", "", "max over t = 0.01k", "at t = 1"))
    print("%-8s %-7s %-10s %-10s %-9s %-10s %-10s %-9s" %
          ("", "", "a=10", "a=1000", "ratio", "a=10", "a=1000", "ratio"))
    if stages:
        tableau = collocation_tableau(stages)
        for h in steps:
            print_row(h, "s=%d" % stages,
                      {gain: errors(numpy_radau(gain, h, tableau), refs[gain])
                       for gain in (10, 1000)})
        return
    if bdf:
        for h in steps:
            print_row(h, "bdf%d" % bdf, {gain: errors(numpy_bdf(gain, h, bdf), refs[gain])
                                         for gain in (10, 1000)})
        return
    with tempfile.TemporaryDirectory() as work:
        for h in (0.01, 0.005, 0.0025, 0.00125):
            for name, run in (("numpy", numpy_radau), ("tether", lambda g, h: engine(g, h, work))):
                print_row(h, name, {gain: errors(run(gain, h), refs[gain]) for gain in (10, 1000)})


if __name__ == "__main__":
    main()
