#include "engine/internal/expr/tape.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <unordered_map>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/expr/native_tape.h"

namespace tether {

using expr::NodeId;
using expr::Op;

namespace {

using Code = Tape::Code;

// Every graph operation's code has the operation's place in the table.
#define TETHER_CHECK_CODE(name, ...)                                                               \
  static_assert(                                                                                   \
      Tape::CodeOf(Op::name) == Code::name && static_cast<int>(Code::name) < expr::kNumOperations, \
      "Tape::Code must start with the graph operations in order");
TETHER_EXPR_OPERATIONS(TETHER_CHECK_CODE)
#undef TETHER_CHECK_CODE
static_assert(2 * Tape::kNoStore <= 256,
              "a code and its kFromAcc and kNoStore twins must fit in Code");

// How many of the slots a, b, c each code reads, by code.
// Kept by hand: one X-macro expansion a line.
// clang-format off
constexpr int kOperands[] = {
#define TETHER_GRAPH_OPERANDS(name, spelling, arity, ...) arity,
#define TETHER_TAPE_OPERANDS(name, operands, value) operands,
    TETHER_EXPR_OPERATIONS(TETHER_GRAPH_OPERANDS)
    TETHER_TAPE_OPERATIONS(TETHER_TAPE_OPERANDS)
#undef TETHER_GRAPH_OPERANDS
#undef TETHER_TAPE_OPERANDS
    0,  // kEnd
};
static_assert(std::size(kOperands) == static_cast<size_t>(Code::kEnd) + 1);
// clang-format on

constexpr int Operands(Code code) { return kOperands[static_cast<size_t>(code)]; }

// A graph operation with two operands (not one of the tape's own codes).
constexpr bool IsGraphBinary(Code code) {
  return static_cast<int>(code) < expr::kNumOperations && Operands(code) == 2;
}

// A graph operation whose operands may be swapped.
constexpr bool IsCommutative(Code code) {
  return static_cast<int>(code) < expr::kNumOperations &&
         expr::IsCommutative(static_cast<Op>(static_cast<int>(code) + expr::kFirstOperation));
}

}  // namespace

double Tape::PowInt(double x, int n) {
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

// For evaluators in this file outside Tape (Tape::PowInt, which
// native_tape.cc calls too, is the one definition).
namespace {
[[maybe_unused]] inline double PowInt(double x, int n) { return Tape::PowInt(x, n); }
}  // namespace

namespace {

// Whether `ins` reads `slot` (before any acc flags are set; kSubMulAdd's
// implicit operand, the previous result, is not counted: no pass asks about
// a tape that holds one).
bool Reads(const Tape::Instruction& ins, int32_t slot) {
  const int operands = Operands(ins.code);  // kPowInt's b is an exponent
  return (operands >= 1 && ins.a == slot) || (operands >= 2 && ins.b == slot) ||
         (operands >= 3 && ins.c == slot);
}

// Whether `ins` (its register flag set or not) reads `slot` from the work
// buffer.
bool ReadsFromMemory(const Tape::Instruction& ins, int32_t slot) {
  const bool from_acc = static_cast<uint8_t>(ins.code) >= Tape::kFromAcc;
  const Code base = static_cast<Code>(static_cast<uint8_t>(ins.code) % Tape::kFromAcc);
  const int operands = Operands(base);
  return (operands >= 1 && !from_acc && ins.a == slot) || (operands >= 2 && ins.b == slot) ||
         (operands >= 3 && ins.c == slot);
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

// The skeleton of the pairwise fusions: walks the adjacent pairs (code[i],
// code[i + 1]) whose first instruction writes a temporary (not an output),
// asks `fuse` for one instruction computing both, and keeps the pair
// otherwise. `fuse(code, i, fused)` also sees what has been emitted so far.
template <typename Fuse>
void FuseAdjacentPairs(std::vector<Tape::Instruction>* code_ptr, int32_t output_base,
                       int num_outputs, Fuse fuse) {
  std::vector<Tape::Instruction>& code = *code_ptr;
  std::vector<Tape::Instruction> fused;
  fused.reserve(code.size());
  size_t i = 0;
  for (; i + 1 < code.size(); ++i) {
    const int32_t s = code[i].out;
    const bool temp = s < output_base || s >= output_base + num_outputs;
    const std::optional<Tape::Instruction> f =
        temp ? fuse(code, i, fused) : std::optional<Tape::Instruction>();
    if (f) {
      fused.push_back(*f);
      ++i;  // both consumed
    } else {
      fused.push_back(code[i]);
    }
  }
  if (i < code.size()) fused.push_back(code[i]);
  code = std::move(fused);
}

// Fuses an instruction into the next one when the next one is its only
// reader (and its result is not an output): x^2 + y, (x - y)^2, x y + z,
// (x - y) z, (x + y) z. Operands are read before the result is written, as
// for every instruction, so the fused one may write over any of them.
void Tape::FuseInstructions(std::vector<Instruction>* code, int32_t output_base, int num_outputs) {
  auto with_its_only_reader = [](const std::vector<Instruction>& code, size_t i,
                                 const std::vector<Instruction>&) -> std::optional<Instruction> {
    const Instruction& first = code[i];
    const Instruction& next = code[i + 1];
    const int32_t s = first.out;
    // The next instruction must read s exactly once, as an operand slot.
    const bool next_binary = IsGraphBinary(next.code);
    const int reads = (next.a == s) + (next_binary && next.b == s);
    if (reads != 1 || !DeadAfterNext(code, i, s)) return std::nullopt;
    const int32_t other = next.a == s ? next.b : next.a;  // next's other operand
    if (first.code == Code::kSquare && next.code == Code::kAdd)
      return Instruction{Code::kSquareAdd, next.out, first.a, other, 0};
    if (first.code == Code::kSub && next.code == Code::kSquare)
      return Instruction{Code::kSubSquare, next.out, first.a, first.b, 0};
    if (first.code == Code::kMul && next.code == Code::kAdd)
      return Instruction{Code::kMulAdd, next.out, first.a, first.b, other};
    if (first.code == Code::kSub && next.code == Code::kMul)
      return Instruction{Code::kSubMul, next.out, first.a, first.b, other};
    if (first.code == Code::kAdd && next.code == Code::kMul)
      return Instruction{Code::kAddMul, next.out, first.a, first.b, other};
    return std::nullopt;
  };
  FuseAdjacentPairs(code, output_base, num_outputs, with_its_only_reader);
}

// Moves each negation that computes an output of a subtraction to just
// after the subtraction and fuses the two: out = a - b, c = -(a - b) (a
// distance's Jacobian row holds d and -d). The negation's output slot is
// written by it alone and read by nothing before it (every reader comes
// later in the topological order), and its operand slot holds the same
// value from its writer up to the negation, so the move changes no value.
void Tape::FuseNegations(std::vector<Instruction>* code_ptr, int32_t output_base, int num_outputs,
                         int32_t num_slots) {
  std::vector<Instruction>& code = *code_ptr;
  const size_t n = code.size();
  // For each instruction, the position it goes after: its own (i), or for a
  // hoisted negation its operand's writer (right after it).
  std::vector<size_t> after(n);
  std::vector<int64_t> writer(static_cast<size_t>(num_slots), -1);
  std::vector<char> hoisted(n, 0);
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    const Instruction& ins = code[i];
    after[i] = i;
    const bool output = ins.out >= output_base && ins.out < output_base + num_outputs;
    if (ins.code == Code::kNeg && output) {
      const int64_t w = writer[static_cast<size_t>(ins.a)];
      if (w >= 0 && code[static_cast<size_t>(w)].code == Code::kSub) {
        after[i] = static_cast<size_t>(w);
        hoisted[i] = 1;
        any = true;
      }
    }
    writer[static_cast<size_t>(ins.out)] = static_cast<int64_t>(i);
  }
  if (!any) return;
  // Stable reorder: instruction i at key 2 after[i] (+1 when hoisted).
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = i;
  std::stable_sort(perm.begin(), perm.end(), [&](size_t x, size_t y) {
    return 2 * after[x] + hoisted[x] < 2 * after[y] + hoisted[y];
  });
  std::vector<Instruction> moved;
  moved.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = perm[k];
    const Instruction& ins = code[i];
    if (hoisted[i]) {  // right after its subtraction
      assert(moved.back().code == Code::kSub && moved.back().out == ins.a);
      moved.back().code = Code::kSubNeg;
      moved.back().c = ins.out;
      continue;
    }
    moved.push_back(ins);
  }
  code = std::move(moved);
}

// Fuses (a - b) c into the sum that reads it when the sum's other operand
// is the previous instruction's result: out = (a - b) c + [previous], the
// addition commuted (exact). The product must be a temporary read by the
// sum alone.
void Tape::FuseSumsOfProducts(std::vector<Instruction>* code, int32_t output_base,
                              int num_outputs) {
  auto into_the_next_sum = [](const std::vector<Instruction>& code, size_t i,
                              const std::vector<Instruction>& fused) -> std::optional<Instruction> {
    const Instruction& first = code[i];
    const Instruction& next = code[i + 1];
    const int32_t s = first.out;
    if (fused.empty() || first.code != Code::kSubMul || next.code != Code::kAdd ||
        (next.a == s) + (next.b == s) != 1)
      return std::nullopt;
    const int32_t other = next.a == s ? next.b : next.a;
    if (other != fused.back().out || !DeadAfterNext(code, i, s)) return std::nullopt;
    return Instruction{Code::kSubMulAdd, next.out, first.a, first.b, first.c};
  };
  FuseAdjacentPairs(code, output_base, num_outputs, into_the_next_sum);
}

// Fuses x^2 into the a^2 + [x^2] (kSquareAdd) that reads it up to
// kSquareWindow instructions later: a^2 + x^2, when the square is a
// temporary that sum alone reads and nothing in between writes x. The
// instructions in between neither read nor write the square's slot (it is
// live until the sum), so removing it changes no value.
void Tape::FuseSumsOfSquares(std::vector<Instruction>* code_ptr, int32_t output_base,
                             int num_outputs) {
  constexpr size_t kSquareWindow = 4;
  std::vector<Instruction>& code = *code_ptr;
  std::vector<char> removed(code.size(), 0);
  for (size_t i = 0; i + 1 < code.size(); ++i) {
    const Instruction& sq = code[i];
    const int32_t t = sq.out, x = sq.a;
    if (sq.code != Code::kSquare || t == x || (t >= output_base && t < output_base + num_outputs))
      continue;
    for (size_t j = i + 1; j < code.size() && j <= i + kSquareWindow; ++j) {
      Instruction& next = code[j];
      if (next.code == Code::kSquareAdd && next.b == t && next.a != t) {
        if (DeadAfterNext(code, j - 1, t)) {
          next.code = Code::kSumSquares;
          next.b = x;
          removed[i] = 1;
        }
        break;
      }
      // x must keep its value, and the square must not be read otherwise.
      if (next.out == x || (next.code == Code::kSubNeg && next.c == x) || Reads(next, t) ||
          next.out == t)
        break;
    }
  }
  size_t k = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    if (!removed[i]) code[k++] = code[i];
  }
  code.resize(k);
}

namespace {

// True (abandon) on every kPollInterval-th call once `stop` says so.
class StopPoll {
 public:
  explicit StopPoll(const std::function<bool()>& stop) : stop_(stop) {}
  bool operator()() {
    return stop_ && (++polls_ & (expr::Graph::kPollInterval - 1)) == 0 && stop_();
  }

