// Convergence order of every method, DOPRI5 error control, the explicit
// Euler boundary h omega = 2 on the residual test system, RK4's limit, and
// energy behaviour.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/integration_methods.h"
#include "engine/internal/integrate/integrator.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::CirclePendulum;
using testing::RunSpec;
using testing::SpecFromJson;

// Final position of the pendulum from a consistent start after T = 1.
std::pair<double, double> FinalPosition(const std::string& method, double h, double rtol = 0) {
  auto spec = CirclePendulum(2, 2, method, h, 0.6, -0.8, 0.8, 0.6);
  if (rtol > 0) {
    spec.mutable_integrator()->set_rtol(rtol);
    spec.mutable_integrator()->set_atol(rtol * 1e-3);
  }
  RunOptions run;
  run.until_time = 1.0;
  run.every = 1u << 30;
  run.emit_start = false;
  auto out = RunSpec(spec, run);
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  const auto& f = out.frames.at(out.frames.size() - 1);
  EXPECT_EQ(f.t(), 1.0);
  return {f.q(0), f.q(1)};
}

double ErrorAgainst(std::pair<double, double> a, std::pair<double, double> ref) {
  return std::hypot(a.first - ref.first, a.second - ref.second);
}

// Every fixed-step method of the table (kMethods), at its own order: a new
// row is tested here without an edit. The step for each order keeps the
// error above rounding and in the asymptotic range.
TEST(IntegratorTest, ConvergenceOrderOfEachFixedStepMethod) {
  const auto ref = FinalPosition("RK4", 1e-4);
  int tested = 0;
  for (const MethodDescriptor& d : kMethods) {
    if (d.adaptive) continue;
    const std::string method = v1::IntegratorSpec::Method_Name(d.method);
    const double h = d.order <= 2 ? 0.002 : d.order == 3 ? 0.01 : 0.02;
    const double e1 = ErrorAgainst(FinalPosition(method, h), ref);
    const double e2 = ErrorAgainst(FinalPosition(method, h / 2), ref);
    const double e3 = ErrorAgainst(FinalPosition(method, h / 4), ref);
    const double p1 = std::log2(e1 / e2), p2 = std::log2(e2 / e3);
    EXPECT_NEAR(p1, d.order, 0.25) << method << " errors " << e1 << " " << e2 << " " << e3;
    EXPECT_NEAR(p2, d.order, 0.25) << method << " errors " << e1 << " " << e2 << " " << e3;
    ++tested;
  }
  EXPECT_GE(tested, 4);
}

TEST(IntegratorTest, Dopri5MeetsItsToleranceAndTightensWithIt) {
  const auto ref = FinalPosition("RK4", 1e-4);
  const double loose = ErrorAgainst(FinalPosition("DOPRI5", 0, 1e-5), ref);
  const double tight = ErrorAgainst(FinalPosition("DOPRI5", 0, 1e-9), ref);
  EXPECT_LT(loose, 1e-3);
  EXPECT_LT(tight, 1e-7);
  EXPECT_LT(tight, loose / 100);
}

TEST(IntegratorTest, Dopri5TakesFewerStepsWhenLooser) {
  auto count = [](double rtol) {
    auto spec = CirclePendulum(2, 2, "DOPRI5", 0, 0.6, -0.8, 0.8, 0.6);
    spec.mutable_integrator()->set_rtol(rtol);
    RunOptions run;
    run.until_time = 2.0;
    auto out = RunSpec(spec, run);
    EXPECT_TRUE(out.status.ok());
    return out.frames.at(out.frames.size() - 1).step();
  };
  EXPECT_LT(count(1e-4), count(1e-8));
}

