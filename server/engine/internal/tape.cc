#include "engine/internal/tape.h"

#include <cassert>
#include <cmath>
#include <iterator>
#include <limits>
#include <unordered_map>

namespace tether {

using expr::NodeId;
using expr::Op;

namespace {

Tape::Code UnaryCode(Op op) {
  switch (op) {
    case Op::kNeg: return Tape::Code::kNeg;
    case Op::kSin: return Tape::Code::kSin;
    case Op::kCos: return Tape::Code::kCos;
    case Op::kTan: return Tape::Code::kTan;
    case Op::kAsin: return Tape::Code::kAsin;
    case Op::kAcos: return Tape::Code::kAcos;
    case Op::kAtan: return Tape::Code::kAtan;
    case Op::kSinh: return Tape::Code::kSinh;
    case Op::kCosh: return Tape::Code::kCosh;
    case Op::kTanh: return Tape::Code::kTanh;
    case Op::kExp: return Tape::Code::kExp;
    case Op::kLog: return Tape::Code::kLog;
    case Op::kSqrt: return Tape::Code::kSqrt;
    case Op::kAbs: return Tape::Code::kAbs;
    case Op::kSign: return Tape::Code::kSign;
    case Op::kStep: return Tape::Code::kStep;
    default: break;
  }
  assert(false);
  return Tape::Code::kNeg;
}

Tape::Code BinaryCode(Op op) {
  switch (op) {
    case Op::kAdd: return Tape::Code::kAdd;
    case Op::kSub: return Tape::Code::kSub;
    case Op::kMul: return Tape::Code::kMul;
    case Op::kDiv: return Tape::Code::kDiv;
    case Op::kPow: return Tape::Code::kPow;
    case Op::kAtan2: return Tape::Code::kAtan2;
    case Op::kMin: return Tape::Code::kMin;
    case Op::kMax: return Tape::Code::kMax;
    default: break;
  }
  assert(false);
  return Tape::Code::kAdd;
}

double PowInt(double x, int n) {
  // Exponentiation by squaring; the same sequence of products every time.
  bool invert = n < 0;
  unsigned k = static_cast<unsigned>(invert ? -n : n);
  double result = 1.0, base = x;
  while (k) {
    if (k & 1u) result *= base;
    base *= base;
    k >>= 1;
  }
  return invert ? 1.0 / result : result;
}

}  // namespace

namespace {

// Whether `ins` reads `slot` (before any acc flags are set).
bool Reads(const Tape::Instruction& ins, int32_t slot) {
  using Code = Tape::Code;
  switch (ins.code) {
    case Code::kEnd:
      return false;
    case Code::kAdd: case Code::kSub: case Code::kMul: case Code::kDiv: case Code::kPow:
    case Code::kAtan2: case Code::kMin: case Code::kMax: case Code::kSquareAdd:
    case Code::kSubSquare:
      return ins.a == slot || ins.b == slot;
    case Code::kMulAdd: case Code::kSubMul: case Code::kAddMul:
      return ins.a == slot || ins.b == slot || ins.c == slot;
    default:  // unary (kPowInt's b is an exponent), kCopy
      return ins.a == slot;
  }
}

// Whether the value that code[i] leaves in `slot` is dead after code[i + 1]:
// no later instruction reads the slot before one overwrites it. Scans at
// most kWindow instructions and answers no when it cannot tell.
bool DeadAfterNext(const std::vector<Tape::Instruction>& code, size_t i, int32_t slot) {
  // The next instruction reads its operands before writing: when it writes
  // the slot itself, the value is dead after it.
  if (code[i + 1].out == slot) return true;
  constexpr size_t kWindow = 64;
  size_t k = i + 2;
  for (; k < code.size() && k < i + 2 + kWindow; ++k) {
    if (Reads(code[k], slot)) return false;
    if (code[k].out == slot) return true;
  }
  return k == code.size();  // reached the end unread
}

}  // namespace

// Fuses an instruction into the next one when the next one is its only
// reader (and its result is not an output): x^2 + y, (x - y)^2, x y + z,
// (x - y) z, (x + y) z. Operands are read before the result is written, as
// for every instruction, so the fused one may write over any of them.
void Tape::FuseInstructions(std::vector<Instruction>* code_ptr, int32_t output_base,
                            int num_outputs) {
  std::vector<Instruction>& code = *code_ptr;
  std::vector<Instruction> fused;
  fused.reserve(code.size());
  size_t i = 0;
  for (; i + 1 < code.size(); ++i) {
    const Instruction& first = code[i];
    const Instruction& next = code[i + 1];
    const int32_t s = first.out;
    const bool temp = s < output_base || s >= output_base + num_outputs;
    // The next instruction must read s exactly once, as an operand slot.
    const bool next_binary = next.code >= Code::kAdd && next.code <= Code::kMax;
    const int reads = (next.a == s) + (next_binary && next.b == s);
    Instruction f{};
    bool ok = false;
    if (temp && reads == 1 && DeadAfterNext(code, i, s)) {
      const int32_t other = next.a == s ? next.b : next.a;  // next's other operand
      if (first.code == Code::kSquare && next.code == Code::kAdd) {
        f = {Code::kSquareAdd, next.out, first.a, other, 0};
        ok = true;
      } else if (first.code == Code::kSub && next.code == Code::kSquare) {
        f = {Code::kSubSquare, next.out, first.a, first.b, 0};
        ok = true;
      } else if (first.code == Code::kMul && next.code == Code::kAdd) {
        f = {Code::kMulAdd, next.out, first.a, first.b, other};
        ok = true;
      } else if (first.code == Code::kSub && next.code == Code::kMul) {
        f = {Code::kSubMul, next.out, first.a, first.b, other};
        ok = true;
      } else if (first.code == Code::kAdd && next.code == Code::kMul) {
        f = {Code::kAddMul, next.out, first.a, first.b, other};
        ok = true;
      }
    }
    if (ok) {
      fused.push_back(f);
      ++i;  // both consumed
    } else {
      fused.push_back(first);
    }
  }
  if (i < code.size()) fused.push_back(code[i]);
  code = std::move(fused);
}

Tape Tape::Compile(const expr::Graph& graph, std::span<const NodeId> outputs, int num_vars) {
  Tape tape;
  tape.num_vars_ = num_vars;

  // Mark the nodes the outputs need. Ids are topological, so one backward
  // sweep from the largest id marks every operand.
  NodeId max_id = -1;
  for (NodeId o : outputs) max_id = std::max(max_id, o);
  std::vector<char> needed(static_cast<size_t>(max_id + 1), 0);
  for (NodeId o : outputs) needed[static_cast<size_t>(o)] = 1;
  for (NodeId id = max_id; id >= 0; --id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const expr::Node& n = graph.node(id);
    if (n.a >= 0) needed[static_cast<size_t>(n.a)] = 1;
    if (n.b >= 0) needed[static_cast<size_t>(n.b)] = 1;
  }

  // Last reader of every node (outputs live to the end).
  constexpr int32_t kForever = std::numeric_limits<int32_t>::max();
  std::unordered_map<NodeId, int32_t> last_use;
  int32_t index = 0;
  for (NodeId id = 0; id <= max_id; ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const expr::Node& n = graph.node(id);
    if (n.op == Op::kConst || n.op == Op::kVar) continue;
    last_use[n.a] = index;
    if (n.b >= 0) last_use[n.b] = index;
    ++index;
  }
  for (NodeId o : outputs) last_use[o] = kForever;

  std::unordered_map<NodeId, int32_t> slot;
  int32_t next_slot = num_vars;
  for (NodeId id = 0; id <= max_id; ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const expr::Node& n = graph.node(id);
    if (n.op == Op::kVar) {
      slot[id] = n.var;
    } else if (n.op == Op::kConst) {
      slot[id] = next_slot;
      tape.constants_.emplace_back(next_slot, n.value);
      ++next_slot;
    }
  }
  auto is_temp = [&](NodeId id) {
    Op op = graph.node(id).op;
    return op != Op::kConst && op != Op::kVar;
  };

  // The output block. A computed output is written in place by its
  // instruction (the first output naming it); the others are copies made
  // after the last instruction, or constants written by InitWork.
  tape.num_outputs_ = static_cast<int>(outputs.size());
  tape.output_base_ = next_slot;
  next_slot += tape.num_outputs_;
  std::vector<Instruction> copies;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const NodeId o = outputs[k];
    const int32_t s = tape.output_base_ + static_cast<int32_t>(k);
    const expr::Node& n = graph.node(o);
    if (n.op == Op::kConst) {
      tape.constants_.emplace_back(s, n.value);
    } else if (n.op == Op::kVar || slot.count(o)) {
      copies.push_back({Code::kCopy, s, slot.at(o), 0});
    } else {
      slot[o] = s;
    }
  }