 private:
  const std::function<bool()>& stop_;
  uint32_t polls_ = 0;
};

// Whether node `id` is computed by an instruction (neither a constant nor a
// variable).
bool IsTemp(const expr::Graph& graph, NodeId id) {
  Op op = graph.node(id).op;
  return op != Op::kConst && op != Op::kVar;
}

// *needed, per node id up to max_id: whether the outputs need the node.
// False when the poll says stop.
bool MarkNeeded(const expr::Graph& graph, std::span<const NodeId> outputs, NodeId max_id,
                StopPoll& stopped, std::vector<char>* needed_ptr) {
  std::vector<char>& needed = *needed_ptr;
  // Mark the nodes the outputs need. Ids are topological, so one backward
  // sweep from the largest id marks every operand.
  needed.assign(static_cast<size_t>(max_id + 1), 0);
  for (NodeId o : outputs) needed[static_cast<size_t>(o)] = 1;
  for (NodeId id = max_id; id >= 0; --id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    if (stopped()) return false;
    const expr::Node& n = graph.node(id);
    if (n.a >= 0) needed[static_cast<size_t>(n.a)] = 1;
    if (n.b >= 0) needed[static_cast<size_t>(n.b)] = 1;
  }
  return true;
}

// Last reader of every node, as an instruction index (outputs live to the
// end).
std::unordered_map<NodeId, int32_t> LastUses(const expr::Graph& graph,
                                             std::span<const NodeId> outputs,
                                             const std::vector<char>& needed, NodeId max_id) {
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
  return last_use;
}

// The leaves' slots: a variable's own, a constant a new one after the
// variables (its value into *constants). Returns the next free slot.
int32_t LeafSlots(const expr::Graph& graph, const std::vector<char>& needed, NodeId max_id,
                  int num_vars, std::unordered_map<NodeId, int32_t>* slot,
                  std::vector<std::pair<int32_t, double>>* constants) {
  int32_t next_slot = num_vars;
  for (NodeId id = 0; id <= max_id; ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const expr::Node& n = graph.node(id);
    if (n.op == Op::kVar) {
      (*slot)[id] = n.var;
    } else if (n.op == Op::kConst) {
      (*slot)[id] = next_slot;
      constants->emplace_back(next_slot, n.value);
      ++next_slot;
    }
  }
  return next_slot;
}

// The output block from output_base: a computed output's slot (written in
// place), the constant outputs (into *constants, flagged in
// *constant_output); returns the copies.
std::vector<Tape::Instruction> OutputBlock(const expr::Graph& graph,
                                           std::span<const NodeId> outputs, int32_t output_base,
                                           std::unordered_map<NodeId, int32_t>* slot,
                                           std::vector<std::pair<int32_t, double>>* constants,
                                           std::vector<char>* constant_output) {
  // A computed output is written in place by its instruction (the first
  // output naming it); the others are copies made after the last
  // instruction, or constants written by InitWork.
  constant_output->assign(outputs.size(), 0);
  std::vector<Tape::Instruction> copies;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const NodeId o = outputs[k];
    const int32_t s = output_base + static_cast<int32_t>(k);
    const expr::Node& n = graph.node(o);
    if (n.op == Op::kConst) {
      constants->emplace_back(s, n.value);
      (*constant_output)[k] = 1;
    } else if (n.op == Op::kVar || slot->count(o)) {
      copies.push_back({Code::kCopy, s, slot->at(o), 0});
    } else {
      (*slot)[o] = s;
    }
  }
  return copies;
}

// The instruction that computes node n, its output slot not yet chosen: a
// power by a constant has its own codes.
Tape::Instruction InstructionOf(const expr::Graph& graph, const expr::Node& n,
                                const std::unordered_map<NodeId, int32_t>& slot) {
  Tape::Instruction ins{};
  ins.a = slot.at(n.a);
  ins.b = ins.a;
  if (expr::IsUnary(n.op)) {
    ins.code = Tape::CodeOf(n.op);
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
    ins.code = Tape::CodeOf(n.op);
    ins.b = slot.at(n.b);
  }
  return ins;
}

// *code: one instruction per needed node in id order, each writing a slot
// its operands' last reads freed when there is one (else *next_slot, which
// advances). False when the poll says stop.
bool EmitInstructions(const expr::Graph& graph, const std::vector<char>& needed, NodeId max_id,
                      std::unordered_map<NodeId, int32_t>* last_use_ptr,
                      std::unordered_map<NodeId, int32_t>* slot_ptr, int32_t* next_slot,
                      StopPoll& stopped, std::vector<Tape::Instruction>* code) {
  std::unordered_map<NodeId, int32_t>& last_use = *last_use_ptr;
  std::unordered_map<NodeId, int32_t>& slot = *slot_ptr;
  std::vector<int32_t> free_slots;
  int32_t index = 0;
  for (NodeId id = 0; id <= max_id; ++id) {
    if (!needed[static_cast<size_t>(id)] || !IsTemp(graph, id)) continue;
    if (stopped()) return false;
    const expr::Node& n = graph.node(id);
    Tape::Instruction ins = InstructionOf(graph, n, slot);
    // Free operands read for the last time here, then take a slot: an
    // instruction may write over its own operand (operands are read first).
    for (NodeId operand : {n.a, n.b}) {
      if (operand < 0 || !IsTemp(graph, operand)) continue;
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
      out = (*next_slot)++;
    }
    slot[id] = out;
    ins.out = out;
    code->push_back(ins);
    ++index;
  }
  return true;
}

// The register flags (kFromAcc) on the instructions of `code` (kEnd not
// yet appended) whose first operand the previous one just computed.
void ReadOperandsFromRegister(std::vector<Tape::Instruction>* code_ptr) {
  std::vector<Tape::Instruction>& code = *code_ptr;
  // Operands that the previous instruction just computed come from its
  // register (commutative operations swap to put that operand first).
  for (size_t i = 1; i + 1 < code.size(); ++i) {  // not the kEnd marker
    Tape::Instruction& ins = code[i];
    const int32_t prev = code[i - 1].out;
    if (ins.a != prev && IsCommutative(ins.code) && ins.b == prev) std::swap(ins.a, ins.b);
    if (ins.a == prev) {
      ins.code = static_cast<Code>(static_cast<uint8_t>(ins.code) + Tape::kFromAcc);
    }
  }
}

// The no-store flags (kNoStore) on the instructions of `code` whose result
// only the next instruction reads, from the register.
void SkipDeadStores(std::vector<Tape::Instruction>* code_ptr, int32_t output_base,
                    int num_outputs) {
  std::vector<Tape::Instruction>& code = *code_ptr;
  // A temporary that the next instruction alone reads, from the register,
  // is not stored.
  for (size_t i = 0; i + 1 < code.size(); ++i) {
    const int32_t s = code[i].out;
    if (s >= output_base && s < output_base + num_outputs) continue;
    const Tape::Instruction& next = code[i + 1];
    const bool from_acc = static_cast<uint8_t>(next.code) >= Tape::kFromAcc;
    const Code base = static_cast<Code>(static_cast<uint8_t>(next.code) % Tape::kFromAcc);
    const bool reads_register = (from_acc && next.a == s) || base == Code::kSubMulAdd;
    if (!reads_register || ReadsFromMemory(next, s)) continue;
    // Nothing later reads the slot before it is written again.
    bool dead = next.out == s;
    size_t k = i + 2;
    for (; !dead && k < code.size() && k < i + 2 + 64; ++k) {
      if (ReadsFromMemory(code[k], s)) break;
      dead = code[k].out == s;
    }
    if (dead || k == code.size()) {
      code[i].code = static_cast<Code>(static_cast<uint8_t>(code[i].code) + Tape::kNoStore);
    }
  }
}

}  // namespace

