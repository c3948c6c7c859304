// The outward-rounded interval type and the interval evaluation of
// expression graphs: every point value on a densely sampled box lies in the
// enclosure, exact sums that doubles cannot hold are enclosed, and the
// singular cases give Entire().
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/internal/base/ball.h"
#include "engine/internal/base/interval.h"
#include "engine/internal/certificate/certificate.h"
#include "engine/internal/expr/expression.h"
#include "engine/internal/expr/parser.h"

namespace tether::interval {
namespace {

// The natural interval extension of an expression graph: the driver that
// checks interval.h's functions on whole expressions (the certificate's
// enclosure uses Taylor series in ball arithmetic instead: taylor.h).
// One operation (b ignored by unary ones).
Interval ApplyInterval(expr::Op op, const Interval& a, const Interval& b) {
  using expr::Op;
  switch (op) {
    case Op::kConst:
    case Op::kVar: return Entire();  // leaves are not operations
    case Op::kNeg: return -a;
    case Op::kAdd: return a + b;
    case Op::kSub: return a - b;
    case Op::kMul: return a * b;
    case Op::kDiv: return a / b;
    case Op::kSin: return Sin(a);
    case Op::kCos: return Cos(a);
    case Op::kTan: return Tan(a);
    case Op::kAsin: return Asin(a);
    case Op::kAcos: return Acos(a);
    case Op::kAtan: return Atan(a);
    case Op::kAtan2: return Atan2(a, b);
    case Op::kSinh: return Sinh(a);
    case Op::kCosh: return Cosh(a);
    case Op::kTanh: return Tanh(a);
    case Op::kExp: return Exp(a);
    case Op::kLog: return Log(a);
    case Op::kSqrt: return Sqrt(a);
    case Op::kAbs: return Abs(a);
    case Op::kPow: return Pow(a, b);
    case Op::kMin: return Min(a, b);
    case Op::kMax: return Max(a, b);
    case Op::kSign: return Sign(a);
    case Op::kStep: return Step(a);
  }
  return Entire();  // an operation this switch does not know: safe
}

// Evaluates nodes 0..max(roots) of g (ids are a topological order) on the
// variable intervals `vars`; scratch is resized once and reused. Returns
// the enclosures of the roots in `out` (same order).
void EvaluateInterval(const expr::Graph& g, const std::vector<expr::NodeId>& roots,
                      const std::vector<Interval>& vars, std::vector<Interval>* scratch,
                      std::vector<Interval>* out) {
  expr::NodeId last = 0;
  for (expr::NodeId r : roots) last = std::max(last, r);
  scratch->resize(static_cast<size_t>(last) + 1);
  Interval* v = scratch->data();
  for (expr::NodeId id = 0; id <= last; ++id) {
    const expr::Node& n = g.node(id);
    Interval r;
    if (n.op == expr::Op::kConst) {
      r = Interval(n.value);
    } else if (n.op == expr::Op::kVar) {
      r = n.var >= 0 && static_cast<size_t>(n.var) < vars.size() ? vars[static_cast<size_t>(n.var)]
                                                                 : Entire();
    } else {
      const Interval a = v[n.a];
      const Interval b = n.b >= 0 ? v[n.b] : Interval(0.0);
      r = ApplyInterval(n.op, a, b);
    }
    v[id] = r;
  }
  out->resize(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) (*out)[i] = v[roots[i]];
}

// Up and Down step on the bits; they must be std::nextafter towards +-inf
// exactly, at zeros, subnormals, the largest finite values, infinities and
// across the range.
TEST(IntervalTest, UpAndDownAreNextafterBitForBit) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kMin = std::numeric_limits<double>::denorm_min();
  constexpr double kMax = std::numeric_limits<double>::max();
  std::vector<double> xs = {0.0,
                            -0.0,
                            kMin,
                            -kMin,
                            2 * kMin,
                            -2 * kMin,
                            std::numeric_limits<double>::min(),
                            -std::numeric_limits<double>::min(),
                            kMax,
                            -kMax,
                            kInf,
                            -kInf,
                            1.0,
                            -1.0,
                            0.1,
                            -0.1,
                            1e300,
                            -1e-300};
  for (int e = -1074; e <= 1023; e += 7) {
    xs.push_back(std::ldexp(1.0, e));
    xs.push_back(-std::ldexp(1.37, e));
  }
  auto bits = [](double x) { return std::bit_cast<uint64_t>(x); };
  for (double x : xs) {
    EXPECT_EQ(bits(Up(x)), bits(std::nextafter(x, kInf))) << x;
    EXPECT_EQ(bits(Down(x)), bits(std::nextafter(x, -kInf))) << x;
    double up4 = x, down4 = x;
    for (int i = 0; i < 4; ++i) {
      up4 = std::nextafter(up4, kInf);
      down4 = std::nextafter(down4, -kInf);
    }
    EXPECT_EQ(bits(Up(x, 4)), bits(up4)) << x;
    EXPECT_EQ(bits(Down(x, 4)), bits(down4)) << x;
  }
  EXPECT_TRUE(std::isnan(Up(std::nan(""))));
  EXPECT_TRUE(std::isnan(Down(std::nan(""))));
}

// ball::RadiusUp2 skips the product for lanes below 2^-1035 (a subnormal
// product's microcode assist); it must keep the bits of x (1 + 2^-40) +
// kTiny in every lane: zeros, subnormals on both sides of 2^-1035 (every
// multiple of kTiny near it), normals, the extremes, infinities and NaN.
TEST(IntervalTest, RadiusUp2KeepsTheBitsOfTheProductForm) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kMin = std::numeric_limits<double>::denorm_min();
  std::vector<double> xs = {0.0,
                            -0.0,
                            kMin,
                            4 * kMin,
                            std::numeric_limits<double>::min(),
                            std::numeric_limits<double>::max(),
                            kInf,
                            -kInf,
                            1.0,
                            0.1,
                            -2.5e-310};
  for (int e = -1074; e <= 1023; e += 3) {
    xs.push_back(std::ldexp(1.0, e));
    xs.push_back(-std::ldexp(1.37, e));
  }
  for (int64_t k = -3; k <= 3; ++k) {
    for (int64_t base : {int64_t{1} << 39, int64_t{1} << 40, int64_t{1} << 52}) {
      xs.push_back(static_cast<double>(base + k) * kMin);  // around 2^-1035, 2^-1034, 2^-1022
    }
  }
  auto bits = [](double x) { return std::bit_cast<uint64_t>(x); };
  for (size_t i = 0; i + 1 < xs.size(); ++i) {
    const ball::V2 r = ball::RadiusUp2(ball::V2{xs[i], xs[i + 1]});
    const double want0 = xs[i] * (1 + 0x1p-40) + ball::kTiny;
    const double want1 = xs[i + 1] * (1 + 0x1p-40) + ball::kTiny;
    EXPECT_EQ(bits(r[0]), bits(want0)) << xs[i];
    EXPECT_EQ(bits(r[1]), bits(want1)) << xs[i + 1];
  }
  const double nan = std::nan("");
  const ball::V2 r = ball::RadiusUp2(ball::V2{nan, 1.0});
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(bits(r[1]), bits(1.0 * (1 + 0x1p-40) + ball::kTiny));
}

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

