// A small interval type with outward rounding, for the ENCLOSED
// certificate mode (docs/MATH.md section 10.1): the leading coefficients of
// the transcendental functions in taylor.h and the residual law's closed
// forms (residual_law_enclosed.cc).
//
// Why our own type and not Boost.Interval: Boost's rounded_arith_std
// switches the FPU rounding mode around every operation (slow, and GCC does
// not honour the mode without -frounding-math, which the engine is not
// built with), and its rounded_transc_std calls libm under a changed
// rounding mode, which glibc does not promise to honour either. Here every
// result is computed in round-to-nearest and then widened outward:
//   - +, -, *, / and sqrt are correctly rounded in IEEE 754 (error <= 1/2
//     ulp), so one nextafter step outward on each end encloses the exact
//     result;
//   - libm's transcendental functions are not correctly rounded: glibc's
//     documented worst errors on x86_64 are a few ulps (libm-test-ulps), so
//     their results are widened by kTranscUlps = 4 ulps outward. That is an
//     assumption on the libm, stated in docs/MATH.md.
// Robust under -O2 and FP contraction: each end is one operation's rounded
// result (a fused multiply-add is more accurate, not less, and is still
// covered by the widening). The engine is not built with -ffast-math (which
// would break NaN and infinity handling below); do not add it.
//
// Singular and undefined cases never give a narrower wrong enclosure: a
// division by an interval containing 0, sqrt or log reaching <= 0, pow of a
// base reaching <= 0 with a non-integer exponent, tan across a pole, and any
// NaN give Entire() (-inf, +inf), so a bound built on it becomes infinite.
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

