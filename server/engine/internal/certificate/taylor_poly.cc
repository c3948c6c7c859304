#include "engine/internal/certificate/taylor_poly.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/base/interval.h"

namespace tether::taylor {

using ball::Ball;

// ---------------------------------------------------------------------------
// PolyEvaluator.

namespace {

using ball::kTiny;
using ball::kU;
// An upper bound of a nonnegative expression of a few RN operations on
// nonnegative numbers (the margin 2^-40 covers thousands of roundings).
inline double Up(double x) { return ball::RadiusUp(x); }

bool PolyNodeSupported(const expr::Subgraph& p, const expr::Subgraph::Node& nd) {
  using expr::Op;
  switch (nd.op) {
    case Op::kConst:
    case Op::kVar:
    case Op::kNeg:
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul: return true;
    case Op::kDiv: {
      const expr::Subgraph::Node& b = p.nodes[static_cast<size_t>(nd.b)];
      return b.op == Op::kConst && b.value != 0 && std::isfinite(b.value);
    }
    case Op::kPow: {
      const expr::Subgraph::Node& e = p.nodes[static_cast<size_t>(nd.b)];
      return e.op == Op::kConst && e.value >= 0 && e.value <= 64 && e.value == std::trunc(e.value);
    }
    default: return false;
  }
}

// Every node's length (coefficients up to the last that may be nonzero),
// or empty when a node is not supported or too long.
std::vector<int> PolyLengths(const expr::Subgraph& p, std::span<const int> var_len) {
  using expr::Op;
  std::vector<int> len(p.nodes.size(), 0);
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    const expr::Subgraph::Node& nd = p.nodes[id];
    if (!PolyNodeSupported(p, nd)) return {};
    const int la = nd.a >= 0 ? len[static_cast<size_t>(nd.a)] : 0;
    const int lb = nd.b >= 0 ? len[static_cast<size_t>(nd.b)] : 0;
    int l = 1;
    switch (nd.op) {
      case Op::kVar: l = var_len[static_cast<size_t>(nd.var)]; break;
      case Op::kNeg:
      case Op::kDiv: l = la; break;
      case Op::kAdd:
      case Op::kSub: l = std::max(la, lb); break;
      case Op::kMul: l = la + lb - 1; break;
      case Op::kPow: {
        const long e = static_cast<long>(p.nodes[static_cast<size_t>(nd.b)].value);
        l = e == 0 ? 1 : static_cast<int>(std::min<long>(kMaxLength + 1, (la - 1) * e + 1));
        break;
      }
      default: break;
    }
    if (l < 1 || l > kMaxLength) return {};
    len[id] = l;
  }
  return len;
}

void PolyConstant(double v, double r, PolySeries* c) {
  *c = PolySeries{};
  c->m[0] = v;
  c->r[0] = r;
  c->len = 1;
}

// The product's bound. With P = |m|, R = r of the operands, for x_i in
// a's balls and y_j in b's:
//   |sum_{i+j=k} x_i y_j - fl(sum ma_i mb_j)|
//     <= sum (Pa_i Rb_j + Ra_i (Pb_j + Rb_j)) + gamma_n sum Pa_i Pb_j + n kTiny
// (Higham's recursive summation with underflow, in any order of the terms;
// n the most terms of a coefficient, the shorter length)
//     =  sum Pa_i (Rb_j + gamma_n Pb_j) + sum Ra_i (Pb_j + Rb_j) + n kTiny,
// and for a square (x = y) by symmetry sum (2 P_i + R_i)(R_j + gamma_n P_j)
// covers it (PolySquareT): one convolution of nonnegative majorants (two
// for a general product), computed in RN and rounded up.
template <int LA, int LB>
void PolyMulT(const PolySeries& a, const PolySeries& b, PolySeries* c) {
  constexpr int LC = LA + LB - 1, n = LA < LB ? LA : LB;
  constexpr double gamma = n * kU * (1 + 0x1p-40);  // gamma_n, n u <= 2^-41
  double am[LA], bm[LB], u[LA], v[LB], w[LA], z[LB];
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
    am[i] = a.m[i];
    u[i] = std::fabs(a.m[i]);
    w[i] = a.r[i];
  }
#pragma GCC unroll 8
  for (int j = 0; j < LB; ++j) {
    bm[j] = b.m[j];
    const double p = std::fabs(b.m[j]);
    v[j] = b.r[j] + gamma * p;
    z[j] = p + b.r[j];
  }
  double m[LC] = {}, s[LC] = {};
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < LB; ++j) {
      m[i + j] += am[i] * bm[j];
      s[i + j] += u[i] * v[j] + w[i] * z[j];
    }
  }
  constexpr double nt = 2 * n * kTiny;