// ball::SinCos, the Taylor series' sin and cos leads: every point of the
// ball (ends included) has its sine and cosine, in long double, inside the
// balls; narrow balls take the sincos form, wide ones interval.h's range;
// and the sincos form's radius is within twice the interval form's (2 at
// an extremum, where the interval is one-sided) beside its libm margin
// (twice interval.h's, and not clipped at +-1).
TEST(IntervalTest, BallSinCosEnclosesEveryPointOfTheBall) {
  const double pi = std::numbers::pi;
  const double mids[] = {0,   1e-300, -1e-8, 0.7,  pi / 2, pi,    -2.5,
                         3e5, 1e6,    1e22,  -1e9, 1e-3,   pi / 4};
  const double radii[] = {0, 1e-300, 1e-16, 1e-12, 1e-9, 1e-6, 1e-3, 0.03, 0x1p-4, 0.0626, 0.5, 3};
  int checked = 0;
  for (double m : mids) {
    for (double r : radii) {
      SCOPED_TRACE("m = " + std::to_string(m) + ", r = " + std::to_string(r));
      ball::Ball s, c;
      ball::SinCos({m, r}, &s, &c);
      ASSERT_TRUE(ball::Bounded(s) && ball::Bounded(c));
      constexpr int kPoints = 400;
      for (int k = 0; k <= kPoints; ++k) {
        const long double x =
            static_cast<long double>(m) + static_cast<long double>(r) * (2.0L * k / kPoints - 1);
        // The reference's own error: x rounded to long double when it is
        // not m itself (|x| 2^-64, moving sin and cos as much), and sinl's,
        // cosl's (a few ulps of 2^-64).
        const long double rounding =
            x == static_cast<long double>(m) ? 0.0L : std::fabs(x) * 0x1p-63L;
        const long double slack = rounding + 0x1p-60L;
        EXPECT_LE(std::fabs(sinl(x) - static_cast<long double>(s.m)),
                  static_cast<long double>(s.r) + slack)
            << "x = " << static_cast<double>(x);
        EXPECT_LE(std::fabs(cosl(x) - static_cast<long double>(c.m)),
                  static_cast<long double>(c.r) + slack)
            << "x = " << static_cast<double>(x);
        ++checked;
      }
      if (r <= ball::kSinCosTaylorRadius) {
        const ball::Ball si = ball::FromInterval(Sin(ball::ToInterval({m, r})));
        const ball::Ball ci = ball::FromInterval(Cos(ball::ToInterval({m, r})));
        constexpr double kSlack = 1e-300;   // subnormal leads
        const double libm = 20 * ball::kU;  // the sincos form's libm margin, rounded up
        EXPECT_LE(s.r, 2.01 * si.r + libm * std::fabs(s.m) + kSlack)
            << "sin: interval form radius " << si.r;
        EXPECT_LE(c.r, 2.01 * ci.r + libm * std::fabs(c.m) + kSlack)
            << "cos: interval form radius " << ci.r;
      }
    }
  }
  EXPECT_EQ(checked, 13 * 12 * 401);
  // Not finite: all of [-1, 1], as interval.h gives it.
  for (const ball::Ball a : {ball::Ball{std::numeric_limits<double>::quiet_NaN(), 0},
                             ball::Ball{1, std::numeric_limits<double>::infinity()}}) {
    ball::Ball s, c;
    ball::SinCos(a, &s, &c);
    EXPECT_TRUE(s.m - s.r <= -1 && s.m + s.r >= 1);
    EXPECT_TRUE(c.m - c.r <= -1 && c.m + c.r >= 1);
  }
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

}  // namespace
}  // namespace tether::interval
