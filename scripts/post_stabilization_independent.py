#!/usr/bin/env python3
"""Post-stabilization at a fixed h, under stiff gains: a measurement.

    scripts/post_stabilization_independent.py [H ...]   (default: 0.02 0.01 0.005 0.0025)
    scripts/post_stabilization_independent.py --engine TETHER [H ...]

Issue 22 point 4 asks for a method whose error at alpha = beta = 1000 is
within 3x of its error at alpha = beta = 10 at the same h. Every Radau IIA
and BDF method measured by scripts/radau_independent.py either misses that
or is hundreds of times less accurate (docs/benchmarks.md, "more stages, or
BDF, at a fixed h"). This measures a method of another kind, one the issue
names ("an IMEX scheme that treats only the Baumgarte terms implicitly"),
in numpy, on the same Cartesian double pendulum and against the same
scipy DOP853 references, sharing no code with the engine:

- the step: classical RK4 on the dynamics without the feedback terms
  (G a = -H, the index-1 system: nothing stiff in it, whatever the gains);
- then the feedback, exactly: the residual law e'' + 2 alpha e' + beta^2 e
  = 0 (docs/MATH.md section 6) is linear with constant coefficients, so
  over a step it maps (e, e') at the step's start to Phi(h) (e, e') at its
  end, Phi(h) = expm(h [[0, 1], [-beta^2, -2 alpha]]) per constraint. The
  step's end is moved onto those targets along the constraint normals,
  q += M^-1 G^T W^-1 (e* - g(q)) (Newton, G at the current q, to 1e-15) and
  v += M^-1 G^T W^-1 (e'* - G v) (linear), W = G M^-1 G^T: the
  post-stabilization of Ascher, Chin, Petzold and Reich (1995), with the
  residuals taken to the gains' own law instead of to zero.

The gains then enter only through Phi(h), whose eigenvalues exp(h mu) (mu
the roots of mu^2 + 2 alpha mu + beta^2) lie inside the unit circle for
every h: no step limit, and no stiff term for RK4's stages to lose order
on. Printed: the largest error of q over t = 0.01 k and at t = 1, for
alpha = beta = 10, 1000 and 1e5, and the ratios to the alpha = 10 error;
then, from an inconsistent start, how far the residual at the steps'
ends is from the law's own e(t); then the evaluations a step costs. About
half a minute.

With --engine TETHER (the `tether` CLI), the engine's RK4_POST_STABILIZED
(docs/MATH.md section 7.3) beside this one on the same grid: the largest
error of each against the reference, and the largest difference between
the two, at each gain and h.
"""
import tempfile
import sys

import numpy as np
from scipy.linalg import expm

import radau_independent as model  # the model, its reference and errors, written once

GAINS = (10.0, 1000.0, 1e5)


def constraint_parts(q):
    """g(q) and G(q) of the two rods (the model of radau_independent.rhs)."""
    x1, y1, x2, y2 = q
    g = np.array([(x1 * x1 + y1 * y1 - 1) / 2, ((x2 - x1) ** 2 + (y2 - y1) ** 2 - 1) / 2])
    jac = np.array([[x1, y1, 0, 0], [x1 - x2, y1 - y2, x2 - x1, y2 - y1]])
    return g, jac


