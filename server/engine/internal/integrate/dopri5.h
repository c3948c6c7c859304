// DOPRI5, the adaptive Dormand-Prince 5(4) step with its error estimate
// and dense output tableau (integrator.h's table,
// TETHER_INTEGRATOR_METHODS; the step-size control is in Integrator::Step).
// Included by integrator.h after the Integrator class: member templates of
// it, not to be included on their own.
#pragma once

#include "engine/internal/integrate/integrator.h"

namespace tether {

namespace dopri5 {
// Dormand-Prince 5(4) tableau (Hairer, Norsett & Wanner, vol. I).
inline constexpr double c[7] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1};
inline constexpr double a[7][6] = {
    {0, 0, 0, 0, 0, 0},
    {1.0 / 5, 0, 0, 0, 0, 0},
    {3.0 / 40, 9.0 / 40, 0, 0, 0, 0},
    {44.0 / 45, -56.0 / 15, 32.0 / 9, 0, 0, 0},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0, 0},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656, 0},
    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}};
// e = b - b_hat (error estimate weights).
inline constexpr double e[7] = {71.0 / 57600,      0,          -71.0 / 16695, 71.0 / 1920,
                                -17253.0 / 339200, 22.0 / 525, -1.0 / 40};
// Dense output (Hairer's contd5).
inline constexpr double d[7] = {-12715105075.0 / 11282082432.0,  0,
                                87487479700.0 / 32700410799.0,   -10690763975.0 / 1880347072.0,
                                701980252875.0 / 199316789632.0, -1453857185.0 / 822651844.0,
                                69997945.0 / 29380423.0};
}  // namespace dopri5

// Not forced inline: the adaptive path calls it through Attempt's switch,
// as it called Dopri5Attempt before, and the fixed-step loop stays small.
template <int N, class Accel>
Status Integrator::StepDopri5(double h, double t, const double* q, const double* v,
                              const double* a0, Accel&& accel, double* q1, double* v1,
                              double* err) {
  using namespace dopri5;
  const int n = N > 0 ? N : n_;
  double* Q = Qs_.data();
  double* V = Vs_.data();
  double* A = As_.data();
  for (int i = 0; i < n; ++i) {
    Q[i] = q[i];
    V[i] = v[i];
    A[i] = a0[i];
  }
  for (int s = 1; s < 7; ++s) {
    double* Qs = Q + s * n;
    double* Vs = V + s * n;
    for (int i = 0; i < n; ++i) {
      double dq = 0, dv = 0;
      for (int j = 0; j < s; ++j) {
        dq += a[s][j] * V[j * n + i];
        dv += a[s][j] * A[j * n + i];
      }
      Qs[i] = q[i] + h * dq;
      Vs[i] = v[i] + h * dv;
    }
    Status st = accel(t + c[s] * h, Qs, Vs, A + s * n);
    if (!st.ok()) return st;
  }
  // Stage 7 is at the 5th-order solution (FSAL).
  double sum = 0;
  estimate_max_ = 0;
  estimate_coordinate_ = 0;
  for (int i = 0; i < n; ++i) {
    q1[i] = Q[6 * n + i];
    v1[i] = V[6 * n + i];
    double eq = 0, ev = 0;
    for (int j = 0; j < 7; ++j) {
      eq += e[j] * V[j * n + i];
      ev += e[j] * A[j * n + i];
    }
    eq *= h;
    ev *= h;
    // A NaN is no estimate: it becomes infinite (the control rejects it).
    if (!(std::fabs(eq) <= estimate_max_)) {
      estimate_max_ = std::isnan(eq) ? std::numeric_limits<double>::infinity() : std::fabs(eq);
      estimate_coordinate_ = i;
    }
    const double sq = atol_ + rtol_ * std::max(std::fabs(q[i]), std::fabs(q1[i]));
    const double sv = atol_ + rtol_ * std::max(std::fabs(v[i]), std::fabs(v1[i]));
    sum += (eq / sq) * (eq / sq) + (ev / sv) * (ev / sv);
  }
  *err = std::sqrt(sum / (2.0 * n));
  return Status::Ok();
}

}  // namespace tether
