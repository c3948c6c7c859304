// The classical fourth-order Runge-Kutta step (integrator.h's table,
// TETHER_INTEGRATOR_METHODS).
// Included by integrator.h after the Integrator class: member templates of
// it, not to be included on their own.
#pragma once

#include "engine/internal/integrate/integrator.h"

namespace tether {

namespace rk4 {
// The general size's stage arithmetic (N = 0), out of line in integrator.cc,
// which is built with the loop vectorizer (simulation.cc, where the step
// loop is instantiated, is not: its loops are a handful of elements for
// small systems). Elementwise, so the same bits as the scalar loops:
// Q = q + c dq, V = v + c dv.
void Stage(int n, double c, const double* q, const double* v, const double* dq, const double* dv,
           double* __restrict Q, double* __restrict V);
// q1 = q + h6 (v + 2 V2 + 2 V3 + V4), v1 = v + h6 (a0 + 2 A2 + 2 A3 + A4).
void Combine(int n, double h6, const double* q, const double* v, const double* a0, const double* V2,
             const double* V3, const double* V4, const double* A2, const double* A3,
             const double* A4, double* __restrict q1, double* __restrict v1);
}  // namespace rk4

template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::StepRk4(double h, double t, const double* q,
                                                    const double* v, const double* a0,
                                                    Accel&& accel, double* q1, double* v1,
                                                    double*) {
  const int n = N > 0 ? N : n_;
  double* Q = Qs_.data();
  double* V = Vs_.data();
  double* A = As_.data();
  // Stage 2.
  if constexpr (N == 0) {
    rk4::Stage(n, 0.5 * h, q, v, v, a0, Q, V);
  } else {
    for (int i = 0; i < n; ++i) {
      Q[i] = q[i] + 0.5 * h * v[i];
      V[i] = v[i] + 0.5 * h * a0[i];
    }
  }
  Status s = accel(t + 0.5 * h, Q, V, A);
  if (!s.ok()) return s;
  // Stage 3.
  double* Q3 = Q + n;
  double* V3 = V + n;
  double* A3 = A + n;
  if constexpr (N == 0) {
    rk4::Stage(n, 0.5 * h, q, v, V, A, Q3, V3);
  } else {
    for (int i = 0; i < n; ++i) {
      Q3[i] = q[i] + 0.5 * h * V[i];
      V3[i] = v[i] + 0.5 * h * A[i];
    }
  }
  s = accel(t + 0.5 * h, Q3, V3, A3);
  if (!s.ok()) return s;
  // Stage 4.
  double* Q4 = Q + 2 * n;
  double* V4 = V + 2 * n;
  double* A4 = A + 2 * n;
  if constexpr (N == 0) {
    rk4::Stage(n, h, q, v, V3, A3, Q4, V4);
  } else {
    for (int i = 0; i < n; ++i) {
      Q4[i] = q[i] + h * V3[i];
      V4[i] = v[i] + h * A3[i];
    }
  }
  s = accel(t + h, Q4, V4, A4);
  if (!s.ok()) return s;
  const double h6 = h / 6;
  if constexpr (N == 0) {
    rk4::Combine(n, h6, q, v, a0, V, V3, V4, A, A3, A4, q1, v1);
  } else {
    for (int i = 0; i < n; ++i) {
      q1[i] = q[i] + h6 * (v[i] + 2 * V[i] + 2 * V3[i] + V4[i]);
      v1[i] = v[i] + h6 * (a0[i] + 2 * A[i] + 2 * A3[i] + A4[i]);
    }
  }
  return Status::Ok();
}

// RK4_POST_STABILIZED's step: RK4 from the acceleration at the step's start
// evaluated again by `accel`, which the step loop makes evaluate without the
// Baumgarte feedback (a0, the step's start evaluation with it, is not
// used); the step loop then moves the end onto the residual law's map
// (docs/MATH.md section 7.3). The start's acceleration goes in the fourth
// scratch stage.
template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::StepRk4PostStabilized(double h, double t,
                                                                  const double* q, const double* v,
                                                                  const double*, Accel&& accel,
                                                                  double* q1, double* v1,
                                                                  double* err) {
  const int n = N > 0 ? N : n_;
  double* a0 = As_.data() + 3 * static_cast<size_t>(n);
  if (Status s = accel(t, q, v, a0); !s.ok()) return s;
  return StepRk4<N>(h, t, q, v, a0, accel, q1, v1, err);
}

}  // namespace tether
