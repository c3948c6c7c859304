#include "engine/internal/expr/native_tape.h"

#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
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

NativeTape::NativeTape(void* pages, size_t mapped, size_t code_bytes)
    : pages_(pages), mapped_(mapped), code_bytes_(code_bytes) {
  entry_ = reinterpret_cast<void (*)(double*)>(pages);
}

#if defined(TETHER_NATIVE_TAPE_X86_64) && !defined(TETHER_NATIVE_TAPE_OFF)

const bool NativeTape::kSupported = true;

NativeTape::~NativeTape() { munmap(pages_, mapped_); }

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

// x86-64 encodings, by hand: a handful of SSE2 scalar operations on xmm0
// to xmm2 and the work buffer [rbx + 8 slot], moves of immediates, a call.
class Emitter {
 public:
  // Room for `instructions` instructions: 24 bytes for a load, an operation
  // and a store, 36 for a call, 51 at most (kSubNeg). Grows if need be.
  explicit Emitter(size_t instructions) { bytes_.reserve(40 * instructions + 16); }

  enum Sse : uint8_t {
    kLoad = 0x10,
    kStore = 0x11,
    kAddsd = 0x58,
    kMulsd = 0x59,
    kSubsd = 0x5C,
    kDivsd = 0x5E
  };

  // op xmm`reg`, [rbx + 8 slot] (kStore: the other way).
  void Memory(Sse op, int reg, int32_t slot) {
    Bytes({0xF2, 0x0F, op, static_cast<uint8_t>(0x83 | reg << 3)});  // mod 10, rm rbx
    Imm32(slot * 8);
  }
  // op xmm`dst`, xmm`src`.
  void Register(Sse op, int dst, int src) {
    Bytes({0xF2, 0x0F, op, static_cast<uint8_t>(0xC0 | dst << 3 | src)});
  }
  // movapd xmm`dst`, xmm`src`.
  void Move(int dst, int src) {
    Bytes({0x66, 0x0F, 0x28, static_cast<uint8_t>(0xC0 | dst << 3 | src)});
  }
  // xmm`reg` = -xmm`reg`: the sign bit flipped (the bits of the compiler's
  // xorpd with the sign mask), through rax.
  void Negate(int reg) {
    Bytes({0x66, 0x48, 0x0F, 0x7E, static_cast<uint8_t>(0xC0 | reg << 3)});  // movq rax, xmm
    Bytes({0x48, 0x0F, 0xBA, 0xF8, 0x3F});                                   // btc rax, 63
    Bytes({0x66, 0x48, 0x0F, 0x6E, static_cast<uint8_t>(0xC0 | reg << 3)});  // movq xmm, rax
  }
  // helper(w, out, a, b, c, xmm0): its result in xmm0.
  void Call(Helper helper, const Tape::Instruction& ins) {
    Bytes({0x48, 0x89, 0xDF});  // mov rdi, rbx
    Byte(0xBE);                 // mov esi, out
    Imm32(ins.out);
    Byte(0xBA);  // mov edx, a
    Imm32(ins.a);
    Byte(0xB9);  // mov ecx, b
    Imm32(ins.b);
    Bytes({0x41, 0xB8});  // mov r8d, c
    Imm32(ins.c);
    Bytes({0x48, 0xB8});  // mov rax, helper
    uint64_t address;
    static_assert(sizeof address == sizeof helper);
    std::memcpy(&address, &helper, sizeof address);
    for (int k = 0; k < 8; ++k) Byte(static_cast<uint8_t>(address >> (8 * k)));
    Bytes({0xFF, 0xD0});  // call rax
  }
  // push rbx; mov rbx, rdi (the work buffer, kept across calls: callee-saved,
  // and the stack 16-byte aligned at each call); xorpd xmm0, xmm0 (acc = 0).
  void Prologue() { Bytes({0x53, 0x48, 0x89, 0xFB, 0x66, 0x0F, 0x57, 0xC0}); }
  // pop rbx; ret.
  void Epilogue() { Bytes({0x5B, 0xC3}); }

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void Byte(uint8_t b) { bytes_.push_back(b); }
  void Bytes(std::initializer_list<uint8_t> bs) {
    for (uint8_t b : bs) bytes_.push_back(b);  // (insert: a false -Wstringop-overflow in GCC 12)
  }
  void Imm32(int32_t v) {
    for (int k = 0; k < 4; ++k) Byte(static_cast<uint8_t>(static_cast<uint32_t>(v) >> (8 * k)));
  }

  std::vector<uint8_t> bytes_;
};

