// RADAU_IIA, the stiffly accurate implicit method (radau_iia.h, newton.h):
// its order 5, its order kept under stiff gains where SDIRK3 loses it, a
// run at gains 1e5 where SDIRK3 stops, the step limited by the Newton
// iteration's first rate there, the step halving after a failed Newton
// iteration, judgement (c)'s update against the stability function
// computed from the tableau, the complex Newton matrix against finite
// differences (dense and sparse), its bits, and its validation errors.
// Restoring a snapshot bit for bit is tested for every method of the table,
// this one included (session_state_test, RestoreTest/EveryMethod).
#include <cmath>
#include <complex>
#include <string>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "engine/internal/integrate/integrator.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/klu_lu.h"
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

// Steps of exactly h (but the last, which lands on the stop time): the
// error control switched off by tolerances it always meets (rtol = atol =
// 1), max_step = h, and a Newton tolerance far below the errors measured.
v1::SimulationSpec FixedStep(v1::SimulationSpec spec, double h) {
  auto* in = spec.mutable_integrator();
  in->set_method(v1::IntegratorSpec::RADAU_IIA);
  in->set_step_size(h);
  in->set_max_step(h);
  in->set_rtol(1);
  in->set_atol(1);
  in->set_newton_tolerance(1e-13);
  return spec;
}

// The final q of a run to t = T, and the number of steps it took.
struct Final {
  std::vector<double> q;
  uint64_t steps = 0;
};
Final RunTo(const v1::SimulationSpec& spec, double T) {
  RunOptions run;
  run.until_time = T;
  run.every = 1u << 30;
  run.emit_start = false;
  run.certificate = false;
  auto out = RunSpec(spec, run);
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  if (!out.status.ok() || out.frames.empty()) return {};
  const auto& f = out.frames.at(out.frames.size() - 1);
  // An adaptive method's time is a sum of its steps: it ends within
  // rounding of T (a step within 1e-12 of what remains is taken whole).
  EXPECT_NEAR(f.t(), T, 1e-12 * T);
  return {{f.q().begin(), f.q().end()}, f.step()};
}

double MaxError(const Final& a, const Final& ref) {
  if (a.q.size() != ref.q.size()) return HUGE_VAL;
  double e = 0;
  for (size_t i = 0; i < a.q.size(); ++i) e = std::max(e, std::fabs(a.q[i] - ref.q[i]));
  return e;
}

v1::SimulationSpec DoublePendulum(double gain, const std::string& method, double h) {
  return SpecFromJson(tether_bench::Chain(2, {method, h, gain, gain}).json);
}

TEST(RadauTest, OrderFiveOnASmoothProblem) {
  const Final ref = RunTo(CirclePendulum(2, 2, "RK4", 1e-4, 0.6, -0.8, 0.8, 0.6), 1.0);
  double e[3];
  const double hs[3] = {0.1, 0.05, 0.025};
  for (int k = 0; k < 3; ++k) {
    const Final f = RunTo(FixedStep(CirclePendulum(2, 2, "RK4", 0, 0.6, -0.8, 0.8, 0.6), hs[k]), 1);
    EXPECT_LE(f.steps, static_cast<uint64_t>(std::ceil(1 / hs[k])) + 1) << "no retries expected";
    e[k] = MaxError(f, ref);
  }
  EXPECT_NEAR(std::log2(e[0] / e[1]), 5, 0.4) << e[0] << " " << e[1] << " " << e[2];
  EXPECT_NEAR(std::log2(e[1] / e[2]), 5, 0.4) << e[0] << " " << e[1] << " " << e[2];
}