#pragma GCC unroll 12
  for (int k = 0; k < LC; ++k) {
    c->m[k] = m[k];
    c->r[k] = Up(s[k] + nt);
  }
#pragma GCC unroll 12
  for (int k = LC; k < kPolyLanes; ++k) c->m[k] = c->r[k] = 0;
  c->len = LC;
}
// The square a^2 with the square's bound above: the midpoints are the
// full convolution sum_{i+j=k} a_i a_j (a_i a_j and a_j a_i as two terms:
// at most n = LA terms a coefficient, as for PolyMulT<LA, LA>) and the
// radii the convolution of u = 2 P + R against v = R + gamma_n P. Both in
// one pass of two-lane products, lane 0 a_i a_j and lane 1 u_i v_j (the
// operands interleaved as (a_i, u_i) and (a_j, v_j)): a third fewer
// operations than two scalar convolutions.
//
// With an addend z (kAdd: c = z + a^2, z of length at most LC), z_k's
// midpoint is one more term of coefficient k's sum (n = LA + 1 terms):
// the rounding is at most gamma_{LA+1} (|mz_k| + sum P_i P_j), so lane 1
// starts at Rz_k + gamma_{LA+1} |mz_k| and v uses gamma_{LA+1}; the
// exact coefficient differs from the computed one by at most Rz_k plus
// the square's bound.
//
// With a subtrahend b (kDiff: the square of a - b), the base's balls are
// those of kSub's step, computed on the fly: m = fl(ma - mb),
// r = RadiusUp(ra + rb + u |m|).
template <int LA, bool kAdd, bool kDiff>
void PolySquareT(const PolySeries& a, const PolySeries* b, const PolySeries* z, PolySeries* c) {
  using ball::Load2;
  using ball::Splat2;
  using ball::Store2;
  using ball::V2;
  constexpr int LC = 2 * LA - 1, n = kAdd ? LA + 1 : LA;
  constexpr int LP = LA + LA % 2;                   // a's lanes read, in pairs (a's padding is 0)
  constexpr double gamma = n * kU * (1 + 0x1p-40);  // gamma_n, n u <= 2^-41
  V2 x[LP], y[LP];
#pragma GCC unroll 8
  for (int i = 0; i < LP; i += 2) {
    V2 m = Load2(&a.m[i]), r = Load2(&a.r[i]);
    if constexpr (kDiff) {
      m = m - Load2(&b->m[i]);
      r = ball::RadiusUp2(r + Load2(&b->r[i]) + Splat2(kU) * ball::Abs2(m));
    }
    const V2 p = ball::Abs2(m);
    const V2 u = Splat2(2) * p + r, v = r + Splat2(gamma) * p;
    x[i] = __builtin_shufflevector(m, u, 0, 2);
    x[i + 1] = __builtin_shufflevector(m, u, 1, 3);
    y[i] = __builtin_shufflevector(m, v, 0, 2);
    y[i + 1] = __builtin_shufflevector(m, v, 1, 3);
  }
  V2 acc[LC + 1];
  if constexpr (kAdd) {
    // (mz_k, Rz_k + gamma |mz_k|), two coefficients at a time (z's lanes
    // from LC on are 0 and not read back).
#pragma GCC unroll 6
    for (int k = 0; k < LC; k += 2) {
      const V2 m = Load2(&z->m[k]), r = Load2(&z->r[k]) + Splat2(gamma) * ball::Abs2(m);
      acc[k] = __builtin_shufflevector(m, r, 0, 2);
      acc[k + 1] = __builtin_shufflevector(m, r, 1, 3);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < LA; ++j) {
      if (!kAdd && (i == 0 || j == LA - 1)) {
        acc[i + j] = x[i] * y[j];  // the first term of coefficient i + j
      } else {
        acc[i + j] += x[i] * y[j];
      }
    }
  }
  acc[LC] = V2{0, 0};
  // Lane 0 unchanged (x * 1 + -0 is x); lane 1 RadiusUp(s) + (2n + 1) kTiny,
  // at least s + 2 n kTiny: the margin 2^-40 covers the RN errors of s, of
  // its product and of the sum (the last is exact when subnormal).
  const V2 up = V2{1, 1 + 0x1p-40}, add = V2{-0.0, (2 * n + 1) * kTiny};
#pragma GCC unroll 8
  for (int k = 0; k < LC; k += 2) {
    const V2 lo = acc[k] * up + add;
    const V2 hi = k + 1 < LC ? acc[k + 1] * up + add : V2{0, 0};
    Store2(&c->m[k], __builtin_shufflevector(lo, hi, 0, 2));
    Store2(&c->r[k], __builtin_shufflevector(lo, hi, 1, 3));
  }
  if constexpr (LC + 1 < kPolyLanes) {
#pragma GCC unroll 12
    for (int k = LC + 1; k < kPolyLanes; ++k) c->m[k] = c->r[k] = 0;
  }
  c->len = LC;
}
template <int LA>
void PolySquareFn(const PolySeries& a, const PolySeries&, PolySeries* c) {
  PolySquareT<LA, false, false>(a, nullptr, nullptr, c);
}
using PolySquareStepFn = PolySquareKernel;
// Entry [LA - 1][kAdd][kDiff].
template <int LA>
constexpr std::array<std::array<PolySquareStepFn, 2>, 2> kSquareRow = {
    {{&PolySquareT<LA, false, false>, &PolySquareT<LA, false, true>},
     {&PolySquareT<LA, true, false>, &PolySquareT<LA, true, true>}}};
