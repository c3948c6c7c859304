// Midpoint-radius ("ball") arithmetic with rigorous rounding, the number
// type of the ENCLOSED certificate's Taylor series (taylor.h).
//
// A Ball {m, r} stands for the real interval [m - r, m + r], r >= 0. Every
// operation returns a ball that contains the exact result of the operation
// applied to any reals in its operands' balls. Midpoints are computed in
// round-to-nearest (so a ball of radius 0 propagates like plain floating
// point), and each radius is an upper bound built from
//   - the propagation of the operands' radii (exact formulas below),
//   - the rounding of the midpoint: RN has |fl(x) - x| <= u |fl(x)| for a
//     normal result (u = 2^-53) and at most kTiny / 2 in the subnormal range,
//   - for a sum of n products, Higham's |fl(sum) - sum| <= gamma_n sum |x_i y_i|
//     (gamma_n = n u / (1 - n u), valid with or without fused multiply-adds),
//   - and the rounding of the radius expression itself: a few dozen RN
//     operations on nonnegative numbers, each off by at most a factor
//     (1 + u), covered by RadiusUp's factor (1 + 2^-40) (2^13 u).
// Why balls and not interval.h's [lo, hi]: a Taylor series of a smooth
// function along a short step has coefficients whose spread is tiny next
// to their size, and a ball multiply is 4 multiplies and a few adds with no
// branch and no nextafter call, several times cheaper than an interval
// multiply; the transcendental functions of a coefficient's leading term
// go through interval.h, whose libm assumptions (kTranscUlps) they share
// (sin and cos of a narrow ball through SinCos below, on the same
// assumption).
// Unbounded (a division by a ball containing 0, a non-smooth point inside
// a ball, an overflow) is a radius of +inf or a NaN; Bounded() tells.
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "engine/internal/base/interval.h"

