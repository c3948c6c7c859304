// The residual law (docs/MATH.md sections 6, 10 and 12), its closed forms in
// every damping regime, the interpolant, and the certificate's soundness on runs.
#include <cmath>

#include <gtest/gtest.h>

#include "engine/internal/certificate.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::CirclePendulum;
using testing::RunSpec;

// Scalar RK4 on e'' + 2 alpha e' + beta^2 e = eta, fine steps.
struct Sampled {
  std::vector<double> t, e;
};
Sampled Integrate(double alpha, double beta, double e0, double w0, double T, double eta = 0,
                  int n = 200000) {
  Sampled s;
  const double h = T / n;
  double e = e0, w = w0;
  auto f = [&](double ee, double ww) { return eta - 2 * alpha * ww - beta * beta * ee; };
  for (int i = 0; i <= n; ++i) {
    s.t.push_back(i * h);
    s.e.push_back(e);
    const double k1e = w, k1w = f(e, w);
    const double k2e = w + h / 2 * k1w, k2w = f(e + h / 2 * k1e, w + h / 2 * k1w);
    const double k3e = w + h / 2 * k2w, k3w = f(e + h / 2 * k2e, w + h / 2 * k2w);
    const double k4e = w + h * k3w, k4w = f(e + h * k3e, w + h * k3w);
    e += h / 6 * (k1e + 2 * k2e + 2 * k3e + k4e);
    w += h / 6 * (k1w + 2 * k2w + 2 * k3w + k4w);
  }
  return s;
}

struct Gains {
  double alpha, beta;
};
const Gains kGains[] = {{2, 2}, {1, 3}, {3, 1}, {0, 2}, {2, 0}, {0, 0}, {5, 5.000001}, {0.1, 7}};

TEST(ResidualLawTest, HomogeneousMatchesIntegrationInEveryRegime) {
  for (const Gains& g : kGains) {
    for (auto [e0, w0] : {std::pair{0.01, 0.0}, std::pair{-0.02, 0.3}, std::pair{0.0, -1.0}}) {
      const double T = 3;
      Sampled s = Integrate(g.alpha, g.beta, e0, w0, T);
      double max_abs = 0;
      for (size_t i = 0; i < s.t.size(); i += 997) {
        const double closed = residual_law::Homogeneous(g.alpha, g.beta, e0, w0, s.t[i]);
        EXPECT_NEAR(closed, s.e[i], 1e-9) << g.alpha << " " << g.beta << " t=" << s.t[i];
      }
      for (double x : s.e) max_abs = std::max(max_abs, std::fabs(x));
      const double max_closed = residual_law::MaxHomogeneous(g.alpha, g.beta, e0, w0, T);
      EXPECT_GE(max_closed, max_abs - 1e-9) << g.alpha << " " << g.beta;
      EXPECT_NEAR(max_closed, max_abs, 1e-6) << g.alpha << " " << g.beta;
    }
  }
}

TEST(ResidualLawTest, DefectGainIsTheIntegralOfTheAbsoluteImpulseResponse) {
  for (const Gains& g : kGains) {
    for (double T : {0.01, 0.7, 5.0}) {
      // k solves the homogeneous equation with k(0) = 0, k'(0) = 1.
      Sampled k = Integrate(g.alpha, g.beta, 0, 1, T, 0, 100000);
      double integral = 0;
      for (size_t i = 1; i < k.t.size(); ++i) {
        integral += 0.5 * (std::fabs(k.e[i]) + std::fabs(k.e[i - 1])) * (k.t[i] - k.t[i - 1]);
      }
      EXPECT_NEAR(residual_law::DefectGain(g.alpha, g.beta, T), integral,
                  1e-6 * std::max(1.0, integral))
          << g.alpha << " " << g.beta << " T=" << T;
    }
  }
}

TEST(ResidualLawTest, SeedEquation8) {
  // e0 = 1/100, w0 = 0, omega = 2, eta = 1/250 (a constant positive defect):
  // e(t) = 1/1000 + 9/1000 (1 + 2t) e^{-2t}, and the bound (docs/MATH.md (10.3)) is exact.
  const double e0 = 0.01, w0 = 0, omega = 2, delta = 1.0 / 250;
  Sampled s = Integrate(omega, omega, e0, w0, 4, delta, 100000);
  for (size_t i = 0; i < s.t.size(); i += 4999) {
    const double t = s.t[i];
    const double law = 1.0 / 1000 + 9.0 / 1000 * (1 + 2 * t) * std::exp(-2 * t);
    EXPECT_NEAR(s.e[i], law, 1e-12) << "t = " << t;
    const double bound = std::fabs(residual_law::Homogeneous(omega, omega, e0, w0, t)) +
                         delta * residual_law::DefectGain(omega, omega, t);
    EXPECT_NEAR(bound, law, 1e-15) << "t = " << t;
  }
}

