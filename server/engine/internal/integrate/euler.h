// The explicit and semi-implicit (symplectic) Euler steps: one evaluation
// each (integrator.h's table, TETHER_INTEGRATOR_METHODS).
// Included by integrator.h after the Integrator class: member templates of
// it, not to be included on their own.
#pragma once

#include "engine/internal/integrate/integrator.h"

namespace tether {

template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::StepExplicitEuler(double h, double, const double* q,
                                                              const double* v, const double* a0,
                                                              Accel&&, double* q1, double* v1,
                                                              double*) {
  const int n = N > 0 ? N : n_;
  for (int i = 0; i < n; ++i) {
    q1[i] = q[i] + h * v[i];
    v1[i] = v[i] + h * a0[i];
  }
  return Status::Ok();
}

template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::StepSemiImplicitEuler(double h, double, const double* q,
                                                                  const double* v, const double* a0,
                                                                  Accel&&, double* q1, double* v1,
                                                                  double*) {
  const int n = N > 0 ? N : n_;
  for (int i = 0; i < n; ++i) {
    v1[i] = v[i] + h * a0[i];
    q1[i] = q[i] + h * v1[i];
  }
  return Status::Ok();
}

}  // namespace tether
