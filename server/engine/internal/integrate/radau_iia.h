// RADAU_IIA, the 3-stage Radau IIA collocation method (order 5, stage
// order 3, stiffly accurate, L-stable) with its simplified Newton
// iteration, embedded error estimate and collocation dense output
// (integrator.h's table, TETHER_INTEGRATOR_METHODS; the step-size control
// and the retry after a failed Newton iteration are in Integrator::Step).
// Included by integrator.h after the Integrator class: member templates of
// it, not to be included on their own.
//
// Why this method for stiff Baumgarte gains (issue 22), rather than an IMEX
// scheme that treats only the feedback terms implicitly: the stiffness is
// not in separable terms. The feedback 2 alpha e' + beta^2 e enters the
// accelerations through the KKT solve, a = a(q, v) with G(q) a = -H - 2
// alpha G v - beta^2 g(q), so an implicit part "only the Baumgarte terms"
// would still need da/dq and da/dv of the whole solve (the Newton matrix
// newton.h already builds), and an IMEX pair's explicit part would have to
// be evaluated at states off the manifold the implicit part corrects; the
// additive methods of ARKode also have stage order 1 or 2 in their implicit
// part, the order reduction SDIRK3 suffers (docs/MATH.md section 10.3).
// Radau IIA has stage order 3 and is stiffly accurate (the new state is the
// last stage, which solves the stage equation at t + h), so as h beta grows
// it tends to the collocation solution of the constrained limit instead of
// losing its order; measured in docs/benchmarks.md.
#pragma once

#include <complex>

#include "engine/internal/integrate/integrator.h"

