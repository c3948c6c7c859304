#include "engine/internal/certificate/taylor_program.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/base/interval.h"

namespace tether::taylor {

using ball::Ball;
using ball::kTiny;
using ball::kU;

namespace {

// c = a b truncated at N coefficients, with PolyMul's bound (taylor_poly.cc,
// docs/MATH.md section 10.1): for x_i in a's balls, y_j in b's (P = |m|,
// R = r), coefficient k's error is at most
//   sum_{i+j=k} Pa_i (Rb_j + gamma_n Pb_j) + Ra_i (Pb_j + Rb_j) + 2 n kTiny,
// n = min(la, lb) the most terms a coefficient has. A square (b = a) is
// the same bound (the symmetric terms' radii 2 P_i R_j + R_i R_j and their
// rounding gamma_n P_i P_j are what it sums). The coefficients from N on
// are not needed by a pass of length N and are not computed.
template <int N>
void MulTruncated(const PolySeries& a, const PolySeries& b, PolySeries* c) {
  const int la = a.len, lb = b.len, lc = std::min(N, la + lb - 1);
  const int n = std::min(la, lb);
  const double gamma = n * kU * (1 + 0x1p-40);  // gamma_n, n u <= 2^-41
  double v[N], z[N];
  for (int j = 0; j < lb; ++j) {
    const double p = std::fabs(b.m[j]);
    v[j] = b.r[j] + gamma * p;
    z[j] = p + b.r[j];
  }
  double m[N] = {}, s[N] = {};
  for (int i = 0; i < la; ++i) {
    const double am = a.m[i], u = std::fabs(am), w = a.r[i];
    const int top = std::min(lb, N - i);
    for (int j = 0; j < top; ++j) {
      m[i + j] += am * b.m[j];
      s[i + j] += u * v[j] + w * z[j];
    }
  }
  const double nt = ball::TinyTimes(2 * n);
  for (int k = 0; k < lc; ++k) {
    c->m[k] = m[k];
    c->r[k] = ball::RadiusUp(s[k] + nt);
  }
  for (int k = lc; k < N; ++k) c->m[k] = c->r[k] = 0;
  c->len = lc;
}

// MulTruncated with the lengths known at compile time (LA, LB <= N), the
// loops unrolled: the same bound, the same order of the sums.
template <int LA, int LB, int N>
void MulTruncatedT(const PolySeries& a, const PolySeries& b, PolySeries* c) {
  constexpr int LC = LA + LB - 1 < N ? LA + LB - 1 : N;
  constexpr int n = LA < LB ? LA : LB;
  constexpr double gamma = n * kU * (1 + 0x1p-40);
  double v[LB], z[LB];
#pragma GCC unroll 8
  for (int j = 0; j < LB; ++j) {
    const double p = std::fabs(b.m[j]);
    v[j] = b.r[j] + gamma * p;
    z[j] = p + b.r[j];
  }
  double m[LC] = {}, s[LC] = {};
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
    const double am = a.m[i], u = std::fabs(am), w = a.r[i];
#pragma GCC unroll 8
    for (int j = 0; j < LB; ++j) {
      if (i + j < LC) {
        m[i + j] += am * b.m[j];
        s[i + j] += u * v[j] + w * z[j];
      }
    }
  }
  constexpr double nt = 2 * n * kTiny;
#pragma GCC unroll 8
  for (int k = 0; k < LC; ++k) {
    c->m[k] = m[k];
    c->r[k] = ball::RadiusUp(s[k] + nt);
  }
#pragma GCC unroll 8
  for (int k = LC; k < N; ++k) c->m[k] = c->r[k] = 0;
  c->len = LC;
}

// a^2 truncated at N with PolySquareT's bound (taylor_poly.cc, docs/
// MATH.md section 10.1): the midpoints the full convolution sum_{i+j=k}
// a_i a_j, the radii the convolution of 2 P + R against R + gamma_n P
// (n = LA), both in one pass of two-lane products (lane 0 the midpoints,
// lane 1 the radii), then RadiusUp with 2 n kTiny; coefficients from N on
// not computed.
template <int LA, int N>
void SquareTruncatedT(const PolySeries& a, const PolySeries&, PolySeries* c) {
  using ball::Splat2;
  using ball::V2;
  constexpr int LC = 2 * LA - 1 < N ? 2 * LA - 1 : N;
  constexpr double gamma = LA * kU * (1 + 0x1p-40);
  V2 x[LA], y[LA];
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
    const double p = std::fabs(a.m[i]), r = a.r[i];
    x[i] = V2{a.m[i], 2 * p + r};
    y[i] = V2{a.m[i], r + gamma * p};
  }
  V2 acc[LC];
#pragma GCC unroll 8
  for (int k = 0; k < LC; ++k) acc[k] = V2{0, 0};
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < LA; ++j) {
      if (i + j < LC) acc[i + j] += x[i] * y[j];
    }
  }
  constexpr double nt = 2 * LA * kTiny;
#pragma GCC unroll 8
  for (int k = 0; k < LC; ++k) {
    c->m[k] = acc[k][0];
    c->r[k] = ball::RadiusUp(acc[k][1] + nt);
  }
#pragma GCC unroll 8
  for (int k = LC; k < N; ++k) c->m[k] = c->r[k] = 0;
  c->len = LC;
}

using KernelFn = void (*)(const PolySeries&, const PolySeries&, PolySeries*);
template <int N, int... I>
constexpr auto MulTable(std::integer_sequence<int, I...>) {
  // Entry (la - 1) * kMaxExact + (lb - 1).
  return std::array<KernelFn, sizeof...(I)>{
      &MulTruncatedT<I / kMaxExact + 1, I % kMaxExact + 1, N>...};
}
template <int N, int... I>
constexpr auto SquareTable(std::integer_sequence<int, I...>) {
  return std::array<KernelFn, sizeof...(I)>{&SquareTruncatedT<I + 1, N>...};
}
template <int N>
constexpr auto kMulTable = MulTable<N>(std::make_integer_sequence<int, kMaxExact * kMaxExact>{});
template <int N>
constexpr auto kSquareTable = SquareTable<N>(std::make_integer_sequence<int, kMaxExact>{});
// The passes of length 7 and 8 (ENCLOSED's centre and remainder passes)
// also meet operands longer than kMaxExact: a sin's, cos's or sqrt's
// series has the pass's full length. For them too MulTruncatedT, for
// every pair of lengths up to N (entry (la - 1) N + (lb - 1); those up to
// kMaxExact are kMulTable's own instances): the bits of MulTruncated, its
// loops unrolled.
template <int N, int... I>
constexpr auto WideMulTable(std::integer_sequence<int, I...>) {
  return std::array<KernelFn, sizeof...(I)>{&MulTruncatedT<I / N + 1, I % N + 1, N>...};
}
template <int N>
constexpr auto kWideMulTable = WideMulTable<N>(std::make_integer_sequence<int, N * N>{});
// And their squares (sin(x)^2, a rod's (s - r cos(th))^2): SquareTruncatedT
// for every length up to N (entry la - 1), half MulTruncatedT's
// arithmetic (the midpoints and radii in one two-lane product) and its
// midpoints' bits (the same terms in the same order); the radii its own
// bound, a proven one (above).
template <int N, int... I>
constexpr auto WideSquareTable(std::integer_sequence<int, I...>) {
  return std::array<KernelFn, sizeof...(I)>{&SquareTruncatedT<I + 1, N>...};
}
template <int N>
constexpr auto kWideSquareTable = WideSquareTable<N>(std::make_integer_sequence<int, N>{});

