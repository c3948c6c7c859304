// Truncated Taylor series with ball coefficients (ball.h) evaluated over a
// compact copy of an expression graph: the arithmetic of the ENCLOSED
// certificate (defect_enclosure.h, docs/MATH.md section 10).
//
// A Series holds the coefficients x_0 .. x_{n-1} of x(s) = sum_k x_k s^k,
// each a ball, so that the exact k-th Taylor coefficient of the function the
// series stands for lies in x_k, for every expansion point the inputs'
// balls allow. Operations use the classical recurrences of automatic
// differentiation in Taylor mode (Griewank and Walther, ch. 13): products
// are convolutions, division and sqrt solve their triangular recurrences,
// and every function f with f' = w(a) a' gets f_k = (1/k) sum_j j a_j
// w_{k-j}. The leading coefficient of a transcendental function is
// enclosed by interval.h on its ball.
//
// Non-smooth operations (abs, min, max, sign, step, atan2 across its cut)
// have a Taylor series only where their argument stays on one side of the
// switch: when a leading ball reaches the switch the evaluation reports
// "not smooth here" and the caller claims nothing for that piece.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <span>
#include <vector>

#include "engine/internal/base/ball.h"
#include "engine/internal/expr/expression.h"
#include "engine/internal/expr/subgraph.h"

namespace tether::taylor {

// Longest series (coefficients 0..kMaxLength-1); enough for the defect's
// order kOrder + 3 (defect_enclosure.h) and for the whole polynomial e(theta)
// of a constraint of degree 2 in q along a quintic (degree 10).
inline constexpr int kMaxLength = 11;

struct Series {
  ball::Ball c[kMaxLength];
};

// Per node of `program`, its degree as a polynomial in the expansion
// variable s when variable k is a polynomial of degree var_degree[k] in s
// (every tape variable of program.var_list must have an entry), or
// kNotPolynomial. Polynomial: constants, variables, +, -, *, division by a
// node of degree 0, integer powers p >= 0 of polynomials, and any operation
// whose operands are all of degree 0 (constant in s: a kink or singularity
// there is decided by the value, which is the same for every s).
// Everything else, in particular a non-smooth operation of a non-constant
// operand or a division by one, is not.
inline constexpr int kNotPolynomial = -1;
std::vector<int> PolynomialDegrees(const expr::Subgraph& program, std::span<const int> var_degree);

// Evaluates an expr::Subgraph on series of length n (1 <= n <= kMaxLength).
class Evaluator {
 public:
  explicit Evaluator(const expr::Subgraph& program);

  // vars[k] is the series of tape variable k for every k in
  // program.var_list (others are not read). Returns true when every root
  // is enclosed. A node whose operation is not smooth on its operands'
  // balls (or whose result is unbounded) is marked, and so is everything
  // computed from it: root_ok(i) says whether root i's series, root(i),
  // encloses anything.
  // var_len (optional, indexed like vars) gives each variable's effective
  // length: its coefficients from there on are exactly 0 (n when absent).
  bool Evaluate(const Series* vars, int n, const int* var_len = nullptr);
  bool root_ok(size_t i) const { return !bad_[static_cast<size_t>(program_->roots[i])]; }
  const Series& root(size_t i) const { return *src_[static_cast<size_t>(program_->roots[i])]; }
  // Heap bytes held (heap_bytes.h).
  int64_t heap_bytes() const;

 private:
  // One node; false when it is not smooth or not bounded on its operands.
  // *len receives the result's effective length.
  bool EvalNode(const expr::Subgraph::Node& nd, int n, Series* out, int* len);

