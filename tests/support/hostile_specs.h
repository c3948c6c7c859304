// Hostile descriptions shared by the tests and the benchmarks (proto only,
// no engine or gtest dependency, so a benchmark that talks to a server can
// use them too).
#pragma once

#include <string>

#include "tether/v1/simulation.pb.h"

namespace tether::testing {

// A hostile description for the compile limits: n coordinates with a
// kinetic energy T = 1/2 (sum_i c_i v_i)^2 + 1/2 (sum_i s_i v_i)^2 +
// 1/2 sum_i v_i^2, c_i = 2 + cos q_i, s_i = 2 + sin q_i. Its text is O(n),
// but its mass matrix (positive definite) is dense with n(n+1)/2 distinct
// entries c_i c_j + s_i s_j (+ 1 on the diagonal), so the
// description with its derivatives has about 3n^2/2 distinct nodes
// whatever the compiler does (the pruning of what cannot depend on a
// variable does not help: every momentum depends on every coordinate).
inline v1::SimulationSpec SwellingKineticEnergy(int n) {
  v1::SimulationSpec spec;
  auto* sys = spec.mutable_system();
  std::string C, S, V;
  for (int i = 0; i < n; ++i) {
    const std::string q = "q" + std::to_string(i);
    sys->add_coordinates(q);
    spec.mutable_initial()->add_q(0.1);
    if (i) {
      C += "+";
      S += "+";
      V += "+";
    }
    C += "(2+cos(" + q + "))*der(" + q + ")";
    S += "(2+sin(" + q + "))*der(" + q + ")";
    V += "der(" + q + ")^2";
  }
  sys->set_kinetic_energy("0.5*(" + C + ")^2+0.5*(" + S + ")^2+0.5*(" + V + ")");
  spec.mutable_integrator()->set_method(v1::IntegratorSpec::RK4);
  spec.mutable_integrator()->set_step_size(0.001);
  return spec;
}

}  // namespace tether::testing