// c = a b (a square when &a == &b) truncated at N: the unrolled kernels
// for operands of at most kMaxExact coefficients, else the loops.
// squares: per base length, a kernel to use instead (null: the table's).
template <int N>
void Product(const PolySeries& a, const PolySeries& b, PolySeries* c,
             const PolyProductKernel* squares) {
  if (a.len <= kMaxExact && b.len <= kMaxExact) {
    if (&a == &b) {
      const size_t l = static_cast<size_t>(a.len - 1);
      return (squares && squares[l] ? squares[l] : kSquareTable<N>[l])(a, b, c);
    }
    return kMulTable<N>[static_cast<size_t>((a.len - 1) * kMaxExact + (b.len - 1))](a, b, c);
  }
  if constexpr (N == 7 || N == 8) {
    // Every series of a pass of length N has at most N coefficients.
    if (&a == &b) {
      const size_t l = static_cast<size_t>(a.len - 1);
      return (squares && squares[l] ? squares[l] : kWideSquareTable<N>[l])(a, b, c);
    }
    return kWideMulTable<N>[static_cast<size_t>((a.len - 1) * N + (b.len - 1))](a, b, c);
  }
  MulTruncated<N>(a, b, c);
}

// c = s times the ball (cm, cr), ball.h's operator* a coefficient (the bits
// of taylor::Mul's product by a series of length 1).
void ScaleBall(const PolySeries& s, double cm, double cr, int n, PolySeries* c) {
  const int ls = std::min(s.len, n);
  for (int k = 0; k < ls; ++k) {
    const Ball x = Ball{s.m[k], s.r[k]} * Ball{cm, cr};
    c->m[k] = x.m;
    c->r[k] = x.r;
  }
  for (int k = ls; k < n; ++k) c->m[k] = c->r[k] = 0;
  c->len = ls;
}

// f = sqrt(a) on N coefficients: f_0 encloses sqrt over a_0's ball
// (SqrtLead, below), and 2 f_0 f_k = a_k - sum_{j=1..k-1} f_j f_{k-j}, the sum
// in one Dot with its symmetric terms once, doubled (Dot::Add2), and -f_j
// negated exactly. taylor.cc's SqrtSeries sums every term and negates by
// Scale(f_j, -1) (a rounding bound where there is no rounding): the same
// exact coefficients, a smaller but still proven radius, half the terms.
// The division by 2 f_0 is a product by a ball enclosing 1 / (2 f_0),
// formed once: no division on the recurrence's chain of dependencies.
// The coefficients are kept in a local array and the loops unrolled, so
// the recurrence (a chain of dependent sums) runs in registers rather than
// through stores and loads of f; f is written at the end (its N
// coefficients, only when it is enclosed). a's coefficients from its
// length on are zeros (as every Program step leaves them).
//
// f_0 is centred on fl(sqrt(m)) for a_0's ball (m, r) whose lower end lo
// is positive: for x in it, |sqrt(x) - sqrt(m)| = |x - m| / (sqrt(x) +
// sqrt(m)) <= r / (sqrt(lo) + sqrt(m)), and |fl(sqrt(m)) - sqrt(m)| <=
// u sqrt(m) <= u f / (1 - u). The denominator is taken as fl(fl(sqrt(lo)) +
// f) (1 - 4u), at most sqrt(lo) + sqrt(m) (each of its three roundings is
// within a factor 1 + u); r / den's rounding and the sum's are within
// RadiusUp's factor 1 + 2^-40, and a subnormal u f within its kTiny. So its
// midpoint does not depend on r (EvaluatePair's passes share it, where an
// interval's midpoint would move with the radius), and its radius is an
// interval's half width to first order in r / m.
inline Ball SqrtLead(const Ball& a) {
  const interval::Interval i = ball::ToInterval(a);
  if (!(i.lo > 0) || !std::isfinite(i.hi)) return ball::Unbounded();
  const double f = std::sqrt(a.m);
  const double den = (std::sqrt(i.lo) + f) * (1 - 4 * kU);
  return {f, ball::RadiusUp(a.r / den + kU * f)};
}

template <int N>
bool SqrtKernel(const PolySeries& a, PolySeries* f) {
  Ball fc[N];
  fc[0] = SqrtLead(Ball{a.m[0], a.r[0]});
  if (!ball::Bounded(fc[0])) return false;
  const Ball two_f0{2 * fc[0].m, 2 * fc[0].r};  // exact (an overflow is unbounded below)
  const Ball inv = Ball{1, 0} / two_f0;         // Unbounded when it reaches 0
  if (!ball::Bounded(inv)) return false;
#pragma GCC unroll 16
  for (int k = 1; k < N; ++k) {
    ball::Dot d;
    d.AddBall(Ball{a.m[k], a.r[k]});
#pragma GCC unroll 16
    for (int j = 1; 2 * j < k; ++j) d.Add2(-fc[j], fc[k - j]);
    if (k % 2 == 0) d.Add(-fc[k / 2], fc[k / 2]);
    fc[k] = d.Result() * inv;
    if (!ball::Bounded(fc[k])) return false;
  }
#pragma GCC unroll 16
  for (int k = 0; k < N; ++k) {
    f->m[k] = fc[k].m;
    f->r[k] = fc[k].r;
  }
  f->len = N;
  return true;
}

// x / k for an integer 1 <= k < kMaxLength + 1, as x times fl(1/k): with
// |fl(1/k) - 1/k| <= u / k, |x.m / k - fl(x.m fl(1/k))| <= (2u + 4u^2) |m|
// + kTiny, covered by 3u |m| + 2 kTiny; x.r / k <= x.r fl(1/k) (1 + 2u),
// within RadiusUp's margin. A multiplication where ball::DivExact divides
// (twice, on the Taylor recurrences' chain of dependencies). Two balls at
// a time, midpoints m and radii r in the lanes of V2s.
inline void DivSmall2(ball::V2 m, ball::V2 r, int k, ball::V2* mq, ball::V2* rq) {
  using ball::Splat2;
  static constexpr double kInv[kMaxLength + 1] = {0,       1,       0.5,   1.0 / 3, 0.25, 0.2,
                                                  1.0 / 6, 1.0 / 7, 0.125, 1.0 / 9, 0.1,  1.0 / 11};
  const ball::V2 inv = Splat2(kInv[k]);
  *mq = m * inv;
  *rq = ball::RadiusUp2(r * inv + Splat2(3 * kU) * ball::Abs2(*mq) + Splat2(2 * kTiny));
}

