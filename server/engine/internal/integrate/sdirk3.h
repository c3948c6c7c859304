// SDIRK3, the implicit method for stiff Baumgarte gains: its tableau, its
// Newton policy and its step (integrator.h's table,
// TETHER_INTEGRATOR_METHODS).
// Included by integrator.h after the Integrator class: member templates of
// it, not to be included on their own.
#pragma once

#include "engine/internal/integrate/integrator.h"

namespace tether {

namespace sdirk3 {
// The Newton matrix is evaluated afresh after an iteration whose correction
// is more than this fraction of the previous one (measured with
// bench/stiff_bench.cc: 0.1 against 0.05 and 0.2, a matrix a step, and a
// matrix every iteration).
inline constexpr double kNewtonRefreshRate = 0.1;
// Alexander's L-stable, stiffly accurate 3-stage SDIRK of order 3 (Hairer &
// Wanner, vol. II, table IV.6.5): gamma is the root in (1/6, 1/2) of
// x^3 - 3 x^2 + 3/2 x - 1/6; the last row of a is the weights b, so the new
// state is the last stage.
inline constexpr double gamma = 0.43586652150845899942;
inline constexpr double c[3] = {gamma, (1 + gamma) / 2, 1};
inline constexpr double a[3][3] = {
    {gamma, 0, 0},
    {(1 - gamma) / 2, gamma, 0},
    {-(6 * gamma * gamma - 16 * gamma + 1) / 4, (6 * gamma * gamma - 20 * gamma + 5) / 4, gamma}};
}  // namespace sdirk3

// SDIRK3: our own fixed-step implicit Runge-Kutta rather than SUNDIALS
// (CVODE's BDF or IDA). Chosen by reading, not by a measurement: the engine
// promises fixed steps taken exactly (t_anchor + k h), one-step methods whose
// update on the residual test system is a fixed 2 x 2 matrix (judgement
// (c)), and the same bits for the same description; CVODE and IDA choose
// their own steps and orders (a multistep history the test-system update and
// the certificate's per-step interpolant do not describe), need dense output
// for every frame, and their Newton policy (convergence-rate heuristics,
// Jacobian reuse across steps) is theirs. A fixed-step SDIRK keeps all three
// contracts (NewtonSolver, newton.h, factorises its Newton matrix).
//
// Stage i: with v^ = v + h sum_{j<i} a_ij A_j and q^ = q + h sum_{j<i} a_ij V_j
// + h gamma v^, the stage is V_i = v^ + c1 A_i, Q_i = q^ + c2 A_i (c1 = h gamma,
// c2 = c1^2), and A_i solves A_i = a(t + c_i h, Q_i, V_i). Simplified Newton:
// the first guess is the previous stage's A (a0 for the first). The matrix
// is K at the stage's first guess, kept while the iteration contracts (each
// correction at most kNewtonRefreshRate times the one before) and evaluated
// afresh at the current guess when it does not: one K for the whole step
// converged too slowly under stiff gains, as the constraint directions turn
// within a step (10 iterations short of 1e-10 for the circle at alpha =
// beta = 1000, h = 0.01). Fixed policy:
// an iteration evaluates a at the current guess and applies the correction
// z; it stops when the velocity change c1 |z|_inf is at most newton_tol_
// times max(1, |v^|_inf, c1 |A|_inf) (the size of the terms V_i sums), and
// fails after newton_max_iter_ iterations or on a non-finite correction. The
// `accel` offers the seam
//   Status PrepareNewton(double t, const double* q, const double* v, double c1, double c2)
//   Status SolveNewton(const double* r, double* z)  // z = -(I - c1 da/dv - c2 da/dq)^-1 r
// (an accel without it cannot run SDIRK3: Internal error).
template <int N, class Accel>
Status Integrator::StepSdirk3(double h, double t, const double* q, const double* v,
                              const double* a0, Accel&& accel, double* q1, double* v1, double*) {
  if constexpr (!requires(double* p) {
                  accel.PrepareNewton(t, q, v, h, h);
                  accel.SolveNewton(q, p);
                }) {
    return Internal("SDIRK3 called without the Newton seam");
  } else {
    using namespace sdirk3;
    const int n = N > 0 ? N : n_;
    const double c1 = h * gamma, c2 = c1 * c1;
    Status s;
    double* r = rn_.data();
    double* z = zn_.data();
    for (int st = 0; st < 3; ++st) {
      double* Q = Qs_.data() + st * n;
      double* V = Vs_.data() + st * n;
      double* A = As_.data() + st * n;
      // v^ into V, q^ into Q (the known parts of the stage).
      double vhat_max = 1;
      for (int i = 0; i < n; ++i) {
        double dv = 0, dq = 0;
        for (int j = 0; j < st; ++j) {
          dv += a[st][j] * As_[static_cast<size_t>(j * n + i)];
          dq += a[st][j] * Vs_[static_cast<size_t>(j * n + i)];
        }
        V[i] = v[i] + h * dv;
        Q[i] = q[i] + h * dq + c1 * V[i];
        A[i] = st == 0 ? a0[i] : As_[static_cast<size_t>((st - 1) * n + i)];
        vhat_max = std::max(vhat_max, std::fabs(V[i]));
      }
      double* Qt = qt_.data();
      double* Vt = vt_.data();
      bool converged = false;
      double correction = 0, scale = 0, previous = 0;
      for (int it = 0; it < newton_max_iter_; ++it) {
        for (int i = 0; i < n; ++i) {
          Vt[i] = V[i] + c1 * A[i];
          Qt[i] = Q[i] + c2 * A[i];
        }
        // The Newton matrix: at the stage's first guess, and again at the
        // current guess when the last iteration contracted by less than
        // kNewtonRefreshRate.
        if (it == 0 || (it > 1 && correction > kNewtonRefreshRate * previous)) {
          s = accel.PrepareNewton(t + c[st] * h, Qt, Vt, c1, c2);
          if (!s.ok()) return s;
        }
        previous = correction;
        ++newton_iterations_;
        s = accel(t + c[st] * h, Qt, Vt, r);
        if (!s.ok()) return s;
        for (int i = 0; i < n; ++i) r[i] = A[i] - r[i];
        s = accel.SolveNewton(r, z);
        if (!s.ok()) return s;
        correction = 0;
        scale = vhat_max;
        for (int i = 0; i < n; ++i) {
          A[i] += z[i];
          correction = std::max(correction, c1 * std::fabs(z[i]));
          scale = std::max(scale, c1 * std::fabs(A[i]));
        }
        if (!std::isfinite(correction)) break;
        if (correction <= newton_tol_ * scale) {
          converged = true;
          break;
        }
      }
      if (!converged) {
        return Status(
            StatusCode::kAborted,
            "SDIRK3 Newton iteration " +
                std::string(std::isfinite(correction) ? "did not converge"
                                                      : "diverged (non-finite correction)") +
                " at stage " + std::to_string(st + 1) + " of 3 within " +
                std::to_string(newton_max_iter_) + " iterations (last velocity correction " +
                FormatNumber(correction) + ", tolerance " + FormatNumber(newton_tol_ * scale) +
                ", step h = " + FormatNumber(h) +
                "); expected a smaller step_size, or a larger newton_tolerance or "
                "max_newton_iterations");
      }
      // The stage itself (its V and Q replace v^, q^).
      for (int i = 0; i < n; ++i) {
        V[i] += c1 * A[i];
        Q[i] += c2 * A[i];
      }
    }
    // Stiffly accurate: the new state is the last stage.
    const double* Q3 = Qs_.data() + 2 * n;
    const double* V3 = Vs_.data() + 2 * n;
    for (int i = 0; i < n; ++i) {
      q1[i] = Q3[i];
      v1[i] = V3[i];
    }
    return Status::Ok();
  }
}

}  // namespace tether
