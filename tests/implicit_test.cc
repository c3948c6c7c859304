// SDIRK3, the implicit method (integrator.h, newton.h): its order, its
// stability where RK4 at the same step blows up, its bits, judgement (c) on
// it against the method's stability function, the symbolic Newton matrix
// against finite differences of the KKT solve (dense and sparse paths), and
// its errors.
#include <cmath>
#include <thread>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "engine/internal/integrate/integrator.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/newton.h"
#include "engine/internal/model/model.h"
#include "large_models.h"
#include "stability_function.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::CirclePendulum;
using testing::RunSpec;
using testing::SpecFromJson;

std::pair<double, double> FinalPosition(const std::string& method, double h) {
  auto spec = CirclePendulum(2, 2, method, h, 0.6, -0.8, 0.8, 0.6);
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

TEST(ImplicitTest, OrderThreeOnASmoothProblem) {
  const auto ref = FinalPosition("RK4", 1e-4);
  const double e1 = ErrorAgainst(FinalPosition("SDIRK3", 0.02), ref);
  const double e2 = ErrorAgainst(FinalPosition("SDIRK3", 0.01), ref);
  const double e3 = ErrorAgainst(FinalPosition("SDIRK3", 0.005), ref);
  EXPECT_NEAR(std::log2(e1 / e2), 3, 0.3) << e1 << " " << e2 << " " << e3;
  EXPECT_NEAR(std::log2(e2 / e3), 3, 0.3) << e1 << " " << e2 << " " << e3;
}

// Gains alpha = beta = 1000 with h = 0.01 (h omega = 10, RK4's limit is
// 2.785): RK4 diverges, SDIRK3 keeps |g| small and bounded.
TEST(ImplicitTest, StiffGainsStableWhereRk4BlowsUp) {
  RunOptions run;
  run.until_time = 2.0;
  run.every = 1;
  auto rk4 = RunSpec(CirclePendulum(1000, 1000, "RK4", 0.01, 0.6, -0.8, 0.8, 0.6), run);
  bool rk4_bad = !rk4.status.ok();
  for (const auto& f : rk4.frames) {
    if (!(std::fabs(f.residuals().position(0)) < 1e-3)) rk4_bad = true;
  }
  EXPECT_TRUE(rk4_bad) << "RK4 at h omega = 10 was expected to diverge";

  auto sdirk = RunSpec(CirclePendulum(1000, 1000, "SDIRK3", 0.01, 0.6, -0.8, 0.8, 0.6), run);
  ASSERT_TRUE(sdirk.status.ok()) << sdirk.status.ToString();
  ASSERT_EQ(sdirk.frames.at(sdirk.frames.size() - 1).t(), 2.0);
  // Bounded and not growing: the second second's max |g| is no larger
  // than about the first's (the method's truncation error at h = 0.01,
  // damped by the feedback; measured 7e-6).
  double max_g[2] = {0, 0};
  for (const auto& f : sdirk.frames) {
    double& m = max_g[f.t() > 1.0];
    m = std::max(m, std::fabs(f.residuals().position(0)));
  }
  EXPECT_LT(max_g[0], 1e-4);
  EXPECT_LT(max_g[1], 2 * max_g[0]);
  // The run's certificate judges the step stable for these gains.
  EXPECT_TRUE(sdirk.certificate.step_stable());
  // And validation says the same (RK4: unstable, with the warning).
  EXPECT_TRUE(Validate(CirclePendulum(1000, 1000, "SDIRK3", 0.01)).step_stable());
  EXPECT_FALSE(Validate(CirclePendulum(1000, 1000, "RK4", 0.01)).step_stable());
}

std::string Serialized(const testing::RunOutput& out) {
  std::string s;
  for (const auto& f : out.frames) s += f.SerializeAsString();
  return s;
}

TEST(ImplicitTest, SameBitsAcrossRunsAndUnderLoad) {
  const auto spec = SpecFromJson(tether_bench::Chain(16, {"SDIRK3", 0.005, 1000, 1000}).json);
  RunOptions run;
  run.steps = 100;
  const std::string first = Serialized(RunSpec(spec, run));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(Serialized(RunSpec(spec, run)), first);
  // Four runs at once on the two cores.
  std::string results[4];
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&] { r = Serialized(RunSpec(spec, run)); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, first);
}