TEST(ResidualTestSystemTest, ExplicitEulerBoundaryAtHOmegaTwo) {
  const double omega = 10;
  // Double eigenvalue 1 - h omega.
  for (double hw : {0.5, 1.0, 1.5, 1.9, 2.0, 2.1}) {
    const auto u = ResidualTestUpdate(v1::IntegratorSpec::EXPLICIT_EULER, hw / omega, omega, omega);
    EXPECT_NEAR(u.spectral_radius, std::fabs(1 - hw), 1e-6) << "h omega = " << hw;
  }
  EXPECT_LT(ResidualTestUpdate(v1::IntegratorSpec::EXPLICIT_EULER, 1.99 / omega, omega, omega)
                .spectral_radius,
            1);
  EXPECT_GT(ResidualTestUpdate(v1::IntegratorSpec::EXPLICIT_EULER, 2.01 / omega, omega, omega)
                .spectral_radius,
            1);

  // At h omega = 2 the Jordan block grows linearly (docs/MATH.md sections 8 and 12):
  // R^n = r^n I + n h r^(n-1) C with r = -1.
  const auto u = ResidualTestUpdate(v1::IntegratorSpec::EXPLICIT_EULER, 2 / omega, omega, omega);
  double e = 1, w = 0;
  double norm_at[3] = {0, 0, 0};
  for (int n = 1; n <= 400; ++n) {
    const double e1 = u.R[0][0] * e + u.R[0][1] * w;
    const double w1 = u.R[1][0] * e + u.R[1][1] * w;
    e = e1;
    w = w1;
    if (n == 100) norm_at[0] = std::fabs(e);
    if (n == 200) norm_at[1] = std::fabs(e);
    if (n == 400) norm_at[2] = std::fabs(e);
  }
  // |e_n| = |1 - n h omega|... grows like n: doubling n doubles it.
  EXPECT_NEAR(norm_at[1] / norm_at[0], 2.0, 0.03);
  EXPECT_NEAR(norm_at[2] / norm_at[1], 2.0, 0.03);
}

TEST(ResidualTestSystemTest, EulerBoundaryInTheRealEngine) {
  // A one-coordinate "system" whose constraint is x itself: the whole motion
  // is the residual, x'' = -2 alpha x' - beta^2 x, stepped by the engine.
  auto run = [](double hw) {
    const double omega = 10, h = hw / omega;
    char json[512];
    std::snprintf(
        json, sizeof json,
        R"j({"system":{"coordinates":["x"],"masses":{"values":[1]},"constraints":[{"expression":"x"}],)j"
        R"j("baumgarte":{"alpha":%g,"beta":%g}},"initial":{"q":[0.01]},)j"
        R"j("integrator":{"method":"EXPLICIT_EULER","stepSize":%.17g}})j",
        omega, omega, h);
    RunOptions options;
    options.steps = 400;
    options.every = 100;
    return RunSpec(SpecFromJson(json), options);
  };
  auto stable = run(1.9), boundary = run(2.0), unstable = run(2.2);
  ASSERT_TRUE(stable.status.ok() && boundary.status.ok() && unstable.status.ok());
  auto x_at = [](const testing::RunOutput& o, int k) { return std::fabs(o.frames.at(k).q(0)); };
  EXPECT_LT(x_at(stable, 4), 1e-6);
  EXPECT_NEAR(x_at(boundary, 4) / x_at(boundary, 2), 2.0, 0.05);  // linear growth
  EXPECT_GT(x_at(unstable, 4), 1e3 * x_at(unstable, 2));          // exponential growth
  EXPECT_TRUE(stable.certificate.step_stable());
  EXPECT_FALSE(boundary.certificate.step_stable());
  EXPECT_FALSE(unstable.certificate.step_stable());
}

TEST(ResidualTestSystemTest, Rk4RealAxisLimit) {
  // R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24 reaches |R| = 1 near z = -2.785 on
  // the real axis. Overdamped gains put one root far out on it.
  const double alpha = 50.5, beta = 10;  // roots -1, -100
  const double mu = -alpha - std::sqrt(alpha * alpha - beta * beta);
  EXPECT_LT(ResidualTestUpdate(v1::IntegratorSpec::RK4, 2.78 / -mu, alpha, beta).spectral_radius,
            1);
  EXPECT_GT(ResidualTestUpdate(v1::IntegratorSpec::RK4, 2.79 / -mu, alpha, beta).spectral_radius,
            1);
}

