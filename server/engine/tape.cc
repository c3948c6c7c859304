#include "engine/tape.h"

#include <cassert>
#include <cmath>
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
    if (!free_slots.empty()) {
      out = free_slots.back();
      free_slots.pop_back();
    } else {
      out = next_slot++;
    }
    slot[id] = out;
    ins.out = out;
    tape.code_.push_back(ins);
    ++index;
  }
  tape.num_slots_ = next_slot;
  for (NodeId o : outputs) tape.output_slots_.push_back(slot.at(o));
  return tape;
}

void Tape::InitWork(double* work) const {
  for (const auto& [s, value] : constants_) work[s] = value;
}

void Tape::Eval(double* w, double* out) const {
  for (const Instruction& ins : code_) {
    const double x = w[ins.a];
    double r;
    switch (ins.code) {
      case Code::kNeg: r = -x; break;
      case Code::kSin: r = std::sin(x); break;
      case Code::kCos: r = std::cos(x); break;
      case Code::kTan: r = std::tan(x); break;
      case Code::kAsin: r = std::asin(x); break;
      case Code::kAcos: r = std::acos(x); break;
      case Code::kAtan: r = std::atan(x); break;
      case Code::kSinh: r = std::sinh(x); break;
      case Code::kCosh: r = std::cosh(x); break;
      case Code::kTanh: r = std::tanh(x); break;
      case Code::kExp: r = std::exp(x); break;
      case Code::kLog: r = std::log(x); break;
      case Code::kSqrt: r = std::sqrt(x); break;
      case Code::kAbs: r = std::fabs(x); break;
      case Code::kSign: r = x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); break;
      case Code::kStep: r = x > 0 ? 1.0 : 0.0; break;
      case Code::kSquare: r = x * x; break;
      case Code::kCube: r = x * x * x; break;
      case Code::kRecip: r = 1.0 / x; break;
      case Code::kPowInt: r = PowInt(x, ins.b); break;
      case Code::kAdd: r = x + w[ins.b]; break;
      case Code::kSub: r = x - w[ins.b]; break;
      case Code::kMul: r = x * w[ins.b]; break;
      case Code::kDiv: r = x / w[ins.b]; break;
      case Code::kPow: r = std::pow(x, w[ins.b]); break;
      case Code::kAtan2: r = std::atan2(x, w[ins.b]); break;
      case Code::kMin: r = std::fmin(x, w[ins.b]); break;
      case Code::kMax: r = std::fmax(x, w[ins.b]); break;
      default: r = 0; break;
    }
    w[ins.out] = r;
  }
  const size_t n = output_slots_.size();
  for (size_t k = 0; k < n; ++k) out[k] = w[output_slots_[k]];
}

}  // namespace tether