// The point of the method (issue 22): with alpha = beta = 1000 the error at
// a given h stays close to the error with alpha = beta = 10, where SDIRK3's
// grows 300-1000x (docs/benchmarks.md). Measured on chain/2: 4.2x at h =
// 0.0025, 1.8x at h = 0.00125 (4x and 5x allowed here); SDIRK3 at h =
// 0.0025 270x. The exact solution is the same for both gains (a consistent
// start): the references agree to 1e-12.
TEST(RadauTest, KeepsItsOrderUnderStiffGains) {
  const Final ref = RunTo(DoublePendulum(10, "RK4", 1e-5), 1.0);
  const Final ref_stiff = RunTo(DoublePendulum(1000, "RK4", 1e-5), 1.0);
  ASSERT_LT(MaxError(ref, ref_stiff), 1e-12);
  const double allowed[2] = {5, 4};
  const double hs[2] = {0.0025, 0.00125};
  for (int k = 0; k < 2; ++k) {
    const double h = hs[k];
    const double mild = MaxError(RunTo(FixedStep(DoublePendulum(10, "RK4", 0), h), 1), ref);
    const double stiff = MaxError(RunTo(FixedStep(DoublePendulum(1000, "RK4", 0), h), 1), ref);
    EXPECT_LT(stiff, allowed[k] * mild + 1e-12)
        << "h " << h << ": " << stiff << " against " << mild;
    EXPECT_LT(stiff, 1e-10) << h;
  }
  const double sdirk_mild = MaxError(RunTo(DoublePendulum(10, "SDIRK3", 0.0025), 1), ref);
  const double sdirk_stiff = MaxError(RunTo(DoublePendulum(1000, "SDIRK3", 0.0025), 1), ref);
  EXPECT_GT(sdirk_stiff, 100 * sdirk_mild) << sdirk_stiff << " against " << sdirk_mild;
}

// Gains 1e5: SDIRK3 stops (its Newton iteration fails at h = 0.005, the
// run ends with the error); RADAU_IIA at its default tolerances halves the
// step where Newton fails and reaches t = 1 within 1e-6 of the reference.
TEST(RadauTest, RunsAtGains1e5WhereSdirk3Stops) {
  RunOptions run;
  run.until_time = 1.0;
  run.every = 1u << 30;
  run.certificate = false;
  const auto sdirk = RunSpec(DoublePendulum(1e5, "SDIRK3", 0.005), run);
  EXPECT_FALSE(sdirk.status.ok());
  EXPECT_NE(sdirk.status.message().find("Newton"), std::string::npos) << sdirk.status.ToString();

  const Final ref = RunTo(DoublePendulum(1e5, "RK4", 1e-6), 1.0);
  const Final radau = RunTo(DoublePendulum(1e5, "RADAU_IIA", 0), 1.0);
  EXPECT_LT(MaxError(radau, ref), 1e-6);
  // Far fewer steps than RK4's stable h = 2.7e-5 needs (37,000).
  EXPECT_LT(radau.steps, 5000u);
}

// At gains 1e5 the simplified Newton iteration fails by the feedback's
// nonlinearity as h grows, while the error estimate would let h grow
// tenfold a step: the step is also limited by the iteration's first rate
// (radau_iia.h, kNewtonRateTarget), so few attempts fail. Counted by the
// Newton evaluations (three a Newton iteration, failed attempts included)
// per step of the run to t = 1 at the default tolerances: 9.8 with the
// limit (1609 steps), 16.8 when the error control alone proposed the step
// (1903 steps, 2.3 attempts a step, most of the extra ones diverging).
TEST(RadauTest, NewtonRateLimitsTheStepAtGains1e5) {
  auto sim = testing::CreateOrFail(DoublePendulum(1e5, "RADAU_IIA", 0));
  ASSERT_TRUE(sim);
  RunOptions run;
  run.until_time = 1.0;
  run.every = 1u << 30;
  run.certificate = false;
  ASSERT_TRUE(sim->BeginRun(run).ok());
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  Status s = Status::Ok();
  while (s.ok() && sim->run_active()) s = sim->Advance(1u << 30, &frames);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_FALSE(frames.empty());
  v1::SimulationState state;
  sim->SaveState(&state);
  const double steps = static_cast<double>(state.step());
  const double per_step = static_cast<double>(state.newton_iterations()) / steps;
  EXPECT_LT(per_step, 12) << state.newton_iterations() << " evaluations in " << steps << " steps";
  EXPECT_GT(per_step, 6) << "at least two iterations of three stages a step";
}

