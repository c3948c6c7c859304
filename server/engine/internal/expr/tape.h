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

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/internal/expr/expression.h"
#include "engine/internal/expr/operations.h"

// The tape's own operations, after the graph's in Tape::Code:
// X(name, operands, value), where operands is how many of the slots a, b, c
// the instruction reads and value is computed from x (slot a, or the
// register), y (slot b) and z (slot c). The values are expanded only in
// Tape::Eval (tape.cc), where PowInt and the instruction pointer ip exist.
// clang-format off
#define TETHER_TAPE_OPERATIONS(X)                                           \
  /* Graph operations pow(x, c) with a constant c. */                       \
  X(kSquare,    1, x * x)                                                   \
  X(kCube,      1, x * x * x)                                               \
  X(kRecip,     1, 1.0 / x)                                                 \
  X(kPowInt,    1, PowInt(x, ip->b))   /* x^n, n in the instruction's b */  \
  X(kCopy,      1, x)                  /* out = a */                        \
  /* Two operations fused when the first one's result has no other use   */ \
  /* (the sums of squares and products of mechanics): one dispatch, no   */ \
  /* intermediate store.                                                 */ \
  X(kSquareAdd, 2, x * x + y)          /* a^2 + b */                        \
  X(kSubSquare, 2, (x - y) * (x - y))  /* (a - b)^2 */                      \
  X(kMulAdd,    3, x * y + z)          /* a b + c */                        \
  X(kSubMul,    3, (x - y) * z)        /* (a - b) c */                      \
  X(kAddMul,    3, (x + y) * z)        /* (a + b) c */                      \
  /* A difference and its negation, both outputs (a distance's Jacobian  */ \
  /* entries d and -d): out = a - b and slot c = -(a - b).               */ \
  X(kSubNeg,    2, (w[ip->c] = -(x - y), x - y))                            \
  /* (a - b) c plus the previous instruction's result (still in the      */ \
  /* register; a sum of such products, as in H = v^T (D^2 g) v).         */ \
  X(kSubMulAdd, 3, (x - y) * z + acc)                                       \
  /* a^2 + b^2: a square fused into the sum a few instructions later     */ \
  /* that reads it (the squared distance of two coordinates).            */ \
  X(kSumSquares, 2, x * x + y * y)
// clang-format on

namespace tether {

class NativeTape;  // native_tape.h

class Tape {
 public:
  Tape() = default;

  // `num_vars` variables occupy slots [0, num_vars); outputs are node ids.
  // `stop`, when given, is polled every expr::Graph::kPollInterval nodes;
  // once it returns true the compilation is abandoned and the result is an
  // empty tape (the caller, which owns the reason, reports it). Time and
  // memory are linear in the number of nodes the outputs need.
  static Tape Compile(const expr::Graph& graph, std::span<const expr::NodeId> outputs, int num_vars,
                      const std::function<bool()>& stop = {});

  int num_vars() const { return num_vars_; }
  int num_slots() const { return num_slots_; }
  int num_outputs() const { return num_outputs_; }
  // Instructions (copies included, the end marker not).
  size_t num_instructions() const { return code_.size() - 1; }

  // Writes the constants into a work buffer of num_slots() doubles. Call once
  // per buffer; Eval never overwrites them.
  void InitWork(double* work) const;
  // Whether output k is a constant: InitWork writes it, Eval never changes it.
  bool OutputIsConstant(int k) const;

  // work[0, num_vars) must hold the variables; computes the outputs into
  // Outputs(work)[0, num_outputs): by the tape's machine code where Compile
  // made it (native_tape.h), else by Interpret. Both give the same bits.
  void Eval(double* work) const;
  // Eval by the interpreter, whether or not there is machine code.
  void Interpret(double* work) const;
  // Whether Eval runs machine code (NativeTape::Translate).
  bool native() const { return native_ != nullptr; }
  const double* Outputs(const double* work) const { return work + output_base_; }
  // The first output's slot (Outputs(work) is work + output_base()).
  int32_t output_base() const { return output_base_; }
  double* Outputs(double* work) const { return work + output_base_; }

  // Eval, then copies the outputs into out[0, num_outputs).
  void Eval(double* work, double* out) const;

  // The codes: first every graph operation, in the order of operations.h's
  // table (Code::kSin computes Scalar<Op::kSin>), then the tape's own
  // operations (TETHER_TAPE_OPERATIONS above), then kEnd, the last
  // instruction of every tape.
  enum class Code : uint8_t {
#define TETHER_TAPE_CODE(name, ...) name,
    TETHER_EXPR_OPERATIONS(TETHER_TAPE_CODE) TETHER_TAPE_OPERATIONS(TETHER_TAPE_CODE)
#undef TETHER_TAPE_CODE
        kEnd,
  };
  // The code that computes graph operation `op`.
  static constexpr Code CodeOf(expr::Op op) {
    return static_cast<Code>(static_cast<int>(op) - expr::kFirstOperation);
  }
  // Added to a code: the first operand is the previous instruction's result
  // (still in a register), not w[a].
  static constexpr int kFromAcc = static_cast<int>(Code::kEnd) + 1;
  // Added to a code (with or without kFromAcc): the result is left in the
  // register only, not stored; the next instruction reads it from there
  // and nothing reads its slot later.
  static constexpr int kNoStore = 2 * kFromAcc;
  struct Instruction {
    Code code;
    int32_t out;
    int32_t a;
    int32_t b;      // second operand slot, or the exponent for kPowInt
    int32_t c = 0;  // third operand slot (kMulAdd, kSubMul, kAddMul, kSubMulAdd), or
                    // kSubNeg's second output slot
    // The code without its flags, and the flags: the first operand from
    // the register (kFromAcc), the result stored (no kNoStore).
    Code base() const { return static_cast<Code>(static_cast<uint8_t>(code) % kFromAcc); }
    bool from_acc() const { return static_cast<uint8_t>(code) % kNoStore >= kFromAcc; }
    bool stored() const { return static_cast<uint8_t>(code) < kNoStore; }
  };
  const std::vector<Instruction>& code() const { return code_; }
  // Heap bytes held (heap_bytes.h), and the bytes of the pages mapped for
  // the machine code (not heap: Simulation::MemoryUse::code).
  int64_t heap_bytes() const;
  int64_t code_bytes() const;

  // x^n by squaring, the same sequence of products every time (kPowInt).
  static double PowInt(double x, int n);

 private:
  static void FuseInstructions(std::vector<Instruction>* code, int32_t output_base,
                               int num_outputs);
  static void FuseNegations(std::vector<Instruction>* code, int32_t output_base, int num_outputs,
                            int32_t num_slots);
  static void FuseSumsOfProducts(std::vector<Instruction>* code, int32_t output_base,
                                 int num_outputs);
  static void FuseSumsOfSquares(std::vector<Instruction>* code, int32_t output_base,
                                int num_outputs);

  int num_vars_ = 0;
  int num_slots_ = 0;
  int num_outputs_ = 0;
  int32_t output_base_ = 0;
  std::vector<Instruction> code_{Instruction{Code::kEnd, 0, 0, 0}};
  std::vector<std::pair<int32_t, double>> constants_;  // slot, value
  std::vector<char> constant_output_;                  // (num_outputs)
  // Machine code for code_, shared by copies of the tape (immutable).
  std::shared_ptr<const NativeTape> native_;
};

}  // namespace tether
