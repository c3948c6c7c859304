#include "engine/internal/certificate/taylor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/base/interval.h"

namespace tether::taylor {

using ball::Ball;
using ball::Dot;

namespace {
// The full-length kernels with the length known at compile time: the
// loops unroll (measured: 1.3x fewer instructions per circle step than the
// general loops below).
template <int N>
void SquareFull(const Series& a, Series* out) {
  for (int k = 0; k < N; ++k) {
    Dot d;
    for (int i = 0; 2 * i < k; ++i) d.Add2(a.c[i], a.c[k - i]);
    if (k % 2 == 0) d.Add(a.c[k / 2], a.c[k / 2]);
    out->c[k] = d.Result();
  }
}
template <int N>
void MulFull(const Series& a, const Series& b, Series* out) {
  for (int k = 0; k < N; ++k) {
    Dot d;
    for (int i = 0; i <= k; ++i) d.Add(a.c[i], b.c[k - i]);
    out->c[k] = d.Result();
  }
}
// Dispatches n to a kernel; false when n has none.
template <template <int> class K, class... Args>
bool Full(int n, Args&&... args) {
  switch (n) {
    case 5: K<5>::Run(args...); return true;
    case 6: K<6>::Run(args...); return true;
    case 7: K<7>::Run(args...); return true;
    case 8: K<8>::Run(args...); return true;
    default: return false;
  }
}
template <int N>
struct SquareKernel {
  static void Run(const Series& a, Series* out) { SquareFull<N>(a, out); }
};
template <int N>
struct MulKernel {
  static void Run(const Series& a, const Series& b, Series* out) { MulFull<N>(a, b, out); }
};

// The whole product of operands of effective lengths LA, LB (every
// coefficient of it, LA + LB - 1), with the lengths known at compile time:
// the polynomial path's products (the quintic's 6 coefficients and less).
inline constexpr int kMaxExact = 6;
template <int LA, int LB>
void MulExact(const Series& a, const Series& b, Series* out) {
#pragma GCC unroll 16
  for (int k = 0; k < LA + LB - 1; ++k) {
    Dot d;
    for (int i = std::max(0, k - LB + 1); i <= std::min(k, LA - 1); ++i) d.Add(a.c[i], b.c[k - i]);
    out->c[k] = d.Result();
  }
}
template <int LA>
void SquareExact(const Series& a, Series* out) {
#pragma GCC unroll 16
  for (int k = 0; k < 2 * LA - 1; ++k) {
    Dot d;
#pragma GCC unroll 16
    for (int i = std::max(0, k - LA + 1); 2 * i < k; ++i) d.Add2(a.c[i], a.c[k - i]);
    if (k % 2 == 0) d.Add(a.c[k / 2], a.c[k / 2]);
    out->c[k] = d.Result();
  }
}
using MulFn = void (*)(const Series&, const Series&, Series*);
using SquareFn = void (*)(const Series&, Series*);
template <int... I>
constexpr auto MulTable(std::integer_sequence<int, I...>) {
  // Entry (la - 1) * kMaxExact + (lb - 1).
  return std::array<MulFn, sizeof...(I)>{&MulExact<I / kMaxExact + 1, I % kMaxExact + 1>...};
}
constexpr auto kMulExact = MulTable(std::make_integer_sequence<int, kMaxExact * kMaxExact>{});
constexpr SquareFn kSquareExact[kMaxExact] = {&SquareExact<1>, &SquareExact<2>, &SquareExact<3>,
                                              &SquareExact<4>, &SquareExact<5>, &SquareExact<6>};

// a^2: the symmetric terms once, doubled.
void Square(const Series& a, int la, int n, Series* out) {
  if (la <= kMaxExact && 2 * la - 1 <= n) {
    kSquareExact[la - 1](a, out);
    for (int k = 2 * la - 1; k < n; ++k) out->c[k] = {};
    return;
  }
  if (la >= n && Full<SquareKernel>(n, a, out)) return;
  const int lc = std::min(n, 2 * la - 1);
  for (int k = 0; k < lc; ++k) {
    Dot d;
    const int lo = std::max(0, k - la + 1);
    for (int i = lo; 2 * i < k; ++i) d.Add2(a.c[i], a.c[k - i]);
    if (k % 2 == 0) d.Add(a.c[k / 2], a.c[k / 2]);
    out->c[k] = d.Result();
  }
  for (int k = lc; k < n; ++k) out->c[k] = {};
}
}  // namespace

void Mul(const Series& a, int la, const Series& b, int lb, int n, Series* out) {
  if (&a == &b) return Square(a, la, n, out);
  if (la == 1 || lb == 1) {
    // Times a series' constant term: one ball product per coefficient.
    const Series& s = la == 1 ? b : a;
    const Ball c = la == 1 ? a.c[0] : b.c[0];
    const int ls = la == 1 ? lb : la;
    for (int k = 0; k < ls && k < n; ++k) out->c[k] = s.c[k] * c;
    for (int k = ls; k < n; ++k) out->c[k] = {};
    return;
  }
  if (la <= kMaxExact && lb <= kMaxExact && la + lb - 1 <= n) {
    kMulExact[static_cast<size_t>((la - 1) * kMaxExact + (lb - 1))](a, b, out);
    for (int k = la + lb - 1; k < n; ++k) out->c[k] = {};
    return;
  }
  if (la >= n && lb >= n && Full<MulKernel>(n, a, b, out)) return;
  const int lc = std::min(n, la + lb - 1);
  for (int k = 0; k < lc; ++k) {
    Dot d;
    for (int i = std::max(0, k - lb + 1); i <= std::min(k, la - 1); ++i) d.Add(a.c[i], b.c[k - i]);
    out->c[k] = d.Result();
  }
  for (int k = lc; k < n; ++k) out->c[k] = {};
}

bool Div(const Series& a, int la, const Series& b, int lb, int n, Series* out) {
  // c b = a: c_k = (a_k - sum_{j=1..k} b_j c_{k-j}) / b_0.
  for (int k = 0; k < n; ++k) {
    Dot d;
    if (k < la) d.AddBall(a.c[k]);
    for (int j = 1; j <= std::min(k, lb - 1); ++j) d.Add(-b.c[j], out->c[k - j]);
    Ball num = d.Result();
    out->c[k] = num / b.c[0];
    if (!ball::Bounded(out->c[k])) return false;
  }
  return true;
}

Ball DerivConv(const Series& a, const Series& w, int k) {
  // sum_j j a_j w_{k-j} as one dot product; j a_j is formed inside the ball
  // product, so its rounding is counted (two roundings per term).
  Dot d;
  for (int j = 1; j <= k; ++j) {
    const Ball ja = ball::Scale(a.c[j], static_cast<double>(j));
    d.Add(ja, w.c[k - j]);
  }
  return ball::DivExact(d.Result(), static_cast<double>(k));
}

namespace {

using interval::Interval;

Ball Lead(const Ball& a, Interval (*f)(const Interval&)) {
  return ball::FromInterval(f(ball::ToInterval(a)));
}

void Constant(double v, int n, Series* out) {
  out->c[0] = {v, 0};
  for (int k = 1; k < n; ++k) out->c[k] = {};
}

void Copy(const Series& a, int n, Series* out) {
  for (int k = 0; k < n; ++k) out->c[k] = a.c[k];
}

// 1 / b (b full length n).
bool Reciprocal(const Series& b, int n, Series* out) {
  Series one;
  Constant(1.0, n, &one);
  return Div(one, 1, b, n, n, out);
}

// f' = w a' with w given as a series of f (exp: w = f).
void ExpSeries(const Series& a, int n, Series* f) {
  f->c[0] = Lead(a.c[0], interval::Exp);
  for (int k = 1; k < n; ++k) f->c[k] = DerivConv(a, *f, k);
}

// s = sin a, c = cos a (or sinh, cosh with hyperbolic = true).
void SinCos(const Series& a, int n, bool hyperbolic, Series* s, Series* c) {
  s->c[0] = Lead(a.c[0], hyperbolic ? interval::Sinh : interval::Sin);
  c->c[0] = Lead(a.c[0], hyperbolic ? interval::Cosh : interval::Cos);
  for (int k = 1; k < n; ++k) {
    s->c[k] = DerivConv(a, *c, k);
    const Ball d = DerivConv(a, *s, k);
    c->c[k] = hyperbolic ? d : -d;
  }
}

bool LogSeries(const Series& a, int n, Series* f) {
  // a f' = a': k a_0 f_k = k a_k - sum_{j=1..k-1} j f_j a_{k-j}.
  f->c[0] = Lead(a.c[0], interval::Log);
  for (int k = 1; k < n; ++k) {
    Dot d;
    d.AddBall(a.c[k]);
    for (int j = 1; j < k; ++j) {
      d.Add(ball::DivExact(ball::Scale(f->c[j], static_cast<double>(j)), static_cast<double>(k)),
            ball::Scale(a.c[k - j], -1.0));
    }
    f->c[k] = d.Result() / a.c[0];
    if (!ball::Bounded(f->c[k])) return false;
  }
  return ball::Bounded(f->c[0]);
}

bool SqrtSeries(const Series& a, int n, Series* f) {
  // f^2 = a: 2 f_0 f_k = a_k - sum_{j=1..k-1} f_j f_{k-j}.
  f->c[0] = Lead(a.c[0], interval::Sqrt);
  if (!ball::Bounded(f->c[0])) return false;
  const Ball two_f0 = ball::Scale(f->c[0], 2.0);
  for (int k = 1; k < n; ++k) {
    Dot d;
    d.AddBall(a.c[k]);
    for (int j = 1; j < k; ++j) d.Add(ball::Scale(f->c[j], -1.0), f->c[k - j]);
    f->c[k] = d.Result() / two_f0;
    if (!ball::Bounded(f->c[k])) return false;
  }
  return true;
}

// f with f' = (1 + sign f^2) a' (tan: sign = +1, tanh: sign = -1).
void TanSeries(const Series& a, int n, double sign, Series* f, Series* w) {
  f->c[0] = Lead(a.c[0], sign > 0 ? interval::Tan : interval::Tanh);
  for (int k = 1; k < n; ++k) {
    // w_{k-1} = [k == 1] + sign sum_{i=0..k-1} f_i f_{k-1-i}.
    Dot d;
    if (k == 1) d.AddBall({1, 0});
    for (int i = 0; i < k; ++i) d.Add(ball::Scale(f->c[i], sign), f->c[k - 1 - i]);
    w->c[k - 1] = d.Result();
    f->c[k] = DerivConv(a, *w, k);
  }
}

// a^p for an integer p >= 1 by binary powering (valid where a reaches 0).
int PowInt(const Series& a, int la, long p, int n, Series* out, Series* sq, Series* tmp) {
  // out = 1; base = a.
  Constant(1.0, n, out);
  int lo = 1;
  Copy(a, n, sq);
  int ls = la;
  while (true) {
    if (p & 1) {
      Mul(*out, lo, *sq, ls, n, tmp);
      Copy(*tmp, n, out);
      lo = std::min(n, lo + ls - 1);
    }
    p >>= 1;
    if (!p) break;
    Mul(*sq, ls, *sq, ls, n, tmp);
    Copy(*tmp, n, sq);
    ls = std::min(n, 2 * ls - 1);
  }
  return lo;
}

// a^p for a real constant p, a_0 > 0: k a_0 f_k = sum_{j=1..k} (p j - (k - j)) a_j f_{k-j}.
bool PowReal(const Series& a, double p, int n, Series* f) {
  f->c[0] = ball::FromInterval(interval::Pow(ball::ToInterval(a.c[0]), interval::Interval(p)));
  if (!ball::Bounded(f->c[0])) return false;
  for (int k = 1; k < n; ++k) {
    Dot d;
    for (int j = 1; j <= k; ++j) {
      // (p j - (k - j)) as a ball: p j rounds.
      const Ball coef = Ball{p * j, ball::RadiusUp(ball::kU * std::fabs(p * j))} -
                        Ball{static_cast<double>(k - j), 0};
      d.Add(coef * a.c[j], f->c[k - j]);
    }
    f->c[k] = ball::DivExact(d.Result(), static_cast<double>(k)) / a.c[0];
    if (!ball::Bounded(f->c[k])) return false;
  }
  return true;
}

}  // namespace

Evaluator::Evaluator(const expr::Subgraph& program)
    : program_(&program),
      work_(program.nodes.size()),
      len_(program.nodes.size(), 0),
      bad_(program.nodes.size(), 0),
      src_(program.nodes.size()) {
  for (size_t id = 0; id < program.nodes.size(); ++id) {
    src_[id] = &work_[id];
    if (program.nodes[id].op == expr::Op::kConst) {
      Constant(program.nodes[id].value, kMaxLength, &work_[id]);
      len_[id] = 1;
    }
  }
}

std::vector<int> PolynomialDegrees(const expr::Subgraph& program, std::span<const int> var_degree) {
  using expr::Op;
  constexpr int kNo = kNotPolynomial;
  std::vector<int> deg(program.nodes.size(), kNo);
  for (size_t id = 0; id < program.nodes.size(); ++id) {
    const expr::Subgraph::Node& nd = program.nodes[id];
    const int da = nd.a >= 0 ? deg[static_cast<size_t>(nd.a)] : 0;
    const int db = nd.b >= 0 ? deg[static_cast<size_t>(nd.b)] : 0;
    int d = kNo;
    switch (nd.op) {
      case Op::kConst: d = 0; break;
      case Op::kVar: d = var_degree[static_cast<size_t>(nd.var)]; break;
      case Op::kNeg: d = da; break;
      case Op::kAdd:
      case Op::kSub: d = da == kNo || db == kNo ? kNo : std::max(da, db); break;
      case Op::kMul: d = da == kNo || db == kNo ? kNo : da + db; break;
      case Op::kDiv: d = db == 0 ? da : kNo; break;  // by a constant in s
      case Op::kPow: {
        const expr::Subgraph::Node& e = program.nodes[static_cast<size_t>(nd.b)];
        if (da != kNo && e.op == Op::kConst && e.value >= 0 && e.value <= 64 &&
            e.value == std::trunc(e.value)) {
          d = da * static_cast<int>(e.value);
        }
        break;
      }
      default: break;
    }
    // Any operation of operands constant in s is constant in s.
    if (d == kNo && nd.op != Op::kVar && da == 0 && db == 0) d = 0;
    // Degrees are capped (a series is at most kMaxLength long anyway).
    deg[id] = d == kNo ? kNo : std::min(d, 1 << 20);
  }
  return deg;
}

bool Evaluator::Evaluate(const Series* vars, int n, const int* var_len) {
  const auto& nodes = program_->nodes;
  bool all = true;
  for (size_t id = 0; id < nodes.size(); ++id) {
    const expr::Subgraph::Node& nd = nodes[id];
    // Constants were written once (the constructor); variables are read
    // where the caller keeps them.
    if (nd.op == expr::Op::kConst) continue;
    if (nd.op == expr::Op::kVar) {
      src_[id] = &vars[nd.var];
      len_[id] = var_len ? std::max(1, std::min(n, var_len[nd.var])) : n;
      continue;
    }
    const bool operands_ok = (nd.a < 0 || !bad_[static_cast<size_t>(nd.a)]) &&
                             (nd.b < 0 || !bad_[static_cast<size_t>(nd.b)]);
    int len = n;
    const bool ok =
        operands_ok && EvalNode(nd, n, &work_[id], &len) && ball::Bounded(work_[id].c[0]);
    bad_[id] = !ok;
    all = all && ok;
    len_[id] = std::max(1, std::min(len, n));
  }
  return all;
}

bool Evaluator::EvalNode(const expr::Subgraph::Node& nd, int n, Series* out, int* len_out) {
  using expr::Op;
  const auto& nodes = program_->nodes;
  const Series* a = nd.a >= 0 ? src_[static_cast<size_t>(nd.a)] : nullptr;
  const Series* b = nd.b >= 0 ? src_[static_cast<size_t>(nd.b)] : nullptr;
  const int la = nd.a >= 0 ? len_[static_cast<size_t>(nd.a)] : 0;
  const int lb = nd.b >= 0 ? len_[static_cast<size_t>(nd.b)] : 0;
  int& len = *len_out;
  {
    switch (nd.op) {
      case Op::kConst:
      case Op::kVar: break;  // set by Evaluate
      case Op::kNeg:
        for (int k = 0; k < la; ++k) out->c[k] = -a->c[k];
        for (int k = la; k < n; ++k) out->c[k] = {};
        len = la;
        break;
      case Op::kAdd:
      case Op::kSub: {
        // Beyond an operand's length its coefficients are exactly 0: the
        // other's are copied (negated), exact.
        const int common = std::min(la, lb);
        const bool add = nd.op == Op::kAdd;
        for (int k = 0; k < common; ++k) out->c[k] = add ? a->c[k] + b->c[k] : a->c[k] - b->c[k];
        for (int k = common; k < la; ++k) out->c[k] = a->c[k];
        for (int k = common; k < lb; ++k) out->c[k] = add ? b->c[k] : -b->c[k];
        len = std::max(la, lb);
        for (int k = len; k < n; ++k) out->c[k] = {};
        break;
      }
      case Op::kMul:
        Mul(*a, la, *b, lb, n, out);
        len = std::min(n, la + lb - 1);
        break;
      case Op::kDiv:
        if (!Div(*a, la, *b, lb, n, out)) return false;
        break;
      case Op::kSin:
      case Op::kCos:
        SinCos(*a, n, false, nd.op == Op::kSin ? out : &tmp_[0],
               nd.op == Op::kSin ? &tmp_[0] : out);
        break;
      case Op::kSinh:
      case Op::kCosh:
        SinCos(*a, n, true, nd.op == Op::kSinh ? out : &tmp_[0],
               nd.op == Op::kSinh ? &tmp_[0] : out);
        break;
      case Op::kTan: TanSeries(*a, n, 1.0, out, &tmp_[0]); break;
      case Op::kTanh: TanSeries(*a, n, -1.0, out, &tmp_[0]); break;
      case Op::kExp: ExpSeries(*a, n, out); break;
      case Op::kLog:
        if (!LogSeries(*a, n, out)) return false;
        break;
      case Op::kSqrt:
        if (!SqrtSeries(*a, n, out)) return false;
        break;
      case Op::kAtan:
      case Op::kAsin:
      case Op::kAcos: {
        // w = 1 / (1 + a^2) (atan) or 1 / sqrt(1 - a^2) (asin, acos).
        Series& sq = tmp_[0];
        Mul(*a, la, *a, la, n, &sq);
        if (nd.op == Op::kAtan) {
          sq.c[0] = sq.c[0] + Ball{1, 0};
          if (!Reciprocal(sq, n, &tmp_[1])) return false;
        } else {
          for (int k = 0; k < n; ++k) sq.c[k] = -sq.c[k];
          sq.c[0] = sq.c[0] + Ball{1, 0};
          if (!SqrtSeries(sq, n, &tmp_[2])) return false;
          if (!Reciprocal(tmp_[2], n, &tmp_[1])) return false;
        }
        const interval::Interval lead =
            nd.op == Op::kAtan   ? interval::Atan(ball::ToInterval(a->c[0]))
            : nd.op == Op::kAsin ? interval::Asin(ball::ToInterval(a->c[0]))
                                 : interval::Acos(ball::ToInterval(a->c[0]));
        out->c[0] = ball::FromInterval(lead);
        for (int k = 1; k < n; ++k) {
          const Ball d = DerivConv(*a, tmp_[1], k);
          out->c[k] = nd.op == Op::kAcos ? -d : d;
        }
        break;
      }
      case Op::kAtan2: {
        // atan2(y, x) is smooth off the origin and the cut (x < 0, y = 0):
        // f' = (x y' - y x') / (x^2 + y^2).
        const interval::Interval y0 = ball::ToInterval(a->c[0]), x0 = ball::ToInterval(b->c[0]);
        if (!(x0.lo > 0 || y0.lo > 0 || y0.hi < 0)) return false;
        out->c[0] = ball::FromInterval(interval::Atan2(y0, x0));
        if (n > 1) {
          Series dy, dx;
          for (int k = 0; k + 1 < n; ++k) {
            dy.c[k] = ball::Scale(a->c[k + 1], static_cast<double>(k + 1));
            dx.c[k] = ball::Scale(b->c[k + 1], static_cast<double>(k + 1));
          }
          Series& num = tmp_[0];
          Series& den = tmp_[1];
          Mul(*b, n - 1, dy, n - 1, n - 1, &num);
          Mul(*a, n - 1, dx, n - 1, n - 1, &tmp_[2]);
          for (int k = 0; k + 1 < n; ++k) num.c[k] = num.c[k] - tmp_[2].c[k];
          Mul(*a, n - 1, *a, n - 1, n - 1, &den);
          Mul(*b, n - 1, *b, n - 1, n - 1, &tmp_[2]);
          for (int k = 0; k + 1 < n; ++k) den.c[k] = den.c[k] + tmp_[2].c[k];
          if (!Div(num, n - 1, den, n - 1, n - 1, &tmp_[3])) return false;
          for (int k = 1; k < n; ++k)
            out->c[k] = ball::DivExact(tmp_[3].c[k - 1], static_cast<double>(k));
        }
        break;
      }
      case Op::kPow: {
        const expr::Subgraph::Node& e = nodes[static_cast<size_t>(nd.b)];
        if (e.op == Op::kConst) {
          const double p = e.value;
          if (p == std::trunc(p) && std::fabs(p) <= 64) {
            const long ip = static_cast<long>(p);
            if (ip == 0) {
              Constant(1.0, n, out);
              len = 1;
            } else if (ip == 1) {
              Copy(*a, n, out);
              len = la;
            } else if (ip == 2) {
              Mul(*a, la, *a, la, n, out);
              len = std::min(n, 2 * la - 1);
            } else if (ip > 0) {
              len = PowInt(*a, la, ip, n, out, &tmp_[0], &tmp_[1]);
            } else {
              PowInt(*a, la, -ip, n, &tmp_[2], &tmp_[0], &tmp_[1]);
              if (!Reciprocal(tmp_[2], n, out)) return false;
            }
          } else {
            if (ball::StrictSign(a->c[0]) <= 0) return false;
            if (!PowReal(*a, p, n, out)) return false;
          }
        } else {
          // a^b = exp(b log a), a > 0.
          if (ball::StrictSign(a->c[0]) <= 0) return false;
          if (!LogSeries(*a, n, &tmp_[0])) return false;
          Mul(*b, lb, tmp_[0], n, n, &tmp_[1]);
          ExpSeries(tmp_[1], n, out);
        }
        break;
      }
      case Op::kAbs: {
        const int s = ball::StrictSign(a->c[0]);
        if (s == 0) return false;
        for (int k = 0; k < n; ++k) out->c[k] = s > 0 ? a->c[k] : -a->c[k];
        len = la;
        break;
      }
      case Op::kMin:
      case Op::kMax: {
        const int s = ball::StrictSign(a->c[0] - b->c[0]);  // sign of a - b
        if (s == 0) return false;
        const bool take_a = (nd.op == Op::kMin) == (s < 0);
        Copy(take_a ? *a : *b, n, out);
        len = take_a ? la : lb;
        break;
      }
      case Op::kSign:
      case Op::kStep: {
        const int s = ball::StrictSign(a->c[0]);
        if (s == 0) return false;
        Constant(nd.op == Op::kSign ? static_cast<double>(s) : (s > 0 ? 1.0 : 0.0), n, out);
        len = 1;
        break;
      }
      default:
        // An operation without a rule here (HasTaylorRule below keeps the
        // table complete, so this is a guard, not a path): not enclosed,
        // which makes the step's bound +inf. Sound, never silently wrong.
        return false;
    }
  }
  return true;
}

// The operations EvalNode has a rule for: every one of operations.h's table,
// checked at compile time, so adding an operation there without its Taylor
// rule here does not compile (docs/ARCHITECTURE.md, "Adding an operation").
constexpr bool HasTaylorRule(expr::Op op) {
  using expr::Op;
  switch (op) {
    case Op::kNeg:
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
    case Op::kSin:
    case Op::kCos:
    case Op::kSinh:
    case Op::kCosh:
    case Op::kTan:
    case Op::kTanh:
    case Op::kExp:
    case Op::kLog:
    case Op::kSqrt:
    case Op::kAtan:
    case Op::kAsin:
    case Op::kAcos:
    case Op::kAtan2:
    case Op::kPow:
    case Op::kAbs:
    case Op::kMin:
    case Op::kMax:
    case Op::kSign:
    case Op::kStep: return true;
    default: return false;
  }
}
constexpr bool EveryOperationHasATaylorRule() {
  for (int k = expr::kFirstOperation; k < expr::kFirstOperation + expr::kNumOperations; ++k) {
    if (!HasTaylorRule(static_cast<expr::Op>(k))) return false;
  }
  return true;
}
static_assert(EveryOperationHasATaylorRule(),
              "an operation of operations.h has no Taylor rule in Evaluator::EvalNode: add its "
              "case there and to HasTaylorRule");

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
using PolySquareStepFn = void (*)(const PolySeries&, const PolySeries*, const PolySeries*,
                                  PolySeries*);
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
    c->r[k] = k < lc ? Up(s[k] + 2 * n * kTiny) : 0;
  }
  c->len = lc;
}