// A scalar stiff nonlinear problem, q'' = -k q^3 - 2 zeta v, whose Newton
// matrix at the step's start is far from the one the stages see when h is
// large: the simplified Newton iteration diverges, Step halves h and
// retries.
struct CubicAccel {
  double k = 1e4, zeta = 10;
  double jq = 0;
  std::complex<double> cjq = 0;
  double c1 = 0, c2 = 0;
  std::complex<double> d1 = 0, d2 = 0;
  Status operator()(double, const double* q, const double* v, double* a) const {
    a[0] = -k * q[0] * q[0] * q[0] - 2 * zeta * v[0];
    return Status::Ok();
  }
  Status PrepareNewtonPair(double, const double* q, const double*, double c1_, double c2_,
                           std::complex<double> d1_, std::complex<double> d2_) {
    jq = -3 * k * q[0] * q[0];
    c1 = c1_, c2 = c2_, d1 = d1_, d2 = d2_;
    return Status::Ok();
  }
  Status SolveNewton(const double* r, double* z) const {
    z[0] = -r[0] / (1 + 2 * zeta * c1 - c2 * jq);
    return Status::Ok();
  }
  Status SolveNewtonComplex(const std::complex<double>* r, std::complex<double>* z) const {
    z[0] = -r[0] / (1.0 + 2 * zeta * d1 - d2 * jq);
    return Status::Ok();
  }
};

