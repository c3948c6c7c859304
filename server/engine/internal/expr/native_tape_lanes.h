// A lane program (tape_lanes.h) translated once into AVX machine code for
// the AVX2 kernel's lane groups (eight doubles, two 4-double registers a
// value): the same operations in the same order on the same work slots, as
// one straight-line function, where the interpreter (EvalLanes) pays at
// every instruction its dispatch jump, the loads of the instruction's
// handler and operand offsets, and the accumulator's moves. The lane
// counterpart of NativeTape (native_tape.h), which does this for the
// scalar tape.
//
// Bits: the arithmetic codes (+ - * /, sqrt, abs, negation, the fused
// tape codes) are emitted as the AVX operations EvalLanes' handlers
// compile to (vaddpd, vmulpd, vsqrtpd, a sign mask's vxorpd or vandpd, ...),
// each the correctly rounded IEEE operation on each lane in the handler's
// order; no fused multiply-add (the AVX2 kernel has none either). Every
// other instruction (sin, exp, pow, min, a sincos pair, x^n, ...) is a call
// back into the interpreter for that one instruction (`Interpret` below),
// so it computes exactly what EvalLanes computes, with exact or fast
// functions alike. tests/ensemble_test.cc compares the two on every code,
// and every lane result with a plain Run's.
//
// Only the operations of AVX (VEX-encoded 256-bit double arithmetic): it
// runs where the AVX2 kernel runs. Encoding: Xbyak, as NativeTape.
//
// Memory: the code lives in pages of its own, written then made read-only
// and executable (never both); at most 160 bytes an instruction (a call
// takes 25). Where the system refuses them, or under AddressSanitizer (its
// checks cannot see this code's loads and stores), Translate gives null and
// EvalLanes interprets.
//
// Thread safety: immutable after Translate; Run may be called from any
// number of threads at once, each with its own work buffer.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "engine/internal/expr/code_pages.h"
#include "engine/internal/expr/tape.h"

namespace tether::lanes {

// One instruction of a lane program as the translation sees it.
struct NativeLaneOp {
  // Emitted inline (call == nullptr): the code (a base code: no kFromAcc
  // or kNoStore), its first operand the accumulator's value or slot a,
  // its result stored at out. Byte offsets into the work buffer.
  Tape::Code code = Tape::Code::kEnd;
  bool from_acc = false;
  int32_t out = 0, a = 0, b = 0, c = 0;
  // false: the result stays in the accumulator only (the tape's kNoStore:
  // nothing reads its slot later; the next instruction, inline or a call,
  // does not read it from there).
  bool store = true;
  // Or a call: Interpret(work, call), or `function` in its place where
  // given, which computes the instruction and stores its result at out.
  const void* call = nullptr;
  void (*function)(void* work, const void* ip) = nullptr;
};

class NativeLaneCode {
 public:
  // work: the lane group's buffer; ip: the program to interpret from (one
  // instruction and the end).
  using Interpret = void (*)(void* work, const void* ip);

  // Whether this build translates (x86-64 Linux, not under
  // AddressSanitizer).
  static const bool kSupported;
  // The bytes of one lane value: eight doubles.
  static constexpr int32_t kValueBytes = 64;

  // Whether `code` is emitted inline (else a NativeLaneOp must call).
  static bool Inline(Tape::Code code);

  // The code of `ops` (kEnd not included), or null where none can be made.
  static std::unique_ptr<NativeLaneCode> Translate(std::span<const NativeLaneOp> ops,
                                                   Interpret interpret);

  NativeLaneCode(const NativeLaneCode&) = delete;
  NativeLaneCode& operator=(const NativeLaneCode&) = delete;
  ~NativeLaneCode();

  void Run(void* work) const { entry_(work, constants_); }
  size_t code_bytes() const { return pages_.code_bytes; }

 private:
  explicit NativeLaneCode(const CodePages& pages);

  // The sign mask, the absolute value's mask and 1.0, four lanes each
  // (the code reads them through its second argument).
  alignas(32) double constants_[12];
  CodePages pages_;
  void (*entry_)(void* work, const double* constants);
};

}  // namespace tether::lanes