bool PolyEvaluator::Supports(const expr::Subgraph& program, std::span<const int> var_len) {
  return !PolyLengths(program, var_len).empty() || program.nodes.empty();
}

PolyEvaluator::PolyEvaluator(const expr::Subgraph& program, std::span<const int> var_len,
                             bool fold_root_factors)
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
  std::vector<int> uses(nn, 0);
  std::vector<char> absorbed(nn, 0);
  std::vector<int32_t> add_square(nn, -1);  // per kAdd node: the square it absorbs
  for (const expr::Subgraph::Node& nd : program.nodes) {
    if (nd.a >= 0) ++uses[static_cast<size_t>(nd.a)];
    if (nd.b >= 0 && nd.b != nd.a) ++uses[static_cast<size_t>(nd.b)];
  }
  // Roots with an exact factor folded (fold_root_factors): their own step
  // is skipped when no node reads them.
  std::vector<char> folded(nn, 0);
  if (fold_root_factors && !len.empty()) {
    auto exact_factor = [&](int32_t k, double* f) {
      const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(k)];
      if (nd.op != expr::Op::kConst || !(nd.value > 0)) return false;
      int e = 0;
      if (std::frexp(nd.value, &e) != 0.5 || e < -63 || e > 65) return false;
      *f = nd.value;  // 2^(e - 1)
      return true;
    };
    for (size_t i = 0; i < program.roots.size(); ++i) {
      const int32_t r = program.roots[i];
      const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(r)];
      double f = 1;
      int32_t x = -1;
      if (nd.op == expr::Op::kMul && nd.a != nd.b) {
        if (exact_factor(nd.b, &f))
          x = nd.a;
        else if (exact_factor(nd.a, &f))
          x = nd.b;
      } else if (nd.op == expr::Op::kDiv && exact_factor(nd.b, &f)) {
        f = 1 / f;  // exact: a power of 2
        x = nd.a;
      }
      if (x < 0) x = r;  // no factor
      if (program.nodes[static_cast<size_t>(x)].op == expr::Op::kConst) continue;
      // x = y + k, k + y or y - k.
      const expr::Subgraph::Node& xn = program.nodes[static_cast<size_t>(x)];
      auto is_const = [&](int32_t k) {
        return program.nodes[static_cast<size_t>(k)].op == expr::Op::kConst;
      };
      double offset = 0;
      int32_t y = -1;
      if ((xn.op == expr::Op::kAdd || xn.op == expr::Op::kSub) && is_const(xn.b) &&
          !is_const(xn.a)) {
        y = xn.a;
        offset = program.nodes[static_cast<size_t>(xn.b)].value;
        if (xn.op == expr::Op::kSub) offset = -offset;
      } else if (xn.op == expr::Op::kAdd && is_const(xn.a) && !is_const(xn.b)) {
        y = xn.b;
        offset = program.nodes[static_cast<size_t>(xn.a)].value;
      }
      if (y >= 0 && std::isfinite(offset)) {
        folded[static_cast<size_t>(x)] = 1;
        x = y;
      } else {
        offset = 0;
      }
      if (x == r) continue;
      root_node_[i] = x;
      root_factor_[i] = f;
      root_offset_[i] = offset;
      folded[static_cast<size_t>(r)] = 1;
    }
  }
  // A node that an evaluated node reads, or that a root delivers, is
  // evaluated (operands come first: one pass from the last node).
  for (int32_t r : root_node_) folded[static_cast<size_t>(r)] = 0;
  for (size_t id = nn; id-- > 0;) {
    if (folded[id]) continue;
    const expr::Subgraph::Node& nd = program.nodes[id];
    if (nd.a >= 0) folded[static_cast<size_t>(nd.a)] = 0;
    if (nd.b >= 0) folded[static_cast<size_t>(nd.b)] = 0;
  }
  for (int32_t r : program.roots) uses[static_cast<size_t>(r)] += 2;  // a root is kept
  for (int32_t r : root_node_) uses[static_cast<size_t>(r)] += 2;
  auto square_base = [&](int32_t k) -> int32_t {
    const expr::Subgraph::Node& nd = program.nodes[static_cast<size_t>(k)];
    const bool square =
        (nd.op == expr::Op::kPow && program.nodes[static_cast<size_t>(nd.b)].value == 2) ||
        (nd.op == expr::Op::kMul && nd.a == nd.b);
    return square && len[static_cast<size_t>(nd.a)] <= kMaxExact ? nd.a : -1;
  };
  // Differences a square absorbs: (a - b)^2 reads a and b (PolySquareT
  // with a subtrahend) when the difference feeds nothing else.
  std::vector<char> diff_base(nn, 0);  // per square node: its base is absorbed
  for (size_t id = 0; id < nn && !len.empty(); ++id) {
    const int32_t base = square_base(static_cast<int32_t>(id));
    if (base < 0 || folded[id]) continue;
    const expr::Subgraph::Node& bn = program.nodes[static_cast<size_t>(base)];
    if (bn.op != expr::Op::kSub || bn.a == bn.b || uses[static_cast<size_t>(base)] != 1) continue;
    absorbed[static_cast<size_t>(base)] = 1;
    diff_base[id] = 1;
  }
  for (size_t id = 0; id < nn && !len.empty(); ++id) {
    const expr::Subgraph::Node& nd = program.nodes[id];
    if (nd.op != expr::Op::kAdd) continue;
    for (int32_t sq : {nd.b, nd.a}) {
      const int32_t z = sq == nd.b ? nd.a : nd.b;
      if (z == sq || uses[static_cast<size_t>(sq)] != 1 || square_base(sq) < 0 ||
          len[static_cast<size_t>(z)] > len[static_cast<size_t>(sq)] ||
          absorbed[static_cast<size_t>(z)])
        continue;
      absorbed[static_cast<size_t>(sq)] = 1;
      add_square[id] = sq;
      break;
    }
  }
  for (size_t id = 0; id < nn; ++id) {
    const expr::Subgraph::Node& nd = program.nodes[id];
    series_[id].len = len.empty() ? 1 : len[id];
    if (nd.op == expr::Op::kConst) PolyConstant(nd.value, 0, &series_[id]);
    if (nd.op == expr::Op::kVar) var_node_[static_cast<size_t>(nd.var)] = static_cast<int32_t>(id);
    if (nd.op == expr::Op::kDiv) recip_[id] = 1 / program.nodes[static_cast<size_t>(nd.b)].value;
    if (len.empty() || nd.op == expr::Op::kConst || nd.op == expr::Op::kVar || absorbed[id] ||
        folded[id])
      continue;
    Step st{Kind::kNeg, nd.a, nd.b, static_cast<int32_t>(id)};
    const int32_t sq = add_square[id] >= 0 ? add_square[id] : static_cast<int32_t>(id);
    if (const int32_t base = square_base(sq); base >= 0) {
      // [z +] x^2 or [z +] (x - y)^2: a = x, b = y (or -1), z.
      const expr::Subgraph::Node& bn = program.nodes[static_cast<size_t>(base)];
      const bool diff = diff_base[static_cast<size_t>(sq)];
      st = {Kind::kSquare, diff ? bn.a : base, diff ? bn.b : -1, st.out};
      if (add_square[id] >= 0) st.z = sq == nd.b ? nd.a : nd.b;
      st.square =
          kPolySquareStep[static_cast<size_t>(len[static_cast<size_t>(base)] - 1)][st.z >= 0][diff];
      steps_.push_back(st);
      continue;
    }
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
        if (nd.op == expr::Op::kMul && !square &&
            (la == 1 || len[static_cast<size_t>(nd.b)] == 1)) {
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
    steps_.push_back(st);
  }
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

int64_t Evaluator::heap_bytes() const { return HeapBytesOf(work_, len_, bad_, src_); }

int64_t PolyEvaluator::heap_bytes() const {
  return HeapBytesOf(series_, var_node_, recip_, root_node_, root_factor_, root_offset_, steps_);
}

}  // namespace tether::taylor