namespace tether::ball {

inline constexpr double kU = 0x1p-53;                                       // unit roundoff
inline constexpr double kTiny = std::numeric_limits<double>::denorm_min();  // underflow
inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct Ball {
  double m = 0, r = 0;
};

// k kTiny for an integer 0 <= k < 2^52, exactly (the subnormal whose
// significand is k), from its bits: the product k * kTiny has the same
// value, but a multiplication with a subnormal result takes a microcode
// assist of some hundred cycles on x86 (measured: two such products in
// Dot::Result were two thirds of the sine's Taylor series' time).
inline double TinyTimes(int64_t k) { return std::bit_cast<double>(static_cast<uint64_t>(k)); }

// An upper bound of a nonnegative radius expression x computed in RN.
// Removing the factor makes ball_test's comparisons with exact (binary128)
// results fail.
inline double RadiusUp(double x) { return x * (1 + 0x1p-40) + kTiny; }

// |m| + r: the largest magnitude in the ball (rounded up).
inline double Mag(const Ball& a) { return RadiusUp(std::fabs(a.m) + a.r); }

// Both ends finite (no unbounded operation on the way).
inline bool Bounded(const Ball& a) { return std::isfinite(a.m) && std::isfinite(a.r); }

inline Ball Unbounded() { return {0, kInf}; }

inline Ball operator-(const Ball& a) { return {-a.m, a.r}; }

inline Ball operator+(const Ball& a, const Ball& b) {
  const double m = a.m + b.m;  // sums do not underflow inexactly
  return {m, RadiusUp(a.r + b.r + kU * std::fabs(m))};
}

inline Ball operator-(const Ball& a, const Ball& b) {
  const double m = a.m - b.m;
  return {m, RadiusUp(a.r + b.r + kU * std::fabs(m))};
}

// |x y - a.m b.m| <= |a.m| b.r + a.r |b.m| + a.r b.r for x in a, y in b.
inline Ball operator*(const Ball& a, const Ball& b) {
  const double m = a.m * b.m;
  return {
      m, RadiusUp(std::fabs(a.m) * b.r + a.r * (std::fabs(b.m) + b.r) + kU * std::fabs(m) + kTiny)};
}

// Times an exact double.
inline Ball Scale(const Ball& a, double c) {
  const double m = a.m * c;
  return {m, RadiusUp(a.r * std::fabs(c) + kU * std::fabs(m) + kTiny)};
}

// x / y for x in a, y in b: |x/y - a.m/b.m| <= (a.r + |a.m/b.m| b.r) / (|b.m| - b.r).
inline Ball operator/(const Ball& a, const Ball& b) {
  const double low = (std::fabs(b.m) - b.r) * (1 - 0x1p-40);  // a lower bound of min |y|
  if (!(low > 0)) return Unbounded();
  const double m = a.m / b.m;
  return {m, RadiusUp((a.r + std::fabs(m) * b.r) / low + kU * std::fabs(m) + kTiny)};
}

// Divided by an exact positive double (series recurrences divide by k).
inline Ball DivExact(const Ball& a, double c) {
  const double m = a.m / c;
  return {m, RadiusUp(a.r / std::fabs(c) + kU * std::fabs(m) + kTiny)};
}

// Accumulates sum_i x_i y_i over balls with one rounding bound for the
// whole sum (Higham's gamma_n), cheaper than a chain of ball + and *.
class Dot {
 public:
  void Add(const Ball& x, const Ball& y) {
    const double p = x.m * y.m;
    m_ += p;
    abs_ += std::fabs(p);
    r_ += std::fabs(x.m) * y.r + x.r * (std::fabs(y.m) + y.r);
    ++n_;
  }
  // Adds c x for an exact double c.
  void AddScaled(const Ball& x, double c) {
    const double p = x.m * c;
    m_ += p;
    abs_ += std::fabs(p);
    r_ += x.r * std::fabs(c);
    ++n_;
  }
  // Adds x y for an exact double x.
  void AddExact(double x, const Ball& y) {
    const double p = x * y.m;
    m_ += p;
    abs_ += std::fabs(p);
    r_ += std::fabs(x) * y.r;
    ++n_;
  }
  void AddBall(const Ball& x) {
    m_ += x.m;
    abs_ += std::fabs(x.m);
    r_ += x.r;
    ++n_;
  }
  // Twice x y (the symmetric terms of a square), exactly twice Add's.
  void Add2(const Ball& x, const Ball& y) {
    const double p = 2 * (x.m * y.m);
    m_ += p;
    abs_ += std::fabs(p);
    r_ += 2 * (std::fabs(x.m) * y.r + x.r * (std::fabs(y.m) + y.r));
    n_ += 2;
  }
  Ball Result() const { return {m_, RadiusUp(r_ + Gamma(n_) * abs_ + TinyTimes(n_ + 1))}; }
  // The rounding factor of a sum of `terms` products: n products and
  // n - 1 additions, gamma_{n+1} covers both. For n u <= 2^-41 (n <= 4096
  // terms, far more than a series has), gamma_n = n u / (1 - n u) <=
  // n u (1 + 2^-40): no division. (DotRadius2 finishes two sums with it.)
  static double Gamma(int terms) { return static_cast<double>(terms + 1) * kU * (1 + 0x1p-40); }