  std::vector<Instruction> code;
  std::vector<int32_t> free_slots;
  index = 0;
  for (NodeId id = 0; id <= max_id; ++id) {
    if (!needed[static_cast<size_t>(id)] || !is_temp(id)) continue;
    const expr::Node& n = graph.node(id);
    Instruction ins{};
    ins.a = slot.at(n.a);
    ins.b = ins.a;
    if (expr::IsUnary(n.op)) {
      ins.code = UnaryCode(n.op);
    } else if (n.op == Op::kPow && graph.IsConst(n.b)) {
      double c = graph.node(n.b).value;
      if (c == 2) {
        ins.code = Code::kSquare;
      } else if (c == 3) {
        ins.code = Code::kCube;
      } else if (c == -1) {
        ins.code = Code::kRecip;
      } else if (c == 0.5) {
        ins.code = Code::kSqrt;
      } else if (c == std::round(c) && std::fabs(c) <= 64) {
        ins.code = Code::kPowInt;
        ins.b = static_cast<int32_t>(c);
      } else {
        ins.code = Code::kPow;
        ins.b = slot.at(n.b);
      }
    } else {
      ins.code = BinaryCode(n.op);
      ins.b = slot.at(n.b);
    }
    // Free operands read for the last time here, then take a slot: an
    // instruction may write over its own operand (operands are read first).
    for (NodeId operand : {n.a, n.b}) {
      if (operand < 0 || !is_temp(operand)) continue;
      auto it = last_use.find(operand);
      if (it != last_use.end() && it->second == index) {
        free_slots.push_back(slot.at(operand));
        it->second = -1;  // freed once even when both operands are equal
      }
    }
    int32_t out;
    if (auto it = slot.find(id); it != slot.end()) {
      out = it->second;  // an output, written in place
    } else if (!free_slots.empty()) {
      out = free_slots.back();
      free_slots.pop_back();
    } else {
      out = next_slot++;
    }
    slot[id] = out;
    ins.out = out;
    code.push_back(ins);
    ++index;
  }
  FuseInstructions(&code, tape.output_base_, tape.num_outputs_);
  // Copies read variables and earlier outputs, which live to the end.
  code.insert(code.end(), copies.begin(), copies.end());
  // Operands that the previous instruction just computed come from its
  // register (commutative operations swap to put that operand first).
  for (size_t i = 1; i + 1 < code.size(); ++i) {  // not the kEnd marker
    Instruction& ins = code[i];
    const int32_t prev = code[i - 1].out;
    const bool binary = ins.code >= Code::kAdd && ins.code <= Code::kMax;
    const bool commutative = ins.code == Code::kAdd || ins.code == Code::kMul ||
                             ins.code == Code::kMin || ins.code == Code::kMax;
    if (ins.a != prev && binary && commutative && ins.b == prev) std::swap(ins.a, ins.b);
    if (ins.a == prev) {
      ins.code = static_cast<Code>(static_cast<uint8_t>(ins.code) | kFromAcc);
    }
  }
  code.push_back({Code::kEnd, 0, 0, 0});
  tape.code_ = std::move(code);
  tape.num_slots_ = next_slot;
  return tape;
}

