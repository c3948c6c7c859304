#include "engine/internal/expr/native_tape_lanes.h"

#include <cstring>

#include "engine/internal/expr/code_pages.h"

#if defined(__x86_64__) && defined(__linux__)
#include <xbyak/xbyak.h>
#define TETHER_NATIVE_LANES_X86_64 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TETHER_NATIVE_LANES_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_NATIVE_LANES_OFF 1
#endif
#endif

namespace tether::lanes {

using Code = Tape::Code;

bool NativeLaneCode::Inline(Code code) {
  switch (code) {
    case Code::kAdd:
    case Code::kSub:
    case Code::kMul:
    case Code::kDiv:
    case Code::kNeg:
    case Code::kSqrt:
    case Code::kAbs:
    case Code::kCopy:
    case Code::kSquare:
    case Code::kCube:
    case Code::kRecip:
    case Code::kSquareAdd:
    case Code::kSubSquare:
    case Code::kMulAdd:
    case Code::kSubMul:
    case Code::kAddMul:
    case Code::kSumSquares:
    case Code::kSubNeg:
    case Code::kSubMulAdd: return true;
    default: return false;
  }
}

NativeLaneCode::NativeLaneCode(const CodePages& pages) : pages_(pages) {
  for (int l = 0; l < 4; ++l) {
    constants_[l] = -0.0;  // the sign bit alone
    uint64_t abs_mask = ~(uint64_t{1} << 63);
    std::memcpy(&constants_[4 + l], &abs_mask, sizeof abs_mask);
    constants_[8 + l] = 1.0;
  }
  entry_ = reinterpret_cast<void (*)(void*, const double*)>(pages.pages);
}

#if defined(TETHER_NATIVE_LANES_X86_64) && !defined(TETHER_NATIVE_LANES_OFF)

const bool NativeLaneCode::kSupported = true;

NativeLaneCode::~NativeLaneCode() { ReleaseCodePages(pages_); }

namespace {

// A bound on the bytes one instruction's code takes: kSumSquares, twelve
// VEX operations of at most 10 bytes ([rbx + disp32]), after the
// accumulator's reload (two more); a call takes 25. Past it Xbyak throws
// (below), and the program is interpreted.
constexpr size_t kMaxBytesPerOp = 160;

// A value is two ymm registers (lanes 0-3, 4-7): half k at byte 32 k of
// its slot. The accumulator (EvalLanes' `acc`, the last result) is ymm0
// and ymm1, a temporary ymm2 and ymm3. rbx holds the work buffer and r12
// the constants (callee-saved: they survive the calls), as
// [r12] the sign mask, [r12 + 32] the absolute value's, [r12 + 64] 1.0.
class Emitter : public Xbyak::CodeGenerator {
 public:
  Emitter(void* buffer, size_t size) : Xbyak::CodeGenerator(size, buffer) {}

  Xbyak::Address Slot(int32_t offset, int k) { return yword[rbx + offset + 32 * k]; }
  Xbyak::Address SignMask() { return yword[r12]; }
  Xbyak::Address AbsMask() { return yword[r12 + 32]; }
  Xbyak::Address One() { return yword[r12 + 64]; }
  static Xbyak::Ymm Acc(int k) { return Xbyak::Ymm(k); }
  static Xbyak::Ymm Temp(int k) { return Xbyak::Ymm(2 + k); }

