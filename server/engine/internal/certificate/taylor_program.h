// The ENCLOSED certificate's general path compiled per model (issue 22
// point 6): the Taylor passes over constraints that are not polynomials,
// run as a flat list of steps built once from the model's expr::Subgraph,
// as expr/tape.cc compiles plain evaluation, instead of taylor::Evaluator's
// walk over every node with a switch per node.
//
// Numbers are PolySeries (taylor_poly.h: midpoints and radii in arrays).
// Sums, differences, negations and products by a constant series are
// ball.h's operations coefficient by coefficient (the bits of
// taylor::Evaluator's); a product of two series (and a square, x^2) is
// PolyMul's bound (docs/MATH.md section 10.1: the midpoints' plain
// convolution, the radii one convolution of majorants), truncated at the
// pass length; sqrt and sin/cos/sinh/cosh have kernels of their own
// (taylor_program.cc: sqrt's symmetric terms once, sin/cos's products j a_j
// once a pass and its two sums in the lanes of a V2, divisions by k and by
// 2 f_0 as products with proven bounds; sin and cos of one operand, as
// joint angles give them, from one kernel call); every other operation
// (division, the other transcendental functions, non-smooth ones, powers
// other than 2) runs taylor::Evaluator's own rule (EvalOperation) on its
// operands converted to taylor::Series, and its result is converted back
// (the same balls: nothing rounds). Every step returns balls that contain
// the exact coefficients, so the enclosures stay proven; products', sqrt's
// and sin/cos's radii differ from the interpreter's in the last bits (both
// are upper bounds of the same rounding), and so do sqrt's midpoints (its
// leading coefficient is centred on fl(sqrt(m)), not on an interval's
// middle: taylor_program.cc's SqrtLead).
#pragma once

#include "engine/internal/base/internal.h"

#include <array>
#include <cstdint>
#include <vector>

#include "engine/internal/certificate/taylor.h"
#include "engine/internal/certificate/taylor_poly.h"
#include "engine/internal/expr/subgraph.h"

namespace tether::taylor {

class Program {
 public:
  // isa: the squares' kernels at the passes' lengths 7 and 8 and of
  // EvaluatePair (taylor_poly.h: the AVX2 ones have the baseline ones' bits).
  explicit Program(const expr::Subgraph& program, PolyIsa isa = PolyIsa::kAuto);

  // As Evaluator::Evaluate with var_len given: vars[k] is the series of
  // tape variable k (coefficients from var_len[k] on exactly 0), n the
  // pass length (1 <= n <= kMaxLength). Returns true when every root is
  // enclosed.
  bool Evaluate(const Series* vars, int n, const int* var_len);
  // ENCLOSED's two passes of a piece (DefectEncloser::EnclosePiece) in one:
  // Evaluate(centre, kCentreLength, var_len) and then Evaluate(piece,
  // kPieceLength, var_len), with their bits, root(i) the piece's series and
  // centre_root(i) the centre's. Where a node's two series have the same
  // midpoints (the variables of the centred form have: only the radii
  // differ), its step computes the midpoints once and both radii beside
  // them, in one walk over the steps; elsewhere (a wide sin or cos lead,
  // sinh and cosh, an operation of taylor::Evaluator's rule, and the steps
  // after it until the midpoints agree again) it runs the single-pass
  // kernels once for each. root_ok(i): both roots enclosed.
  static constexpr int kCentreLength = 7, kPieceLength = 8;
  bool EvaluatePair(const Series* centre, const Series* piece, const int* var_len);
  bool root_ok(size_t i) const { return root_ok_[i] != 0; }
  // Root i's series: the pass's n coefficients (zeros from its length up
  // to n; lanes from n on are not part of it).
  const PolySeries& root(size_t i) const {
    return series_[static_cast<size_t>(program_->roots[i])];
  }
  // After EvaluatePair: the centre pass's series of root i.
  const PolySeries& centre_root(size_t i) const {
    return centre_[static_cast<size_t>(program_->roots[i])];
  }
  // Heap bytes held (heap_bytes.h).
  int64_t heap_bytes() const;

 private:
  // kPartner: a sin (cos, sinh, cosh) whose complement of the same
  // operand came first; that step wrote it (SinCosKernel gives both).
  enum class Kind : uint8_t { kVar, kNeg, kAdd, kSub, kMul, kOther, kPartner };
  struct Step {
    Kind kind;
    int32_t out, a, b;  // nodes (kMul: b == a for a square)
    int32_t var;        // kVar: the tape variable
    // kOther sin, cos, sinh, cosh: the node of the complement of the same
    // operand, written by this step too (-1: none in the program).
    int32_t partner = -1;
  };
  template <int N>
  bool Run(const Series* vars, const int* var_len);
  bool RunPair(const Series* centre, const Series* piece, const int* var_len);
  // Step st on one pass of length N over the series s (series_ or centre_;
  // spare the complement of a sin or cos with no partner). Returns false
  // when the step's operation fails (its result is not enclosed).
  template <int N>
  bool Single(const Step& st, PolySeries* s, PolySeries* spare);
  // root_ok_ from bad_; whether every root is enclosed.
  bool JudgeRoots();

  const expr::Subgraph* program_;
  std::vector<Step> steps_;
  std::vector<PolySeries> series_;  // per node (constants written once)
  std::vector<PolySeries> centre_;  // per node, EvaluatePair's centre pass
  // Per node, EvaluatePair: its centre and piece series have the same
  // midpoints (lanes below the centre's length).
  std::vector<char> same_;
  std::vector<char> bad_;              // per node: not enclosed
  std::vector<char> root_ok_;          // per root
  Series in_a_, in_b_, out_, tmp_[4];  // EvalOperation's operands, result, scratch
  PolySeries spare_, centre_spare_;    // a sin's or cos's complement with no partner
  // Per step, a sin's or cos's last ::sincos argument and values (SinCosT).
  std::vector<std::array<double, 3>> sincos_memo_;
  // Per base length 1..7 (1..8), the square kernel of the passes of length
  // 7 (8) (null: taylor_program.cc's own).
  PolyProductKernel square7_[7] = {}, square8_[8] = {};
  // Per base length 1..8, EvaluatePair's square kernel (null: its own).
  PolyPairKernel square_pair_[8] = {};
};

}  // namespace tether::taylor