TEST(RadauTest, FailedNewtonIterationHalvesTheStepAndRetries) {
  v1::IntegratorSpec spec;
  spec.set_method(v1::IntegratorSpec::RADAU_IIA);
  spec.set_step_size(1.0);  // the first attempt: far beyond what Newton can follow
  Integrator integrator(spec, 1);
  CubicAccel accel;
  double q = 1, v = 0, a0 = 0, q1 = 0, v1 = 0;
  ASSERT_TRUE(accel(0, &q, &v, &a0).ok());
  StepResult result;
  Status s = integrator.Step<1>(0, &q, &v, &a0, 10, accel, &q1, &v1, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(result.newton_retries, 0);
  EXPECT_LE(result.h, 0.5);
  EXPECT_TRUE(std::isfinite(q1) && std::fabs(q1) < 1) << q1;

  // One iteration allowed: it can never show convergence (no rate yet),
  // so every halving fails and the step ends with the time and h named.
  spec.set_max_newton_iterations(1);
  Integrator stubborn(spec, 1);
  s = stubborn.Step<1>(0, &q, &v, &a0, 10, accel, &q1, &v1, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("RADAU_IIA Newton iteration"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("at t = 0 with h = "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("after 10 halvings"), std::string::npos) << s.message();
}

// Judgement (c)'s update matrix for RADAU_IIA (one attempt of the step code
// on the test system) is the stability function R(Z) = I + (b^T x Z)(I - A x
// Z)^-1 (1 x I), Z = h [[0, 1], [-beta^2, -2 alpha]], from the tableau in
// exact form (sqrt 6) solved by a 6 x 6 LU; L-stable: rho -> 0 as h grows.
TEST(RadauTest, ResidualTestUpdateIsTheStabilityFunction) {
  const double s6 = std::sqrt(6.0);
  Eigen::Matrix3d A;
  A << (88 - 7 * s6) / 360, (296 - 169 * s6) / 1800, (-2 + 3 * s6) / 225,  //
      (296 + 169 * s6) / 1800, (88 + 7 * s6) / 360, (-2 - 3 * s6) / 225,   //
      (16 - s6) / 36, (16 + s6) / 36, 1.0 / 9;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(A(i, j), radau_iia::a[i][j], 1e-16);
  }
  testing::ExpectUpdateIsTheStabilityFunction(v1::IntegratorSpec::RADAU_IIA, A);
}

// The complex Newton solve against finite differences of the KKT solve:
// (I - d1 da/dv - d2 da/dq) z = -r for unit r, on the dense and the sparse
// path, and the real solve of the same PreparePair.
void CheckComplexNewton(const std::string& json, bool expect_sparse) {
  auto spec = SpecFromJson(json);
  std::vector<v1::Diagnostic> diags;
  Status stopped;
  auto model = CompileModel(spec.system(), CompileOptions{}, &diags, &stopped, true);
  ASSERT_TRUE(model) << (diags.empty() ? stopped.ToString() : diags[0].message());
  const int n = model->nq;
  NewtonSolver solver(*model, true);
  EXPECT_EQ(solver.sparse(), expect_sparse);
  std::vector<double> q(spec.initial().q().begin(), spec.initial().q().end()), v(n);
  for (int i = 0; i < n; ++i) v[i] = 0.3 * std::sin(1.7 * i + 0.2);
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
  const double h = 0.01;
  const double c1 = h * radau_iia::gamma, c2 = c1 * c1;
  const std::complex<double> d1 = h * std::complex<double>(radau_iia::mu_re, radau_iia::mu_im),
                             d2 = d1 * d1;
  ASSERT_TRUE(solver.PreparePair(0, q.data(), v.data(), ws.u.data(), c1, c2, d1, d2).ok());
  std::vector<std::complex<double>> r(n), z(n);
  std::vector<double> rr(n), zr(n);
  double worst = 0, worst_real = 0;
  for (int j = 0; j < n; ++j) {
    std::fill(r.begin(), r.end(), 0.0);
    r[j] = std::complex<double>(0.6, -0.8);
    solver.SolveComplex(r.data(), z.data());
    std::fill(rr.begin(), rr.end(), 0.0);
    rr[j] = 1;
    solver.Solve(rr.data(), zr.data());
    for (int i = 0; i < n; ++i) {
      std::complex<double> lhs = z[i];
      double lhs_real = zr[i];
      for (int k = 0; k < n; ++k) {
        lhs -= (d1 * dadv[i * n + k] + d2 * dadq[i * n + k]) * z[k];
        lhs_real -= (c1 * dadv[i * n + k] + c2 * dadq[i * n + k]) * zr[k];
      }
      worst = std::max(worst, std::abs(lhs + r[i]));
      worst_real = std::max(worst_real, std::fabs(lhs_real + rr[i]));
    }
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_LT(worst_real, 1e-5);
}

TEST(RadauTest, ComplexNewtonMatrixMatchesDifferencesDense) {
  CheckComplexNewton(tether_bench::Chain(4, {"RADAU_IIA", 0, 1000, 1000}).json, false);
  CheckComplexNewton(tether_bench::KineticChain(4, {"RADAU_IIA", 0, 100, 100}).json, false);
}

TEST(RadauTest, ComplexNewtonMatrixMatchesDifferencesSparse) {
  CheckComplexNewton(tether_bench::Chain(16, {"RADAU_IIA", 0, 1000, 1000}).json, true);
}

// KluLu (the sparse path's factorisation) against Eigen's dense LU on a
// small unsymmetric matrix, real and complex, and its report of a singular
// one (the step then fails and is retried smaller, like any Newton failure).
TEST(RadauTest, KluSolvesLikeADenseLuAndReportsSingular) {
  // Columns: (0: rows 0, 2), (1: rows 0, 1), (2: rows 1, 2, 3), (3: rows 0, 3).
  const int Ap[] = {0, 2, 4, 7, 9};
  const int Ai[] = {0, 2, 0, 1, 1, 2, 3, 0, 3};
  const double x[] = {4, -1, 2, 3, 1, 5, -2, 0.5, 6};
  Eigen::Matrix4d A = Eigen::Matrix4d::Zero();
  Eigen::Matrix4cd Ac = Eigen::Matrix4cd::Zero();
  std::vector<std::complex<double>> xc(9);
  for (int j = 0; j < 4; ++j) {
    for (int k = Ap[j]; k < Ap[j + 1]; ++k) {
      A(Ai[k], j) = x[k];
      xc[k] = std::complex<double>(x[k], 0.3 * k - 1);
      Ac(Ai[k], j) = xc[k];
    }
  }
  KluLu real(4, Ap, Ai, false), cx(4, Ap, Ai, true);
  ASSERT_TRUE(real.Factor(x, "test matrix").ok());
  ASSERT_TRUE(cx.Factor(xc.data(), "test matrix").ok());
  Eigen::Vector4d b(1, -2, 0.5, 3), y = b;
  Eigen::Vector4cd bc(std::complex<double>(1, 2), -2, std::complex<double>(0, 0.5), 3), yc = bc;
  real.Solve(y.data());
  cx.Solve(yc.data());
  EXPECT_LT((y - A.partialPivLu().solve(b)).norm(), 1e-14 * b.norm());
  EXPECT_LT((yc - Ac.partialPivLu().solve(bc)).norm(), 1e-14 * bc.norm());
  // Row 3 zeroed (its two entries): singular.
  double singular[9];
  std::copy(x, x + 9, singular);
  singular[6] = singular[8] = 0;
  const Status s = real.Factor(singular, "test matrix");
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("the test matrix of the implicit step is singular"), std::string::npos)
      << s.message();
  // A real factorisation given complex values is a programming error.
  EXPECT_EQ(real.Factor(xc.data(), "test matrix").code(), StatusCode::kInternal);
}

// chain/32 on the sparse path (real and complex KLU) follows RK4 at a
// tiny step, and two runs give the same bits.
TEST(RadauTest, SparseChainFollowsTheReferenceWithTheSameBits) {
  RunOptions run;
  run.until_time = 0.2;
  run.every = 1u << 30;
  run.emit_start = false;
  auto ref = RunSpec(SpecFromJson(tether_bench::Chain(32, {"RK4", 1e-4, 1000, 1000}).json), run);
  const auto spec = SpecFromJson(tether_bench::Chain(32, {"RADAU_IIA", 0, 1000, 1000}).json);
  auto imp = RunSpec(spec, run);
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  ASSERT_TRUE(imp.status.ok()) << imp.status.ToString();
  const auto& a = ref.frames.at(ref.frames.size() - 1);
  const auto& b = imp.frames.at(imp.frames.size() - 1);
  ASSERT_EQ(a.t(), b.t());
  double err = 0;
  for (int i = 0; i < a.q_size(); ++i) err = std::max(err, std::fabs(a.q(i) - b.q(i)));
  EXPECT_LT(err, 1e-5);
  auto again = RunSpec(spec, run);
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.frames.at(again.frames.size() - 1).SerializeAsString(), b.SerializeAsString());
}

// On the sparse (KLU) path at gains 1e5 a run split in two, the second
// half in a fresh simulation restored from the first's snapshot, gives the
// bits of the uninterrupted run: the factorisations carry nothing from one
// step to the next (klu_lu.h), so the snapshot's state is the whole state.
TEST(RadauTest, SparseRunSplitByASnapshotGivesTheSameBits) {
  const auto spec = SpecFromJson(tether_bench::Chain(32, {"RADAU_IIA", 0, 1e5, 1e5}).json);
  auto run = [](Simulation* sim, uint64_t steps) {
    RunOptions options;
    options.steps = steps;
    options.emit_start = false;
    options.certificate = false;
    Status s = sim->BeginRun(options);
    google::protobuf::RepeatedPtrField<v1::Frame> frames;
    while (s.ok() && sim->run_active()) s = sim->Advance(5, &frames);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::string bytes;
    for (const auto& f : frames) bytes += f.SerializeAsString();
    return bytes;
  };
  auto whole = testing::CreateOrFail(spec);
  ASSERT_TRUE(whole);
  run(whole.get(), 12);
  v1::SimulationState half;
  whole->SaveState(&half);
  const std::string rest = run(whole.get(), 12);
  auto resumed = testing::CreateOrFail(spec);
  ASSERT_TRUE(resumed);
  ASSERT_TRUE(resumed->RestoreState(half).ok());
  EXPECT_EQ(run(resumed.get(), 12), rest);
  EXPECT_FALSE(rest.empty());
}

TEST(RadauTest, BadNewtonToleranceNamesTheField) {
  auto spec = DoublePendulum(1000, "RADAU_IIA", 0);
  spec.mutable_integrator()->set_newton_tolerance(2);
  const auto report = Validate(spec);
  bool found = false;
  for (const auto& d : report.diagnostics()) {
    if (d.field() == "integrator.newton_tolerance" &&
        d.message().find("expected a value below 1 for RADAU_IIA") != std::string::npos) {
      found = true;
    }
  }
  EXPECT_TRUE(found) << report.DebugString();
  spec.mutable_integrator()->set_newton_tolerance(0);
  spec.mutable_integrator()->set_rtol(-1);
  bool rtol = false;
  const auto bad_rtol = Validate(spec);
  for (const auto& d : bad_rtol.diagnostics()) rtol |= d.field() == "integrator.rtol";
  EXPECT_TRUE(rtol);
}

}  // namespace
}  // namespace tether