// s = sin a, c = cos a (sinh, cosh with hyperbolic) on N coefficients:
// taylor.cc's SinCos with the products j a_j of DerivConv formed once
// instead of once a coefficient and series (the same balls, the same
// sums) and the division by k as DivSmall2. The two sums of coefficient k,
// sum_j j a_j c_(k-j) and sum_j j a_j s_(k-j), run in the two lanes of a
// V2, and so do their Dot::Result (DotRadius2) and DivSmall2: each lane
// does the scalar operations in their order (RadiusUp2 has RadiusUp's
// bits), so the balls are those of two Dots (the same bits). For the ENCLOSED passes'
// lengths 7 and 8, LA, the operand's length, is a template argument: the
// loops unroll and the recurrence's values stay in registers (it is a
// chain of dependent sums: latency, not instruction count, sets its
// time). LA = 0: the length `la` at run time (the other lengths).
template <int N, int LA>
void SinCosT(const PolySeries& a, int la, bool hyperbolic, PolySeries* s, PolySeries* c,
             std::array<double, 3>* memo) {
  using ball::Splat2;
  using ball::V2;
  typedef long long I2 __attribute__((vector_size(16)));
  const Ball a0{a.m[0], a.r[0]};
  Ball s0, c0;
  if (hyperbolic) {
    s0 = ball::FromInterval(interval::Sinh(ball::ToInterval(a0)));
    c0 = ball::FromInterval(interval::Cosh(ball::ToInterval(a0)));
  } else if (a0.r <= ball::kSinCosTaylorRadius && std::isfinite(a0.m)) {
    // taylor.cc's SinCos's leads (ball::SinCos), ::sincos's values kept
    // with their argument's bits (memo: argument, sin, cos): the pass over
    // the piece meets the centre pass's argument again (the same
    // midpoints), and the same argument gives the same values.
    if (std::bit_cast<uint64_t>((*memo)[0]) != std::bit_cast<uint64_t>(a0.m)) {
      ::sincos(a0.m, &(*memo)[1], &(*memo)[2]);
      (*memo)[0] = a0.m;
    }
    ball::SinCosFrom(a0, (*memo)[1], (*memo)[2], &s0, &c0);
  } else {
    ball::SinCos(a0, &s0, &c0);
  }
  s->m[0] = s0.m;
  s->r[0] = s0.r;
  c->m[0] = c0.m;
  c->r[0] = c0.r;
  // Only the terms j < len (a_j = 0 exactly from len on: no term, and no
  // subnormal radius from scaling a zero, which would cost a microcode
  // assist per operation on it).
  const int len = LA > 0 ? LA : std::clamp(la, 1, N);
  V2 jam[N] = {}, jar[N] = {};  // j a_j, midpoint and radius, in both lanes
#pragma GCC unroll 16
  for (int j = 1; j < len; ++j) {
    const Ball ja = ball::Scale(Ball{a.m[j], a.r[j]}, static_cast<double>(j));
    jam[j] = Splat2(ja.m);
    jar[j] = Splat2(ja.r);
  }
  // {c_k, s_k}: lane 0 feeds sin's sum, lane 1 cos's.
  V2 ym[N], yr[N];
  ym[0] = V2{c0.m, s0.m};
  yr[0] = V2{c0.r, s0.r};
  // The cos lane's sign (trigonometric: c_k = -d).
  const I2 flip = {0, hyperbolic ? 0 : static_cast<long long>(0x8000000000000000ULL)};
#pragma GCC unroll 16
  for (int k = 1; k < N; ++k) {
    V2 m = Splat2(0), abs = m, r = m;
    const int top = k < len - 1 ? k : len - 1;
#pragma GCC unroll 16
    for (int j = 1; j <= top; ++j) {
      const V2 y_m = ym[k - j], y_r = yr[k - j];
      const V2 p = jam[j] * y_m;
      m += p;
      abs += ball::Abs2(p);
      r += ball::Abs2(jam[j]) * y_r + jar[j] * (ball::Abs2(y_m) + y_r);
    }
    // Dot::Result, then DivSmall2, both lanes.
    const V2 rad = ball::DotRadius2(r, abs, top > 0 ? top : 0);
    V2 mq, rq;
    DivSmall2(m, rad, k, &mq, &rq);
    mq = reinterpret_cast<V2>(reinterpret_cast<I2>(mq) ^ flip);
    s->m[k] = mq[0];
    s->r[k] = rq[0];
    c->m[k] = mq[1];
    c->r[k] = rq[1];
    ym[k] = V2{mq[1], mq[0]};
    yr[k] = V2{rq[1], rq[0]};
  }
  s->len = c->len = N;
}

template <int N, int... L>
constexpr auto SinCosTable(std::integer_sequence<int, L...>) {
  using Kernel =
      void (*)(const PolySeries&, int, bool, PolySeries*, PolySeries*, std::array<double, 3>*);
  return std::array<Kernel, sizeof...(L)>{&SinCosT<N, L + 1>...};
}

template <int N>
void SinCosKernel(const PolySeries& a, int la, bool hyperbolic, PolySeries* s, PolySeries* c,
                  std::array<double, 3>* memo) {
  if constexpr (N == 7 || N == 8) {
    // Lengths from N on have the same terms (j < N).
    static constexpr auto kTable = SinCosTable<N>(std::make_integer_sequence<int, N>{});
    kTable[static_cast<size_t>(std::clamp(la, 1, N) - 1)](a, la, hyperbolic, s, c, memo);
  } else {
    SinCosT<N, 0>(a, la, hyperbolic, s, c, memo);
  }
}

void ToSeries(const PolySeries& p, int n, Series* s) {
  for (int k = 0; k < n; ++k) s->c[k] = k < p.len ? Ball{p.m[k], p.r[k]} : Ball{};
}

// ---- The two passes of a piece at once (Program::EvaluatePair) ----------
// Each kernel below takes a node's operands in both passes, the piece's
// (length N: a, b) and the centre's (length NC < N: ac, bc), whose
// midpoints are the same in every lane below the centre's length, and
// writes both results (c, cc) with the bits of the single-pass kernels
// above at N and at NC: the midpoints computed once (the same operations
// on the same values), each pass's radii as its own kernel computes them,
// in its order. A centre series' length is min(the piece's, NC) at every
// node (every step's length is a min with the pass length of a function
// of its operands' that min commutes with), and its lanes from NC on are
// not part of it (they may hold the piece's).

