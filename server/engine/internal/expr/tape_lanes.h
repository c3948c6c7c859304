// The tape evaluated over a lane group (base/lanes.h): the same
// instructions as Tape::Eval, each applied to kLaneWidth instances at once,
// so the cost of interpreting an instruction (its dispatch, its operand
// slots) is paid once for the group. Beside Tape::Eval, which it leaves
// alone.
//
// Work buffer: num_slots() lane values in the scalar layout (slot s of lane
// l is work[s].Lane(l)). Each instruction computes its lanes with the
// scalar handler's value expression (TETHER_TAPE_OPERATIONS, expanded here
// over Lanes) or with expr::Scalar<op> lane by lane (LaneOp below), in the
// scalar order, so every lane gets the bits Tape::Eval gives its instance;
// or, with LaneFunctions::kFast, the transcendental operations by xsimd's
// vectorised functions (within the bound docs/ENSEMBLES.md states).
//
// Every result is stored (Tape::kNoStore only marks a store nothing reads,
// so storing it changes nothing); kFromAcc is kept, as in Tape::Eval.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <iterator>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "engine/internal/base/lanes.h"
#include "engine/internal/expr/native_tape_lanes.h"
#include "engine/internal/expr/operations.h"
#include "engine/internal/expr/tape.h"

namespace tether::lanes {

// Which functions the lanes compute transcendental operations with
// (docs/ENSEMBLES.md, "Bits"): kExact calls the C library's scalar function
// once per lane, so every lane has the bits Tape::Eval gives its instance;
// kFast uses xsimd's vectorised functions (VectorFunction below), a few
// ulps from the C library's, over the whole lane group at once.
enum class LaneFunctions { kExact, kFast };

// The vectorised function of `op` for kFast, per batch; false when `op` has
// none: min, max, sign and step (exact and cheap, they stay per lane), and
// pow, whose xsimd version (exp(y log x)) was measured 13 ulp from the C
// library's on x in [0.01, 10], y in [-3, 3], growing with |y log x|, where
// the others are within 1-2 ulp (docs/ENSEMBLES.md, "Bits").
// xsimd's functions (libxsimd-dev, already the lanes' SIMD library) rather
// than hand-written polynomials or another library: Cephes/Boost.SIMD's
// polynomials with their argument reductions and special cases, written
// once over any batch. With no fused multiply-add (xsimd's generic fma is
// a product and a sum; the kernels are built with -ffp-contract=off and no
// -mfma; xsimd 8.1 has no avx512f fma either) the SSE2, AVX2 and AVX-512
// kernels run the same operations on each lane, and tests/ensemble_test.cc
// checks that they give the same bits.
template <expr::Op op>
inline constexpr bool kHasVectorFunction =
    op == expr::Op::kSin || op == expr::Op::kCos || op == expr::Op::kTan || op == expr::Op::kAsin ||
    op == expr::Op::kAcos || op == expr::Op::kAtan || op == expr::Op::kAtan2 ||
    op == expr::Op::kSinh || op == expr::Op::kCosh || op == expr::Op::kTanh ||
    op == expr::Op::kExp || op == expr::Op::kLog;

template <expr::Op op, class B>
TETHER_INLINE B VectorFunction(const B& x, [[maybe_unused]] const B& y) {
  using expr::Op;
  if constexpr (op == Op::kSin) return xsimd::sin(x);
  if constexpr (op == Op::kCos) return xsimd::cos(x);
  if constexpr (op == Op::kTan) return xsimd::tan(x);
  if constexpr (op == Op::kAsin) return xsimd::asin(x);
  if constexpr (op == Op::kAcos) return xsimd::acos(x);
  if constexpr (op == Op::kAtan) return xsimd::atan(x);
  if constexpr (op == Op::kAtan2) return xsimd::atan2(x, y);
  if constexpr (op == Op::kSinh) return xsimd::sinh(x);
  if constexpr (op == Op::kCosh) return xsimd::cosh(x);
  if constexpr (op == Op::kTanh) return xsimd::tanh(x);
  if constexpr (op == Op::kExp) return xsimd::exp(x);
  if constexpr (op == Op::kLog) return xsimd::log(x);
}

// Graph operation `op` over lanes: lane-wise for the correctly rounded IEEE
// operations; the transcendental ones by xsimd for kFast; else the scalar
// function per lane.
template <expr::Op op, LaneFunctions functions, class Arch>
TETHER_INLINE Lanes<Arch> LaneOp(const Lanes<Arch>& x, const Lanes<Arch>& y) {
  using expr::Op;
  if constexpr (functions == LaneFunctions::kFast && kHasVectorFunction<op>) {
    Lanes<Arch> r;
    for (int k = 0; k < Lanes<Arch>::kBatches; ++k) r.b[k] = VectorFunction<op>(x.b[k], y.b[k]);
    return r;
  } else if constexpr (op == Op::kNeg) {
    return -x;
  } else if constexpr (op == Op::kAdd) {
    return x + y;
  } else if constexpr (op == Op::kSub) {
    return x - y;
  } else if constexpr (op == Op::kMul) {
    return x * y;
  } else if constexpr (op == Op::kDiv) {
    return x / y;
  } else if constexpr (op == Op::kSqrt) {
    return Sqrt(x);
  } else if constexpr (op == Op::kAbs) {
    return Abs(x);
  } else {
    return Map(x, y, [](double a, double b) { return expr::Scalar<op>(a, b); });
  }
}

// Writes the tape's constants into every lane of `work` (num_slots()).
template <class Arch>
void InitLaneWork(const Tape& tape, Lanes<Arch>* work) {
  std::vector<double> scalar(static_cast<size_t>(tape.num_slots()), 0.0);
  tape.InitWork(scalar.data());
  for (size_t s = 0; s < scalar.size(); ++s) work[s] = Lanes<Arch>(scalar[s]);
}

// The tape's instructions as one EvalLanes instantiation runs them: each
// code's handler address resolved (a dispatch loads it from the
// instruction, not the code and then the label table) and each operand
// slot a byte offset into the work buffer (no scaling of the slot index by
// the lane group's size at every operand). The same operations in the same
// order as the tape's: a program changes no bit.
//
// With LaneFunctions::kFast, a sin and a cos of the same slot (the double
// pendulum's sin(th1 - th2) and cos(th1 - th2)) become one xsimd::sincos at
// the first of the two, which keeps the other value in a slot of its own
// past the tape's (num_slots), and a copy of that slot at the second:
// xsimd 8.1's sincos is its sin's and its cos's operations, one argument
// reduction and the two polynomials shared, each result selected and
// signed as sin and cos select and sign theirs, so each value has the bits
// the function alone gives (tests/ensemble_test.cc checks it).
struct LaneInstruction {
  const void* handler;
  int32_t out, a, b, c;  // byte offsets; kPowInt's b is its exponent
};
// On the AVX2 kernel the program is also translated into machine code
// (native_tape_lanes.h) unless `translate` was cleared before it was
// filled; EvalLanes then runs that code, which calls back into the
// interpreter for each instruction it does not emit inline (`calls`: each
// such instruction alone, then the end).
struct LaneProgram {
  std::vector<LaneInstruction> code;
  int32_t num_slots = 0;  // the work buffer's: the tape's, then sincos's
  bool translate = true;
  std::vector<LaneInstruction> calls;
  std::unique_ptr<NativeLaneCode> native;
};

template <class Arch, LaneFunctions functions>
void InterpretLanes(void* work, const void* ip);
template <class Arch, bool kSinFirst>
void SinCosLanes(void* work, const void* ip);

// Whether EvalLanes<Arch> translates its programs: the AVX2 kernel's
// (eight lanes, two 4-double registers a value), where the translation was
// measured (docs/benchmarks.md); the others interpret.
template <class Arch>
inline constexpr bool kTranslatesLanes = std::is_same_v<Arch, xsimd::avx2>;

// Translates `program` (just filled from `tape` by EvalLanes<Arch,
// functions>, whose handler addresses `labels` (by code, as EvalLanes'
// table) and `sincos` are) into machine code: each instruction (kEnd, the
// last, aside) inline, or a call of itself alone, its first operand, where
// it came from the accumulator, then read from the previous instruction's
// result slot (stored, then, even where the tape says kNoStore: the same
// value). Out of EvalLanes, whose handlers' code it would otherwise share a
// function (and registers) with.
template <class Arch, LaneFunctions functions>
[[gnu::noinline]] void TranslateLaneProgram(const Tape& tape, const void* const* labels,
                                            const void* const* sincos, LaneProgram* program) {
  static_assert(sizeof(Lanes<Arch>) == NativeLaneCode::kValueBytes);
  const std::vector<Tape::Instruction>& code = tape.code();
  const std::vector<LaneInstruction>& out = program->code;
  constexpr int kCopy = static_cast<int>(Tape::Code::kCopy);
  const size_t n = code.size() - 1;
  std::vector<NativeLaneOp> ops(n);
  program->calls.resize(2 * n);  // sized before any address is taken
  const LaneInstruction end{labels[static_cast<int>(Tape::Code::kEnd)], 0, 0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    const LaneInstruction& in = out[i];
    const int b = static_cast<int>(code[i].base());
    const bool acc = code[i].from_acc();
    const bool pair = in.handler == sincos[0] || in.handler == sincos[1];
    NativeLaneOp& op = ops[i];
    op.out = in.out;
    if (in.handler == labels[kCopy] && b != kCopy) {  // a sincos pair's copy
      op.code = Tape::Code::kCopy;
      op.a = in.a;
    } else if (!pair && NativeLaneCode::Inline(static_cast<Tape::Code>(b))) {
      op.code = static_cast<Tape::Code>(b);
      op.from_acc = acc;
      op.a = in.a, op.b = in.b, op.c = in.c;
      // The tape's kNoStore (the interpreter stores every result).
      op.store = code[i].stored();
    } else {
      LaneInstruction alone = in;
      if (acc) {
        if (i == 0) {  // no previous result to read: interpret
          program->calls.clear();
          return;
        }
        alone.handler = labels[b];
        alone.a = out[i - 1].out;
        ops[i - 1].store = true;  // read from there
      }
      program->calls[2 * i] = alone;
      program->calls[2 * i + 1] = end;
      op.call = &program->calls[2 * i];
      // A sincos pair: its handler's operations, without the interpreter's
      // entry and exit around them.
      if (pair) {
        op.function =
            in.handler == sincos[0] ? &SinCosLanes<Arch, true> : &SinCosLanes<Arch, false>;
      }
    }
  }
  program->native = NativeLaneCode::Translate(ops, &InterpretLanes<Arch, functions>);
  if (!program->native) program->calls.clear();
}

// work[0, num_vars) must hold the variables; computes the outputs into
// work[output_base(), output_base() + num_outputs()). Direct threading as
// Tape::Eval's (one indirect jump per instruction, each handler with its
// own): a handler and its kFromAcc twin per code; kNoStore goes to the
// storing handler. `program` must have been filled from `tape` by this
// instantiation (its handler addresses are this <Arch, functions>'s:
// PrepareLaneProgram, which calls EvalLanes with `fill`, an empty program,
// and nothing else), and `work` be a buffer of program->num_slots. A
// filled program is only read: groups running the same model share one
// (internal::LanePrograms). With `from`, interprets from that instruction
// (one of program->calls) and neither reads `tape` nor `program`: the
// native code's call back. Not inlined (GCC inlines no function whose
// labels' addresses are taken).
template <class Arch, LaneFunctions functions = LaneFunctions::kExact>
void EvalLanes(const Tape& tape, Lanes<Arch>* work, const LaneProgram* program,
               const LaneInstruction* from = nullptr, LaneProgram* fill = nullptr) {
  using V = Lanes<Arch>;
  using expr::Op;
#define TETHER_LANES_GRAPH_LABEL(name, ...) &&name,
#define TETHER_LANES_TAPE_LABEL(name, operands, value) &&name,
#define TETHER_LANES_GRAPH_LABEL_ACC(name, ...) &&name##_acc,
#define TETHER_LANES_TAPE_LABEL_ACC(name, operands, value) &&name##_acc,
  // Indexed by code, code + kFromAcc, code + kNoStore, code + both.
  // clang-format off
  static const void* const kLabels[] = {
      TETHER_EXPR_OPERATIONS(TETHER_LANES_GRAPH_LABEL)
          TETHER_TAPE_OPERATIONS(TETHER_LANES_TAPE_LABEL) &&end,
      TETHER_EXPR_OPERATIONS(TETHER_LANES_GRAPH_LABEL_ACC)
          TETHER_TAPE_OPERATIONS(TETHER_LANES_TAPE_LABEL_ACC) &&end,
      TETHER_EXPR_OPERATIONS(TETHER_LANES_GRAPH_LABEL)
          TETHER_TAPE_OPERATIONS(TETHER_LANES_TAPE_LABEL) &&end,
      TETHER_EXPR_OPERATIONS(TETHER_LANES_GRAPH_LABEL_ACC)
          TETHER_TAPE_OPERATIONS(TETHER_LANES_TAPE_LABEL_ACC) &&end};
  // clang-format on
#undef TETHER_LANES_GRAPH_LABEL
#undef TETHER_LANES_TAPE_LABEL
#undef TETHER_LANES_GRAPH_LABEL_ACC
#undef TETHER_LANES_TAPE_LABEL_ACC
  static_assert(std::size(kLabels) == 2 * Tape::kNoStore);
  // The pair's handlers (below).
  static const void* const kSinCos[] = {&&sincos_sin, &&sincos_cos};
  if (fill != nullptr) {
    const std::vector<Tape::Instruction>& code = tape.code();
    std::vector<LaneInstruction>& out = fill->code;
    out.reserve(code.size());
    fill->num_slots = tape.num_slots();
    const auto offset = [](int32_t slot) {
      return static_cast<int32_t>(static_cast<int64_t>(slot) * static_cast<int64_t>(sizeof(V)));
    };
    for (const Tape::Instruction& in : code) {
      const bool pow_int = in.base() == Tape::Code::kPowInt;
      out.push_back({kLabels[static_cast<uint8_t>(in.code)], offset(in.out), offset(in.a),
                     pow_int ? in.b : offset(in.b), offset(in.c)});
    }
    if constexpr (functions == LaneFunctions::kFast) {
      constexpr int kSin = static_cast<int>(Tape::CodeOf(Op::kSin));
      constexpr int kCos = static_cast<int>(Tape::CodeOf(Op::kCos));
      std::vector<bool> paired(code.size(), false);
      for (size_t i = 0; i < code.size(); ++i) {
        const int bi = static_cast<int>(code[i].base());
        if ((bi != kSin && bi != kCos) || code[i].from_acc() || paired[i]) continue;
        const int32_t a = code[i].a;
        if (code[i].out == a) continue;  // the argument is gone after it
        // The next instruction that reads slot a for the other function,
        // while nothing writes the slot (a result, or kSubNeg's second).
        for (size_t j = i + 1; j < code.size(); ++j) {
          const int bj = static_cast<int>(code[j].base());
          if (bj == (bi == kSin ? kCos : kSin) && !code[j].from_acc() && code[j].a == a) {
            const int32_t scratch = fill->num_slots++;
            out[i].handler = kSinCos[bi == kSin ? 0 : 1];
            out[i].c = offset(scratch);
            out[j] = {kLabels[static_cast<int>(Tape::Code::kCopy)], offset(code[j].out),
                      offset(scratch), 0, 0};
            paired[j] = true;
            break;
          }
          if (bj == static_cast<int>(Tape::Code::kEnd) || code[j].out == a ||
              (bj == static_cast<int>(Tape::Code::kSubNeg) && code[j].c == a)) {
            break;
          }
        }
      }
    }
    if constexpr (kTranslatesLanes<Arch>) {
      if (fill->translate && NativeLaneCode::kSupported) {
        TranslateLaneProgram<Arch, functions>(tape, kLabels, kSinCos, fill);
      }
    }
    return;
  }
  if (from == nullptr && program->native) {
    program->native->Run(work);
    return;
  }
  // The work buffer addressed by byte offset (`w[ip->a]` in the handlers
  // and TETHER_TAPE_OPERATIONS' value expressions).
  struct ByOffset {
    char* base;
    TETHER_INLINE V& operator[](int32_t offset) const {
      return *reinterpret_cast<V*>(base + offset);
    }
  };
  const ByOffset w{reinterpret_cast<char*>(work)};
  const LaneInstruction* ip = from != nullptr ? from : program->code.data();
  V acc(0.0);
#define TETHER_LANES_DISPATCH() goto * ip->handler
#define TETHER_LANES_LOAD_1(X) const V x = X;
#define TETHER_LANES_LOAD_2(X) \
  TETHER_LANES_LOAD_1(X)       \
  const V y = w[ip->b];
#define TETHER_LANES_LOAD_3(X) \
  TETHER_LANES_LOAD_2(X)       \
  const V z = w[ip->c];
#define TETHER_LANES_FINISH(expr) \
  acc = (expr);                   \
  w[ip->out] = acc;               \
  ++ip;                           \
  TETHER_LANES_DISPATCH();
#define TETHER_LANES_HANDLER(n, label, expr)                            \
  label : { TETHER_LANES_LOAD_##n(w[ip->a]) TETHER_LANES_FINISH(expr) } \
  label##_acc : {TETHER_LANES_LOAD_##n(acc) TETHER_LANES_FINISH(expr)}
#define TETHER_LANES_SECOND_1 x
#define TETHER_LANES_SECOND_2 y
#define TETHER_LANES_GRAPH_HANDLER(name, spelling, arity, ...) \
  TETHER_LANES_HANDLER(arity, name, (LaneOp<Op::name, functions>(x, TETHER_LANES_SECOND_##arity)))
#define TETHER_LANES_TAPE_HANDLER(name, operands, value) TETHER_LANES_HANDLER(operands, name, value)
  TETHER_LANES_DISPATCH();
  TETHER_EXPR_OPERATIONS(TETHER_LANES_GRAPH_HANDLER)
  TETHER_TAPE_OPERATIONS(TETHER_LANES_TAPE_HANDLER)
  // A sin and a cos of slot a paired (LaneProgram): the first's value in
  // out, the other's in slot c for the second's copy.
#define TETHER_LANES_SINCOS(label, first, other)                                            \
  label : {                                                                                 \
    const V x = w[ip->a];                                                                   \
    V s, c;                                                                                 \
    for (int k = 0; k < V::kBatches; ++k) std::tie(s.b[k], c.b[k]) = xsimd::sincos(x.b[k]); \
    w[ip->c] = other;                                                                       \
    TETHER_LANES_FINISH(first)                                                              \
  }
  TETHER_LANES_SINCOS(sincos_sin, s, c)
  TETHER_LANES_SINCOS(sincos_cos, c, s)
#undef TETHER_LANES_SINCOS
end:
  return;
#undef TETHER_LANES_TAPE_HANDLER
#undef TETHER_LANES_GRAPH_HANDLER
#undef TETHER_LANES_SECOND_2
#undef TETHER_LANES_SECOND_1
#undef TETHER_LANES_HANDLER
#undef TETHER_LANES_FINISH
#undef TETHER_LANES_LOAD_3
#undef TETHER_LANES_LOAD_2
#undef TETHER_LANES_LOAD_1
#undef TETHER_LANES_DISPATCH
}

// The native code's call back (NativeLaneCode::Interpret): EvalLanes from
// `ip`, one of a program's calls.
template <class Arch, LaneFunctions functions>
void InterpretLanes(void* work, const void* ip) {
  static const Tape kUnread;  // EvalLanes reads no tape when it starts from `ip`
  EvalLanes<Arch, functions>(kUnread, static_cast<Lanes<Arch>*>(work), nullptr,
                             static_cast<const LaneInstruction*>(ip));
}

// A sincos pair's instruction `ip` (LaneProgram) as its handler in
// EvalLanes computes it: xsimd's sincos of slot a, the other function's
// value into slot c, then the first's into out (sin first: kSinFirst).
template <class Arch, bool kSinFirst>
void SinCosLanes(void* work, const void* ip) {
  using V = Lanes<Arch>;
  const auto& in = *static_cast<const LaneInstruction*>(ip);
  char* w = static_cast<char*>(work);
  const V x = *reinterpret_cast<const V*>(w + in.a);
  V s, c;
  // Unrolled: the batches' constants loaded once (186 instructions a call
  // on AVX2 instead of 201).
#pragma GCC unroll 4
  for (int k = 0; k < V::kBatches; ++k) std::tie(s.b[k], c.b[k]) = xsimd::sincos(x.b[k]);
  *reinterpret_cast<V*>(w + in.c) = kSinFirst ? c : s;
  *reinterpret_cast<V*>(w + in.out) = kSinFirst ? s : c;
}

// Fills `program` (empty but for `translate`) for EvalLanes<Arch, functions>.
template <class Arch>
void PrepareLaneProgram(const Tape& tape, LaneFunctions functions, LaneProgram* program) {
  if (functions == LaneFunctions::kFast) {
    EvalLanes<Arch, LaneFunctions::kFast>(tape, nullptr, nullptr, nullptr, program);
  } else {
    EvalLanes<Arch, LaneFunctions::kExact>(tape, nullptr, nullptr, nullptr, program);
  }
}

}  // namespace tether::lanes