 private:
  double m_ = 0, abs_ = 0, r_ = 0;
  int n_ = 0;
};

// Two doubles with elementwise IEEE arithmetic in round-to-nearest (GCC's
// and Clang's generic vectors: the same operations as scalar code, two at a
// time), for the loops over coefficients of the polynomial path
// (taylor.h's PolySeries, defect_enclosure.cc).
typedef double V2 __attribute__((vector_size(16)));
inline V2 Load2(const double* p) {
  V2 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void Store2(double* p, V2 v) { __builtin_memcpy(p, &v, sizeof v); }
inline V2 Abs2(V2 v) {
  typedef long long I2 __attribute__((vector_size(16)));
  const I2 mask = {0x7fffffffffffffffLL, 0x7fffffffffffffffLL};
  return reinterpret_cast<V2>(reinterpret_cast<I2>(v) & mask);
}
inline V2 Splat2(double x) { return V2{x, x}; }
// RadiusUp, two at a time, with the same bits. Below 2^-1035 (2^39 kTiny,
// subnormal) x (1 + 2^-40) rounds to x (x 2^-40 < kTiny / 2), so such a
// lane skips the product: on this project's AMD machines a multiplication
// with a subnormal result takes a microcode assist of some hundred cycles,
// and radii of 4 kTiny (a series' zero coefficients with their a priori
// bound) made one such product 70% of EnclosePolyPiece's time on chains.
inline V2 RadiusUp2(V2 x) {
  const auto tiny = Abs2(x) < Splat2(0x1p-1035);
  const V2 product = (tiny ? Splat2(0) : x) * Splat2(1 + 0x1p-40);
  return (tiny ? x : product) + Splat2(kTiny);
}

// Dot::Result's radius for two sums of `terms` products accumulated in
// the lanes of V2s as Dot::Add does (r, abs): the same bits, two at a time.
inline V2 DotRadius2(V2 r, V2 abs, int terms) {
  return RadiusUp2(r + Splat2(Dot::Gamma(terms)) * abs + Splat2(TinyTimes(terms + 1)));
}

// Conversions to and from interval.h, for the leading coefficients of the
// transcendental functions.
inline interval::Interval ToInterval(const Ball& a) {
  if (!Bounded(a)) return interval::Entire();
  return interval::Outward(a.m - a.r, a.m + a.r);
}
inline Ball FromInterval(const interval::Interval& i) {
  if (!std::isfinite(i.lo) || !std::isfinite(i.hi)) return Unbounded();
  const double m = i.lo + 0.5 * (i.hi - i.lo);
  return {m, RadiusUp(std::max(i.hi - m, m - i.lo))};
}
// sin and cos over a ball: *s contains sin x and *c contains cos x for every
// x in a. For a narrow ball (r <= kSinCosTaylorRadius) from one sincos of
// the midpoint: with x = m + d, |d| <= r,
//   sin x - sin m = sin m (cos d - 1) + cos m sin d,
//   cos x - cos m = cos m (cos d - 1) - sin m sin d,
// and |cos d - 1| <= d^2 / 2, |sin d| <= |d|, so
//   |sin x - sin m| <= |cos m| r + |sin m| r^2 / 2,
//   |cos x - cos m| <= |sin m| r + |cos m| r^2 / 2,
// with |sin m| <= |fl(sin m)| + e_s, e_s libm's error (interval.h's
// kTranscUlps ulps of the result, bounded by 4 kTranscUlps u |result| +
// kTranscUlps kTiny: twice the ulps, so that an ulp of the computed value
// below a power of two, half the true value's, is still covered). For a
// point (r = 0) that is the libm error alone, as Sin and Cos of interval.h
// give it; for the Taylor passes' narrow balls the ends' extra terms are
// second order. One sincos where interval.h's Sin and Cos call sin and cos
// at both ends (four libm calls) and test for the extrema: the general
// ENCLOSED path took a fifth of a step on the sine wire there
// (docs/benchmarks.md). A wider ball, or one whose midpoint or radius is
// not finite, goes through interval.h (its exact range, tighter there).
inline constexpr double kSinCosTaylorRadius = 0x1p-4;
// SinCos's balls for a narrow ball (a.r <= kSinCosTaylorRadius, a finite
// midpoint) from sm, cm, what ::sincos(a.m) gives.
inline void SinCosFrom(const Ball& a, double sm, double cm, Ball* s, Ball* c) {
  constexpr double kLibm = 4 * interval::kTranscUlps * kU;
  const double as = std::fabs(sm), ac = std::fabs(cm);
  const double es = kLibm * as + TinyTimes(interval::kTranscUlps);
  const double ec = kLibm * ac + TinyTimes(interval::kTranscUlps);
  const double half_r2 = 0.5 * a.r * a.r;
  *s = {sm, RadiusUp(es + (ac + ec) * a.r + (as + es) * half_r2)};
  *c = {cm, RadiusUp(ec + (as + es) * a.r + (ac + ec) * half_r2)};
}
inline void SinCos(const Ball& a, Ball* s, Ball* c) {
  if (!(a.r <= kSinCosTaylorRadius) || !std::isfinite(a.m)) {
    *s = FromInterval(interval::Sin(ToInterval(a)));
    *c = FromInterval(interval::Cos(ToInterval(a)));
    return;
  }
  double sm, cm;
  ::sincos(a.m, &sm, &cm);
  SinCosFrom(a, sm, cm, s, c);
}

// The sign of every value in the ball: +1, -1, or 0 when the ball reaches 0.
inline int StrictSign(const Ball& a) {
  const interval::Interval i = ToInterval(a);
  return i.lo > 0 ? 1 : (i.hi < 0 ? -1 : 0);
}

}  // namespace tether::ball