// Judgement (c)'s update matrix for SDIRK3 is the method's stability
// function R(Z) = I + (b^T x Z) (I - A x Z)^-1 (1 x I) at Z = h B (the
// Runge-Kutta matrix form, independent of the step code), and it is
// L-stable: rho -> 0 as h grows.
TEST(ImplicitTest, ResidualTestUpdateIsTheStabilityFunction) {
  const double g = sdirk3::gamma;
  Eigen::Matrix3d A;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) A(i, j) = sdirk3::a[i][j];
  EXPECT_NEAR(A.row(2).sum(), 1, 1e-15);
  EXPECT_NEAR(g * g * g - 3 * g * g + 1.5 * g - 1.0 / 6, 0, 1e-16);
  testing::ExpectUpdateIsTheStabilityFunction(v1::IntegratorSpec::SDIRK3, A);
}

// The Newton solve against finite differences of the KKT solve: for unit
// residuals r = e_j, (I - c1 da/dv - c2 da/dq) z = -r.
void CheckNewtonAgainstDifferences(const std::string& json, bool expect_sparse) {
  auto spec = SpecFromJson(json);
  std::vector<v1::Diagnostic> diags;
  Status stopped;
  auto model = CompileModel(spec.system(), CompileOptions{}, &diags, &stopped, true);
  ASSERT_TRUE(model) << (diags.empty() ? stopped.ToString() : diags[0].message());
  const int n = model->nq;
  NewtonSolver solver(*model);
  EXPECT_EQ(solver.sparse(), expect_sparse);
  std::vector<double> q(spec.initial().q().begin(), spec.initial().q().end()), v(n);
  for (int i = 0; i < n; ++i) v[i] = 0.3 * std::sin(1.7 * i + 0.2);  // a moving state
  Workspace ws(*model);
  auto accel = [&](double t, const double* qq, const double* vv, double* a) {
    Status s = SolveKkt(*model, &ws, t, qq, vv);
    std::copy(ws.a.begin(), ws.a.end(), a);
    return s;
  };
  std::vector<double> a(n), dadq(n * n), dadv(n * n), work(3 * n);
  ASSERT_TRUE(accel(0, q.data(), v.data(), a.data()).ok());
  ASSERT_TRUE(AccelerationJacobian(accel, n, 0, q.data(), v.data(), a.data(), dadq.data(),
                                   dadv.data(), work.data())
                  .ok());
  const double c1 = 0.004, c2 = c1 * c1;
  ASSERT_TRUE(solver.Prepare(0, q.data(), v.data(), ws.u.data(), c1, c2).ok());
  std::vector<double> r(n), z(n);
  double worst = 0;
  for (int j = 0; j < n; ++j) {
    std::fill(r.begin(), r.end(), 0.0);
    r[j] = 1;
    solver.Solve(r.data(), z.data());
    for (int i = 0; i < n; ++i) {
      double lhs = z[i];
      for (int k = 0; k < n; ++k) lhs -= (c1 * dadv[i * n + k] + c2 * dadq[i * n + k]) * z[k];
      worst = std::max(worst, std::fabs(lhs + r[i]));
    }
  }
  // Forward differences: about sqrt(eps) times the Jacobian's size, times c.
  EXPECT_LT(worst, 1e-5);
}

TEST(ImplicitTest, NewtonMatrixMatchesDifferencesDense) {
  const double s = std::sqrt(0.5);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                R"j({"system":{"coordinates":["x1","y1","x2","y2"],"masses":{"values":[1,2,1,2]},)j"
                R"j("potentialEnergy":"9.81*(y1 + 2*y2) + x1*x2^3","generalizedForces":)j"
                R"j(["-0.3*der(x1)","0","-der(y2)*x2","0"],"constraints":[)j"
                R"j({"name":"r1","expression":"(x1^2 + y1^2 - 1)/2"},)j"
                R"j({"name":"r2","expression":"((x2 - x1)^2 + (y2 - y1)^2 - 1)/2"}],)j"
                R"j("baumgarte":{"alpha":1000,"beta":1000}},"initial":{"q":[1,0,%.17g,%.17g]},)j"
                R"j("integrator":{"method":"SDIRK3","stepSize":0.01}})j",
                1 + s, s);
  CheckNewtonAgainstDifferences(buf, false);
  // A kinetic-energy model (M(q), its q-derivatives in K).
  CheckNewtonAgainstDifferences(tether_bench::KineticChain(4, {"SDIRK3", 0.01, 100, 100}).json,
                                false);
}