namespace tether {

namespace radau_iia {
// The tableau (Hairer & Wanner, vol. II, table IV.5.6), c = (4 -+ sqrt 6)/10,
// 1; a is the Runge-Kutta matrix, aa = a^2 (the positions' weights of the
// second-order form), both to 21 digits (scripts/radau_coefficients.py).
inline constexpr double c[3] = {0.15505102572168219018, 0.64494897427831780982, 1.0};
inline constexpr double a[3][3] = {
    {0.196815477223660425868, -0.0655354258501983881085, 0.0237709743482201524204},
    {0.394424314739087276997, 0.292073411665228463021, -0.0415487521259979301982},
    {0.37640306270046727505, 0.512485826188421613839, 0.111111111111111111111}};
inline constexpr double aa[3][3] = {
    {0.0218350341907227396727, -0.0198572540986122746164, 0.0100426301965624110158},
    {0.17719058743194560795, 0.0381649658092772603273, -0.00737596352989574434915},
    {0.318041381743977169394, 0.181958618256022830606, 0.0}};
// a = T diag(gamma, mu, conj mu) T^-1: gamma the real eigenvalue, mu the
// complex one with negative imaginary part; t1, t2 the columns of T for
// them (T's third column is conj t2), s1, s2 the first two rows of T^-1.
inline constexpr double gamma = 0.274888829595677367748;
inline constexpr double mu_re = 0.162555585202161316126, mu_im = -0.184949324407140784275;
inline constexpr double t1[3] = {0.0944387624889752414875, 0.250213122965333311377, 1.0};
inline constexpr double t2_re[3] = {-0.141255295020954208428, 0.204129352293799931996, 1.0};
inline constexpr double t2_im[3] = {0.0300291941051474244919, -0.382942112757261937795, 0.0};
inline constexpr double s1[3] = {4.17871859155190472735, 0.327682820761062387083,
                                 0.52337644549944954804};
inline constexpr double s2_re[3] = {-2.08935929577595236367, -0.163841410380531193541,
                                    0.23831177725027522598};
inline constexpr double s2_im[3] = {-0.251436317472893437976, 1.28596347492780271459,
                                    -0.298019602414112462484};
// The embedded estimate (Hairer & Wanner's RADAU5): y1 - y1^ = gamma (h f0 +
// sum_i dd_i (Y_i - y0)), exact for polynomials of degree 3 (sum dd_i c_i =
// -1, sum dd_i c_i^2 = sum dd_i c_i^3 = 0), so O(h^4).
inline constexpr double dd[3] = {-10.0488093998274155625, 1.38214273316074889579,
                                 -0.333333333333333333333};
// A diverging Newton iteration: a correction at least this fraction of
// the one before (RADAU5's 0.99).
inline constexpr double kMaxContraction = 0.99;
// The step-size limit from the Newton iteration (Integrator::Step). At
// stiff gains the iteration does not fail by its linear rate (the
// simplified matrix is close: the last rates of converged attempts are
// ~0.005 at gains 1e5) but by the nonlinearity of the feedback: from the
// first guess A_i = a0 the second correction is about K d0^2 (d0 the
// first), so the first rate theta1 = d1 / d0 grows with d0, which grows
// like h^2.5 to h^3.3 (measured on chain/2 and chain/32 at gains 1e5:
// theta1 0.08 -> 0.29 -> 1.9 as h doubles twice), and beyond theta1 ~ 1
// the iteration diverges. The error control alone proposes up to 10 h
// (the error is far below the tolerance there), and the attempts that
// then diverge cost each a Jacobian, two factorisations and two
// iterations: 2.4 attempts per accepted step at gains 1e5. So the next
// step is also limited to h (kNewtonRateTarget / theta1)^(1 /
// kNewtonRateOrder), the step at which theta1 is predicted to be
// kNewtonRateTarget, and a failed attempt whose first rate was measured
// is cut by that factor (within [0.2, 0.5]) instead of halved. The
// target: at gains 1e5 the Newton iteration, not the error estimate (well
// below 1 there), sets the step, so the target sets the accuracy too.
// From 0.25 to 0.5 the steps (chain/2 and chain/32, rtol 1e-4 and 1e-6)
// fall by 20-28 %, but the double pendulum's error at the default
// tolerances rises from below 1e-6 to 1.9e-6
// (RadauTest.RunsAtGains1e5WhereSdirk3Stops); at 0.8 the failed attempts
// and error rejections grow to up to 19 %. The order is the larger
// measured one, so the prediction errs small.
inline constexpr double kNewtonRateTarget = 0.25;
inline constexpr double kNewtonRateOrder = 3.0;
}  // namespace radau_iia

// One attempt of Radau IIA with step h for q' = v, v' = a(t, q, v).
//
// Stages: with the stage accelerations A_j, V_i = v + h sum_j a_ij A_j and
// Q_i = q + c_i h v + h^2 sum_j aa_ij A_j, and A_i = a(t + c_i h, Q_i, V_i).
// Simplified Newton on F_i = A_i - a(t + c_i h, Q_i, V_i), with da/dq, da/dv
// at the step's start: (I - h a x Jv - h^2 a^2 x Jq) dA = -F. Through a = T
// diag T^-1 it decouples into one real system (I - h gamma Jv - (h
// gamma)^2 Jq) W1 = -s1.F and one complex system (I - h mu Jv - (h mu)^2
// Jq) W2 = -s2.F, and dA_i = t1_i W1 + 2 Re(t2_i W2) (W3 = conj W2). The
// `accel` offers the seam
//   Status PrepareNewtonPair(double t, const double* q, const double* v, double c1,
//                            double c2, std::complex<double> d1, std::complex<double> d2)
//   Status SolveNewton(const double* r, double* z)  // z = -(I - c1 Jv - c2 Jq)^-1 r
//   Status SolveNewtonComplex(const std::complex<double>* r, std::complex<double>* z)
// (newton.h, PreparePair: sparse where the model is). The first guess is
// A_i = a0 (no extrapolation from the previous step: the integrator carries
// no state but the proposed step, so a restored snapshot continues bit for
// bit). Convergence (RADAU5's test): the correction's norm d_k in the error
// control's scaled norm of the stage values (Q_i, V_i), the rate theta =
// d_k / d_{k-1}; the iteration stops when eta d_k <= newton_tol_ with eta =
// theta / (1 - theta) (eta = 1 at the first iteration, where no rate is
// known), and fails when theta >= kMaxContraction, when the rate predicts
// no convergence within newton_max_iter_, on a non-finite correction or on
// a failed evaluation; Step then halves h and retries.
//
// Error estimate: e = gamma (h f0 + sum_i dd_i (Y_i - y0)) with y = (q, v),
// f0 = (v, a0), filtered as RADAU5 does by (I - h gamma J)^-1, J = [[0, I],
// [Jq, Jv]] the first-order Jacobian (the filter keeps the estimate
// bounded on the stiff components, where the unfiltered e is O(1)): with x
// = (x_q, x_v), x_q = e_q + h gamma x_v and (I - h gamma Jv - (h gamma)^2
// Jq) x_v = e_v + h gamma Jq e_q, the real system already factorised. Jq
// e_q, the one product the seam does not give, is a forward difference of
// a along e_q (one evaluation). RADAU5's second filtering: when the
// estimate rejects on the integrator's first step or after a rejection
// (refilter_), it is formed again with f0 replaced by f(t, y0 + x) and
// filtered again (two more evaluations and a solve). The norm is DOPRI5's
// (RMS over q and v scaled by atol + rtol max(|y0|, |y1|)); the reported
// estimate (StepResult::error_estimate) is max_i |x_q,i|.
inline double Integrator::NewtonRateFactor() const {
  if (!(newton_first_rate_ > 0)) return std::numeric_limits<double>::infinity();
  return std::pow(radau_iia::kNewtonRateTarget / newton_first_rate_,
                  1.0 / radau_iia::kNewtonRateOrder);
}

template <int N, class Accel>
Status Integrator::StepRadauIIA(double h, double t, const double* q, const double* v,
                                const double* a0, Accel&& accel, double* q1, double* v1,
                                double* err) {
  using Cx = std::complex<double>;
  if constexpr (!requires(double* p, Cx* z) {
                  accel.PrepareNewtonPair(t, q, v, h, h, Cx(h), Cx(h));
                  accel.SolveNewton(q, p);
                  accel.SolveNewtonComplex(z, z);
                }) {
    return Internal("RADAU_IIA called without the Newton seam");
  } else {
    using namespace radau_iia;
    const int n = N > 0 ? N : n_;
    double* Q = Qs_.data();
    double* V = Vs_.data();
    double* A = As_.data();
    double* F = rn_.data();   // 3 n: the stage residuals
    double* dA = F + 3 * n;   // 3 n: the correction
    double* W1 = zn_.data();  // n
    double* sq = W1 + n;      // n: position scales (atol + rtol |q|)
    double* sv = sq + n;      // n: velocity scales
    Cx* R2 = cn_.data();      // n
    Cx* W2 = R2 + n;          // n
    const double c1 = h * gamma, c2 = c1 * c1;
    const Cx d1 = h * Cx(mu_re, mu_im), d2 = d1 * d1;
    // A failure of the iteration: Step retries with a smaller step.
    auto newton_failure = [&](const std::string& why) {
      newton_failed_ = true;
      return Status(StatusCode::kAborted, "RADAU_IIA Newton iteration " + why);
    };
    newton_failed_ = false;
    newton_first_rate_ = 0;
    Status s = accel.PrepareNewtonPair(t, q, v, c1, c2, d1, d2);
    if (!s.ok()) {
      if (s.code() == StatusCode::kCancelled) return s;
      return newton_failure("could not start: " + s.message());
    }
    for (int i = 0; i < n; ++i) {
      sq[i] = atol_ + rtol_ * std::fabs(q[i]);
      sv[i] = atol_ + rtol_ * std::fabs(v[i]);
      for (int st = 0; st < 3; ++st) A[st * n + i] = a0[i];
    }
    // The stage states of the current A.
    auto stage_states = [&] {
      for (int st = 0; st < 3; ++st) {
        for (int i = 0; i < n; ++i) {
          double sa = 0, saa = 0;
          for (int j = 0; j < 3; ++j) {
            sa += a[st][j] * A[j * n + i];
            saa += aa[st][j] * A[j * n + i];
          }
          V[st * n + i] = v[i] + h * sa;
          Q[st * n + i] = q[i] + c[st] * h * v[i] + h * h * saa;
        }
      }
    };
    bool converged = false;
    double norm = 0, previous = 0, theta = 0;
    for (int it = 0; it < newton_max_iter_ && !converged; ++it) {
      stage_states();
      for (int st = 0; st < 3; ++st) {
        ++newton_iterations_;
        s = accel(t + c[st] * h, Q + st * n, V + st * n, F + st * n);
        if (!s.ok()) {
          if (s.code() == StatusCode::kCancelled) return s;
          return newton_failure("failed to evaluate stage " + std::to_string(st + 1) + " (" +
                                s.message() + ")");
        }
        for (int i = 0; i < n; ++i) F[st * n + i] = A[st * n + i] - F[st * n + i];
      }
      // The transformed residuals, the two solves, back to dA.
      for (int i = 0; i < n; ++i) {
        double r1 = 0;
        Cx r2 = 0;
        for (int j = 0; j < 3; ++j) {
          r1 += s1[j] * F[j * n + i];
          r2 += Cx(s2_re[j], s2_im[j]) * F[j * n + i];
        }
        dA[i] = r1;  // W1's right-hand side, held in dA until the solve
        R2[i] = r2;
      }
      s = accel.SolveNewton(dA, W1);
      if (s.ok()) s = accel.SolveNewtonComplex(R2, W2);
      if (!s.ok()) return newton_failure("could not solve (" + s.message() + ")");
      double sum = 0;
      for (int i = 0; i < n; ++i) {
        double d[3];
        for (int st = 0; st < 3; ++st) {
          d[st] = t1[st] * W1[i] + 2 * (t2_re[st] * W2[i].real() - t2_im[st] * W2[i].imag());
        }
        for (int st = 0; st < 3; ++st) {
          dA[st * n + i] = d[st];
          double dv = 0, dq = 0;
          for (int j = 0; j < 3; ++j) {
            dv += a[st][j] * d[j];
            dq += aa[st][j] * d[j];
          }
          dv *= h / sv[i];
          dq *= h * h / sq[i];
          sum += dv * dv + dq * dq;
        }
      }
      norm = std::sqrt(sum / (6.0 * n));
      if (!std::isfinite(norm)) return newton_failure("diverged (non-finite correction)");
      double eta = 1;
      if (it > 0) {
        theta = norm / previous;
        if (it == 1) newton_first_rate_ = theta;
        if (theta >= kMaxContraction) {
          return newton_failure("diverged (contraction " + FormatNumber(theta) + ")");
        }
        // Predicted not to converge in the iterations left (RADAU5's
        // test, from the second rate on: the first is the nonlinear
        // phase's, and the iteration is superlinear after it at stiff
        // gains, kNewtonRateTarget; judged on the first, the test failed
        // attempts at theta1 = 0.35 whose next correction was 200 times
        // smaller).
        const int left = newton_max_iter_ - 1 - it;
        if (it > 1 && left > 0 && std::pow(theta, left) / (1 - theta) * norm > newton_tol_) {
          return newton_failure("would not converge within " + std::to_string(newton_max_iter_) +
                                " iterations (contraction " + FormatNumber(theta) + ")");
        }
        eta = theta / (1 - theta);
      }
      for (int k = 0; k < 3 * n; ++k) A[k] += dA[k];
      previous = std::max(norm, std::numeric_limits<double>::min());
      // At least two iterations: the first rate (theta1) is what limits
      // the next step (kNewtonRateTarget); an attempt that stopped after
      // one gave none, and the error control then let the next step grow
      // tenfold into a diverging iteration (chain/32, gains 1e5, rtol
      // 1e-4: a third of its attempts).
      converged = it > 0 && eta * norm <= newton_tol_;
    }
    if (!converged) {
      return newton_failure("did not converge within " + std::to_string(newton_max_iter_) +
                            " iterations (last correction " + FormatNumber(norm) +
                            " of the error tolerance, tolerance " + FormatNumber(newton_tol_) +
                            ")");
    }
    stage_states();
    // Stiffly accurate: the new state is the last stage.
    for (int i = 0; i < n; ++i) {
      q1[i] = Q[2 * n + i];
      v1[i] = V[2 * n + i];
    }
    if (err == nullptr) return Status::Ok();
    // The error estimate: the raw e into (F: e_q, F + n: e_v), Jq e_q by a
    // forward difference into F + 2n, the filtered x into (dA: x_q, dA + n:
    // x_v); dA + 2n is the probe state.
    double* eq = F;
    double* ev = F + n;
    double* jq = F + 2 * n;
    double* xq = dA;
    double* xv = dA + n;
    double* probe = dA + 2 * n;  // the correction is spent
    double q_max = 1;
    for (int i = 0; i < n; ++i) q_max = std::max(q_max, std::fabs(q[i]));
    // x = (I - h gamma J)^-1 e, and its scaled norm.
    auto filter = [&]() -> Status {
      double eq_max = 0;
      for (int i = 0; i < n; ++i) eq_max = std::max(eq_max, std::fabs(eq[i]));
      if (eq_max > 0) {
        const double delta = std::sqrt(std::numeric_limits<double>::epsilon()) * q_max / eq_max;
        for (int i = 0; i < n; ++i) probe[i] = q[i] + delta * eq[i];
        Status st = accel(t, probe, v, jq);
        if (!st.ok()) return st;
        for (int i = 0; i < n; ++i) jq[i] = (jq[i] - a0[i]) / delta;
      } else {
        std::fill(jq, jq + n, 0.0);
      }
      // x_v = (I - c1 Jv - c2 Jq)^-1 (e_v + c1 Jq e_q) = -SolveNewton of its negative.
      for (int i = 0; i < n; ++i) probe[i] = -(ev[i] + c1 * jq[i]);
      Status st = accel.SolveNewton(probe, W1);
      if (!st.ok()) return st;
      double sum = 0;
      estimate_max_ = 0;
      estimate_coordinate_ = 0;
      for (int i = 0; i < n; ++i) {
        xq[i] = eq[i] + c1 * W1[i];
        xv[i] = W1[i];
        const double sq1 = atol_ + rtol_ * std::max(std::fabs(q[i]), std::fabs(q1[i]));
        const double sv1 = atol_ + rtol_ * std::max(std::fabs(v[i]), std::fabs(v1[i]));
        sum += (xq[i] / sq1) * (xq[i] / sq1) + (xv[i] / sv1) * (xv[i] / sv1);
        // A NaN is no estimate: it becomes infinite (the control rejects it).
        if (!(std::fabs(xq[i]) <= estimate_max_)) {
          estimate_max_ =
              std::isnan(xq[i]) ? std::numeric_limits<double>::infinity() : std::fabs(xq[i]);
          estimate_coordinate_ = i;
        }
      }
      *err = std::sqrt(sum / (2.0 * n));
      return Status::Ok();
    };
    // e = gamma (h f + sum_i dd_i (Y_i - y0)) with f = (f_q, f_v).
    auto raw = [&](const double* f_q, const double* f_v) {
      for (int i = 0; i < n; ++i) {
        double zq = 0, zv = 0;
        for (int j = 0; j < 3; ++j) {
          zq += dd[j] * (Q[j * n + i] - q[i]);
          zv += dd[j] * (V[j * n + i] - v[i]);
        }
        eq[i] = gamma * (h * f_q[i] + zq);
        ev[i] = gamma * (h * f_v[i] + zv);
      }
    };
    raw(v, a0);
    s = filter();
    if (!s.ok()) return s;
    // RADAU5's second filtering: on a run's first step and after a
    // rejection, an estimate that rejects is taken again with f0 replaced
    // by f(t, y0 + x) (x the first estimate), which removes the stiff
    // components the first filter leaves when the step starts off the
    // slow manifold; a rejection there is then not a false one.
    if (refilter_ && *err >= 1) {
      // y0 + x into the probe's place: positions in qt_, velocities in vt_.
      double* aq = F + 2 * n;  // a(t, y0 + x), where jq was
      for (int i = 0; i < n; ++i) {
        qt_[i] = q[i] + xq[i];
        vt_[i] = v[i] + xv[i];
      }
      s = accel(t, qt_.data(), vt_.data(), aq);
      if (!s.ok()) return s;
      // f(t, y0 + x) = (v + x_v, a(t, y0 + x)); aq is overwritten by the
      // filter's Jq e_q, so the raw estimate is formed first.
      for (int i = 0; i < n; ++i) W1[i] = v[i] + xv[i];
      raw(W1, aq);
      s = filter();
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
}

}  // namespace tether