Tape Tape::Compile(const expr::Graph& graph, std::span<const NodeId> outputs, int num_vars,
                   const std::function<bool()>& stop) {
  StopPoll stopped(stop);
  Tape tape;
  tape.num_vars_ = num_vars;

  NodeId max_id = -1;
  for (NodeId o : outputs) max_id = std::max(max_id, o);
  std::vector<char> needed;
  if (!MarkNeeded(graph, outputs, max_id, stopped, &needed)) return Tape();
  std::unordered_map<NodeId, int32_t> last_use = LastUses(graph, outputs, needed, max_id);
  std::unordered_map<NodeId, int32_t> slot;
  int32_t next_slot = LeafSlots(graph, needed, max_id, num_vars, &slot, &tape.constants_);

  // The output block.
  tape.num_outputs_ = static_cast<int>(outputs.size());
  tape.output_base_ = next_slot;
  next_slot += tape.num_outputs_;
  const std::vector<Instruction> copies = OutputBlock(graph, outputs, tape.output_base_, &slot,
                                                      &tape.constants_, &tape.constant_output_);

  std::vector<Instruction> code;
  if (!EmitInstructions(graph, needed, max_id, &last_use, &slot, &next_slot, stopped, &code))
    return Tape();
  FuseInstructions(&code, tape.output_base_, tape.num_outputs_);
  FuseNegations(&code, tape.output_base_, tape.num_outputs_, next_slot);
  FuseSumsOfSquares(&code, tape.output_base_, tape.num_outputs_);
  FuseSumsOfProducts(&code, tape.output_base_, tape.num_outputs_);
  // Copies read variables and earlier outputs, which live to the end.
  code.insert(code.end(), copies.begin(), copies.end());
  ReadOperandsFromRegister(&code);
  SkipDeadStores(&code, tape.output_base_, tape.num_outputs_);
  code.push_back({Code::kEnd, 0, 0, 0});
  tape.code_ = std::move(code);
  tape.num_slots_ = next_slot;
  tape.native_ = NativeTape::Translate(tape.code_, tape.num_slots_);
  return tape;
}