void Tape::InitWork(double* work) const {
  for (const auto& [s, value] : constants_) work[s] = value;
}

void Tape::Eval(double* w, double* out) const {
  Eval(w);
  const double* o = Outputs(w);
  for (int k = 0; k < num_outputs_; ++k) out[k] = o[k];
}

// Direct threading (GCC/Clang labels as values): one indirect jump per
// instruction, each with its own branch-prediction history, and no bounds
// check; the kEnd marker ends the loop. Every handler also leaves its result
// in `acc` (a register): an instruction flagged kFromAcc takes its first
// operand from there instead of reloading what the previous one just stored,
// which keeps store-to-load forwarding off chains of dependent operations.
// Every tape operation once, in the order of Tape::Code: X(label, code,
// expr) with the operands x (slot a, or the register), y (slot b) and z
// (slot c); kPowInt's exponent is the instruction's b.
#define TETHER_TAPE_OPERATIONS(UNARY, BINARY, TERNARY)   \
  UNARY(neg, kNeg, -x)                                   \
  UNARY(sin, kSin, std::sin(x))                          \
  UNARY(cos, kCos, std::cos(x))                          \
  UNARY(tan, kTan, std::tan(x))                          \
  UNARY(asin, kAsin, std::asin(x))                       \
  UNARY(acos, kAcos, std::acos(x))                       \
  UNARY(atan, kAtan, std::atan(x))                       \
  UNARY(sinh, kSinh, std::sinh(x))                       \
  UNARY(cosh, kCosh, std::cosh(x))                       \
  UNARY(tanh, kTanh, std::tanh(x))                       \
  UNARY(exp, kExp, std::exp(x))                          \
  UNARY(log, kLog, std::log(x))                          \
  UNARY(sqrt, kSqrt, std::sqrt(x))                       \
  UNARY(abs, kAbs, std::fabs(x))                         \
  UNARY(sign, kSign, x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0)) \
  UNARY(step, kStep, x > 0 ? 1.0 : 0.0)                  \
  UNARY(square, kSquare, x * x)                          \
  UNARY(cube, kCube, x * x * x)                          \
  UNARY(recip, kRecip, 1.0 / x)                          \
  UNARY(powint, kPowInt, PowInt(x, ip->b))               \
  BINARY(add, kAdd, x + y)                               \
  BINARY(sub, kSub, x - y)                               \
  BINARY(mul, kMul, x * y)                               \
  BINARY(div, kDiv, x / y)                               \
  BINARY(pow, kPow, std::pow(x, y))                      \
  BINARY(atan2, kAtan2, std::atan2(x, y))                \
  BINARY(min, kMin, std::fmin(x, y))                     \
  BINARY(max, kMax, std::fmax(x, y))                     \
  UNARY(copy, kCopy, x)                                  \
  BINARY(square_add, kSquareAdd, x * x + y)              \
  BINARY(sub_square, kSubSquare, (x - y) * (x - y))      \
  TERNARY(mul_add, kMulAdd, x * y + z)                   \
  TERNARY(sub_mul, kSubMul, (x - y) * z)                 \
  TERNARY(add_mul, kAddMul, (x + y) * z)

