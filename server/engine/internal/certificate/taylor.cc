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
// coefficient of it, LA + LB - 1), with the lengths known at compile time
// (at most kMaxExact, taylor.h).
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
  if (hyperbolic) {
    s->c[0] = Lead(a.c[0], interval::Sinh);
    c->c[0] = Lead(a.c[0], interval::Cosh);
  } else {
    ball::SinCos(a.c[0], &s->c[0], &c->c[0]);
  }
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
  const Series* a = nd.a >= 0 ? src_[static_cast<size_t>(nd.a)] : nullptr;
  const Series* b = nd.b >= 0 ? src_[static_cast<size_t>(nd.b)] : nullptr;
  const int la = nd.a >= 0 ? len_[static_cast<size_t>(nd.a)] : 0;
  const int lb = nd.b >= 0 ? len_[static_cast<size_t>(nd.b)] : 0;
  return EvalOperation(*program_, nd, a, la, b, lb, n, out, len_out, tmp_);
}

// One case per operation of expr/operations.h (about 170 lines): a table
// in code, each case the operation's Taylor rule; an operation without one
// (HasTaylorRule) reaches no case and is unenclosed.
bool EvalOperation(const expr::Subgraph& program, const expr::Subgraph::Node& nd, const Series* a,
                   int la, const Series* b, int lb, int n, Series* out, int* len_out, Series* tmp) {
  using expr::Op;
  const auto& nodes = program.nodes;
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
        SinCos(*a, n, false, nd.op == Op::kSin ? out : &tmp[0], nd.op == Op::kSin ? &tmp[0] : out);
        break;
      case Op::kSinh:
      case Op::kCosh:
        SinCos(*a, n, true, nd.op == Op::kSinh ? out : &tmp[0], nd.op == Op::kSinh ? &tmp[0] : out);
        break;
      case Op::kTan: TanSeries(*a, n, 1.0, out, &tmp[0]); break;
      case Op::kTanh: TanSeries(*a, n, -1.0, out, &tmp[0]); break;
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
        Series& sq = tmp[0];
        Mul(*a, la, *a, la, n, &sq);
        if (nd.op == Op::kAtan) {
          sq.c[0] = sq.c[0] + Ball{1, 0};
          if (!Reciprocal(sq, n, &tmp[1])) return false;
        } else {
          for (int k = 0; k < n; ++k) sq.c[k] = -sq.c[k];
          sq.c[0] = sq.c[0] + Ball{1, 0};
          if (!SqrtSeries(sq, n, &tmp[2])) return false;
          if (!Reciprocal(tmp[2], n, &tmp[1])) return false;
        }
        const interval::Interval lead =
            nd.op == Op::kAtan   ? interval::Atan(ball::ToInterval(a->c[0]))
            : nd.op == Op::kAsin ? interval::Asin(ball::ToInterval(a->c[0]))
                                 : interval::Acos(ball::ToInterval(a->c[0]));
        out->c[0] = ball::FromInterval(lead);
        for (int k = 1; k < n; ++k) {
          const Ball d = DerivConv(*a, tmp[1], k);
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
          Series& num = tmp[0];
          Series& den = tmp[1];
          Mul(*b, n - 1, dy, n - 1, n - 1, &num);
          Mul(*a, n - 1, dx, n - 1, n - 1, &tmp[2]);
          for (int k = 0; k + 1 < n; ++k) num.c[k] = num.c[k] - tmp[2].c[k];
          Mul(*a, n - 1, *a, n - 1, n - 1, &den);
          Mul(*b, n - 1, *b, n - 1, n - 1, &tmp[2]);
          for (int k = 0; k + 1 < n; ++k) den.c[k] = den.c[k] + tmp[2].c[k];
          if (!Div(num, n - 1, den, n - 1, n - 1, &tmp[3])) return false;
          for (int k = 1; k < n; ++k)
            out->c[k] = ball::DivExact(tmp[3].c[k - 1], static_cast<double>(k));
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
              len = PowInt(*a, la, ip, n, out, &tmp[0], &tmp[1]);
            } else {
              PowInt(*a, la, -ip, n, &tmp[2], &tmp[0], &tmp[1]);
              if (!Reciprocal(tmp[2], n, out)) return false;
            }
          } else {
            if (ball::StrictSign(a->c[0]) <= 0) return false;
            if (!PowReal(*a, p, n, out)) return false;
          }
        } else {
          // a^b = exp(b log a), a > 0.
          if (ball::StrictSign(a->c[0]) <= 0) return false;
          if (!LogSeries(*a, n, &tmp[0])) return false;
          Mul(*b, lb, tmp[0], n, n, &tmp[1]);
          ExpSeries(tmp[1], n, out);
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

// The operations EvalOperation has a rule for: every one of operations.h's table,
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
              "an operation of operations.h has no Taylor rule in EvalOperation: add its "
              "case there and to HasTaylorRule");

int64_t Evaluator::heap_bytes() const { return HeapBytesOf(work_, len_, bad_, src_); }

}  // namespace tether::taylor