// One instruction: its value into xmm0 (x from slot a, or already there
// when it comes from the register), then stored unless flagged kNoStore.
// Returns false for a code it does not know (none today).
bool EmitInstruction(const Tape::Instruction& ins, Emitter* e) {
  const int raw = static_cast<uint8_t>(ins.code);
  const bool no_store = raw >= Tape::kNoStore;
  const bool from_acc = raw % Tape::kNoStore >= Tape::kFromAcc;
  const Code code = static_cast<Code>(raw % Tape::kFromAcc);
  if (static_cast<size_t>(code) >= std::size(kHelpers)) return false;
  auto x = [&] {
    if (!from_acc) e->Memory(Emitter::kLoad, 0, ins.a);
  };
  using E = Emitter;
  switch (code) {
    case Code::kAdd: x(), e->Memory(E::kAddsd, 0, ins.b); break;
    case Code::kSub: x(), e->Memory(E::kSubsd, 0, ins.b); break;
    case Code::kMul: x(), e->Memory(E::kMulsd, 0, ins.b); break;
    case Code::kDiv: x(), e->Memory(E::kDivsd, 0, ins.b); break;
    case Code::kNeg: x(), e->Negate(0); break;
    case Code::kCopy: x(); break;
    case Code::kSquare: x(), e->Register(E::kMulsd, 0, 0); break;
    case Code::kCube:  // (x x) x
      x(), e->Move(1, 0), e->Register(E::kMulsd, 0, 0), e->Register(E::kMulsd, 0, 1);
      break;
    case Code::kSquareAdd: x(), e->Register(E::kMulsd, 0, 0), e->Memory(E::kAddsd, 0, ins.b); break;
    case Code::kSubSquare: x(), e->Memory(E::kSubsd, 0, ins.b), e->Register(E::kMulsd, 0, 0); break;
    case Code::kMulAdd: x(), e->Memory(E::kMulsd, 0, ins.b), e->Memory(E::kAddsd, 0, ins.c); break;
    case Code::kSubMul: x(), e->Memory(E::kSubsd, 0, ins.b), e->Memory(E::kMulsd, 0, ins.c); break;
    case Code::kAddMul: x(), e->Memory(E::kAddsd, 0, ins.b), e->Memory(E::kMulsd, 0, ins.c); break;
    case Code::kSumSquares:  // x x + y y
      x(), e->Memory(E::kLoad, 1, ins.b), e->Register(E::kMulsd, 1, 1),
          e->Register(E::kMulsd, 0, 0), e->Register(E::kAddsd, 0, 1);
      break;
    case Code::kSubNeg:  // slot c = -(x - y), then out = x - y
      x(), e->Memory(E::kSubsd, 0, ins.b), e->Move(1, 0), e->Negate(1),
          e->Memory(E::kStore, 1, ins.c);
      break;
    case Code::kSubMulAdd:  // acc + (x - y) z, acc (xmm0) kept until the sum, the
                            // first operand as the interpreter's (the NaN a sum of two keeps)
      if (from_acc) {
        e->Move(1, 0);
      } else {
        e->Memory(E::kLoad, 1, ins.a);
      }
      e->Memory(E::kSubsd, 1, ins.b), e->Memory(E::kMulsd, 1, ins.c), e->Register(E::kAddsd, 0, 1);
      break;
    default:  // the helper stores its result itself
      e->Call(kHelpers[static_cast<size_t>(code)][from_acc], ins);
      return true;
  }
  if (!no_store) e->Memory(Emitter::kStore, 0, ins.out);
  return true;
}

}  // namespace

std::unique_ptr<NativeTape> NativeTape::Translate(std::span<const Tape::Instruction> code,
                                                  int num_slots) {
  // Displacements are 32-bit: 8 num_slots must fit.
  if (code.size() < kMinInstructions + 1 || code.size() > kMaxInstructions + 1 ||
      num_slots > (INT32_MAX / 8))
    return nullptr;
  Emitter e(code.size());
  e.Prologue();
  for (const Tape::Instruction& ins : code) {
    if (ins.code == Code::kEnd) break;
    if (!EmitInstruction(ins, &e)) return nullptr;
  }
  e.Epilogue();
  const std::vector<uint8_t>& bytes = e.bytes();
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return nullptr;
  const size_t mapped = (bytes.size() + static_cast<size_t>(page) - 1) / static_cast<size_t>(page) *
                        static_cast<size_t>(page);
  void* pages = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return nullptr;
  std::memcpy(pages, bytes.data(), bytes.size());
  if (mprotect(pages, mapped, PROT_READ | PROT_EXEC) != 0) {
    munmap(pages, mapped);
    return nullptr;
  }
  return std::unique_ptr<NativeTape>(new NativeTape(pages, mapped, bytes.size()));
}

#else  // no translation here: every tape is interpreted

const bool NativeTape::kSupported = false;

NativeTape::~NativeTape() = default;

std::unique_ptr<NativeTape> NativeTape::Translate(std::span<const Tape::Instruction>, int) {
  return nullptr;
}

#endif

}  // namespace tether