template <int N, int NC>
void NegPair(const PolySeries& a, const PolySeries& ac, PolySeries* c, PolySeries* cc) {
#pragma GCC unroll 12
  for (int k = 0; k < N; ++k) {
    c->m[k] = cc->m[k] = k < a.len ? -a.m[k] : 0.0;
    c->r[k] = k < a.len ? a.r[k] : 0.0;
    cc->r[k] = k < a.len ? ac.r[k] : 0.0;
  }
  c->len = a.len;
  cc->len = std::min(a.len, NC);
}

template <int N, int NC>
void AddSubPair(const PolySeries& a, const PolySeries& ac, const PolySeries& b,
                const PolySeries& bc, bool sub, PolySeries* c, PolySeries* cc) {
  const int la = a.len, lb = b.len, common = std::min(la, lb);
  for (int k = 0; k < common; ++k) {
    const double m = sub ? a.m[k] - b.m[k] : a.m[k] + b.m[k];
    c->m[k] = cc->m[k] = m;
    c->r[k] = ball::RadiusUp(a.r[k] + b.r[k] + kU * std::fabs(m));
    cc->r[k] = ball::RadiusUp(ac.r[k] + bc.r[k] + kU * std::fabs(m));
  }
  if (la >= lb) {
#pragma GCC unroll 12
    for (int k = 0; k < N; ++k) {
      if (k >= common) {
        c->m[k] = cc->m[k] = a.m[k];
        c->r[k] = a.r[k];
        cc->r[k] = ac.r[k];
      }
    }
  } else {
    const double sign = sub ? -1.0 : 1.0;
#pragma GCC unroll 12
    for (int k = 0; k < N; ++k) {
      if (k >= common) {
        c->m[k] = cc->m[k] = k < lb ? sign * b.m[k] : 0.0;
        c->r[k] = b.r[k];
        cc->r[k] = bc.r[k];
      }
    }
  }
  c->len = std::max(la, lb);
  cc->len = std::min(c->len, NC);
}

// ScaleBall in both passes: s times k's constant term.
template <int N, int NC>
void ScaleBallPair(const PolySeries& s, const PolySeries& sc, const PolySeries& k,
                   const PolySeries& kc, PolySeries* c, PolySeries* cc) {
  const Ball f{k.m[0], k.r[0]}, fc{kc.m[0], kc.r[0]};
  const int ls = std::min(s.len, N);
  for (int j = 0; j < ls; ++j) {
    const Ball x = Ball{s.m[j], s.r[j]} * f, xc = Ball{s.m[j], sc.r[j]} * fc;
    c->m[j] = cc->m[j] = x.m;
    c->r[j] = x.r;
    cc->r[j] = xc.r;
  }
  for (int j = ls; j < N; ++j) c->m[j] = c->r[j] = cc->m[j] = cc->r[j] = 0;
  c->len = ls;
  cc->len = std::min(ls, NC);
}

// MulTruncatedT<LA, LB, N> and MulTruncatedT<min(LA, NC), min(LB, NC), NC>:
// the centre's terms are the piece's of coefficients below its LC (the
// same i order), with its own gamma and majorants.
template <int LA, int LB, int N, int NC>
void MulPairT(const PolySeries& a, const PolySeries& ac, const PolySeries& b, const PolySeries& bc,
              PolySeries* c, PolySeries* cc) {
  constexpr int LC = LA + LB - 1 < N ? LA + LB - 1 : N;
  constexpr int LAC = LA < NC ? LA : NC, LBC = LB < NC ? LB : NC;
  constexpr int LCC = LAC + LBC - 1 < NC ? LAC + LBC - 1 : NC;
  constexpr int n = LA < LB ? LA : LB, nc = LAC < LBC ? LAC : LBC;
  constexpr double gamma = n * kU * (1 + 0x1p-40), gammac = nc * kU * (1 + 0x1p-40);
  double v[LB], z[LB], vc[LB], zc[LB];
#pragma GCC unroll 8
  for (int j = 0; j < LB; ++j) {
    const double p = std::fabs(b.m[j]);
    v[j] = b.r[j] + gamma * p;
    z[j] = p + b.r[j];
    vc[j] = bc.r[j] + gammac * p;
    zc[j] = p + bc.r[j];
  }
  double m[LC] = {}, sp[LC] = {}, sc[LC] = {};
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
    const double am = a.m[i], u = std::fabs(am), w = a.r[i], wc = ac.r[i];
#pragma GCC unroll 8
    for (int j = 0; j < LB; ++j) {
      if (i + j < LC) {
        m[i + j] += am * b.m[j];
        sp[i + j] += u * v[j] + w * z[j];
      }
      if (i + j < LCC) sc[i + j] += u * vc[j] + wc * zc[j];
    }
  }
  constexpr double nt = 2 * n * kTiny, ntc = 2 * nc * kTiny;
#pragma GCC unroll 8
  for (int k = 0; k < N; ++k) {
    c->m[k] = cc->m[k] = k < LC ? m[k] : 0.0;
    c->r[k] = k < LC ? ball::RadiusUp(sp[k] + nt) : 0.0;
    cc->r[k] = k < LCC ? ball::RadiusUp(sc[k] + ntc) : 0.0;
  }
  c->len = LC;
  cc->len = LCC;
}

// SquareTruncatedT<LA, N> and SquareTruncatedT<min(LA, NC), NC> (lanes:
// the midpoints, the piece's radii, the centre's; the fourth unused).
template <int LA, int N, int NC>
void SquarePairT(const PolySeries& a, const PolySeries& ac, const PolySeries&, const PolySeries&,
                 PolySeries* c, PolySeries* cc) {
  typedef double V4 __attribute__((vector_size(32)));
  constexpr int LC = 2 * LA - 1 < N ? 2 * LA - 1 : N;
  constexpr int LAC = LA < NC ? LA : NC;
  constexpr int LCC = 2 * LAC - 1 < NC ? 2 * LAC - 1 : NC;
  constexpr double gamma = LA * kU * (1 + 0x1p-40), gammac = LAC * kU * (1 + 0x1p-40);
  V4 x[LA], y[LA];
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
    const double p = std::fabs(a.m[i]), r = a.r[i], rc = ac.r[i];
    x[i] = V4{a.m[i], 2 * p + r, 2 * p + rc, 0};
    y[i] = V4{a.m[i], r + gamma * p, rc + gammac * p, 0};
  }
  V4 acc[LC];