TEST(IntegratorTest, EnergyBehaviour) {
  // Frictionless pendulum, consistent start: explicit Euler gains energy,
  // semi-implicit Euler keeps it within a bounded band, RK4 nearly exact.
  auto energy_error = [](const std::string& method) {
    auto spec = CirclePendulum(5, 5, method, 2e-3, 0.6, -0.8, 0.8, 0.6);
    auto* out = spec.mutable_system()->add_outputs();
    out->set_name("energy");
    out->set_expression("(der(x)^2 + der(y)^2)/2 + grav*y");
    RunOptions run;
    run.until_time = 20;
    run.every = 500;
    auto r = RunSpec(spec, run);
    EXPECT_TRUE(r.status.ok());
    const double e0 = r.frames.at(0).outputs(0);
    double max_dev = 0, last = 0;
    for (const auto& f : r.frames) {
      max_dev = std::max(max_dev, std::fabs(f.outputs(0) - e0));
      last = f.outputs(0) - e0;
    }
    return std::make_pair(max_dev, last);
  };
  const auto explicit_euler = energy_error("EXPLICIT_EULER");
  const auto semi_implicit = energy_error("SEMI_IMPLICIT_EULER");
  const auto rk4 = energy_error("RK4");
  EXPECT_GT(explicit_euler.second, 0.01);                // energy grows
  EXPECT_LT(semi_implicit.first, explicit_euler.first);  // bounded band, smaller
  EXPECT_LT(rk4.first, 1e-6);
}

// The method table: its rows are protobuf's methods (every one but
// METHOD_UNSPECIFIED, once), names are protobuf's, the validation message
// lists every method from it, and the order is what the convergence test
// sees.
TEST(IntegratorTest, MethodTableDrivesNamesOrdersAndTheValidationMessage) {
  std::set<int> rows;
  std::vector<std::string> names;
  for (const MethodDescriptor& d : kMethods) {
    EXPECT_TRUE(rows.insert(d.method).second) << "listed twice: " << MethodName(d.method);
    names.push_back(v1::IntegratorSpec::Method_Name(d.method));
    EXPECT_EQ(MethodName(d.method), v1::IntegratorSpec::Method_Name(d.method));
    EXPECT_EQ(FindMethod(d.method), &d);
    EXPECT_EQ(MethodOrder(d.method), d.order);
    EXPECT_GE(d.stages, 1);
  }
  const google::protobuf::EnumDescriptor* methods = v1::IntegratorSpec::Method_descriptor();
  std::set<int> in_protobuf;
  for (int i = 0; i < methods->value_count(); ++i) {
    if (methods->value(i)->number() == v1::IntegratorSpec::METHOD_UNSPECIFIED) continue;
    in_protobuf.insert(methods->value(i)->number());
  }
  EXPECT_EQ(rows, in_protobuf) << "kMethods and the protobuf enum IntegratorSpec.Method differ";
  EXPECT_EQ(FindMethod(v1::IntegratorSpec::METHOD_UNSPECIFIED), nullptr);
  // "EXPLICIT_EULER, SEMI_IMPLICIT_EULER, ...": the table's names in its
  // order.
  std::vector<std::string> listed;
  for (size_t from = 0;;) {
    const size_t comma = MethodList().find(", ", from);
    listed.push_back(MethodList().substr(from, comma - from));
    if (comma == std::string::npos) break;
    from = comma + 2;
  }
  EXPECT_EQ(listed, names) << MethodList();
  EXPECT_TRUE(FindMethod(v1::IntegratorSpec::DOPRI5)->adaptive);
  EXPECT_FALSE(FindMethod(v1::IntegratorSpec::RK4)->adaptive);
  EXPECT_EQ(MethodOrder(v1::IntegratorSpec::RK4), 4);

  auto spec = CirclePendulum(10, 10, "RK4", 1e-3);
  spec.mutable_integrator()->set_method(v1::IntegratorSpec::METHOD_UNSPECIFIED);
  const auto report = Validate(spec);
  ASSERT_FALSE(report.valid());
  bool found = false;
  for (const auto& d : report.diagnostics()) {
    if (d.field() != "integrator.method") continue;
    found = true;
    EXPECT_EQ(d.message(),
              "expected one of " + MethodList() + ", found METHOD_UNSPECIFIED (not set)");
  }
  EXPECT_TRUE(found);
}

// The public list (engine/integration_methods.h, what `tether methods`
// prints) is the table, row for row.
TEST(IntegratorTest, PublicMethodListIsTheTable) {
  const auto methods = IntegrationMethods();
  ASSERT_EQ(methods.size(), std::size(kMethods));
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const MethodDescriptor& d = kMethods[i];
    EXPECT_EQ(methods[i].method, d.method);
    EXPECT_EQ(methods[i].name, MethodName(d.method));
    EXPECT_EQ(methods[i].order, d.order);
    EXPECT_EQ(methods[i].adaptive, d.adaptive);
    EXPECT_EQ(methods[i].implicit, d.implicit);
  }
}