constexpr std::array<std::array<std::array<PolySquareStepFn, 2>, 2>, kMaxExact> kPolySquareStep = {
    kSquareRow<1>, kSquareRow<2>, kSquareRow<3>, kSquareRow<4>, kSquareRow<5>, kSquareRow<6>};

// c = x times the ball (cm, cr) (ball.h's operator* a coefficient), two
// lanes at a time; lanes from x.len on are 0 in x and stay 0.
void PolyScale(const PolySeries& x, double cm, double cr, PolySeries* c) {
  using ball::V2;
  const V2 vcm = ball::Splat2(cm), vcr = ball::Splat2(cr), vcabs = ball::Splat2(std::fabs(cm) + cr),
           u = ball::Splat2(kU), tiny = ball::Splat2(kTiny);
  for (int k = 0; k < kPolyLanes; k += 2) {
    const V2 xm = ball::Load2(&x.m[k]);
    const V2 m = xm * vcm;
    ball::Store2(&c->m[k], m);
    ball::Store2(&c->r[k], ball::RadiusUp2(ball::Abs2(xm) * vcr + ball::Load2(&x.r[k]) * vcabs +
                                           u * ball::Abs2(m) + tiny));
  }
  c->len = x.len;
  for (int k = x.len; k < kPolyLanes; ++k) c->r[k] = 0;
}
using PolyMulFn = void (*)(const PolySeries&, const PolySeries&, PolySeries*);
template <int... I>
constexpr auto PolyMulTable(std::integer_sequence<int, I...>) {
  return std::array<PolyMulFn, sizeof...(I)>{&PolyMulT<I / kMaxExact + 1, I % kMaxExact + 1>...};
}
constexpr auto kPolyMul = PolyMulTable(std::make_integer_sequence<int, kMaxExact * kMaxExact>{});
constexpr PolyMulFn kPolySquare[kMaxExact] = {&PolySquareFn<1>, &PolySquareFn<2>, &PolySquareFn<3>,
                                              &PolySquareFn<4>, &PolySquareFn<5>, &PolySquareFn<6>};

}  // namespace

void PolyMul(const PolySeries& a, const PolySeries& b, PolySeries* c) {
  const int la = a.len, lb = b.len, lc = la + lb - 1;
  if (&a == &b && la <= kMaxExact) return kPolySquare[la - 1](a, b, c);
  if (la == 1) return PolyScale(b, a.m[0], a.r[0], c);
  if (lb == 1) return PolyScale(a, b.m[0], b.r[0], c);
  if (la <= kMaxExact && lb <= kMaxExact)
    return kPolyMul[static_cast<size_t>((la - 1) * kMaxExact + (lb - 1))](a, b, c);
  // The general lengths (the same bound, loops not unrolled).
  const int n = std::min(la, lb);
  const double gamma = n * kU * (1 + 0x1p-40);
  double m[kPolyLanes] = {}, s[kPolyLanes] = {};
  for (int i = 0; i < la; ++i) {
    const double pa = std::fabs(a.m[i]);
    for (int j = 0; j < lb; ++j) {
      const double pb = std::fabs(b.m[j]);
      m[i + j] += a.m[i] * b.m[j];
      s[i + j] += pa * (b.r[j] + gamma * pb) + a.r[i] * (pb + b.r[j]);
    }
  }
  for (int k = 0; k < kPolyLanes; ++k) {
    c->m[k] = m[k];
    c->r[k] = k < lc ? Up(s[k] + ball::TinyTimes(2 * n)) : 0;
  }
  c->len = lc;
}