  const expr::Subgraph* program_;
  std::vector<Series> work_;        // one per node
  std::vector<int> len_;            // per node: coefficients beyond it are exactly 0
  std::vector<char> bad_;           // per node: not enclosed (see Evaluate)
  std::vector<const Series*> src_;  // per node: its series (work_, or the caller's for variables)
  Series tmp_[4];                   // scratch of the compound operations
};

// A series of balls stored as midpoints and radii (the polynomial path's
// number type, PolyEvaluator): the exact coefficient x_k of the quantity
// the series stands for has |x_k - m[k]| <= r[k]; m[k] = r[k] = 0 for
// k >= len (x_k = 0 there).
inline constexpr int kPolyLanes = 12;  // >= kMaxLength + 1, even
struct PolySeries {
  alignas(16) double m[kPolyLanes] = {};
  alignas(16) double r[kPolyLanes] = {};
  int len = 1;
};

// Evaluates a polynomial expr::Subgraph (nodes: constants, variables, -x, +, -, *,
// division by a constant node, integer powers 0..64 of a node by a constant
// node) on PolySeries: sums and constant factors as ball.h's + and Scale;
// a product's midpoints are the plain convolution and its radii one
// convolution of majorants, |a_i|, r_i against r_j, gamma_n |b_j| (docs/
// MATH.md section 10.1): about half the work of ball.h's Dot, which bounds
// every term on its own.
class PolyEvaluator {
 public:
  // Whether `program` has only those nodes and every node's series fits in
  // kMaxLength coefficients with variable k of length var_len[k].
  static bool Supports(const expr::Subgraph& program, std::span<const int> var_len);
  // fold_root_factors: a root x * c, c * x or x / (1/c) with c a positive
  // power of 2 in [2^-64, 2^64] (an exact factor) is delivered as x's
  // series with root_factor c (the root's series is c times it, exactly);
  // the caller multiplies its own constants by c (DefectEncloser). Then
  // an x of the form y + k, k + y or y - k (k a constant, y not) is
  // delivered as y's series with root_offset k (resp. -k): the root is
  // c (y + offset), the offset added to coefficient 0 by the caller.
  PolyEvaluator(const expr::Subgraph& program, std::span<const int> var_len,
                bool fold_root_factors = false);

  // The series of tape variable v to fill before Evaluate (nullptr when
  // the program does not use v); its len is set from var_len.
  PolySeries* var(int v) {
    const int32_t id = var_node_[static_cast<size_t>(v)];
    return id < 0 ? nullptr : &series_[static_cast<size_t>(id)];
  }
  void Evaluate();
  const PolySeries& root(size_t i) const { return series_[static_cast<size_t>(root_node_[i])]; }
  double root_factor(size_t i) const { return root_factor_[i]; }
  double root_offset(size_t i) const { return root_offset_[i]; }
  // Heap bytes held (heap_bytes.h).
  int64_t heap_bytes() const;

 private:
  // The operations to run (leaves are written once or by the caller).
  enum class Kind : uint8_t {
    kNeg,
    kAdd,
    kSub,
    kAddShort,
    kSubShort,
    kMul,
    kScale,
    kDiv,
    kPow,
    kSquare
  };
  struct Step {
    Kind kind;
    int32_t a, b, out;  // kAddShort / kSubShort / kScale: b has length 1
    // kMul, kPow with exponent 2: the product kernel for the operands'
    // lengths (null: PolyMul chooses).
    void (*mul)(const PolySeries&, const PolySeries&, PolySeries*) = nullptr;
    // kSquare: out = [z +] (a [- b])^2 (b, z: -1 when absent; the sum, the
    // square and the difference are one step), the kernel for the lengths.
    int32_t z = -1;
    void (*square)(const PolySeries&, const PolySeries*, const PolySeries*, PolySeries*) = nullptr;
  };
  const expr::Subgraph* program_;
  std::vector<PolySeries> series_;   // per node
  std::vector<int32_t> var_node_;    // per tape variable: its node, or -1
  std::vector<double> recip_;        // per node: 1 / c of a division by a constant c
  std::vector<int32_t> root_node_;   // per root: the node root() delivers
  std::vector<double> root_factor_;  // per root: the root is this times (root() + offset)
  std::vector<double> root_offset_;  // per root: added to root()'s coefficient 0
  std::vector<Step> steps_;
};

// c = a b on PolySeries.
void PolyMul(const PolySeries& a, const PolySeries& b, PolySeries* c);

// Series operations (the evaluator's building blocks). n is the length; la, lb the
// operands' effective lengths (coefficients from there on are exactly 0).
void Mul(const Series& a, int la, const Series& b, int lb, int n, Series* out);
bool Div(const Series& a, int la, const Series& b, int lb, int n, Series* out);
// f with f' = w(a) a': f_k = (1/k) sum_{j=1..k} j a_j w_{k-j}, k >= 1.
ball::Ball DerivConv(const Series& a, const Series& w, int k);

}  // namespace tether::taylor
