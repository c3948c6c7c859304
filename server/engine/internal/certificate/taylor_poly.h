// The ENCLOSED certificate's fast path for polynomial constraints: the
// series of a polynomial expr::Subgraph (constants, variables, +, -, *,
// division by a constant, integer powers) evaluated as midpoint-radius
// balls in fixed-size lanes, several times cheaper than taylor::Evaluator's
// general series (certificate/taylor.h), which every other constraint takes.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <span>
#include <vector>

#include "engine/internal/certificate/taylor.h"
#include "engine/internal/expr/subgraph.h"

namespace tether::taylor {

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
  // The step that computes node `id` as [z +] (a [- b])^2 (the constructor's
  // fused squares): sq is the square node, base its base, diff whether the
  // base is an absorbed difference, in_sum whether `id` is a sum absorbing sq.
  static Step SquareStep(const expr::Subgraph& program, const std::vector<int>& len, int32_t id,
                         int32_t sq, int32_t base, bool diff, bool in_sum);
  // The step that computes node `id` by its own operation, with the kernel
  // for its operands' series lengths `len`.
  static Step OperationStep(const expr::Subgraph& program, const std::vector<int>& len, int32_t id);
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

}  // namespace tether::taylor