namespace tether::interval {

struct Interval {
  double lo = 0, hi = 0;
  constexpr Interval() = default;
  constexpr Interval(double x) : lo(x), hi(x) {}  // NOLINT: thin interval
  constexpr Interval(double l, double h) : lo(l), hi(h) {}
  bool contains(double x) const { return lo <= x && x <= hi; }
  bool contains_zero() const { return lo <= 0 && 0 <= hi; }
  bool is_entire() const { return lo == -kInf && hi == kInf; }
  double width() const { return hi - lo; }
  double mag() const { return std::max(std::fabs(lo), std::fabs(hi)); }
  static constexpr double kInf = std::numeric_limits<double>::infinity();
};

inline Interval Entire() { return {-Interval::kInf, Interval::kInf}; }

inline constexpr int kTranscUlps = 4;

// One ulp down / up (infinities stay): std::nextafter(x, -inf / +inf)
// bit for bit (the next double in that direction; +-0 to -+denorm_min,
// NaN stays NaN), on the bits instead of libm's call (a few instructions
// where nextafter took some 40: the ENCLOSED certificate's transcendental
// leads widen by 4 ulps at each end).
inline double Up(double x) {
  if (!(x < Interval::kInf)) return x;  // +inf, NaN
  if (x == 0) return std::numeric_limits<double>::denorm_min();
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  return std::bit_cast<double>(x > 0 ? bits + 1 : bits - 1);
}
inline double Down(double x) {
  if (!(x > -Interval::kInf)) return x;  // -inf, NaN
  if (x == 0) return -std::numeric_limits<double>::denorm_min();
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  return std::bit_cast<double>(x > 0 ? bits - 1 : bits + 1);
}
inline double Down(double x, int ulps) {
  for (int i = 0; i < ulps; ++i) x = Down(x);
  return x;
}
inline double Up(double x, int ulps) {
  for (int i = 0; i < ulps; ++i) x = Up(x);
  return x;
}

// [lo, hi] from round-to-nearest ends, widened by `ulps`; NaN gives Entire.
inline Interval Outward(double lo, double hi, int ulps = 1) {
  if (std::isnan(lo) || std::isnan(hi)) return Entire();
  return {Down(lo, ulps), Up(hi, ulps)};
}

inline Interval Hull(const Interval& a, const Interval& b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

inline Interval operator-(const Interval& a) { return {-a.hi, -a.lo}; }
inline Interval operator+(const Interval& a, const Interval& b) {
  return Outward(a.lo + b.lo, a.hi + b.hi);
}
inline Interval operator-(const Interval& a, const Interval& b) {
  return Outward(a.lo - b.hi, a.hi - b.lo);
}
inline Interval operator*(const Interval& a, const Interval& b) {
  const double p1 = a.lo * b.lo, p2 = a.lo * b.hi, p3 = a.hi * b.lo, p4 = a.hi * b.hi;
  // 0 * inf is NaN: Outward makes it Entire (safe).
  return Outward(std::min({p1, p2, p3, p4}), std::max({p1, p2, p3, p4}));
}
inline Interval operator/(const Interval& a, const Interval& b) {
  if (b.contains_zero()) return Entire();
  const double p1 = a.lo / b.lo, p2 = a.lo / b.hi, p3 = a.hi / b.lo, p4 = a.hi / b.hi;
  return Outward(std::min({p1, p2, p3, p4}), std::max({p1, p2, p3, p4}));
}

// Monotone increasing libm function f on [a.lo, a.hi].
template <class F>
inline Interval Increasing(const Interval& a, F f, int ulps = kTranscUlps) {
  return Outward(f(a.lo), f(a.hi), ulps);
}

inline Interval Sqrt(const Interval& a) {
  if (!(a.lo > 0)) return Entire();  // reaching 0: no derivative there
  return Outward(std::sqrt(a.lo), std::sqrt(a.hi), 1);
}
inline Interval Exp(const Interval& a) {
  Interval r = Increasing(a, [](double x) { return std::exp(x); });
  r.lo = std::max(r.lo, 0.0);
  return r;
}
inline Interval Expm1(const Interval& a) {
  Interval r = Increasing(a, [](double x) { return std::expm1(x); });
  r.lo = std::max(r.lo, -1.0);
  return r;
}
inline Interval Log(const Interval& a) {
  if (!(a.lo > 0)) return Entire();
  return Increasing(a, [](double x) { return std::log(x); });
}
inline Interval Abs(const Interval& a) {
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return -a;
  return {0, std::max(-a.lo, a.hi)};
}

// Does [lo, hi] contain a point x0 + k period for an integer k? Answers
// true when in doubt (the slack covers the rounding of the quotient), which
// only widens the result.
inline bool MayContain(const Interval& a, double x0, double period) {
  const double k = std::ceil((a.lo - x0) / period - 1e-9);
  return x0 + k * period <= a.hi + 1e-9 * std::max(1.0, std::fabs(a.hi));
}

inline Interval Sin(const Interval& a) {
  constexpr double pi = std::numbers::pi;
  if (!std::isfinite(a.lo) || !std::isfinite(a.hi) || a.width() >= 2 * pi) return {-1, 1};
  const double s0 = std::sin(a.lo), s1 = std::sin(a.hi);  // once each (libm may set errno)
  Interval r = Outward(std::min(s0, s1), std::max(s0, s1), kTranscUlps);
  if (MayContain(a, pi / 2, 2 * pi)) r.hi = 1;
  if (MayContain(a, -pi / 2, 2 * pi)) r.lo = -1;
  return {std::max(r.lo, -1.0), std::min(r.hi, 1.0)};
}
inline Interval Cos(const Interval& a) {
  constexpr double pi = std::numbers::pi;
  if (!std::isfinite(a.lo) || !std::isfinite(a.hi) || a.width() >= 2 * pi) return {-1, 1};
  const double c0 = std::cos(a.lo), c1 = std::cos(a.hi);
  Interval r = Outward(std::min(c0, c1), std::max(c0, c1), kTranscUlps);
  if (MayContain(a, 0, 2 * pi)) r.hi = 1;
  if (MayContain(a, pi, 2 * pi)) r.lo = -1;
  return {std::max(r.lo, -1.0), std::min(r.hi, 1.0)};
}
inline Interval Tan(const Interval& a) {
  constexpr double pi = std::numbers::pi;
  if (!std::isfinite(a.lo) || !std::isfinite(a.hi) || a.width() >= pi ||
      MayContain(a, pi / 2, pi)) {
    return Entire();
  }
  return Increasing(a, [](double x) { return std::tan(x); });
}
inline Interval Asin(const Interval& a) {
  if (!(a.lo >= -1 && a.hi <= 1)) return Entire();
  return Increasing(a, [](double x) { return std::asin(x); });
}
inline Interval Acos(const Interval& a) {
  if (!(a.lo >= -1 && a.hi <= 1)) return Entire();
  return Outward(std::acos(a.hi), std::acos(a.lo), kTranscUlps);
}
inline Interval Atan(const Interval& a) {
  return Increasing(a, [](double x) { return std::atan(x); });
}
// atan2(y, x) over a box away from the branch cut (x < 0, y = 0) and the
// origin is monotone in each variable with extremes at the corners;
// otherwise [-pi, pi].
inline Interval Atan2(const Interval& y, const Interval& x) {
  if (std::isnan(y.lo) || std::isnan(x.lo) || std::isnan(y.hi) || std::isnan(x.hi)) {
    return Entire();
  }
  const bool off_cut = x.lo > 0 || y.lo > 0 || y.hi < 0;
  if (!off_cut) return Outward(-std::numbers::pi, std::numbers::pi, 1);
  const double c[4] = {std::atan2(y.lo, x.lo), std::atan2(y.lo, x.hi), std::atan2(y.hi, x.lo),
                       std::atan2(y.hi, x.hi)};
  return Outward(std::min({c[0], c[1], c[2], c[3]}), std::max({c[0], c[1], c[2], c[3]}),
                 kTranscUlps);
}
inline Interval Sinh(const Interval& a) {
  return Increasing(a, [](double x) { return std::sinh(x); });
}
inline Interval Cosh(const Interval& a) {
  const Interval m = Abs(a);
  Interval r = Increasing(m, [](double x) { return std::cosh(x); });
  r.lo = std::max(r.lo, 1.0);
  return r;
}
inline Interval Tanh(const Interval& a) {
  Interval r = Increasing(a, [](double x) { return std::tanh(x); });
  return {std::max(r.lo, -1.0), std::min(r.hi, 1.0)};
}
// a^n for an integer n (repeated outward multiplication would overestimate
// even powers of intervals containing 0, so the monotone pieces are used).
inline Interval PowInt(const Interval& a, long n) {
  if (n == 0) return 1.0;
  if (n < 0) return Interval(1.0) / PowInt(a, -n);
  const double dn = static_cast<double>(n);
  // std::pow on integer exponents is treated like any libm function.
  auto p = [dn](double x) { return std::pow(x, dn); };
  if (n % 2 == 1) return Outward(p(a.lo), p(a.hi), kTranscUlps);
  const Interval m = Abs(a);
  return Outward(p(m.lo), p(m.hi), kTranscUlps);
}
inline Interval Pow(const Interval& a, const Interval& b) {
  if (b.lo == b.hi && std::isfinite(b.lo) && b.lo == std::trunc(b.lo) && std::fabs(b.lo) < 1e9) {
    return PowInt(a, static_cast<long>(b.lo));
  }
  if (!(a.lo > 0)) return Entire();
  return Exp(b * Log(a));
}
inline Interval Min(const Interval& a, const Interval& b) {
  return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
}
inline Interval Max(const Interval& a, const Interval& b) {
  return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}
inline Interval Sign(const Interval& a) {
  auto s = [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); };
  if (std::isnan(a.lo) || std::isnan(a.hi)) return Entire();
  return {s(a.lo), s(a.hi)};
}
inline Interval Step(const Interval& a) {
  if (std::isnan(a.lo) || std::isnan(a.hi)) return Entire();
  return {a.lo > 0 ? 1.0 : 0.0, a.hi > 0 ? 1.0 : 0.0};
}

}  // namespace tether::interval