def rk4_without_feedback(y, h):
    f = lambda state: model.rhs(state, 0.0)  # noqa: E731  (gain 0: G a = -H)
    k1 = f(y)
    k2 = f(y + h / 2 * k1)
    k3 = f(y + h / 2 * k2)
    k4 = f(y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def propagator(alpha, beta, h):
    return expm(h * np.array([[0.0, 1.0], [-beta * beta, -2.0 * alpha]]))


def normal_correction(jac, delta):
    """M^-1 G^T W^-1 delta with M = I (the model's unit masses)."""
    return jac.T @ np.linalg.solve(jac @ jac.T, delta)


def step(y, h, phi):
    """One step; returns the new state and the position Newton iterations."""
    g0, jac0 = constraint_parts(y[:4])
    target = phi @ np.vstack([g0, jac0 @ y[4:]])  # row 0: e*, row 1: e'*
    z = rk4_without_feedback(y, h)
    iterations = 0
    for iterations in range(1, 6):
        g, jac = constraint_parts(z[:4])
        dq = normal_correction(jac, target[0] - g)
        z[:4] += dq
        if np.max(np.abs(dq)) <= 1e-15 * (1 + np.max(np.abs(z[:4]))):
            break
    _, jac = constraint_parts(z[:4])
    z[4:] += normal_correction(jac, target[1] - jac @ z[4:])
    return z, iterations


def integrate(y0, alpha, beta, h):
    """q at t = 0.01 k (those the steps reach exactly), keyed by k; the
    residual g at every step's end; the most Newton iterations a step took."""
    phi = propagator(alpha, beta, h)
    y, out, residuals, most = y0.copy(), {0: y0[:4].copy()}, [constraint_parts(y0[:4])[0]], 0
    for k in range(1, int(round(1 / h)) + 1):
        y, iterations = step(y, h, phi)
        most = max(most, iterations)
        residuals.append(constraint_parts(y[:4])[0])
        hundredths = k * h * 100
        if abs(hundredths - round(hundredths)) < 1e-9:
            out[round(hundredths)] = y[:4].copy()
    return out, np.array(residuals), most


def compare_engine(tether, steps):
    ref = model.reference(10)
    print("%-8s %-8s %-10s %-10s %-10s" % ("h", "gains", "engine", "numpy", "|difference|"))
    with tempfile.TemporaryDirectory() as work:
        for h in steps:
            for gain in GAINS:
                theirs, _, _ = integrate(model.Y0, gain, gain, h)
                # The step ends only (grid times inside a step are the
                # engine's interpolant, which the numpy method has not).
                ours = {k: q for k, q in
                        model.engine(gain, h, work, "RK4_POST_STABILIZED", tether).items()
                        if k in theirs}
                difference = max(np.max(np.abs(ours[k] - theirs[k])) for k in theirs if k in ours)
                print("%-8g %-8g %-10.2e %-10.2e %-10.2e" %
                      (h, gain, model.errors(ours, ref)[0], model.errors(theirs, ref)[0],
                       difference), flush=True)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--engine":
        try:
            steps = [float(h) for h in sys.argv[3:]] or [0.02, 0.01, 0.005]
        except ValueError:
            sys.exit("expected --engine TETHER and steps H (numbers)")
        compare_engine(sys.argv[2], steps)
        return
    try:
        steps = [float(h) for h in sys.argv[1:]] or [0.02, 0.01, 0.005, 0.0025]
    except ValueError:
        sys.exit("expected steps H (numbers)")
    if any(not 0 < h <= 1 or abs(1 / h - round(1 / h)) > 1e-9 for h in steps):
        sys.exit("expected steps H that divide 1")
    # From a consistent start the exact trajectory is the same for every
    # gain (e stays 0), so one reference serves all three; the DOP853
    # solutions at gains 10 and 1000 show how far apart they are.
    ref = model.reference(10)
    ref_stiff = model.reference(1000)
    print("DOP853 references at gains 10 and 1000 differ by %.1e at most (t = 0.01 k)" %
          max(np.max(np.abs(ref[k] - ref_stiff[k])) for k in ref))
    print("%-8s %-9s %-9s %-9s %-9s %-7s %-9s %-9s" %
          ("h", "a=10", "a=1000", "a=1e5", "ratios", "", "at t=1", "newton"))
    previous = None
    for h in steps:
        grid, end, newton = {}, {}, 0
        for gain in GAINS:
            out, _, most = integrate(model.Y0, gain, gain, h)
            grid[gain], end[gain] = model.errors(out, ref)
            newton = max(newton, most)
        order = "" if previous is None else " order %.2f" % (
            np.log(previous[1] / grid[10.0]) / np.log(previous[0] / h))
        print("%-8g %-9.2e %-9.2e %-9.2e %-9.2f %-7.2f %-9.2e %-9d%s" %
              (h, grid[10.0], grid[1000.0], grid[1e5], grid[1000.0] / grid[10.0],
               grid[1e5] / grid[10.0], end[10.0], newton, order), flush=True)
        previous = (h, grid[10.0])
    # An inconsistent start: the first rod 1e-3 too long. The law maps each
    # step's (e, e') to Phi(h) (e, e'), so the residual at the ends is the
    # law's solution sampled at the steps, up to the step's own error.
    y0 = model.Y0.copy()
    y0[0] = 1.001
    print("inconsistent start (g_1 = %.2e), h = 0.01: |g(t_k) - e_law(t_k)| / max |e_law|"
          % constraint_parts(y0[:4])[0][0])
    for alpha, beta in ((10.0, 10.0), (10.0, 30.0), (1000.0, 1000.0), (5.0, 0.0)):
        _, residuals, _ = integrate(y0, alpha, beta, 0.01)
        g0, jac0 = constraint_parts(y0[:4])
        state = np.vstack([g0, jac0 @ y0[4:]])
        phi = propagator(alpha, beta, 0.01)
        law = [state[0].copy()]
        for _ in range(len(residuals) - 1):
            state = phi @ state
            law.append(state[0].copy())
        law = np.array(law)
        print("  alpha %-6g beta %-6g  %.1e  (largest |e| %.1e, at t = 1 %.1e)" %
              (alpha, beta, np.max(np.abs(residuals - law)) / np.max(np.abs(law)),
               np.max(np.abs(law)), np.max(np.abs(residuals[-1]))))
    print("a step: 4 evaluations of a (RK4, no feedback), 1 of a at the end (the frame's),"
          " and per Newton iteration one of g, G with a solve with W")


if __name__ == "__main__":
    main()
