// The outward-rounded interval type and the interval evaluation of
// expression graphs: every point value on a densely sampled box lies in the
// enclosure, exact sums that doubles cannot hold are enclosed, and the
// singular cases give Entire().
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/internal/certificate.h"
#include "engine/internal/enclosure.h"
#include "engine/internal/expression.h"
#include "engine/internal/interval.h"
#include "engine/internal/parser.h"

namespace tether::interval {
namespace {

TEST(IntervalTest, OutwardRoundingEnclosesTheExactSum) {
  // 0.1 + 0.2 rounds to nearest above the exact sum of the two doubles;
  // long double (64-bit significand on x86_64) holds that sum exactly.
  // Without the outward step the lower end would exclude it.
  const Interval s = Interval(0.1) + Interval(0.2);
  const long double exact = static_cast<long double>(0.1) + static_cast<long double>(0.2);
  EXPECT_LE(static_cast<long double>(s.lo), exact);
  EXPECT_GE(static_cast<long double>(s.hi), exact);
  const Interval p = Interval(0.1) * Interval(3.0);
  const long double exact_p = static_cast<long double>(0.1) * 3.0L;
  EXPECT_LE(static_cast<long double>(p.lo), exact_p);
  EXPECT_GE(static_cast<long double>(p.hi), exact_p);
}

TEST(IntervalTest, SingularCasesAreEntire) {
  EXPECT_TRUE((Interval(1.0) / Interval(-1, 1)).is_entire());
  EXPECT_TRUE(Sqrt(Interval(-1e-300, 4)).is_entire());
  EXPECT_TRUE(Log(Interval(0, 1)).is_entire());
  EXPECT_TRUE(Pow(Interval(-1, 2), Interval(0.5)).is_entire());
  EXPECT_TRUE(Tan(Interval(1.5, 1.6)).is_entire());
  EXPECT_TRUE(Asin(Interval(0.5, 1.0000001)).is_entire());
  EXPECT_TRUE((Interval(0.0) * Entire()).is_entire());
  // Even powers of an interval containing 0 start at 0, not below.
  const Interval sq = Pow(Interval(-2, 3), Interval(2.0));
  EXPECT_LE(sq.lo, 0);
  EXPECT_GE(sq.lo, -1e-300);
  EXPECT_GE(sq.hi, 9);
  // abs over 0: [0, max |.|].
  const Interval a = Abs(Interval(-2, 1));
  EXPECT_EQ(a.lo, 0);
  EXPECT_EQ(a.hi, 2);
}

// Variables: 0 = t, 1 = x, 2 = y.
expr::Scope Scope() {
  expr::Scope s;
  s.time_var = 0;
  s.coordinates = {{"x", 1}, {"y", 2}};
  return s;
}

// Every point of a dense grid of the box evaluates inside the enclosure.
void ExpectEncloses(const std::string& text, const std::vector<Interval>& box) {
  expr::Graph g;
  expr::ParseError error;
  auto root = expr::Parse(text, Scope(), &g, &error);
  ASSERT_TRUE(root.has_value()) << text << ": " << error.message;
  std::vector<Interval> scratch, out;
  EvaluateInterval(g, {*root}, box, &scratch, &out);
  const Interval e = out[0];
  constexpr int kN = 40;  // 40^3 points
  int outside = 0;
  double worst = 0;
  std::vector<double> vars(3);
  for (int i = 0; i <= kN; ++i) {
    for (int j = 0; j <= kN; ++j) {
      for (int k = 0; k <= kN; ++k) {
        const int idx[3] = {i, j, k};
        for (int d = 0; d < 3; ++d) {
          const Interval& b = box[static_cast<size_t>(d)];
          vars[static_cast<size_t>(d)] = idx[d] == kN ? b.hi : b.lo + b.width() * idx[d] / kN;
        }
        const double value = g.Evaluate(*root, vars);
        if (std::isnan(value)) continue;  // outside the domain: nothing to enclose
        if (!e.contains(value)) {
          ++outside;
          worst = value;
        }
      }
    }
  }
  EXPECT_EQ(outside, 0) << text << ": e.g. " << worst << " outside [" << e.lo << ", " << e.hi
                        << "]";
  // Useful, not only safe: finite where the expression is smooth on the box.
  EXPECT_TRUE(std::isfinite(e.lo) && std::isfinite(e.hi)) << text;
}

TEST(EnclosureTest, DenseSamplesLieInsideTheEnclosure) {
  const std::vector<Interval> box = {{0.1, 0.3}, {-0.7, 0.9}, {0.2, 1.4}};
  for (const char* text :
       {"x^2 + y^2 - 1", "sin(3*t + x) * cos(y) - 0.5", "sqrt(x^2 + y^2 + 0.1)",
        "exp(x) - log(y) + tan(0.5*x)", "atan2(y, x + 2) + atan(x*y)", "abs(x) - 0.5*y",
        "min(x, y) + max(x*y, t)", "sinh(x) + cosh(y) + tanh(x - y)", "pow(y, 1.5) + x^3",
        "(x - 0.1) / (y + 1)", "asin(0.5*x) + acos(0.3*y)", "y - 0.5*abs(x)",
        "sin(40*t) * x - y"}) {
    ExpectEncloses(text, box);
  }
}

TEST(EnclosureTest, HermiteEnclosureContainsTheInterpolant) {
  // Two coordinates, one step of h = 0.013 with arbitrary end data.
  const double h = 0.013;
  const double q0[2] = {0.7, -1.1}, v0[2] = {2.5, 0.3}, a0[2] = {-40, 9};
  const double q1[2] = {0.73, -1.096}, v1[2] = {2.1, 0.35}, a1[2] = {-31, 12};
  for (const Interval theta : {Interval(0, 0.1), Interval(0.25, 0.5), Interval(0.9, 1)}) {
    Interval p[2], dp[2], ddp[2];
    HermiteEnclosure(2, h, theta, q0, v0, a0, q1, v1, a1, p, dp, ddp);
    for (int j = 0; j <= 1000; ++j) {
      const double s = theta.lo + theta.width() * j / 1000;
      double x[2], dx[2], ddx[2];
      QuinticHermite(2, h, s, q0, v0, a0, q1, v1, a1, x, dx, ddx);
      for (int i = 0; i < 2; ++i) {
        EXPECT_TRUE(p[i].contains(x[i])) << "p at theta " << s;
        EXPECT_TRUE(dp[i].contains(dx[i])) << "dp at theta " << s;
        EXPECT_TRUE(ddp[i].contains(ddx[i])) << "ddp at theta " << s;
      }
    }
  }
  // Thin theta: the enclosure is a few ulps wide and still holds the
  // interpolant (so a wrong coefficient cannot hide in a loose enclosure).
  for (int j = 0; j <= 1000; ++j) {
    const double s = j / 1000.0;
    Interval p[2], dp[2], ddp[2];
    HermiteEnclosure(2, h, Interval(s), q0, v0, a0, q1, v1, a1, p, dp, ddp);
    double x[2], dx[2], ddx[2];
    QuinticHermite(2, h, s, q0, v0, a0, q1, v1, a1, x, dx, ddx);
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(p[i].contains(x[i]) && p[i].width() < 1e-13) << "p at theta " << s;
      EXPECT_TRUE(dp[i].contains(dx[i]) && dp[i].width() < 1e-11) << "dp at theta " << s;
      EXPECT_TRUE(ddp[i].contains(ddx[i]) && ddp[i].width() < 1e-8) << "ddp at theta " << s;
    }
  }
}

}  // namespace
}  // namespace tether::interval