bool PolyEvaluator::Supports(const expr::Subgraph& program, std::span<const int> var_len) {
  return !PolyLengths(program, var_len).empty() || program.nodes.empty();
}

namespace {

// Per node: how many nodes read it (a node reading it twice counts once).
std::vector<int> NodeUses(const expr::Subgraph& program) {
  std::vector<int> uses(program.nodes.size(), 0);
  for (const expr::Subgraph::Node& nd : program.nodes) {
    if (nd.a >= 0) ++uses[static_cast<size_t>(nd.a)];
    if (nd.b >= 0 && nd.b != nd.a) ++uses[static_cast<size_t>(nd.b)];
  }
  return uses;
}

// Whether node k is an exact factor (a positive power of 2 in [2^-64,
// 2^64]), its value in *f.
bool ExactFactor(const expr::Subgraph& program, int32_t k, double* f) {
  const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(k)];
  if (nd.op != expr::Op::kConst || !(nd.value > 0)) return false;
  int e = 0;
  if (std::frexp(nd.value, &e) != 0.5 || e < -63 || e > 65) return false;
  *f = nd.value;  // 2^(e - 1)
  return true;
}

// The x of root r = x * c, c * x or x / (1/c) with c an exact factor (*f
// set to c), or -1.
int32_t FactorOperand(const expr::Subgraph& program, int32_t r, double* f) {
  const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(r)];
  int32_t x = -1;
  if (nd.op == expr::Op::kMul && nd.a != nd.b) {
    if (ExactFactor(program, nd.b, f))
      x = nd.a;
    else if (ExactFactor(program, nd.a, f))
      x = nd.b;
  } else if (nd.op == expr::Op::kDiv && ExactFactor(program, nd.b, f)) {
    *f = 1 / *f;  // exact: a power of 2
    x = nd.a;
  }
  return x;
}

// The y of x = y + k, k + y or y - k (k a constant, y not; *offset set to
// k, resp. -k), or -1.
int32_t OffsetOperand(const expr::Subgraph& program, int32_t x, double* offset) {
  // x = y + k, k + y or y - k.
  const expr::Subgraph::Node& xn = program.nodes[static_cast<size_t>(x)];
  auto is_const = [&](int32_t k) {
    return program.nodes[static_cast<size_t>(k)].op == expr::Op::kConst;
  };
  int32_t y = -1;
  if ((xn.op == expr::Op::kAdd || xn.op == expr::Op::kSub) && is_const(xn.b) && !is_const(xn.a)) {
    y = xn.a;
    *offset = program.nodes[static_cast<size_t>(xn.b)].value;
    if (xn.op == expr::Op::kSub) *offset = -*offset;
  } else if (xn.op == expr::Op::kAdd && is_const(xn.a) && !is_const(xn.b)) {
    y = xn.b;
    *offset = program.nodes[static_cast<size_t>(xn.a)].value;
  }
  return y;
}

// The roots' exact factors and offsets folded (PolyEvaluator's
// fold_root_factors): per root the node delivered, its factor and offset,
// and *folded marking the nodes so bypassed.
void FoldRootFactors(const expr::Subgraph& program, std::vector<int32_t>* root_node,
                     std::vector<double>* root_factor, std::vector<double>* root_offset,
                     std::vector<char>* folded) {
  for (size_t i = 0; i < program.roots.size(); ++i) {
    const int32_t r = program.roots[i];
    double f = 1;
    int32_t x = FactorOperand(program, r, &f);
    if (x < 0) x = r;  // no factor
    if (program.nodes[static_cast<size_t>(x)].op == expr::Op::kConst) continue;
    double offset = 0;
    const int32_t y = OffsetOperand(program, x, &offset);
    if (y >= 0 && std::isfinite(offset)) {
      (*folded)[static_cast<size_t>(x)] = 1;
      x = y;
    } else {
      offset = 0;
    }
    if (x == r) continue;
    (*root_node)[i] = x;
    (*root_factor)[i] = f;
    (*root_offset)[i] = offset;
    (*folded)[static_cast<size_t>(r)] = 1;
  }
}