#pragma GCC unroll 8
  for (int k = 0; k < LC; ++k) acc[k] = V4{0, 0, 0, 0};
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < LA; ++j) {
      if (i + j < LC) acc[i + j] += x[i] * y[j];
    }
  }
  constexpr double nt = 2 * LA * kTiny, ntc = 2 * LAC * kTiny;
#pragma GCC unroll 8
  for (int k = 0; k < N; ++k) {
    c->m[k] = cc->m[k] = k < LC ? acc[k][0] : 0.0;
    c->r[k] = k < LC ? ball::RadiusUp(acc[k][1] + nt) : 0.0;
    cc->r[k] = k < LCC ? ball::RadiusUp(acc[k][2] + ntc) : 0.0;
  }
  c->len = LC;
  cc->len = LCC;
}

template <int N, int NC, int... I>
constexpr auto MulPairTable(std::integer_sequence<int, I...>) {
  return std::array<PolyPairKernel, sizeof...(I)>{&MulPairT<I / N + 1, I % N + 1, N, NC>...};
}
template <int N, int NC, int... I>
constexpr auto SquarePairTable(std::integer_sequence<int, I...>) {
  return std::array<PolyPairKernel, sizeof...(I)>{&SquarePairT<I + 1, N, NC>...};
}

// Product<N> and Product<NC> of the same operands (two series of at least
// two coefficients; a square when &a == &b): every kernel they dispatch to
// (kMulTable, kWideMulTable, kSquareTable, kWideSquareTable and the AVX2
// squares, which have SquareTruncatedT's bits) is MulTruncatedT or
// SquareTruncatedT.
// squares: per base length, a kernel to use instead (null: SquarePairT).
template <int N, int NC>
void ProductPair(const PolySeries& a, const PolySeries& ac, const PolySeries& b,
                 const PolySeries& bc, PolySeries* c, PolySeries* cc,
                 const PolyPairKernel* squares) {
  static_assert(N <= kPolyLanes && NC < N);
  static constexpr auto kMul = MulPairTable<N, NC>(std::make_integer_sequence<int, N * N>{});
  static constexpr auto kSquare = SquarePairTable<N, NC>(std::make_integer_sequence<int, N>{});
  if (&a == &b) {
    const size_t l = static_cast<size_t>(a.len - 1);
    return (squares[l] ? squares[l] : kSquare[l])(a, ac, b, bc, c, cc);
  }
  kMul[static_cast<size_t>((a.len - 1) * N + (b.len - 1))](a, ac, b, bc, c, cc);
}

// SinCosT<N, LA> and SinCosT<NC, min(LA, NC)> (sin and cos only) where both
// leads take ::sincos's values (narrow balls, ball::SinCosFrom: the same
// midpoints): one recurrence of the midpoints, each pass's radii beside
// it (SinCosPair below says when).
template <int N, int NC, int LA>
void SinCosPairT(const PolySeries& a, const PolySeries& ac, PolySeries* s, PolySeries* sc,
                 PolySeries* c, PolySeries* cc, const double* sincos) {
  using ball::Splat2;
  using ball::V2;
  typedef long long I2 __attribute__((vector_size(16)));
  constexpr int LAC = LA < NC ? LA : NC;
  Ball s0, c0, s0c, c0c;
  ball::SinCosFrom(Ball{a.m[0], a.r[0]}, sincos[0], sincos[1], &s0, &c0);
  ball::SinCosFrom(Ball{a.m[0], ac.r[0]}, sincos[0], sincos[1], &s0c, &c0c);
  s->m[0] = sc->m[0] = s0.m;
  c->m[0] = cc->m[0] = c0.m;
  s->r[0] = s0.r;
  c->r[0] = c0.r;
  sc->r[0] = s0c.r;
  cc->r[0] = c0c.r;
  V2 jam[N] = {}, jar[N] = {}, jarc[N] = {};
#pragma GCC unroll 16
  for (int j = 1; j < LA; ++j) {
    const Ball ja = ball::Scale(Ball{a.m[j], a.r[j]}, static_cast<double>(j));
    const Ball jac = ball::Scale(Ball{a.m[j], ac.r[j]}, static_cast<double>(j));
    jam[j] = Splat2(ja.m);
    jar[j] = Splat2(ja.r);
    jarc[j] = Splat2(jac.r);
  }
  V2 ym[N], yr[N], yrc[N];
  ym[0] = V2{c0.m, s0.m};
  yr[0] = V2{c0.r, s0.r};
  yrc[0] = V2{c0c.r, s0c.r};
  const I2 flip = {0, static_cast<long long>(0x8000000000000000ULL)};
#pragma GCC unroll 16
  for (int k = 1; k < N; ++k) {
    V2 m = Splat2(0), abs = m, r = m, rc = m;
    const int top = k < LA - 1 ? k : LA - 1;
    const int topc = k < LAC - 1 ? k : LAC - 1;
#pragma GCC unroll 16
    for (int j = 1; j <= top; ++j) {
      const V2 y_m = ym[k - j];
      const V2 p = jam[j] * y_m;
      m += p;
      abs += ball::Abs2(p);
      const V2 aj = ball::Abs2(jam[j]), aym = ball::Abs2(y_m);
      r += aj * yr[k - j] + jar[j] * (aym + yr[k - j]);
      if (k < NC) rc += aj * yrc[k - j] + jarc[j] * (aym + yrc[k - j]);
    }
    const V2 rad = ball::DotRadius2(r, abs, top > 0 ? top : 0);
    V2 mq, rq;
    DivSmall2(m, rad, k, &mq, &rq);
    mq = reinterpret_cast<V2>(reinterpret_cast<I2>(mq) ^ flip);
    s->m[k] = sc->m[k] = mq[0];
    c->m[k] = cc->m[k] = mq[1];
    s->r[k] = rq[0];
    c->r[k] = rq[1];
    ym[k] = V2{mq[1], mq[0]};
    yr[k] = V2{rq[1], rq[0]};
    if (k < NC) {
      const V2 radc = ball::DotRadius2(rc, abs, topc > 0 ? topc : 0);
      V2 mqc, rqc;
      DivSmall2(m, radc, k, &mqc, &rqc);
      sc->r[k] = rqc[0];
      cc->r[k] = rqc[1];
      yrc[k] = V2{rqc[1], rqc[0]};
    }
  }
  s->len = c->len = N;
  sc->len = cc->len = NC;
}

