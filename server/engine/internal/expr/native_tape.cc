#include "engine/internal/expr/native_tape.h"

#include <cstdint>

#include "engine/internal/expr/code_pages.h"

#if defined(__x86_64__) && defined(__linux__)
#include <xbyak/xbyak.h>
#define TETHER_NATIVE_TAPE_X86_64 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TETHER_NATIVE_TAPE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_NATIVE_TAPE_OFF 1
#endif
#endif

namespace tether {

NativeTape::NativeTape(const CodePages& pages)
    : pages_(pages), entry_(reinterpret_cast<void (*)(double*)>(pages.pages)) {}

#if defined(TETHER_NATIVE_TAPE_X86_64) && !defined(TETHER_NATIVE_TAPE_OFF)

const bool NativeTape::kSupported = true;

NativeTape::~NativeTape() { ReleaseCodePages(pages_); }

namespace {

using Code = Tape::Code;
using expr::Op;

double PowInt(double x, int n) { return Tape::PowInt(x, n); }

// The codes the translation does not emit inline: a call to a function
// computing the handler's expression, which stores the result and returns
// it (it stays in xmm0, the interpreter's register `acc`). Its arguments
// follow the System V ABI: rdi the work buffer, esi, edx, ecx, r8d the
// instruction's out, a, b, c, and xmm0 the register.
using Helper = double (*)(double* w, int32_t out, int32_t a, int32_t b, int32_t c, double acc);

// The most bytes one instruction's code takes: 51 (kSubNeg: five
// operations on [rbx + disp32], a movapd and a sign flip); a call takes 36.
constexpr size_t kMaxBytesPerInstruction = 64;

// The operands, as the interpreter loads them (tape.cc's TETHER_LOAD_n).
#define TETHER_NATIVE_LOAD_1 const double x = kFromAcc ? acc : w[a];
#define TETHER_NATIVE_LOAD_2 \
  TETHER_NATIVE_LOAD_1       \
  const double y = w[b];
#define TETHER_NATIVE_LOAD_3 \
  TETHER_NATIVE_LOAD_2       \
  const double z = w[c];
#define TETHER_NATIVE_SECOND_1 0.0
#define TETHER_NATIVE_SECOND_2 y
#define TETHER_NATIVE_HELPER(name, operands, value)                                 \
  template <bool kFromAcc>                                                          \
  double Helper_##name(double* w, int32_t out, [[maybe_unused]] int32_t a,          \
                       [[maybe_unused]] int32_t b, [[maybe_unused]] int32_t c,      \
                       [[maybe_unused]] double acc) {                               \
    [[maybe_unused]] const Tape::Instruction instruction{Code::name, out, a, b, c}; \
    [[maybe_unused]] const Tape::Instruction* ip = &instruction;                    \
    TETHER_NATIVE_LOAD_##operands const double result = (value);                    \
    w[out] = result;                                                                \
    return result;                                                                  \
  }
#define TETHER_NATIVE_GRAPH_HELPER(name, spelling, arity, ...) \
  TETHER_NATIVE_HELPER(name, arity, expr::Scalar<Op::name>(x, TETHER_NATIVE_SECOND_##arity))
TETHER_EXPR_OPERATIONS(TETHER_NATIVE_GRAPH_HELPER)
TETHER_TAPE_OPERATIONS(TETHER_NATIVE_HELPER)
#undef TETHER_NATIVE_GRAPH_HELPER
#undef TETHER_NATIVE_HELPER
#undef TETHER_NATIVE_SECOND_2
#undef TETHER_NATIVE_SECOND_1
#undef TETHER_NATIVE_LOAD_3
#undef TETHER_NATIVE_LOAD_2
#undef TETHER_NATIVE_LOAD_1

// By code, then with the first operand from the register.
#define TETHER_NATIVE_GRAPH_ENTRY(name, ...) {&Helper_##name<false>, &Helper_##name<true>},
#define TETHER_NATIVE_TAPE_ENTRY(name, operands, value) \
  {&Helper_##name<false>, &Helper_##name<true>},
constexpr Helper kHelpers[][2] = {TETHER_EXPR_OPERATIONS(TETHER_NATIVE_GRAPH_ENTRY)
                                      TETHER_TAPE_OPERATIONS(TETHER_NATIVE_TAPE_ENTRY)};
#undef TETHER_NATIVE_GRAPH_ENTRY
#undef TETHER_NATIVE_TAPE_ENTRY
static_assert(std::size(kHelpers) == static_cast<size_t>(Code::kEnd));

// The instructions, through Xbyak's assembler (Debian's libxbyak-dev, the
// x86-64 JIT assembler oneDNN uses) rather than hand-written encodings: it
// encodes every operand and throws on one it cannot; the choice of
// instructions, and so the bits, stays here. A handful of SSE2 scalar
// operations on xmm0, xmm1 and the work buffer [rbx + 8 slot], moves of
// immediates, a call.
// The bytes go into the caller's buffer (Xbyak's user-buffer mode: it
// neither allocates nor changes protections); past its end Xbyak throws.
class Emitter : public Xbyak::CodeGenerator {
 public:
  Emitter(void* buffer, size_t size) : Xbyak::CodeGenerator(size, buffer) {}

  // The work buffer's slot: [rbx + 8 slot] (Translate bounds 8 slot to
  // 32 bits).
  Xbyak::Address Slot(int32_t slot) { return qword[rbx + 8 * slot]; }

  // xmm`reg` = -xmm`reg`: the sign bit flipped (the bits of the compiler's
  // xorpd with the sign mask), through rax.
  void Negate(const Xbyak::Xmm& reg) {
    movq(rax, reg);
    btc(rax, 63);
    movq(reg, rax);
  }
  // helper(w, out, a, b, c, xmm0): its result in xmm0.
  void Call(Helper helper, const Tape::Instruction& ins) {
    mov(rdi, rbx);
    mov(esi, static_cast<uint32_t>(ins.out));
    mov(edx, static_cast<uint32_t>(ins.a));
    mov(ecx, static_cast<uint32_t>(ins.b));
    mov(r8d, static_cast<uint32_t>(ins.c));
    mov(rax, reinterpret_cast<size_t>(helper));
    call(rax);
  }
  // push rbx; mov rbx, rdi (the work buffer, kept across calls: callee-saved,
  // and the stack 16-byte aligned at each call); xorpd xmm0, xmm0 (acc = 0).
  void Prologue() {
    push(rbx);
    mov(rbx, rdi);
    xorpd(xmm0, xmm0);
  }
  void Epilogue() {
    pop(rbx);
    ret();
  }
};

// One instruction: its value into xmm0 (x from slot a, or already there
// when it comes from the register), then stored unless flagged kNoStore.
// Returns false for a code it does not know (none today).
bool EmitInstruction(const Tape::Instruction& ins, Emitter* e) {
  const bool no_store = !ins.stored();
  const bool from_acc = ins.from_acc();
  const Code code = ins.base();
  if (static_cast<size_t>(code) >= std::size(kHelpers)) return false;
  using Xbyak::util::xmm0;
  using Xbyak::util::xmm1;
  auto x = [&] {
    if (!from_acc) e->movsd(xmm0, e->Slot(ins.a));
  };
  switch (code) {
    case Code::kAdd: x(), e->addsd(xmm0, e->Slot(ins.b)); break;
    case Code::kSub: x(), e->subsd(xmm0, e->Slot(ins.b)); break;
    case Code::kMul: x(), e->mulsd(xmm0, e->Slot(ins.b)); break;
    case Code::kDiv: x(), e->divsd(xmm0, e->Slot(ins.b)); break;
    case Code::kNeg: x(), e->Negate(xmm0); break;
    case Code::kCopy: x(); break;
    case Code::kSquare: x(), e->mulsd(xmm0, xmm0); break;
    case Code::kCube:  // (x x) x
      x(), e->movapd(xmm1, xmm0), e->mulsd(xmm0, xmm0), e->mulsd(xmm0, xmm1);
      break;
    case Code::kSquareAdd: x(), e->mulsd(xmm0, xmm0), e->addsd(xmm0, e->Slot(ins.b)); break;
    case Code::kSubSquare: x(), e->subsd(xmm0, e->Slot(ins.b)), e->mulsd(xmm0, xmm0); break;
    case Code::kMulAdd: x(), e->mulsd(xmm0, e->Slot(ins.b)), e->addsd(xmm0, e->Slot(ins.c)); break;
    case Code::kSubMul: x(), e->subsd(xmm0, e->Slot(ins.b)), e->mulsd(xmm0, e->Slot(ins.c)); break;
    case Code::kAddMul: x(), e->addsd(xmm0, e->Slot(ins.b)), e->mulsd(xmm0, e->Slot(ins.c)); break;
    case Code::kSumSquares:  // x x + y y
      x(), e->movsd(xmm1, e->Slot(ins.b)), e->mulsd(xmm1, xmm1), e->mulsd(xmm0, xmm0),
          e->addsd(xmm0, xmm1);
      break;
    case Code::kSubNeg:  // slot c = -(x - y), then out = x - y
      x(), e->subsd(xmm0, e->Slot(ins.b)), e->movapd(xmm1, xmm0), e->Negate(xmm1),
          e->movsd(e->Slot(ins.c), xmm1);
      break;
    case Code::kSubMulAdd:  // acc + (x - y) z, acc (xmm0) kept until the sum, the
                            // first operand as the interpreter's (the NaN a sum of two keeps)
      if (from_acc) {
        e->movapd(xmm1, xmm0);
      } else {
        e->movsd(xmm1, e->Slot(ins.a));
      }
      e->subsd(xmm1, e->Slot(ins.b)), e->mulsd(xmm1, e->Slot(ins.c)), e->addsd(xmm0, xmm1);
      break;
    default:  // the helper stores its result itself
      e->Call(kHelpers[static_cast<size_t>(code)][from_acc], ins);
      return true;
  }
  if (!no_store) e->movsd(e->Slot(ins.out), xmm0);
  return true;
}

}  // namespace

std::unique_ptr<NativeTape> NativeTape::Translate(std::span<const Tape::Instruction> code,
                                                  int num_slots) {
  // Displacements are 32-bit: 8 num_slots must fit.
  if (code.size() < kMinInstructions + 1 || code.size() > kMaxInstructions + 1 ||
      num_slots > (INT32_MAX / 8))
    return nullptr;
  CodePages pages;
  const bool written = EmitCodePages<Emitter>(
      kMaxBytesPerInstruction * code.size() + 64,
      [&](Emitter& e) {
        for (const Tape::Instruction& ins : code) {
          if (ins.code == Code::kEnd) break;
          if (!EmitInstruction(ins, &e)) return false;
        }
        return true;
      },
      &pages);
  if (!written) return nullptr;
  return std::unique_ptr<NativeTape>(new NativeTape(pages));
}

#else  // no translation here: every tape is interpreted

const bool NativeTape::kSupported = false;

NativeTape::~NativeTape() = default;

std::unique_ptr<NativeTape> NativeTape::Translate(std::span<const Tape::Instruction>, int) {
  return nullptr;
}

#endif

}  // namespace tether