// *folded cleared on every node that is evaluated after all.
void KeepEvaluated(const expr::Subgraph& program, const std::vector<int32_t>& root_node,
                   std::vector<char>* folded_ptr) {
  std::vector<char>& folded = *folded_ptr;
  // A node that an evaluated node reads, or that a root delivers, is
  // evaluated (operands come first: one pass from the last node).
  for (int32_t r : root_node) folded[static_cast<size_t>(r)] = 0;
  for (size_t id = folded.size(); id-- > 0;) {
    if (folded[id]) continue;
    const expr::Subgraph::Node& nd = program.nodes[id];
    if (nd.a >= 0) folded[static_cast<size_t>(nd.a)] = 0;
    if (nd.b >= 0) folded[static_cast<size_t>(nd.b)] = 0;
  }
}

// The base of square node k (x^2 or x * x) with a series short enough for
// the exact kernels, or -1.
int32_t SquareBase(const expr::Subgraph& program, const std::vector<int>& len, int32_t k) {
  const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(k)];
  const bool square =
      (nd.op == expr::Op::kPow && program.nodes[static_cast<size_t>(nd.b)].value == 2) ||
      (nd.op == expr::Op::kMul && nd.a == nd.b);
  return square && len[static_cast<size_t>(nd.a)] <= kMaxExact ? nd.a : -1;
}

// The differences squares absorb: *diff_base per square node, *absorbed
// per difference.
void AbsorbDifferences(const expr::Subgraph& program, const std::vector<int>& len,
                       const std::vector<char>& folded, const std::vector<int>& uses,
                       std::vector<char>* absorbed, std::vector<char>* diff_base) {
  // Differences a square absorbs: (a - b)^2 reads a and b (PolySquareT
  // with a subtrahend) when the difference feeds nothing else.
  const size_t nn = program.nodes.size();
  for (size_t id = 0; id < nn && !len.empty(); ++id) {
    const int32_t base = SquareBase(program, len, static_cast<int32_t>(id));
    if (base < 0 || folded[id]) continue;
    const expr::Subgraph::Node& bn = program.nodes[static_cast<size_t>(base)];
    if (bn.op != expr::Op::kSub || bn.a == bn.b || uses[static_cast<size_t>(base)] != 1) continue;
    (*absorbed)[static_cast<size_t>(base)] = 1;
    (*diff_base)[id] = 1;
  }
}

// The squares sums absorb: *add_square per kAdd node, *absorbed per
// square.
void AbsorbSquares(const expr::Subgraph& program, const std::vector<int>& len,
                   const std::vector<int>& uses, std::vector<char>* absorbed_ptr,
                   std::vector<int32_t>* add_square) {
  std::vector<char>& absorbed = *absorbed_ptr;
  const size_t nn = program.nodes.size();
  for (size_t id = 0; id < nn && !len.empty(); ++id) {
    const expr::Subgraph::Node& nd = program.nodes[id];
    if (nd.op != expr::Op::kAdd) continue;
    for (int32_t sq : {nd.b, nd.a}) {
      const int32_t z = sq == nd.b ? nd.a : nd.b;
      if (z == sq || uses[static_cast<size_t>(sq)] != 1 || SquareBase(program, len, sq) < 0 ||
          len[static_cast<size_t>(z)] > len[static_cast<size_t>(sq)] ||
          absorbed[static_cast<size_t>(z)])
        continue;
      absorbed[static_cast<size_t>(sq)] = 1;
      (*add_square)[id] = sq;
      break;
    }
  }
}

}  // namespace

PolySquareKernel PolySquareBaseline(int la, bool add, bool diff) {
  return la >= 1 && la <= kMaxExact ? kPolySquareStep[static_cast<size_t>(la - 1)][add][diff]
                                    : nullptr;
}

