// RK4_POST_STABILIZED (integrate/rk4.h, simulation/post_stabilize.h,
// docs/MATH.md section 7.3): the residual law's map against the matrix
// exponential, judgement (c)'s update equal to it, the stiff-gain error
// equal to the mild one at the same h with order 4, the residual following
// the law from an inconsistent start under every damping, and the sparse
// path and a configuration-dependent M at stiff gains. The method is also in every test of the
// method table (the convergence order of each fixed-step method, snapshots, output grids:
// tests/method_table.h).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>

#include "engine/internal/certificate/certificate.h"
#include "engine/internal/integrate/integrator.h"
#include "large_models.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::CirclePendulum;
using testing::RunSpec;
using testing::SpecFromJson;

Eigen::Matrix2d LawMap(double alpha, double beta, double h) {
  double phi[2][2];
  ResidualLawMap(alpha, beta, h, phi);
  Eigen::Matrix2d m;
  m << phi[0][0], phi[0][1], phi[1][0], phi[1][1];
  return m;
}

TEST(PostStabilizationTest, TheLawsMapIsTheMatrixExponential) {
  struct Case {
    double alpha, beta, h;
  };
  // Under-, critically and over-damped, near-critical on both sides, one
  // gain zero, both zero, and h alpha up to 40.
  const Case cases[] = {{10, 10, 0.01},       {10, 30, 0.01},       {30, 10, 0.01},
                        {10, 10 + 1e-9, 0.1}, {10, 10 - 1e-9, 0.1}, {5, 0, 0.3},
                        {0, 7, 0.3},          {0, 0, 0.5},          {1000, 1000, 0.01},
                        {1000, 100, 0.04},    {3, 2.9, 2},          {100, 1, 0.01}};
  for (const Case& c : cases) {
    SCOPED_TRACE("alpha " + std::to_string(c.alpha) + " beta " + std::to_string(c.beta) + " h " +
                 std::to_string(c.h));
    // The reference in long double: scaling and squaring loses some 10^-10
    // of a defective (critically damped) map in double at h alpha = 10.
    using Matrix2ld = Eigen::Matrix<long double, 2, 2>;
    Matrix2ld A;
    A << 0, 1, -static_cast<long double>(c.beta) * c.beta, -2.0L * c.alpha;
    const Matrix2ld exact = (static_cast<long double>(c.h) * A).exp();
    const Eigen::Matrix2d ref = exact.cast<double>();
    const Eigen::Matrix2d got = LawMap(c.alpha, c.beta, c.h);
    EXPECT_LE((got - ref).cwiseAbs().maxCoeff(), 1e-12 * ref.cwiseAbs().maxCoeff())
        << "got\n"
        << got << "\nexpected\n"
        << ref;
    // Its first row is the free response Homogeneous (certificate.h).
    EXPECT_NEAR(got(0, 0), residual_law::Homogeneous(c.alpha, c.beta, 1, 0, c.h),
                1e-12 * ref.cwiseAbs().maxCoeff());
    EXPECT_NEAR(got(0, 1), residual_law::Homogeneous(c.alpha, c.beta, 0, 1, c.h),
                1e-12 * ref.cwiseAbs().maxCoeff());
  }
  // Stiff gains: finite, a contraction, no overflow against underflow
  // (critical: (1 + alpha h) e^(-alpha h) and h e^(-alpha h), here 0; over:
  // the slow root's e^(-beta^2 h / 2 alpha)).
  const Eigen::Matrix2d stiff = LawMap(1e5, 1e5, 0.01);
  EXPECT_TRUE(stiff.allFinite());
  EXPECT_EQ(stiff.cwiseAbs().maxCoeff(), 0);
  const Eigen::Matrix2d over = LawMap(1e6, 1, 1);
  EXPECT_TRUE(over.allFinite());
  EXPECT_NEAR(over(0, 0), std::exp(-1.0 / (1e6 + std::sqrt(1e12 - 1))), 1e-12);
  EXPECT_NEAR(over(1, 1), 0, 1e-12);
}

