// A tape's instructions translated once into x86-64 machine code: the same
// operations in the same order on the same work slots, as one straight-line
// function with no dispatch. Tape::Eval runs it in place of its interpreter
// when Tape::Compile could make one (see NativeTape::Translate).
//
// Why: the interpreter's time on a large tape (the 7-joint arm's dynamics,
// 2,982 instructions) goes to its indirect dispatch jump, not to the
// arithmetic: a sequence of thousands of handler targets is beyond what the
// processor's indirect-branch predictor holds (docs/benchmarks.md,
// "Mechanisms", the profile of 2026-12-05). Straight-line code has no
// indirect jump to mispredict.
//
// Bits: the translation emits, per instruction, the scalar SSE2 operation
// the interpreter's handler compiles to (addsd, subsd, mulsd, divsd, a sign
// flip) in the handler's order of operations, for the arithmetic codes; every
// other code (sin, pow, min, ...) calls a function that evaluates the same
// expression as the handler (operations.h's Scalar<op>, tape.h's
// TETHER_TAPE_OPERATIONS). The engine is built without fused multiply-adds
// (x86-64's baseline has none), so both give the same bits on every input;
// tests/tape_test.cc compares them on every code.
//
// Encoding: Xbyak (Debian's libxbyak-dev, the header-only x86-64 JIT
// assembler oneDNN uses) writes the bytes from its mnemonics (movsd, addsd,
// call, ...) in place of hand-written encodings: a maintained assembler
// that checks every operand, so the choice of instructions is all that
// stays here. Its cost is translation time only (the code it emits runs
// as fast): docs/benchmarks.md, "The native tape's encoder".
//
// Memory: the code lives in pages of its own (mmap), written through
// Xbyak's user-buffer mode (it neither allocates nor changes protections),
// then made read-only and executable (never both writable and executable).
// Where the system refuses executable pages, Xbyak refuses an operand, or
// off x86-64, or under AddressSanitizer (which checks the interpreter's
// loads and cannot see these), Translate gives nothing (no exception
// escapes) and the tape is interpreted.
//
// Thread safety: immutable after Translate; Run may be called from any
// number of threads at once, each with its own work buffer.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstddef>
#include <memory>
#include <span>

#include "engine/internal/expr/code_pages.h"
#include "engine/internal/expr/tape.h"

namespace tether {

class NativeTape {
 public:
  // Whether this build translates at all (x86-64 Linux, not under
  // AddressSanitizer); where it does, Translate still gives null for a
  // short tape or when the system refuses executable pages.
  static const bool kSupported;

  // Tapes shorter than this are interpreted: their dispatch is predicted
  // (a handful of targets) and a page of code each would cost more memory
  // than it saves time.
  static constexpr size_t kMinInstructions = 256;
  // Longer tapes are interpreted too: this bounds the code a tape adds
  // (about 24 bytes an instruction: 25 MB here; while it is made, 64 bytes
  // an instruction of address space, backed only where written) beside the
  // tape's own 20 bytes an instruction.
  static constexpr size_t kMaxInstructions = size_t{1} << 20;

  // The code of `code` (a tape's instructions, kEnd last) over a work
  // buffer of `num_slots` doubles, or null where none can be made (see
  // above).
  static std::unique_ptr<NativeTape> Translate(std::span<const Tape::Instruction> code,
                                               int num_slots);

  NativeTape(const NativeTape&) = delete;
  NativeTape& operator=(const NativeTape&) = delete;
  ~NativeTape();

  void Run(double* work) const { entry_(work); }
  // Bytes of machine code, and of the pages mapped for it (rounded up to
  // the page size).
  size_t code_bytes() const { return pages_.code_bytes; }
  size_t mapped_bytes() const { return pages_.mapped; }

 private:
  explicit NativeTape(const CodePages& pages);

  CodePages pages_;
  void (*entry_)(double*);
};

}  // namespace tether