TEST(ImplicitTest, NewtonMatrixMatchesDifferencesSparse) {
  CheckNewtonAgainstDifferences(tether_bench::Chain(16, {"SDIRK3", 0.01, 1000, 1000}).json, true);
}

// A chain of 32 on the sparse Newton path follows RK4 at a tiny step.
TEST(ImplicitTest, SparseChainFollowsTheReference) {
  RunOptions run;
  run.until_time = 0.2;
  run.every = 1u << 30;
  run.emit_start = false;
  auto ref = RunSpec(SpecFromJson(tether_bench::Chain(32, {"RK4", 1e-4, 1000, 1000}).json), run);
  auto imp = RunSpec(SpecFromJson(tether_bench::Chain(32, {"SDIRK3", 2e-3, 1000, 1000}).json), run);
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  ASSERT_TRUE(imp.status.ok()) << imp.status.ToString();
  const auto& a = ref.frames.at(ref.frames.size() - 1);
  const auto& b = imp.frames.at(imp.frames.size() - 1);
  ASSERT_EQ(a.t(), b.t());
  double err = 0;
  for (int i = 0; i < a.q_size(); ++i) err = std::max(err, std::fabs(a.q(i) - b.q(i)));
  EXPECT_LT(err, 1e-3);
  EXPECT_GT(err, 0);
}

TEST(ImplicitTest, NewtonFailureNamesStepAndTimeAndKeepsTheLastState) {
  auto spec = CirclePendulum(1000, 1000, "SDIRK3", 0.01, 0.6, -0.8, 0.8, 0.6);
  auto sim = testing::CreateOrFail(spec);
  ASSERT_TRUE(sim);
  RunOptions run;
  run.steps = 3;
  ASSERT_TRUE(sim->BeginRun(run).ok());
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  ASSERT_TRUE(sim->Advance(3, &frames).ok());
  v1::State good;
  sim->GetState(&good);
  // The same simulation with one Newton iteration allowed: the first
  // iteration's correction is never below the tolerance.
  spec.mutable_integrator()->set_max_newton_iterations(1);
  auto one = testing::CreateOrFail(spec);
  ASSERT_TRUE(one);
  ASSERT_TRUE(one->SetState(good).ok());
  run.steps = 5;
  ASSERT_TRUE(one->BeginRun(run).ok());
  frames.Clear();
  Status s = one->Advance(5, &frames);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("step 1 (from t = 0.0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("SDIRK3 Newton iteration did not converge at stage 1"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("max_newton_iterations"), std::string::npos) << s.message();
  v1::State after;
  one->GetState(&after);
  EXPECT_EQ(after.SerializeAsString(), good.SerializeAsString());
  EXPECT_FALSE(one->run_active());
}

TEST(ImplicitTest, BadNewtonSettingsNameTheField) {
  auto spec = CirclePendulum(10, 10, "SDIRK3", 0.01);
  spec.mutable_integrator()->set_newton_tolerance(-1);
  spec.mutable_integrator()->set_max_newton_iterations(101);
  auto report = Validate(spec);
  EXPECT_FALSE(report.valid());
  std::string fields;
  for (const auto& d : report.diagnostics()) fields += d.field() + " ";
  EXPECT_NE(fields.find("integrator.newton_tolerance"), std::string::npos) << fields;
  EXPECT_NE(fields.find("integrator.max_newton_iterations"), std::string::npos) << fields;
  spec = CirclePendulum(10, 10, "SDIRK3", 0);
  report = Validate(spec);
  EXPECT_FALSE(report.valid());
  EXPECT_EQ(report.diagnostics(0).field(), "integrator.step_size");
  // The JSON names SDIRK3 among the methods it expects.
  v1::SimulationSpec parsed;
  Status s = ParseSpecJson(R"({"integrator":{"method":"SDIRK4"}})", &parsed);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("SDIRK3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tether