void Tape::InitWork(double* work) const {
  for (const auto& [s, value] : constants_) work[s] = value;
}

bool Tape::OutputIsConstant(int k) const { return constant_output_[static_cast<size_t>(k)]; }

void Tape::Eval(double* w) const {
  if (native_) {
    native_->Run(w);
  } else {
    Interpret(w);
  }
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
// The handlers and the label table are generated from the two operation
// tables in the order of Tape::Code: a graph operation's handler computes
// expr::Scalar<op> (always inlined: the same bits as expr::Apply, and no
// call in the loop), a tape operation's its value expression.
#define TETHER_GRAPH_LISTED(name, ...) Code::name,
#define TETHER_TAPE_LISTED(name, operands, value) Code::name,

namespace {
// The handlers are listed in the enum's order (the label table relies on it).
constexpr Code kListedCodes[] = {TETHER_EXPR_OPERATIONS(TETHER_GRAPH_LISTED)
                                     TETHER_TAPE_OPERATIONS(TETHER_TAPE_LISTED)};
constexpr bool ListedInEnumOrder() {
  for (size_t i = 0; i < std::size(kListedCodes); ++i) {
    if (static_cast<size_t>(kListedCodes[i]) != i) return false;
  }
  return std::size(kListedCodes) == static_cast<size_t>(Code::kEnd);
}
static_assert(ListedInEnumOrder(), "the handlers must list every code in enum order");
}  // namespace

#undef TETHER_GRAPH_LISTED
#undef TETHER_TAPE_LISTED

void Tape::Interpret(double* w) const {
#define TETHER_GRAPH_LABEL(name, ...) &&name,
#define TETHER_TAPE_LABEL(name, operands, value) &&name,
#define TETHER_GRAPH_LABEL_ACC(name, ...) &&name##_acc,
#define TETHER_TAPE_LABEL_ACC(name, operands, value) &&name##_acc,
#define TETHER_GRAPH_LABEL_NS(name, ...) &&name##_ns,
#define TETHER_TAPE_LABEL_NS(name, operands, value) &&name##_ns,
#define TETHER_GRAPH_LABEL_ACC_NS(name, ...) &&name##_acc_ns,
#define TETHER_TAPE_LABEL_ACC_NS(name, operands, value) &&name##_acc_ns,
  // Indexed by code, then by code + kFromAcc, then the same + kNoStore;
  // kEnd is never flagged.
  // Kept by hand: &&label is a label's address, not a logical and.
  // clang-format off
  static const void* const kLabels[] = {
      TETHER_EXPR_OPERATIONS(TETHER_GRAPH_LABEL) TETHER_TAPE_OPERATIONS(TETHER_TAPE_LABEL) &&end,
      TETHER_EXPR_OPERATIONS(TETHER_GRAPH_LABEL_ACC)
          TETHER_TAPE_OPERATIONS(TETHER_TAPE_LABEL_ACC) &&end,
      TETHER_EXPR_OPERATIONS(TETHER_GRAPH_LABEL_NS)
          TETHER_TAPE_OPERATIONS(TETHER_TAPE_LABEL_NS) &&end,
      TETHER_EXPR_OPERATIONS(TETHER_GRAPH_LABEL_ACC_NS)
          TETHER_TAPE_OPERATIONS(TETHER_TAPE_LABEL_ACC_NS) &&end};
  // clang-format on
#undef TETHER_GRAPH_LABEL
#undef TETHER_TAPE_LABEL
#undef TETHER_GRAPH_LABEL_ACC
#undef TETHER_TAPE_LABEL_ACC
#undef TETHER_GRAPH_LABEL_NS
#undef TETHER_TAPE_LABEL_NS
#undef TETHER_GRAPH_LABEL_ACC_NS
#undef TETHER_TAPE_LABEL_ACC_NS
  static_assert(std::size(kLabels) == 2 * kNoStore);
  const Instruction* ip = code_.data();
  double acc = 0;
#define TETHER_DISPATCH() goto* kLabels[static_cast<uint8_t>(ip->code)]
#define TETHER_FINISH(expr) \
  acc = (expr);             \
  w[ip->out] = acc;         \
  ++ip;                     \
  TETHER_DISPATCH();
#define TETHER_FINISH_NO_STORE(expr) \
  acc = (expr);                      \
  ++ip;                              \
  TETHER_DISPATCH();
  // The operands: x from slot a or the register (X), y, z from slots b, c.
#define TETHER_LOAD_1(X) const double x = X;
#define TETHER_LOAD_2(X) \
  const double x = X;    \
  const double y = w[ip->b];
#define TETHER_LOAD_3(X)     \
  const double x = X;        \
  const double y = w[ip->b]; \
  const double z = w[ip->c];
  // A handler reading 1, 2 or 3 operand slots, its kFromAcc twin, and
  // both again with kNoStore.
#define TETHER_HANDLER(n, label, expr)                                          \
  label : { TETHER_LOAD_##n(w[ip->a]) TETHER_FINISH(expr) }                     \
  label##_acc : {TETHER_LOAD_##n(acc) TETHER_FINISH(expr)} label##_ns           \
      : {TETHER_LOAD_##n(w[ip->a]) TETHER_FINISH_NO_STORE(expr)} label##_acc_ns \
      : {TETHER_LOAD_##n(acc) TETHER_FINISH_NO_STORE(expr)}
#define TETHER_HANDLER_1(label, expr) TETHER_HANDLER(1, label, expr)
#define TETHER_HANDLER_2(label, expr) TETHER_HANDLER(2, label, expr)
#define TETHER_HANDLER_3(label, expr) TETHER_HANDLER(3, label, expr)
#define TETHER_SECOND_OPERAND_1 0.0
#define TETHER_SECOND_OPERAND_2 y
#define TETHER_GRAPH_HANDLER(name, spelling, arity, ...) \
  TETHER_HANDLER_##arity(name, expr::Scalar<Op::name>(x, TETHER_SECOND_OPERAND_##arity))
#define TETHER_TAPE_HANDLER(name, operands, value) TETHER_HANDLER_##operands(name, value)
  TETHER_DISPATCH();
  TETHER_EXPR_OPERATIONS(TETHER_GRAPH_HANDLER)
  TETHER_TAPE_OPERATIONS(TETHER_TAPE_HANDLER)
end:
  return;
#undef TETHER_TAPE_HANDLER
#undef TETHER_GRAPH_HANDLER
#undef TETHER_SECOND_OPERAND_2
#undef TETHER_SECOND_OPERAND_1
#undef TETHER_HANDLER_3
#undef TETHER_HANDLER_2
#undef TETHER_HANDLER_1
#undef TETHER_HANDLER
#undef TETHER_LOAD_3
#undef TETHER_LOAD_2
#undef TETHER_LOAD_1
#undef TETHER_FINISH_NO_STORE
#undef TETHER_FINISH
#undef TETHER_DISPATCH
}

int64_t Tape::heap_bytes() const {
  return HeapBytesOf(code_, constants_, constant_output_) +
         // The machine code's object and its shared_ptr's control block
         // (a vtable pointer, two counts, the pointer).
         (native_ ? static_cast<int64_t>(sizeof(NativeTape)) + 24 + 2 * kAllocationOverhead : 0);
}

int64_t Tape::code_bytes() const {
  return native_ ? static_cast<int64_t>(native_->mapped_bytes()) : 0;
}

}  // namespace tether