void PolyEta(const PolySeries& e, double e0m, double e0r, const double* c2v, const double* c1,
             double cb, double* cm, double* cr) {
  using ball::Abs2;
  using ball::Load2;
  using ball::Splat2;
  using ball::Store2;
  using ball::V2;
  constexpr int N = kPolyLanes;
  static_assert(N % 2 == 0);
  const V2 vcb = Splat2(cb);
#pragma GCC unroll 6
  for (int k = 0; k < N; k += 2) {
    const bool last = k + 2 >= N;  // e_{k+2}, e_{k+3} beyond the lanes
    const V2 e0 = k == 0 ? V2{e0m, e.m[1]} : Load2(&e.m[k]);
    const V2 r0 = k == 0 ? V2{e0r, e.r[1]} : Load2(&e.r[k]);
    const V2 e1 = last ? V2{e.m[k + 1], 0} : Load2(&e.m[k + 1]);
    const V2 r1 = last ? V2{e.r[k + 1], 0} : Load2(&e.r[k + 1]);
    const V2 e2 = last ? Splat2(0) : Load2(&e.m[k + 2]);
    const V2 r2 = last ? Splat2(0) : Load2(&e.r[k + 2]);
    const V2 c2 = Load2(&c2v[k]), c1k = Load2(&c1[k]);
    const V2 t2 = c2 * e2, t1 = c1k * e1, t0 = vcb * e0;
    const V2 rad = Abs2(c2) * r2 + Abs2(c1k) * r1 + vcb * r0;
    const V2 mag = Abs2(t2) + Abs2(t1) + Abs2(t0);
    Store2(&cm[k], t2 + t1 + t0);
    Store2(&cr[k],
           ball::RadiusUp2(Splat2(1 + 5 * kU) * rad + Splat2(8 * kU) * mag + Splat2(4 * kTiny)));
  }
}

void PolyCoordinate(const double (*W)[6], const double* x, double* m, double* r) {
  using ball::Splat2;
  using ball::V2;
  // Two coefficients at a time (W is stored [b][k]).
  const double q0 = x[0];
  V2 sa[3] = {V2{std::fabs(q0), 0}, V2{0, 0}, V2{0, 0}};
  V2 sm[3] = {V2{q0, 0}, V2{0, 0}, V2{0, 0}};
  for (int b = 1; b < 6; ++b) {
    const V2 xb = Splat2(x[b]);
    for (int p = 0; p < 3; ++p) {
      const V2 t = ball::Load2(&W[b][2 * p]) * xb;
      sm[p] += t;
      sa[p] += ball::Abs2(t);
    }
  }
  for (int p = 0; p < 3; ++p) {
    ball::Store2(&m[2 * p], sm[p]);
    ball::Store2(&r[2 * p],
                 ball::RadiusUp2(Splat2(9 * kU) * ball::RadiusUp2(sa[p]) + Splat2(6 * kTiny)));
  }
}

bool PolyAvx2Available() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64))
  // libgcc's CPUID table, which also asks the OS (XGETBV) whether it saves
  // the YMM state (as ensemble_lanes.cc does).
  static const bool available =
      PolySquareAvx2(1, false, false) != nullptr && __builtin_cpu_supports("avx2");
  return available;
#else
  return false;
#endif
}

