// Interval evaluation of expression graphs (issue 9, point 4, first part):
// the natural interval extension of every operation of operations.h over
// interval.h's outward-rounded Interval. Given intervals enclosing the
// variables, the result encloses every value the expression takes on that
// box (or is Entire() where an operation is singular or undefined there).
//
// Not yet used by the certificate: the ENCLOSED mode (a Taylor form in t of
// the defect along the step's interpolant, with subdivision) is to be built
// on it.
#pragma once

#include "engine/internal/internal.h"

#include <algorithm>
#include <vector>

#include "engine/internal/expression.h"
#include "engine/internal/interval.h"

namespace tether::interval {

// The interval extension of one operation (b ignored by unary ones).
inline Interval ApplyInterval(expr::Op op, const Interval& a, const Interval& b) {
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
inline void EvaluateInterval(const expr::Graph& g, const std::vector<expr::NodeId>& roots,
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

}  // namespace tether::interval