// SqrtKernel<N> and SqrtKernel<NC> (a's and ac's midpoints the same, so
// are f_0's, SqrtLead's, and every coefficient's): one recurrence of the
// midpoints, each pass's radii in a lane of a V2 (lane 0 the piece's,
// lane 1 the centre's), each lane the scalar Dot's and ball product's
// operations in their order (RadiusUp2 has RadiusUp's bits). Returns
// whether both are enclosed (the centre's coefficients from NC on are not
// its own and are not judged).
template <int N, int NC>
bool SqrtPair(const PolySeries& a, const PolySeries& ac, PolySeries* f, PolySeries* fc) {
  using ball::Splat2;
  using ball::V2;
  const Ball f0 = SqrtLead(Ball{a.m[0], a.r[0]}), f0c = SqrtLead(Ball{a.m[0], ac.r[0]});
  if (!ball::Bounded(f0) || !ball::Bounded(f0c)) return false;
  const Ball inv = Ball{1, 0} / Ball{2 * f0.m, 2 * f0.r};
  const Ball invc = Ball{1, 0} / Ball{2 * f0c.m, 2 * f0c.r};
  if (!ball::Bounded(inv) || !ball::Bounded(invc)) return false;
  const V2 inv_r{inv.r, invc.r};
  const double inv_abs = std::fabs(inv.m);
  double fm[N];
  V2 fr[N];
  fm[0] = f0.m;
  fr[0] = V2{f0.r, f0c.r};
#pragma GCC unroll 16
  for (int k = 1; k < N; ++k) {
    // Dot: AddBall(a_k), Add2(-f_j, f_(k-j)) for 2 j < k, Add(-f_(k/2),
    // f_(k/2)) for k even.
    double m = 0.0 + a.m[k], abs = 0.0 + std::fabs(a.m[k]);  // +0 + x, as Dot's sums
    V2 r = Splat2(0.0) + V2{a.r[k], ac.r[k]};
    int n = 1;
#pragma GCC unroll 16
    for (int j = 1; 2 * j < k; ++j) {
      const double p = 2 * (-fm[j] * fm[k - j]);
      m += p;
      abs += std::fabs(p);
      r += Splat2(2) * (Splat2(std::fabs(fm[j])) * fr[k - j] +
                        fr[j] * (Splat2(std::fabs(fm[k - j])) + fr[k - j]));
      n += 2;
    }
    if (k % 2 == 0) {
      const double x = fm[k / 2], p = -x * x;
      m += p;
      abs += std::fabs(p);
      r += Splat2(std::fabs(x)) * fr[k / 2] + fr[k / 2] * (Splat2(std::fabs(x)) + fr[k / 2]);
      n += 1;
    }
    const V2 dr = ball::DotRadius2(r, Splat2(abs), n);
    // Times inv: ball.h's operator*.
    const double q = m * inv.m;
    fm[k] = q;
    fr[k] = ball::RadiusUp2(Splat2(std::fabs(m)) * inv_r + dr * (Splat2(inv_abs) + inv_r) +
                            Splat2(kU * std::fabs(q)) + Splat2(kTiny));
    if (!std::isfinite(q) || !std::isfinite(fr[k][0]) || (k < NC && !std::isfinite(fr[k][1])))
      return false;
  }
#pragma GCC unroll 16
  for (int k = 0; k < N; ++k) {
    f->m[k] = fc->m[k] = fm[k];
    f->r[k] = fr[k][0];
    fc->r[k] = fr[k][1];
  }
  f->len = N;
  fc->len = NC;
  return true;
}

// SinCosPairT where both leads are narrow (SinCosT's memo: one ::sincos
// for both). Returns false, writing nothing, where a lead is not (an
// interval lead's midpoint depends on its radius): the caller runs both
// kernels.
template <int N, int NC>
bool SinCosPair(const PolySeries& a, const PolySeries& ac, PolySeries* s, PolySeries* sc,
                PolySeries* c, PolySeries* cc, std::array<double, 3>* memo) {
  constexpr double kNarrow = ball::kSinCosTaylorRadius;
  if (!(a.r[0] <= kNarrow) || !(ac.r[0] <= kNarrow) || !std::isfinite(a.m[0])) return false;
  if (std::bit_cast<uint64_t>((*memo)[0]) != std::bit_cast<uint64_t>(a.m[0])) {
    ::sincos(a.m[0], &(*memo)[1], &(*memo)[2]);
    (*memo)[0] = a.m[0];
  }
  using Kernel = void (*)(const PolySeries&, const PolySeries&, PolySeries*, PolySeries*,
                          PolySeries*, PolySeries*, const double*);
  static constexpr auto kTable = []<int... L>(std::integer_sequence<int, L...>) {
    return std::array<Kernel, sizeof...(L)>{&SinCosPairT<N, NC, L + 1>...};
  }
  (std::make_integer_sequence<int, N>{});
  kTable[static_cast<size_t>(std::clamp(a.len, 1, N) - 1)](a, ac, s, sc, c, cc, &(*memo)[1]);
  return true;
}

}  // namespace

Program::Program(const expr::Subgraph& program, PolyIsa isa)
    : program_(&program),
      series_(program.nodes.size()),
      centre_(program.nodes.size()),
      same_(program.nodes.size(), 1),
      bad_(program.nodes.size(), 0),
      root_ok_(program.roots.size(), 0) {
  if (isa != PolyIsa::kBaseline && PolyAvx2Available()) {
    for (int l = 1; l <= 8; ++l) {
      if (l <= 7) square7_[l - 1] = PolySquareTruncatedAvx2(l, 7);
      square8_[l - 1] = PolySquareTruncatedAvx2(l, 8);
      // PolySquarePairAvx2's lengths are these.
      static_assert(kPieceLength == 8 && kCentreLength == 7);
      square_pair_[l - 1] = PolySquarePairAvx2(l);
    }
  }
  using expr::Op;
  for (size_t id = 0; id < program.nodes.size(); ++id) {
    const expr::Subgraph::Node& nd = program.nodes[id];
    const int32_t out = static_cast<int32_t>(id);
    switch (nd.op) {
      case Op::kConst:
        series_[id].m[0] = centre_[id].m[0] = nd.value;
        series_[id].len = centre_[id].len = 1;
        break;
      case Op::kVar: steps_.push_back({Kind::kVar, out, -1, -1, nd.var}); break;
      case Op::kNeg: steps_.push_back({Kind::kNeg, out, nd.a, -1, -1}); break;
      case Op::kAdd: steps_.push_back({Kind::kAdd, out, nd.a, nd.b, -1}); break;
      case Op::kSub: steps_.push_back({Kind::kSub, out, nd.a, nd.b, -1}); break;
      case Op::kMul: steps_.push_back({Kind::kMul, out, nd.a, nd.b, -1}); break;
      case Op::kPow: {
        const expr::Subgraph::Node& e = program.nodes[static_cast<size_t>(nd.b)];
        if (e.op == Op::kConst && e.value == 2) {
          steps_.push_back({Kind::kMul, out, nd.a, nd.a, -1});
        } else {
          steps_.push_back({Kind::kOther, out, nd.a, nd.b, -1});
        }
        break;
      }
      default: steps_.push_back({Kind::kOther, out, nd.a, nd.b, -1}); break;
    }
  }
  // sin and cos (sinh and cosh) of one operand, as mechanisms' joint
  // angles give them: the first step's kernel computes both series (the
  // same bits either asks for), so it writes the second, which is skipped.
  auto complement = [](Op op) {
    switch (op) {
      case Op::kSin: return Op::kCos;
      case Op::kCos: return Op::kSin;
      case Op::kSinh: return Op::kCosh;
      case Op::kCosh: return Op::kSinh;
      default: return op;
    }
  };
  std::unordered_map<int64_t, size_t> first;  // (operand, op) -> its step
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& st = steps_[i];
    if (st.kind != Kind::kOther) continue;
    const Op op = program.nodes[static_cast<size_t>(st.out)].op;
    if (complement(op) == op) continue;
    auto key = [&](Op o) { return int64_t{st.a} * 1024 + static_cast<int64_t>(o); };
    auto it = first.find(key(complement(op)));
    if (it != first.end() && steps_[it->second].partner < 0) {
      steps_[it->second].partner = st.out;
      st.kind = Kind::kPartner;
    } else {
      first.emplace(key(op), i);
    }
  }
  // No argument yet (a NaN's bits, which no finite argument has).
  const double none = std::numeric_limits<double>::quiet_NaN();
  sincos_memo_.assign(steps_.size(), {none, 0, 0});
}