PolyEvaluator::PolyEvaluator(const expr::Subgraph& program, std::span<const int> var_len,
                             bool fold_root_factors, PolyIsa isa)
    : program_(&program),
      series_(program.nodes.size()),
      var_node_(var_len.size(), -1),
      recip_(program.nodes.size(), 0),
      root_node_(program.roots.begin(), program.roots.end()),
      root_factor_(program.roots.size(), 1.0),
      root_offset_(program.roots.size(), 0.0) {
  const std::vector<int> len = PolyLengths(program, var_len);
  // Squares a sum absorbs: z + x^2 (either order) is one step
  // (kSquare, PolySquareT with an addend) when the square node feeds
  // nothing else and z is no longer than it; the square's own step and
  // series are skipped.
  const size_t nn = program.nodes.size();
  std::vector<int> uses = NodeUses(program);
  std::vector<char> absorbed(nn, 0);
  std::vector<int32_t> add_square(nn, -1);  // per kAdd node: the square it absorbs
  // Roots with an exact factor folded (fold_root_factors): their own step
  // is skipped when no node reads them.
  std::vector<char> folded(nn, 0);
  if (fold_root_factors && !len.empty())
    FoldRootFactors(program, &root_node_, &root_factor_, &root_offset_, &folded);
  KeepEvaluated(program, root_node_, &folded);
  for (int32_t r : program.roots) uses[static_cast<size_t>(r)] += 2;  // a root is kept
  for (int32_t r : root_node_) uses[static_cast<size_t>(r)] += 2;
  std::vector<char> diff_base(nn, 0);  // per square node: its base is absorbed
  AbsorbDifferences(program, len, folded, uses, &absorbed, &diff_base);
  AbsorbSquares(program, len, uses, &absorbed, &add_square);
  const bool avx2 = isa != PolyIsa::kBaseline && PolyAvx2Available();
  for (size_t id = 0; id < nn; ++id) {
    const expr::Subgraph::Node& nd = program.nodes[id];
    series_[id].len = len.empty() ? 1 : len[id];
    if (nd.op == expr::Op::kConst) PolyConstant(nd.value, 0, &series_[id]);
    if (nd.op == expr::Op::kVar) var_node_[static_cast<size_t>(nd.var)] = static_cast<int32_t>(id);
    if (nd.op == expr::Op::kDiv) recip_[id] = 1 / program.nodes[static_cast<size_t>(nd.b)].value;
    if (len.empty() || nd.op == expr::Op::kConst || nd.op == expr::Op::kVar || absorbed[id] ||
        folded[id])
      continue;
    const int32_t sq = add_square[id] >= 0 ? add_square[id] : static_cast<int32_t>(id);
    if (const int32_t base = SquareBase(program, len, sq); base >= 0) {
      steps_.push_back(SquareStep(program, len, static_cast<int32_t>(id), sq, base,
                                  diff_base[static_cast<size_t>(sq)], add_square[id] >= 0, avx2));
    } else {
      steps_.push_back(OperationStep(program, len, static_cast<int32_t>(id)));
    }
  }
}

PolyEvaluator::Step PolyEvaluator::SquareStep(const expr::Subgraph& program,
                                              const std::vector<int>& len, int32_t id, int32_t sq,
                                              int32_t base, bool diff, bool in_sum, bool avx2) {
  // [z +] x^2 or [z +] (x - y)^2: a = x, b = y (or -1), z.
  const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(id)];
  const expr::Subgraph::Node& bn = program.nodes[static_cast<size_t>(base)];
  Step st{Kind::kSquare, diff ? bn.a : base, diff ? bn.b : -1, id};
  if (in_sum) st.z = sq == nd.b ? nd.a : nd.b;
  const int la = len[static_cast<size_t>(base)];
  st.square = avx2 ? PolySquareAvx2(la, st.z >= 0, diff)
                   : kPolySquareStep[static_cast<size_t>(la - 1)][st.z >= 0][diff];
  return st;
}

PolyEvaluator::Step PolyEvaluator::OperationStep(const expr::Subgraph& program,
                                                 const std::vector<int>& len, int32_t id) {
  const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(id)];
  Step st{Kind::kNeg, nd.a, nd.b, id};
  switch (nd.op) {
    case expr::Op::kNeg: st.kind = Kind::kNeg; break;
    case expr::Op::kAdd:
    case expr::Op::kSub: {
      const bool add = nd.op == expr::Op::kAdd;
      st.kind = add ? Kind::kAdd : Kind::kSub;
      const int la = len[static_cast<size_t>(nd.a)], lb = len[static_cast<size_t>(nd.b)];
      if (lb == 1 && la > 1) st.kind = add ? Kind::kAddShort : Kind::kSubShort;
      if (la == 1 && lb > 1 && add) st = {Kind::kAddShort, nd.b, nd.a, st.out};
      break;
    }
    case expr::Op::kMul:
    case expr::Op::kPow: {
      st.kind = nd.op == expr::Op::kMul ? Kind::kMul : Kind::kPow;
      const int la = len[static_cast<size_t>(nd.a)];
      const bool square = nd.op == expr::Op::kPow
                              ? program.nodes[static_cast<size_t>(nd.b)].value == 2
                              : nd.a == nd.b;
      const int lb = square ? la : len[static_cast<size_t>(nd.b)];
      if (nd.op == expr::Op::kMul && !square && (la == 1 || len[static_cast<size_t>(nd.b)] == 1)) {
        // A product by a series of length 1: a scaling, b the short one.
        st.kind = Kind::kScale;
        if (la == 1) std::swap(st.a, st.b);
        break;
      }
      if (square && la <= kMaxExact) {
        st.mul = kPolySquare[la - 1];
      } else if (nd.op == expr::Op::kMul && la > 1 && lb > 1 && la <= kMaxExact &&
                 lb <= kMaxExact) {
        st.mul = kPolyMul[static_cast<size_t>((la - 1) * kMaxExact + (lb - 1))];
      }
      if (square) st.b = st.a;  // the kernel reads the operand twice
      if (nd.op == expr::Op::kPow && !st.mul) st.b = nd.b;
      break;
    }
    case expr::Op::kDiv: st.kind = Kind::kDiv; break;
    default: break;
  }
  return st;
}