// The one policy for judgement (b): stages count, probes never, Newton
// iterates as the descriptor says.
TEST(IntegratorTest, JudgementBPolicyIsReadFromTheDescriptor) {
  MethodDescriptor counting = kMethods[0], not_counting = kMethods[0];
  counting.newton_iterates_count_in_judgement_b = true;
  not_counting.newton_iterates_count_in_judgement_b = false;
  EXPECT_TRUE(CountsIntoJudgementB(not_counting, EvaluationKind::kStage));
  EXPECT_TRUE(CountsIntoJudgementB(counting, EvaluationKind::kNewtonIterate));
  EXPECT_FALSE(CountsIntoJudgementB(not_counting, EvaluationKind::kNewtonIterate));
  EXPECT_FALSE(CountsIntoJudgementB(counting, EvaluationKind::kJacobianProbe));
}

// Forward differences of accel against the analytic Jacobian of two
// coupled damped oscillators, a = -K q - C v, and of a pendulum,
// a = -(g / l) sin(q): O(sqrt(eps)) agreement, never exact.
TEST(IntegratorTest, FiniteDifferenceJacobianMatchesAnalyticCases) {
  const double K[2][2] = {{4, -1}, {-1, 9}}, C[2][2] = {{0.3, 0}, {0.1, 0.5}};
  int calls = 0;
  auto oscillators = [&](double, const double* q, const double* v, double* a) {
    ++calls;
    for (int i = 0; i < 2; ++i)
      a[i] = -K[i][0] * q[0] - K[i][1] * q[1] - C[i][0] * v[0] - C[i][1] * v[1];
    return Status::Ok();
  };
  const double q[2] = {0.7, -1.3}, v[2] = {2.0, 0.4};
  double a[2], dadq[4], dadv[4], work[6];
  ASSERT_TRUE(oscillators(0, q, v, a).ok());
  calls = 0;
  ASSERT_TRUE(AccelerationJacobian(oscillators, 2, 0.0, q, v, a, dadq, dadv, work).ok());
  EXPECT_EQ(calls, 4);  // one probe per coordinate and velocity
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_NEAR(dadq[i * 2 + j], -K[i][j], 1e-6) << i << "," << j;
      EXPECT_NEAR(dadv[i * 2 + j], -C[i][j], 1e-6) << i << "," << j;
    }
  }

  const double g_over_l = 9.81 / 0.5;
  auto pendulum = [&](double, const double* th, const double*, double* acc) {
    acc[0] = -g_over_l * std::sin(th[0]);
    return Status::Ok();
  };
  for (double th : {0.0, 0.4, 1.5, 3.0}) {
    const double w = 1.1;
    double acc, J_q, J_v, scratch[3];
    ASSERT_TRUE(pendulum(0, &th, &w, &acc).ok());
    ASSERT_TRUE(AccelerationJacobian(pendulum, 1, 0.0, &th, &w, &acc, &J_q, &J_v, scratch).ok());
    EXPECT_NEAR(J_q, -g_over_l * std::cos(th), 1e-6 * g_over_l) << "theta " << th;
    EXPECT_EQ(J_v, 0.0);
  }

  // A failing probe is reported, not hidden.
  auto failing = [](double, const double*, const double*, double*) {
    return Aborted("probe failed");
  };
  Status s = AccelerationJacobian(failing, 2, 0.0, q, v, a, dadq, dadv, work);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "probe failed");
}

// An accel that supplies its own Jacobian is asked for it instead of probed.
TEST(IntegratorTest, AnalyticJacobianSeamIsUsedWhenOffered) {
  struct Oscillator {
    int calls = 0;
    Status operator()(double, const double* q, const double*, double* a) {
      ++calls;
      a[0] = -4 * q[0];
      return Status::Ok();
    }
    Status Jacobian(double, const double*, const double*, const double*, double* dadq,
                    double* dadv) const {
      dadq[0] = -4;
      dadv[0] = 0;
      return Status::Ok();
    }
  } accel;
  const double q = 0.5, v = 0, a = -2;
  double dadq = 0, dadv = 1, work[3];
  ASSERT_TRUE(AccelerationJacobian(accel, 1, 0.0, &q, &v, &a, &dadq, &dadv, work).ok());
  EXPECT_EQ(accel.calls, 0);
  EXPECT_EQ(dadq, -4);  // exact: not a difference quotient
  EXPECT_EQ(dadv, 0);
}

}  // namespace
}  // namespace tether
