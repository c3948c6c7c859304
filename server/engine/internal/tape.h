// A flat instruction tape compiled from an expression graph (CasADi-style):
// the nodes needed for a set of outputs, in topological order, with work
// slots reused by liveness. Evaluation is a direct-threaded loop over a
// caller-owned work buffer: no allocation, no recursion.
//
// Work buffer layout: [variables | constants | outputs | temporaries]. The
// instruction that computes an output writes it in place; an output that is
// a variable or repeats an earlier output is copied at the end of the tape,
// and a constant output is written once by InitWork.
#pragma once

#include "engine/internal/internal.h"

#include <cstdint>
#include <span>
#include <vector>

#include "engine/internal/expression.h"

namespace tether {

class Tape {
 public:
  Tape() = default;

  // `num_vars` variables occupy slots [0, num_vars); outputs are node ids.
  static Tape Compile(const expr::Graph& graph, std::span<const expr::NodeId> outputs,
                      int num_vars);

  int num_vars() const { return num_vars_; }
  int num_slots() const { return num_slots_; }
  int num_outputs() const { return num_outputs_; }
  // Instructions (copies included, the end marker not).
  size_t num_instructions() const { return code_.size() - 1; }

  // Writes the constants into a work buffer of num_slots() doubles. Call once
  // per buffer; Eval never overwrites them.
  void InitWork(double* work) const;

  // work[0, num_vars) must hold the variables; computes the outputs into
  // Outputs(work)[0, num_outputs).
  void Eval(double* work) const;
  const double* Outputs(const double* work) const { return work + output_base_; }
  double* Outputs(double* work) const { return work + output_base_; }

  // Eval, then copies the outputs into out[0, num_outputs).
  void Eval(double* work, double* out) const;

  enum class Code : uint8_t {
    kNeg, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh, kExp, kLog,
    kSqrt, kAbs, kSign, kStep,
    kSquare, kCube, kRecip, kPowInt,  // x^2, x^3, 1/x, x^n (n in `n`)
    kAdd, kSub, kMul, kDiv, kPow, kAtan2, kMin, kMax,
    kCopy,  // out = a
    // Two operations fused when the first one's result has no other use
    // (the sums of squares and products of mechanics): one dispatch, no
    // intermediate store.
    kSquareAdd,  // a^2 + b
    kSubSquare,  // (a - b)^2
    kMulAdd,     // a b + c
    kSubMul,     // (a - b) c
    kAddMul,     // (a + b) c
    kEnd,   // the last instruction of every tape
  };
  // Added to a code: the first operand is the previous instruction's result
  // (still in a register), not w[a].
  static constexpr int kFromAcc = 64;
  struct Instruction {
    Code code;
    int32_t out;
    int32_t a;
    int32_t b;  // second operand slot, or the exponent for kPowInt
    int32_t c = 0;  // third operand slot (kMulAdd, kSubMul, kAddMul)
  };
  const std::vector<Instruction>& code() const { return code_; }

 private:
  static void FuseInstructions(std::vector<Instruction>* code, int32_t output_base,
                               int num_outputs);

  int num_vars_ = 0;
  int num_slots_ = 0;
  int num_outputs_ = 0;
  int32_t output_base_ = 0;
  std::vector<Instruction> code_{Instruction{Code::kEnd, 0, 0, 0}};
  std::vector<std::pair<int32_t, double>> constants_;  // slot, value
};

}  // namespace tether