namespace {
// The list is in the enum's order (the label table below relies on it).
#define TETHER_CODE(label, code, expr) Tape::Code::code,
constexpr Tape::Code kListedCodes[] = {
    TETHER_TAPE_OPERATIONS(TETHER_CODE, TETHER_CODE, TETHER_CODE)};
#undef TETHER_CODE
constexpr bool ListedInEnumOrder() {
  for (size_t i = 0; i < std::size(kListedCodes); ++i) {
    if (static_cast<size_t>(kListedCodes[i]) != i) return false;
  }
  return std::size(kListedCodes) == static_cast<size_t>(Tape::Code::kEnd);
}
static_assert(ListedInEnumOrder(), "TETHER_TAPE_OPERATIONS must list every code in enum order");
}  // namespace

void Tape::Eval(double* w) const {
#define TETHER_L(label, code, expr) &&label,
#define TETHER_LA(label, code, expr) &&label##_acc,
  // Codes kEnd + 1 .. kFromAcc - 1 are never emitted.
#define TETHER_E4 &&end, &&end, &&end, &&end
#define TETHER_FILL_END TETHER_E4, TETHER_E4, TETHER_E4, TETHER_E4, TETHER_E4, TETHER_E4, \
    TETHER_E4, &&end
  static const void* const kLabels[2 * kFromAcc] = {
      TETHER_TAPE_OPERATIONS(TETHER_L, TETHER_L, TETHER_L) &&end, TETHER_FILL_END,
      TETHER_TAPE_OPERATIONS(TETHER_LA, TETHER_LA, TETHER_LA) &&end, TETHER_FILL_END};
#undef TETHER_L
#undef TETHER_LA
#undef TETHER_FILL_END
#undef TETHER_E4
  static_assert(static_cast<int>(Code::kEnd) == 34, "update TETHER_FILL_END (64 - 35 entries)");
  static_assert(sizeof(kLabels) / sizeof(kLabels[0]) == 2 * kFromAcc);
  const Instruction* ip = code_.data();
  double acc = 0;
#define TETHER_DISPATCH() goto* kLabels[static_cast<uint8_t>(ip->code)]
#define TETHER_FINISH(expr) \
  acc = (expr);             \
  w[ip->out] = acc;         \
  ++ip;                     \
  TETHER_DISPATCH();
#define TETHER_UNARY(label, code, expr) \
  label : {                           \
    const double x = w[ip->a];        \
    TETHER_FINISH(expr)               \
  }                                   \
  label##_acc : {                     \
    const double x = acc;             \
    TETHER_FINISH(expr)               \
  }
#define TETHER_TERNARY(label, code, expr) \
  label : {                           \
    const double x = w[ip->a];        \
    const double y = w[ip->b];        \
    const double z = w[ip->c];        \
    TETHER_FINISH(expr)               \
  }                                   \
  label##_acc : {                     \
    const double x = acc;             \
    const double y = w[ip->b];        \
    const double z = w[ip->c];        \
    TETHER_FINISH(expr)               \
  }
#define TETHER_BINARY(label, code, expr) \
  label : {                           \
    const double x = w[ip->a];        \
    const double y = w[ip->b];        \
    TETHER_FINISH(expr)               \
  }                                   \
  label##_acc : {                     \
    const double x = acc;             \
    const double y = w[ip->b];        \
    TETHER_FINISH(expr)               \
  }
  TETHER_DISPATCH();
  TETHER_TAPE_OPERATIONS(TETHER_UNARY, TETHER_BINARY, TETHER_TERNARY)
end:
  return;
#undef TETHER_TERNARY
#undef TETHER_BINARY
#undef TETHER_UNARY
#undef TETHER_FINISH
#undef TETHER_DISPATCH
}

#undef TETHER_TAPE_OPERATIONS

}  // namespace tether