bool Program::Evaluate(const Series* vars, int n, const int* var_len) {
  // One instance per length, its loops bounded at compile time.
  switch (n) {
    case 1: return Run<1>(vars, var_len);
    case 2: return Run<2>(vars, var_len);
    case 3: return Run<3>(vars, var_len);
    case 4: return Run<4>(vars, var_len);
    case 5: return Run<5>(vars, var_len);
    case 6: return Run<6>(vars, var_len);
    case 7: return Run<7>(vars, var_len);
    case 8: return Run<8>(vars, var_len);
    case 9: return Run<9>(vars, var_len);
    case 10: return Run<10>(vars, var_len);
    default: return Run<kMaxLength>(vars, var_len);
  }
}

template <int N>
bool Program::Single(const Step& st, PolySeries* s, PolySeries* spare) {
  const size_t o = static_cast<size_t>(st.out);
  PolySeries& c = s[o];
  const PolySeries& a = s[static_cast<size_t>(st.a)];
  switch (st.kind) {
    case Kind::kVar:
    case Kind::kPartner: return true;  // the callers' own
    case Kind::kNeg:
      for (int k = 0; k < a.len; ++k) {
        c.m[k] = -a.m[k];
        c.r[k] = a.r[k];
      }
      for (int k = a.len; k < N; ++k) c.m[k] = c.r[k] = 0;
      c.len = a.len;
      return true;
    case Kind::kAdd:
    case Kind::kSub: {
      // ball.h's + and - (taylor::Evaluator's bits); beyond an operand's
      // length the other's balls are copied (negated), exact.
      const PolySeries& b = s[static_cast<size_t>(st.b)];
      const int la = a.len, lb = b.len, common = std::min(la, lb);
      const double sign = st.kind == Kind::kAdd ? 1.0 : -1.0;
      for (int k = 0; k < common; ++k) {
        const double m = st.kind == Kind::kAdd ? a.m[k] + b.m[k] : a.m[k] - b.m[k];
        c.m[k] = m;
        c.r[k] = ball::RadiusUp(a.r[k] + b.r[k] + kU * std::fabs(m));
      }
      // From `common` on, the longer operand's balls (negated) and then
      // its zeros (+0: a series' lanes from its length to N are), each
      // lane below N written once (unrolled: no loop bound or memset at
      // run time).
      if (la >= lb) {
#pragma GCC unroll 12
        for (int k = 0; k < N; ++k) {
          if (k >= common) {
            c.m[k] = a.m[k];
            c.r[k] = a.r[k];
          }
        }
      } else {
#pragma GCC unroll 12
        for (int k = 0; k < N; ++k) {
          if (k >= common) {
            c.m[k] = k < lb ? sign * b.m[k] : 0.0;
            c.r[k] = b.r[k];
          }
        }
      }
      c.len = std::max(la, lb);
      return true;
    }
    case Kind::kMul: {
      const PolySeries& b = s[static_cast<size_t>(st.b)];
      if (a.len == 1 || b.len == 1) {
        // Times a series' constant term (taylor::Mul's operand order).
        const PolySeries& x = a.len == 1 ? b : a;
        const PolySeries& k = a.len == 1 ? a : b;
        ScaleBall(x, k.m[0], k.r[0], N, &c);
      } else {
        Product<N>(a, b, &c, N == 7 ? square7_ : N == 8 ? square8_ : nullptr);
      }
      return true;
    }
    case Kind::kOther: {
      const expr::Subgraph::Node& nd = program_->nodes[o];
      using expr::Op;
      // sqrt and sin/cos (sinh/cosh) read and write the series in place;
      // the complement of a sin or cos goes to its partner's series (as
      // its own step would have written it: sin and cos cannot fail;
      // length N) or, with none, to spare.
      if (nd.op == Op::kSqrt) return SqrtKernel<N>(a, &c);
      const bool sine = nd.op == Op::kSin || nd.op == Op::kSinh;
      if (sine || nd.op == Op::kCos || nd.op == Op::kCosh) {
        const bool hyperbolic = nd.op == Op::kSinh || nd.op == Op::kCosh;
        PolySeries* other = st.partner >= 0 ? &s[static_cast<size_t>(st.partner)] : spare;
        SinCosKernel<N>(a, a.len, hyperbolic, sine ? &c : other, sine ? other : &c,
                        &sincos_memo_[static_cast<size_t>(&st - steps_.data())]);
        return true;
      }
      // Every other operation: taylor::Evaluator's rule on taylor::Series.
      ToSeries(a, N, &in_a_);
      int lb = 0;
      if (st.b >= 0) {
        const PolySeries& b = s[static_cast<size_t>(st.b)];
        ToSeries(b, N, &in_b_);
        lb = b.len;
      }
      int len = N;
      if (!EvalOperation(*program_, nd, &in_a_, a.len, st.b >= 0 ? &in_b_ : nullptr, lb, N, &out_,
                         &len, tmp_)) {
        return false;
      }
      len = std::max(1, std::min(len, N));
      for (int k = 0; k < len; ++k) {
        c.m[k] = out_.c[k].m;
        c.r[k] = out_.c[k].r;
      }
      for (int k = len; k < N; ++k) c.m[k] = c.r[k] = 0;
      c.len = len;
      return true;
    }
  }
  return true;
}

