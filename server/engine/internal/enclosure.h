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

// Enclosures of the step's quintic Hermite interpolant (certificate.h's
// QuinticHermite) over theta in `theta` (a sub-interval of [0, 1]) for a
// step of length h: position p, velocity dp and acceleration ddp in time
// units, each basis polynomial by Horner's rule in interval arithmetic
// (the natural extension: valid, loose on wide theta; a caller subdivides).
inline void HermiteEnclosure(int n, double h, const Interval& theta, const double* q0,
                             const double* v0, const double* a0, const double* q1, const double* v1,
                             const double* a1, Interval* p, Interval* dp, Interval* ddp) {
  // Coefficients of s^0..s^5 of the six basis polynomials (HermiteWeights);
  // their derivatives are formed below by exact small-integer products.
  static constexpr double kP[6][6] = {{1, 0, 0, -10, 15, -6},       {0, 1, 0, -6, 8, -3},
                                      {0, 0, 0.5, -1.5, 1.5, -0.5}, {0, 0, 0, 10, -15, 6},
                                      {0, 0, 0, -4, 7, -3},         {0, 0, 0, 0.5, -1, 0.5}};
  Interval w[3][6];
  for (int k = 0; k < 6; ++k) {
    double c[3][6] = {};
    for (int j = 0; j < 6; ++j) c[0][j] = kP[k][j];
    for (int j = 0; j < 5; ++j) c[1][j] = (j + 1) * c[0][j + 1];
    for (int j = 0; j < 4; ++j) c[2][j] = (j + 1) * c[1][j + 1];
    for (int d = 0; d < 3; ++d) {
      Interval acc(c[d][5]);
      for (int j = 4; j >= 0; --j) acc = acc * theta + Interval(c[d][j]);
      w[d][k] = acc;
    }
  }
  const Interval H(h), H2 = H * H, iH = Interval(1.0) / H, iH2 = iH * iH;
  const Interval one(1.0);
  const Interval scale[3][6] = {
      {one, H, H2, one, H, H2}, {iH, one, H, iH, one, H}, {iH2, iH, one, iH2, iH, one}};
  for (int d = 0; d < 3; ++d) {
    for (int k = 0; k < 6; ++k) w[d][k] = w[d][k] * scale[d][k];
  }
  Interval* out[3] = {p, dp, ddp};
  for (int i = 0; i < n; ++i) {
    const double x[6] = {q0[i], v0[i], a0[i], q1[i], v1[i], a1[i]};
    for (int d = 0; d < 3; ++d) {
      Interval acc(0.0);
      for (int k = 0; k < 6; ++k) acc = acc + w[d][k] * Interval(x[k]);
      out[d][i] = acc;
    }
  }
}

}  // namespace tether::interval