TEST(PostStabilizationTest, JudgementCsUpdateIsTheLawsMapAtEveryStep) {
  for (double h : {1e-4, 1e-2, 1.0, 100.0}) {
    for (double gain : {10.0, 1e3, 1e5}) {
      const TestSystemUpdate u =
          ResidualTestUpdate(v1::IntegratorSpec::RK4_POST_STABILIZED, h, gain, gain);
      const Eigen::Matrix2d phi = LawMap(gain, gain, h);
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) EXPECT_EQ(u.R[i][j], phi(i, j));
      }
      // Critical damping: a double eigenvalue e^(-alpha h), below 1 at any h.
      EXPECT_NEAR(u.spectral_radius, std::exp(-gain * h), 1e-6 * std::exp(-gain * h) + 1e-300);
      EXPECT_LT(u.spectral_radius, 1);
    }
  }
  // RK4 itself is unstable there (h alpha = 1000).
  EXPECT_GT(ResidualTestUpdate(v1::IntegratorSpec::RK4, 0.01, 1e5, 1e5).spectral_radius, 1);
}

// The double pendulum of Cartesian point masses (bench/large_models.h's
// chain of two) to t = 1: its final q.
std::vector<double> FinalQ(const std::string& method, double h, double gain) {
  tether_bench::LargeModelOptions o;
  o.method = method;
  o.step = h;
  o.alpha = o.beta = gain;
  RunOptions run;
  run.until_time = 1.0;
  run.every = 1u << 30;
  run.emit_start = false;
  run.certificate = false;
  auto out = RunSpec(SpecFromJson(tether_bench::Chain(2, o).json), run);
  EXPECT_TRUE(out.status.ok()) << method << " h " << h << " gain " << gain << ": "
                               << out.status.ToString();
  if (!out.status.ok() || out.frames.empty()) return {};
  const auto& f = out.frames.at(out.frames.size() - 1);
  return {f.q().begin(), f.q().end()};
}

double MaxDifference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return HUGE_VAL;
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(a[i] - b[i]));
  return e;
}

TEST(PostStabilizationTest, TheStiffGainErrorIsTheMildOneAtTheSameStep) {
  // From a consistent start the exact trajectory does not depend on the
  // gains: RK4 at a tiny step and mild gains is the reference for all.
  const std::vector<double> ref = FinalQ("RK4", 2.5e-4, 10);
  const double mild = MaxDifference(FinalQ("RK4_POST_STABILIZED", 0.01, 10), ref);
  const double stiff = MaxDifference(FinalQ("RK4_POST_STABILIZED", 0.01, 1000), ref);
  const double stiffer = MaxDifference(FinalQ("RK4_POST_STABILIZED", 0.01, 1e5), ref);
  EXPECT_LT(mild, 1e-5);
  EXPECT_GT(mild, 1e-9);  // above the reference's own error
  EXPECT_NEAR(stiff / mild, 1, 0.01) << mild << " " << stiff;
  EXPECT_NEAR(stiffer / mild, 1, 0.01) << mild << " " << stiffer;
  // Order 4 at gains 1e5.
  const double half = MaxDifference(FinalQ("RK4_POST_STABILIZED", 0.005, 1e5), ref);
  EXPECT_NEAR(std::log2(stiffer / half), 4, 0.3) << stiffer << " " << half;
}

TEST(PostStabilizationTest, TheResidualFollowsTheLawFromAnInconsistentStart) {
  struct Gains {
    double alpha, beta;
  };
  for (const Gains& gains : {Gains{10, 10}, Gains{10, 30}, Gains{30, 10}, Gains{5, 0}}) {
    SCOPED_TRACE("alpha " + std::to_string(gains.alpha) + " beta " + std::to_string(gains.beta));
    // Off the circle and moving across it: e(0) = (0.6^2 + 0.81^2 - 1) / 2,
    // e'(0) = x vx + y vy.
    const v1::SimulationSpec spec =
        CirclePendulum(gains.alpha, gains.beta, "RK4_POST_STABILIZED", 0.01, 0.6, -0.81, 0.3, 0.5);
    RunOptions run;
    run.until_time = 0.5;
    run.certificate = false;
    auto out = RunSpec(spec, run);
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    ASSERT_EQ(out.frames.size(), 51);
    const double e0 = (0.6 * 0.6 + 0.81 * 0.81 - 1) / 2, w0 = 0.6 * 0.3 - 0.81 * 0.5;
    EXPECT_NEAR(out.frames.at(0).residuals().position(0), e0, 1e-16);
    double worst = 0;
    for (const v1::Frame& f : out.frames) {
      const double law = residual_law::Homogeneous(gains.alpha, gains.beta, e0, w0, f.t());
      worst = std::max(worst, std::fabs(f.residuals().position(0) - law));
    }
    EXPECT_LT(worst, 1e-12 * std::fabs(e0)) << "largest departure from the law";
  }
}

