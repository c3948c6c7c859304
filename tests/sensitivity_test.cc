// The exact instantaneous Jacobians of engine/sensitivity.h (the FMU's
// directional derivatives) against central finite differences of the
// engine's own evaluation (Simulation::Evaluate: the step loop's KKT
// solve, a different code path from the sensitivity tape and its Eigen
// solve), on several smooth models: a pendulum pushed by an input, a bead
// on a parabola, a double pendulum with a kinetic energy (M(q)), the
// four-bar linkage and the slider-crank (closed loops, mechanisms) and a
// spherical pendulum. Every partial of a, lambda and the outputs with
// respect to every q, v and input agrees to 1e-6 relative (of the largest
// partial in its row), at a moving state.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sensitivity.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"

namespace tether {
namespace {

// A state that moves: the description's initial one, its velocities made
// non-zero (v_i = 0.3 + 0.1 i) when they are all zero, so that the
// velocity terms count.
v1::SimulationSpec Moving(v1::SimulationSpec spec) {
  auto* v = spec.mutable_initial()->mutable_v();
  for (double x : *v)
    if (x != 0) return spec;
  for (int i = 0; i < v->size(); ++i) v->Set(i, 0.3 + 0.1 * i);
  return spec;
}

// a, lambda and y at `state` with inputs `u`, one row vector.
std::vector<double> Evaluate(Simulation& sim, const v1::State& state,
                             const std::vector<double>& u) {
  EXPECT_TRUE(sim.SetState(state).ok());
  for (size_t k = 0; k < u.size(); ++k) EXPECT_TRUE(sim.SetInput(sim.input_names()[k], u[k]).ok());
  v1::Frame f;
  Status s = sim.Evaluate(&f);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<double> out(f.a().begin(), f.a().end());
  out.insert(out.end(), f.lambda().begin(), f.lambda().end());
  out.insert(out.end(), f.outputs().begin(), f.outputs().end());
  return out;
}

void ExpectJacobianMatchesCentralDifferences(const v1::SimulationSpec& spec,
                                             const std::string& what) {
  SCOPED_TRACE(what);
  CompileOptions with_tape;
  with_tape.sensitivity = true;
  auto jsim = Simulation::Create(spec, nullptr, with_tape);
  ASSERT_TRUE(jsim.ok()) << jsim.status().message();
  auto fsim = Simulation::Create(spec);
  ASSERT_TRUE(fsim.ok());
  v1::State state;
  (*fsim)->GetState(&state);
  std::vector<double> u;
  for (const auto& in : spec.system().inputs()) u.push_back(in.default_value() + 0.25);
  const std::vector<double> q(state.q().begin(), state.q().end());
  const std::vector<double> v(state.v().begin(), state.v().end());
  KktJacobian j;
  Status s = EvaluateKktJacobian(**jsim, state.t(), q, v, u, &j);
  ASSERT_TRUE(s.ok()) << s.message();
  const int nq = j.nq, nz = j.nz;
  ASSERT_EQ(nz, 2 * nq + static_cast<int>(u.size()));
  // The a and lambda of the point are the engine's.
  const std::vector<double> at = Evaluate(**fsim, state, u);
  for (int i = 0; i < nq; ++i)
    EXPECT_DOUBLE_EQ(j.a[static_cast<size_t>(i)], at[static_cast<size_t>(i)]);
  // Rows: a, lambda, y; the exact partials in the same layout.
  const size_t rows = at.size();
  std::vector<double> exact(rows * static_cast<size_t>(nz));
  for (size_t r = 0; r < rows; ++r) {
    for (int c = 0; c < nz; ++c) {
      const size_t i = r * static_cast<size_t>(nz) + static_cast<size_t>(c);
      const size_t na = static_cast<size_t>(nq), nl = static_cast<size_t>(j.nc);
      exact[i] = r < na        ? j.da[i]
                 : r < na + nl ? j.dlambda[i - na * static_cast<size_t>(nz)]
                               : j.dy[i - (na + nl) * static_cast<size_t>(nz)];
    }
  }
  std::vector<double> fd(exact.size());
  for (int c = 0; c < nz; ++c) {
    auto perturbed = [&](double sign) {
      v1::State st = state;
      std::vector<double> uu = u;
      double* x = c < nq       ? st.mutable_q()->Mutable(c)
                  : c < 2 * nq ? st.mutable_v()->Mutable(c - nq)
                               : &uu[static_cast<size_t>(c - 2 * nq)];
      const double h = 1e-5 * std::max(1.0, std::fabs(*x));
      *x += sign * h;
      return std::make_pair(Evaluate(**fsim, st, uu), h);
    };
    const auto [plus, h] = perturbed(+1);
    const std::vector<double> minus = perturbed(-1).first;
    for (size_t r = 0; r < rows; ++r)
      fd[r * static_cast<size_t>(nz) + static_cast<size_t>(c)] = (plus[r] - minus[r]) / (2 * h);
  }
  int checked = 0;
  for (size_t r = 0; r < rows; ++r) {
    double scale = 1e-300;
    for (int c = 0; c < nz; ++c)
      scale =
          std::max(scale, std::fabs(exact[r * static_cast<size_t>(nz) + static_cast<size_t>(c)]));
    for (int c = 0; c < nz; ++c) {
      const size_t i = r * static_cast<size_t>(nz) + static_cast<size_t>(c);
      EXPECT_LE(std::fabs(exact[i] - fd[i]), 1e-6 * scale)
          << "row " << r << ", column " << c << ": exact " << exact[i] << ", central difference "
          << fd[i];
      ++checked;
    }
  }
  // Something was checked, and not only zeros.
  EXPECT_GT(checked, 0);
  double largest = 0;
  for (double x : exact) largest = std::max(largest, std::fabs(x));
  EXPECT_GT(largest, 0.1);
}

v1::SimulationSpec Load(const std::string& rel) {
  v1::SimulationSpec spec;
  Status s = LoadSpecFile(std::string(TETHER_SOURCE_DIR) + "/" + rel, &spec);
  EXPECT_TRUE(s.ok()) << s.message();
  return spec;
}

v1::SimulationSpec Parse(const char* json) {
  v1::SimulationSpec spec;
  Status s = ParseSpecJson(json, &spec, "test");
  EXPECT_TRUE(s.ok()) << s.message();
  return spec;
}

TEST(SensitivityTest, APendulumPushedByAnInputOffTheBottom) {
  v1::SimulationSpec spec = Load("examples/pendulum_force_input.json");
  spec.mutable_initial()->mutable_q()->Set(0, 0.6);
  spec.mutable_initial()->mutable_q()->Set(1, -0.8);
  ExpectJacobianMatchesCentralDifferences(Moving(spec), "pendulum");
}

TEST(SensitivityTest, ABeadOnAParabolaWithAVelocityDependentInputForce) {
  ExpectJacobianMatchesCentralDifferences(
      Moving(Parse(
          R"json({"system":{"coordinates":["x","y"],"parameters":[{"name":"grav","value":9.81}],"inputs":[{"name":"push","defaultValue":0.5}],"masses":{"values":[2,2]},"potentialEnergy":"2*grav*y","generalizedForces":["push*cos(x) - 0.3*der(x)","0"],"constraints":[{"name":"track","expression":"y - x^2/2"}],"baumgarte":{"alpha":10,"beta":10},"outputs":[{"name":"speed2","expression":"der(x)^2 + der(y)^2"},{"name":"power","expression":"push*der(x)"}]},"initial":{"q":[0.8,0.32],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json")),
      "bead");
}

TEST(SensitivityTest, ADoublePendulumWithAKineticEnergy) {
  ExpectJacobianMatchesCentralDifferences(Moving(Load("examples/double_pendulum_definitions.json")),
                                          "double pendulum");
}

TEST(SensitivityTest, ClosedLoopMechanisms) {
  ExpectJacobianMatchesCentralDifferences(Moving(Load("examples/four_bar.json")), "four-bar");
  ExpectJacobianMatchesCentralDifferences(Moving(Load("examples/slider_crank.json")),
                                          "slider-crank");
}

TEST(SensitivityTest, ASphericalPendulum) {
  ExpectJacobianMatchesCentralDifferences(Moving(Load("examples/spherical_pendulum.json")),
                                          "spherical pendulum");
}

TEST(SensitivityTest, AModelWithoutTheTapeIsAFailedPrecondition) {
  auto sim = Simulation::Create(Load("examples/pendulum_force_input.json"));
  ASSERT_TRUE(sim.ok());
  KktJacobian j;
  const std::vector<double> q = {0, -1}, v = {0, 0}, u = {0};
  Status s = EvaluateKktJacobian(**sim, 0, q, v, u, &j);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("sensitivity"), std::string::npos);
}

}  // namespace
}  // namespace tether
