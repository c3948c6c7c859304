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

// The square kernels' instruction set: the baseline (SSE2) ones, or the
// AVX2 ones (taylor_poly_avx2.cc: the same operations four lanes at a time,
// the same bits); kAuto takes AVX2 where the CPU and the OS have it.
enum class PolyIsa { kAuto, kBaseline, kAvx2 };
// Whether the AVX2 kernels exist in this build and may run here.
bool PolyAvx2Available();
// A square step's kernel: c = [z +] (a [- b])^2 (PolyEvaluator's kSquare).
using PolySquareKernel = void (*)(const PolySeries& a, const PolySeries* b, const PolySeries* z,
                                  PolySeries* c);
// The kernel for a base of la <= kMaxExact coefficients, with an addend z
// (add) and a subtrahend b (diff): the baseline one, and the AVX2 one (null
// in a build without it).
PolySquareKernel PolySquareBaseline(int la, bool add, bool diff);
PolySquareKernel PolySquareAvx2(int la, bool add, bool diff);

// The general path's square of a series of la <= n coefficients truncated
// at n coefficients (taylor_program.cc's SquareTruncatedT: c = a a, the
// second operand unread) for AVX2, with its bits: the quintic's squares
// (la <= kMaxExact) and those of a pass's full-length series (a sin's,
// cos's or sqrt's); null for an n other than the passes' lengths 7 and 8
// (DefectEncloser::kOrder + 3, + 4), for la > n, or in a build without AVX2.
using PolyProductKernel = void (*)(const PolySeries& a, const PolySeries& b, PolySeries* c);
PolyProductKernel PolySquareTruncatedAvx2(int la, int n);
// The same squares for the general path's two passes of a piece at once
// (taylor::Program::EvaluatePair): c = a a truncated at 8 coefficients and
// cc = ac ac at 7 (ac: a's centre-pass series, a's midpoints and radii of
// its own), the bits of taylor_program.cc's SquarePairT (each that of
// SquareTruncatedT at its length); b and bc unread. Null for la outside
// 1..8 or in a build without AVX2.
using PolyPairKernel = void (*)(const PolySeries& a, const PolySeries& ac, const PolySeries& b,
                                const PolySeries& bc, PolySeries* c, PolySeries* cc);
PolyPairKernel PolySquarePairAvx2(int la);

// eta's coefficients of one constraint from e's (DefectEncloser::
// EnclosePolyPiece, which derives the bound), for k < kPolyLanes:
//   cm_k = c2_k e_{k+2} + c1_k e_{k+1} + cb e_k   (e_j = 0 for j >= kPolyLanes,
//   e's coefficient 0 taken as the ball (e0m, e0r)),
//   cr_k = RadiusUp((1 + 5u) (|c2_k| r_{k+2} + |c1_k| r_{k+1} + cb r_k)
//                   + 8u (|t2| + |t1| + |t0|) + 4 kTiny),
// with cb >= 0; the baseline kernel two coefficients at a time, the AVX2
// one (null in a build without it) four, with the same bits.
using PolyEtaKernel = void (*)(const PolySeries& e, double e0m, double e0r, const double* c2,
                               const double* c1, double cb, double* cm, double* cr);
void PolyEta(const PolySeries& e, double e0m, double e0r, const double* c2, const double* c1,
             double cb, double* cm, double* cr);
PolyEtaKernel PolyEtaAvx2();

// A coordinate's Taylor coefficients d_0..d_5 at theta_m along the step's
// quintic (DefectEncloser::CoordinateCoefficients), from its data
// x = (q0, v0, a0, q1 - q0, v1, a1) and the basis weights times h^p, W[b][k]
// (DefectEncloser::DoubleWeights):
//   m_k = fl([k = 0] q0 + sum_{b=1..5} fl(W_bk x_b))   (summed in b order),
//   r_k = RadiusUp(9u RadiusUp([k = 0] |q0| + sum_b |fl(W_bk x_b)|) + 6 kTiny):
// each computed term is the exact one times at most three factors
// (1 + delta) (W's two roundings, the product's; or q1 - q0's and the
// product's) plus a subnormal product's kTiny / 2, and the sum of six terms
// adds gamma_5, so |d_k - m_k| <= (gamma_5 + 3.02 u) sum |terms| + 6 kTiny
// <= r_k. The baseline kernel two coefficients at a time, the AVX2 one (null
// in a build without it) four, with the same bits.
using PolyCoordinateKernel = void (*)(const double (*W)[6], const double* x, double* m, double* r);
void PolyCoordinate(const double (*W)[6], const double* x, double* m, double* r);
PolyCoordinateKernel PolyCoordinateAvx2();

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
  // isa: the square kernels' instruction set (the same bits on every one;
  // kAvx2 where PolyAvx2Available() is false takes the baseline).
  PolyEvaluator(const expr::Subgraph& program, std::span<const int> var_len,
                bool fold_root_factors = false, PolyIsa isa = PolyIsa::kAuto);

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
    PolySquareKernel square = nullptr;
  };
  // The step that computes node `id` as [z +] (a [- b])^2 (the constructor's
  // fused squares): sq is the square node, base its base, diff whether the
  // base is an absorbed difference, in_sum whether `id` is a sum absorbing sq.
  static Step SquareStep(const expr::Subgraph& program, const std::vector<int>& len, int32_t id,
                         int32_t sq, int32_t base, bool diff, bool in_sum, bool avx2);
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
