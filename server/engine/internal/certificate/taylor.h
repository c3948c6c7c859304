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

// The longest operands whose whole products have kernels of their own, the
// lengths known at compile time (the quintic's 6 coefficients and less), on
// both paths (taylor.cc, taylor_poly.cc).
inline constexpr int kMaxExact = 6;

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

// One operation node of `program` on its operands' series a, b (null when
// absent) of effective lengths la, lb: out receives n coefficients and *len
// its effective length (n unless the rule knows it shorter). False when the
// operation is not smooth or not bounded on its operands. tmp: scratch of
// the compound rules, 4 series. Evaluator's step, and the compiled
// program's for the operations it has no kernel of its own for
// (taylor_program.h).
bool EvalOperation(const expr::Subgraph& program, const expr::Subgraph::Node& nd, const Series* a,
                   int la, const Series* b, int lb, int n, Series* out, int* len, Series* tmp);

// Series operations (the evaluator's building blocks). n is the length; la, lb the
// operands' effective lengths (coefficients from there on are exactly 0).
void Mul(const Series& a, int la, const Series& b, int lb, int n, Series* out);
bool Div(const Series& a, int la, const Series& b, int lb, int n, Series* out);
// f with f' = w(a) a': f_k = (1/k) sum_{j=1..k} j a_j w_{k-j}, k >= 1.
ball::Ball DerivConv(const Series& a, const Series& w, int k);

}  // namespace tether::taylor