TEST(PostStabilizationTest, SparseAndConfigurationDependentMassesAtStiffGains) {
  // The sparse path (20 constraints), with constant and with q-dependent
  // (diagonal) masses, and the dense path with a q-dependent M.
  struct Case {
    bool kinetic;
    int n;
  };
  for (const Case& c : {Case{false, 20}, Case{true, 20}, Case{true, 4}}) {
    SCOPED_TRACE((c.kinetic ? "kinetic chain/" : "chain/") + std::to_string(c.n));
    tether_bench::LargeModelOptions o;
    o.method = "RK4_POST_STABILIZED";
    o.step = 0.01;
    auto model = [&](double gain) {
      o.alpha = o.beta = gain;
      return SpecFromJson(c.kinetic ? tether_bench::KineticChain(c.n, o).json
                                    : tether_bench::Chain(c.n, o).json);
    };
    RunOptions run;
    run.until_time = 0.3;
    run.every = 1u << 30;
    auto mild = RunSpec(model(10), run);
    auto stiff = RunSpec(model(1e5), run);
    ASSERT_TRUE(mild.status.ok()) << mild.status.ToString();
    ASSERT_TRUE(stiff.status.ok()) << stiff.status.ToString();
    const v1::Frame& a = mild.frames.at(mild.frames.size() - 1);
    const v1::Frame& b = stiff.frames.at(stiff.frames.size() - 1);
    double diff = 0;
    for (int i = 0; i < a.q_size(); ++i) diff = std::max(diff, std::fabs(a.q(i) - b.q(i)));
    EXPECT_LT(diff, 1e-9) << "the gains changed the trajectory";
    // The residuals stay at rounding, and judgement (c) holds at h alpha = 1000.
    EXPECT_LT(stiff.certificate.max_position_residual(), 1e-12);
    EXPECT_TRUE(stiff.certificate.step_stable());
    EXPECT_TRUE(stiff.certificate.feedback_verified());
    // The map's radius e^(-1000) is 0 in double; the rate is still the
    // law's (critical damping: alpha), not -log(0) / h = +inf.
    EXPECT_EQ(stiff.certificate.constraints(0).spectral_radius(), 0);
    EXPECT_EQ(stiff.certificate.constraints(0).residual_decay_rate(), 1e5);
    EXPECT_EQ(stiff.certificate.constraints(0).gains_decay_rate(), 1e5);
    EXPECT_NEAR(mild.certificate.constraints(0).residual_decay_rate(), 10, 1e-9 * 10);
  }
}

TEST(PostStabilizationTest, ValidationOffersItWhereRk4IsUnstableAndFindsItStable) {
  v1::SimulationSpec spec = CirclePendulum(1e5, 1e5, "RK4", 0.01);
  v1::ValidationReport rk4 = Validate(spec);
  EXPECT_FALSE(rk4.step_stable());
  std::string all;
  for (const auto& d : rk4.diagnostics()) all += d.field() + ": " + d.message() + "\n";
  EXPECT_NE(all.find("integrator.step_size: RK4 with h = 0.01 is not stable"), std::string::npos)
      << all;
  EXPECT_NE(all.find("or RK4_POST_STABILIZED, stable at any h"), std::string::npos) << all;
  spec.mutable_integrator()->set_method(v1::IntegratorSpec::RK4_POST_STABILIZED);
  v1::ValidationReport post = Validate(spec);
  EXPECT_TRUE(post.valid());
  EXPECT_TRUE(post.step_stable());
  for (const auto& d : post.diagnostics()) {
    EXPECT_EQ(d.message().find("not stable"), std::string::npos) << d.message();
  }
}

}  // namespace
}  // namespace tether