void PolyEvaluator::Evaluate() {
  const auto& nodes = program_->nodes;
  for (const Step& st : steps_) {
    PolySeries& c = series_[static_cast<size_t>(st.out)];
    const PolySeries& a = series_[static_cast<size_t>(st.a)];
    switch (st.kind) {
      case Kind::kNeg:
        c = a;
        for (int k = 0; k < kPolyLanes; ++k) c.m[k] = -a.m[k];
        break;
      case Kind::kAdd:
      case Kind::kSub: {
        // ball.h's + and -: no underflow error (sums are exact there); 0
        // lanes stay 0.
        const PolySeries& b = series_[static_cast<size_t>(st.b)];
        using ball::V2;
        const V2 sign = ball::Splat2(st.kind == Kind::kAdd ? 1.0 : -1.0), u = ball::Splat2(kU);
        for (int k = 0; k < kPolyLanes; k += 2) {
          const V2 m = ball::Load2(&a.m[k]) + sign * ball::Load2(&b.m[k]);
          ball::Store2(&c.m[k], m);
          ball::Store2(&c.r[k], ball::RadiusUp2(ball::Load2(&a.r[k]) + ball::Load2(&b.r[k]) +
                                                u * ball::Abs2(m)));
        }
        c.len = std::max(a.len, b.len);
        for (int k = c.len; k < kPolyLanes; ++k) c.r[k] = 0;
        break;
      }
      case Kind::kAddShort:
      case Kind::kSubShort: {
        // b of length 1: a's balls beyond the first copied (b's are exact
        // zeros there).
        const PolySeries& b = series_[static_cast<size_t>(st.b)];
        c = a;
        const double m = a.m[0] + (st.kind == Kind::kAddShort ? b.m[0] : -b.m[0]);
        c.m[0] = m;
        c.r[0] = Up(a.r[0] + b.r[0] + kU * std::fabs(m));
        break;
      }
      case Kind::kMul:
        if (st.mul) {
          st.mul(a, series_[static_cast<size_t>(st.b)], &c);
        } else {
          PolyMul(a, series_[static_cast<size_t>(st.b)], &c);
        }
        break;
      case Kind::kSquare:
        st.square(a, st.b >= 0 ? &series_[static_cast<size_t>(st.b)] : nullptr,
                  st.z >= 0 ? &series_[static_cast<size_t>(st.z)] : nullptr, &c);
        break;
      case Kind::kScale: {
        // Times a series of length 1 (b: a constant, or constant in s).
        const PolySeries& b = series_[static_cast<size_t>(st.b)];
        PolyScale(a, b.m[0], b.r[0], &c);
        break;
      }
      case Kind::kDiv: {
        // Times fl(1/c): |1/c - fl(1/c)| <= u |1/c| <= 2u |fl(1/c)|.
        const double r = recip_[static_cast<size_t>(st.out)];
        PolyScale(a, r, 2 * kU * std::fabs(r), &c);
        break;
      }
      case Kind::kPow: {
        if (st.mul) {  // a^2
          st.mul(a, a, &c);
          break;
        }
        const long e = static_cast<long>(nodes[static_cast<size_t>(st.b)].value);
        if (e == 0) {
          PolyConstant(1.0, 0, &c);
        } else if (e == 2) {
          PolyMul(a, a, &c);
        } else {
          c = a;
          PolySeries t;
          for (long i = 1; i < e; ++i) {
            PolyMul(c, a, &t);
            c = t;
          }
        }
        break;
      }
    }
  }
}

int64_t PolyEvaluator::heap_bytes() const {
  return HeapBytesOf(series_, var_node_, recip_, root_node_, root_factor_, root_offset_, steps_);
}

}  // namespace tether::taylor