namespace {

// A variable's series of a pass of length N (every lane below N written,
// selected: no loop bound at run time).
template <int N>
void SetVar(const Series& x, int var_len, PolySeries* c) {
  const int l = std::max(1, std::min(N, var_len));
#pragma GCC unroll 12
  for (int k = 0; k < N; ++k) {
    c->m[k] = k < l ? x.c[k].m : 0.0;
    c->r[k] = k < l ? x.c[k].r : 0.0;
  }
  c->len = l;
}

bool Finite(const PolySeries& c) { return std::isfinite(c.m[0]) && std::isfinite(c.r[0]); }

// Whether a node's piece series c and centre series cc (a pass of length
// NC) have the same midpoints, bit for bit.
template <int NC>
bool SameMidpoints(const PolySeries& c, const PolySeries& cc) {
  if (std::min(c.len, NC) != cc.len) return false;
  for (int k = 0; k < cc.len; ++k)
    if (std::bit_cast<uint64_t>(c.m[k]) != std::bit_cast<uint64_t>(cc.m[k])) return false;
  return true;
}

}  // namespace

template <int N>
bool Program::Run(const Series* vars, const int* var_len) {
  for (const Step& st : steps_) {
    const size_t o = static_cast<size_t>(st.out);
    PolySeries& c = series_[o];
    if (st.kind == Kind::kPartner) continue;  // written with its complement
    if (st.kind == Kind::kVar) {
      SetVar<N>(vars[st.var], var_len[st.var], &c);
      continue;
    }
    if (bad_[static_cast<size_t>(st.a)] || (st.b >= 0 && bad_[static_cast<size_t>(st.b)])) {
      bad_[o] = 1;
      if (st.partner >= 0) bad_[static_cast<size_t>(st.partner)] = 1;
      continue;
    }
    const bool ok = Single<N>(st, series_.data(), &spare_);
    bad_[o] = !(ok && Finite(c));
    if (st.partner >= 0)
      bad_[static_cast<size_t>(st.partner)] = !Finite(series_[static_cast<size_t>(st.partner)]);
  }
  return JudgeRoots();
}

bool Program::EvaluatePair(const Series* centre, const Series* piece, const int* var_len) {
  return RunPair(centre, piece, var_len);
}

bool Program::RunPair(const Series* centre, const Series* piece, const int* var_len) {
  constexpr int N = kPieceLength, NC = kCentreLength;
  PolySeries* ps = series_.data();
  PolySeries* cs = centre_.data();
  for (const Step& st : steps_) {
    const size_t o = static_cast<size_t>(st.out);
    PolySeries& c = ps[o];
    PolySeries& cc = cs[o];
    if (st.kind == Kind::kPartner) continue;  // written with its complement
    if (st.kind == Kind::kVar) {
      const Series& xc = centre[st.var];
      const Series& xp = piece[st.var];
      SetVar<NC>(xc, var_len[st.var], &cc);
      SetVar<N>(xp, var_len[st.var], &c);
      same_[o] = SameMidpoints<NC>(c, cc);
      continue;
    }
    const size_t ia = static_cast<size_t>(st.a);
    const size_t ib = static_cast<size_t>(st.b);
    if (bad_[ia] || (st.b >= 0 && bad_[ib])) {
      bad_[o] = 1;
      if (st.partner >= 0) bad_[static_cast<size_t>(st.partner)] = 1;
      continue;
    }
    const bool same = same_[ia] && (st.b < 0 || same_[ib]);
    bool ok = true, fused = false;
    if (same) {
      const PolySeries &a = ps[ia], &ac = cs[ia];
      switch (st.kind) {
        case Kind::kNeg:
          NegPair<N, NC>(a, ac, &c, &cc);
          fused = true;
          break;
        case Kind::kAdd:
        case Kind::kSub:
          AddSubPair<N, NC>(a, ac, ps[ib], cs[ib], st.kind == Kind::kSub, &c, &cc);
          fused = true;
          break;
        case Kind::kMul: {
          const PolySeries &b = ps[ib], &bc = cs[ib];
          if (a.len == 1 || b.len == 1) {
            const bool a1 = a.len == 1;
            ScaleBallPair<N, NC>(a1 ? b : a, a1 ? bc : ac, a1 ? a : b, a1 ? ac : bc, &c, &cc);
          } else {
            ProductPair<N, NC>(a, ac, b, bc, &c, &cc, square_pair_);
          }
          fused = true;
          break;
        }
        case Kind::kOther: {
          const expr::Op op = program_->nodes[o].op;
          if (op == expr::Op::kSqrt) {
            // Both or neither enclosed (SqrtPair writes nothing on a
            // failure: a's own kernels then tell which).
            fused = SqrtPair<N, NC>(a, ac, &c, &cc);
            break;
          }
          const bool sine = op == expr::Op::kSin;
          if (sine || op == expr::Op::kCos) {
            PolySeries* other = st.partner >= 0 ? &ps[static_cast<size_t>(st.partner)] : &spare_;
            PolySeries* other_c =
                st.partner >= 0 ? &cs[static_cast<size_t>(st.partner)] : &centre_spare_;
            fused = SinCosPair<N, NC>(a, ac, sine ? &c : other, sine ? &cc : other_c,
                                      sine ? other : &c, sine ? other_c : &cc,
                                      &sincos_memo_[static_cast<size_t>(&st - steps_.data())]);
          }
          break;
        }
        default: break;
      }
    }
    const size_t p = static_cast<size_t>(st.partner);
    if (fused) {
      same_[o] = 1;
      if (st.partner >= 0) same_[p] = 1;
    } else {
      // Each pass on its own series (the centre's first, as Evaluate's
      // two calls run), then whether the results' midpoints agree.
      ok = Single<NC>(st, cs, &centre_spare_);
      ok = Single<N>(st, ps, &spare_) && ok;
      same_[o] = ok && SameMidpoints<NC>(c, cc);
      if (st.partner >= 0) same_[p] = SameMidpoints<NC>(ps[p], cs[p]);
    }
    bad_[o] = !(ok && Finite(c) && Finite(cc));
    if (st.partner >= 0) bad_[p] = !(Finite(ps[p]) && Finite(cs[p]));
  }
  return JudgeRoots();
}

bool Program::JudgeRoots() {
  bool all = true;
  for (size_t i = 0; i < root_ok_.size(); ++i) {
    const bool ok = !bad_[static_cast<size_t>(program_->roots[i])];
    root_ok_[i] = ok;
    all = all && ok;
  }
  return all;
}

int64_t Program::heap_bytes() const {
  return HeapBytesOf(steps_, series_, centre_, same_, bad_, root_ok_, sincos_memo_);
}

}  // namespace tether::taylor