TEST(ResidualLawTest, InconsistentStartOfThePendulumFollowsTheLaw) {
  // docs/MATH.md (10.2) with eta = 0: e(t) = [e0 + (w0 + omega e0) t] e^{-omega t}.
  // Start off the circle and with a radial velocity.
  const double omega = 2;
  auto spec = CirclePendulum(omega, omega, "RK4", 1e-3, 1.02, 0, 0.05, 0.3);
  RunOptions run;
  run.until_time = 3;
  run.every = 100;
  auto out = RunSpec(spec, run);
  ASSERT_TRUE(out.status.ok());
  const double e0 = (1.02 * 1.02 - 1) / 2, w0 = 1.02 * 0.05;
  for (const auto& f : out.frames) {
    const double t = f.t();
    const double law = (e0 + (w0 + omega * e0) * t) * std::exp(-omega * t);
    EXPECT_NEAR(f.residuals().position(0), law, 1e-8) << "t = " << t;
  }
  EXPECT_FALSE(out.certificate.initial_consistent());
  EXPECT_NEAR(out.certificate.initial_position_residual(), e0, 1e-15);
  EXPECT_NEAR(out.certificate.initial_velocity_residual(), w0, 1e-15);
}

TEST(QuinticHermiteTest, ReproducesQuinticsExactly) {
  auto p = [](double t) {
    return 1 - 2 * t + 0.5 * t * t + 3 * std::pow(t, 3) - std::pow(t, 4) + 0.7 * std::pow(t, 5);
  };
  auto dp = [](double t) { return -2 + t + 9 * t * t - 4 * std::pow(t, 3) + 3.5 * std::pow(t, 4); };
  auto ddp = [](double t) { return 1 + 18 * t - 12 * t * t + 14 * std::pow(t, 3); };
  const double t0 = 0.3, h = 0.25;
  double q0 = p(t0), v0 = dp(t0), a0 = ddp(t0), q1 = p(t0 + h), v1 = dp(t0 + h), a1 = ddp(t0 + h);
  for (double th : {0.0, 0.2, 0.5, 0.9, 1.0}) {
    double x, dx, ddx;
    QuinticHermite(1, h, th, &q0, &v0, &a0, &q1, &v1, &a1, &x, &dx, &ddx);
    EXPECT_NEAR(x, p(t0 + th * h), 1e-14);
    EXPECT_NEAR(dx, dp(t0 + th * h), 1e-12);
    EXPECT_NEAR(ddx, ddp(t0 + th * h), 1e-10);
  }
}

TEST(CertificateTest, BoundCoversEveryComputedStateInManyRuns) {
  struct Case {
    double alpha, beta;
    const char* method;
    double h, x0, vx;
  } cases[] = {
      {10, 10, "RK4", 1e-3, 1, 0},
      {10, 10, "RK4", 1e-2, 1.01, 0.1},
      {2, 5, "RK4", 5e-3, 1.05, 0},
      {8, 3, "SEMI_IMPLICIT_EULER", 1e-3, 1, 0},
      {4, 4, "EXPLICIT_EULER", 1e-3, 1.02, 0.2},
      {5, 5, "DOPRI5", 0, 1.01, 0},
      {20, 20, "RK4", 2e-3, 1, 0},
  };
  for (const Case& c : cases) {
    auto spec = CirclePendulum(c.alpha, c.beta, c.method, c.h, c.x0, 0, c.vx, 0);
    RunOptions run;
    run.until_time = 3;
    run.every = 1;
    auto out = RunSpec(spec, run);
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    const v1::Certificate& cert = out.certificate;
    SCOPED_TRACE(std::string(c.method) + " alpha " + std::to_string(c.alpha));
    // (d) is over every step: here every step is a frame.
    double observed = 0;
    for (const auto& f : out.frames)
      observed = std::max(observed, std::fabs(f.residuals().position(0)));
    EXPECT_DOUBLE_EQ(cert.max_position_residual(), observed);
    EXPECT_LE(cert.max_position_residual(), cert.position_bound());
    const double final_e = std::fabs(out.frames.at(out.frames.size() - 1).residuals().position(0));
    EXPECT_LE(final_e, cert.final_position_bound());
    EXPECT_TRUE(cert.feedback_verified());
    EXPECT_TRUE(cert.step_stable());
    EXPECT_EQ(cert.initial_consistent(), c.x0 == 1 && c.vx == 0);
    EXPECT_EQ(cert.t_end(), 3);
    EXPECT_EQ(cert.defect_samples(), cert.steps() * 4 + 1);
    ASSERT_EQ(cert.constraints_size(), 1);
    EXPECT_EQ(cert.constraints(0).name(), "rod");
  }
}

TEST(CertificateTest, UnstableStepIsReported) {
  // RK4 with h omega = 3 > 2.785.
  auto spec = CirclePendulum(300, 300, "RK4", 0.01);
  RunOptions run;
  run.steps = 3;
  auto out = RunSpec(spec, run);
  ASSERT_TRUE(out.status.ok());
  EXPECT_FALSE(out.certificate.step_stable());
  EXPECT_LT(out.certificate.stability_margin(), 0);
}

TEST(CertificateTest, CanBeSwitchedOff) {
  RunOptions run;
  run.steps = 10;
  run.certificate = false;
  auto out = RunSpec(CirclePendulum(10, 10, "RK4", 1e-3), run);
  ASSERT_TRUE(out.status.ok());
  EXPECT_EQ(out.certificate.ByteSizeLong(), 0u);
}

}  // namespace
}  // namespace tether