  // The work buffer and the constants kept in rbx and r12; the stack
  // 16-byte aligned at each call (two pushes and 8 bytes); acc = 0, as
  // EvalLanes starts it.
  void Prologue() {
    push(rbx);
    push(r12);
    sub(rsp, 8);
    mov(rbx, rdi);
    mov(r12, rsi);
    for (int k = 0; k < 2; ++k) vxorpd(Acc(k), Acc(k), Acc(k));
  }
  void Epilogue() {
    vzeroupper();
    add(rsp, 8);
    pop(r12);
    pop(rbx);
    ret();
  }
  void Call(NativeLaneCode::Interpret interpret, const void* ip) {
    mov(rdi, rbx);
    mov(rsi, reinterpret_cast<size_t>(ip));
    mov(rax, reinterpret_cast<size_t>(interpret));
    call(rax);
  }
};

// One inline instruction, per half k: its value into the accumulator
// (x from slot a, or the accumulator itself), then stored at out unless
// nothing reads it there (op.store). The
// operations and their order are the handler's value expression's
// (TETHER_TAPE_OPERATIONS, LaneOp): x * y is x times y, and so on.
void EmitInline(const NativeLaneOp& op, Emitter* e) {
  for (int k = 0; k < 2; ++k) {
    const Xbyak::Ymm acc = Emitter::Acc(k), t = Emitter::Temp(k);
    auto a = [&] { return e->Slot(op.a, k); };
    auto b = [&] { return e->Slot(op.b, k); };
    auto c = [&] { return e->Slot(op.c, k); };
    auto x = [&] {
      if (!op.from_acc) e->vmovupd(acc, a());
    };
    switch (op.code) {
      case Code::kAdd: x(), e->vaddpd(acc, acc, b()); break;
      case Code::kSub: x(), e->vsubpd(acc, acc, b()); break;
      case Code::kMul: x(), e->vmulpd(acc, acc, b()); break;
      case Code::kDiv: x(), e->vdivpd(acc, acc, b()); break;
      case Code::kNeg: x(), e->vxorpd(acc, acc, e->SignMask()); break;
      case Code::kAbs: x(), e->vandpd(acc, acc, e->AbsMask()); break;
      case Code::kSqrt: x(), e->vsqrtpd(acc, acc); break;
      case Code::kCopy: x(); break;
      case Code::kSquare: x(), e->vmulpd(acc, acc, acc); break;
      case Code::kCube:  // (x x) x
        x(), e->vmulpd(t, acc, acc), e->vmulpd(acc, t, acc);
        break;
      case Code::kRecip:  // 1 / x
        x(), e->vmovupd(t, e->One()), e->vdivpd(acc, t, acc);
        break;
      case Code::kSquareAdd: x(), e->vmulpd(acc, acc, acc), e->vaddpd(acc, acc, b()); break;
      case Code::kSubSquare: x(), e->vsubpd(acc, acc, b()), e->vmulpd(acc, acc, acc); break;
      case Code::kMulAdd: x(), e->vmulpd(acc, acc, b()), e->vaddpd(acc, acc, c()); break;
      case Code::kSubMul: x(), e->vsubpd(acc, acc, b()), e->vmulpd(acc, acc, c()); break;
      case Code::kAddMul: x(), e->vaddpd(acc, acc, b()), e->vmulpd(acc, acc, c()); break;
      case Code::kSumSquares:  // x x + y y
        x(), e->vmovupd(t, b()), e->vmulpd(t, t, t), e->vmulpd(acc, acc, acc),
            e->vaddpd(acc, acc, t);
        break;
      case Code::kSubNeg:  // slot c = -(x - y), out = x - y
        x(), e->vsubpd(acc, acc, b()), e->vxorpd(t, acc, e->SignMask()), e->vmovupd(c(), t);
        break;
      case Code::kSubMulAdd:  // (x - y) z + acc, the accumulator kept for the sum
        if (op.from_acc) {
          e->vmovapd(t, acc);
        } else {
          e->vmovupd(t, a());
        }
        e->vsubpd(t, t, b()), e->vmulpd(t, t, c()), e->vaddpd(acc, t, acc);
        break;
      default: break;  // not inline (Translate checked)
    }
    if (op.store) e->vmovupd(e->Slot(op.out, k), acc);
  }
}

}  // namespace

std::unique_ptr<NativeLaneCode> NativeLaneCode::Translate(std::span<const NativeLaneOp> ops,
                                                          Interpret interpret) {
  // Displacements are 32-bit: every offset, and 32 past it, must fit.
  for (const NativeLaneOp& op : ops) {
    if (op.call == nullptr && !Inline(op.code)) return nullptr;
    for (int32_t offset : {op.out, op.a, op.b, op.c}) {
      if (offset < 0 || offset > INT32_MAX - kValueBytes) return nullptr;
    }
  }
  CodePages pages;
  const bool written = EmitCodePages<Emitter>(
      kMaxBytesPerOp * ops.size() + 64,
      [&](Emitter& e) {
        // Whether ymm0/ymm1 hold the accumulator: after an inline
        // instruction; after a call it is in memory, at the call's out (a
        // call stores its result), and is loaded from there when an
        // instruction reads it.
        bool acc_in_registers = true;
        int32_t last_out = 0;
        for (const NativeLaneOp& op : ops) {
          if (op.call != nullptr) {
            e.Call(op.function != nullptr ? op.function : interpret, op.call);
            acc_in_registers = false;
          } else {
            if ((op.from_acc || op.code == Code::kSubMulAdd) && !acc_in_registers) {
              for (int k = 0; k < 2; ++k) e.vmovupd(Emitter::Acc(k), e.Slot(last_out, k));
            }
            EmitInline(op, &e);
            acc_in_registers = true;
          }
          last_out = op.out;
        }
        return true;
      },
      &pages);
  if (!written) return nullptr;
  return std::unique_ptr<NativeLaneCode>(new NativeLaneCode(pages));
}

#else  // no translation here: every lane program is interpreted

const bool NativeLaneCode::kSupported = false;

NativeLaneCode::~NativeLaneCode() = default;

std::unique_ptr<NativeLaneCode> NativeLaneCode::Translate(std::span<const NativeLaneOp>,
                                                          Interpret) {
  return nullptr;
}

#endif

}  // namespace tether::lanes
