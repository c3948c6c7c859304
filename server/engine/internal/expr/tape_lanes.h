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
// scalar order, so every lane gets the bits Tape::Eval gives its instance.
//
// A switch, not Tape::Eval's direct threading: one dispatch is shared by
// the lanes, and every result is stored (Tape::kNoStore only marks a store
// nothing reads, so storing it changes nothing).
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <vector>

#include "engine/internal/base/lanes.h"
#include "engine/internal/expr/operations.h"
#include "engine/internal/expr/tape.h"

namespace tether::lanes {

// Graph operation `op` over lanes: lane-wise for the correctly rounded IEEE
// operations, else the scalar function per lane.
template <expr::Op op, class Arch>
TETHER_INLINE Lanes<Arch> LaneOp(const Lanes<Arch>& x, const Lanes<Arch>& y) {
  using expr::Op;
  if constexpr (op == Op::kNeg) {
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

// work[0, num_vars) must hold the variables; computes the outputs into
// work[output_base(), output_base() + num_outputs()).
template <class Arch>
TETHER_INLINE void EvalLanes(const Tape& tape, Lanes<Arch>* w) {
  using V = Lanes<Arch>;
  using Code = Tape::Code;
  using expr::Op;
  V acc(0.0);
  for (const Tape::Instruction* ip = tape.code().data();; ++ip) {
    const int raw = static_cast<uint8_t>(ip->code);
    const bool from_acc = (raw / Tape::kFromAcc) % 2 == 1;
    const Code code = static_cast<Code>(raw % Tape::kFromAcc);
    switch (code) {
#define TETHER_LANES_LOAD_1 const V x = from_acc ? acc : w[ip->a];
#define TETHER_LANES_LOAD_2 \
  TETHER_LANES_LOAD_1       \
  const V y = w[ip->b];
#define TETHER_LANES_LOAD_3 \
  TETHER_LANES_LOAD_2       \
  const V z = w[ip->c];
#define TETHER_LANES_SECOND_1 x
#define TETHER_LANES_SECOND_2 y
#define TETHER_LANES_GRAPH_CASE(name, spelling, arity, ...)                           \
  case Code::name: {                                                                  \
    TETHER_LANES_LOAD_##arity acc = LaneOp<Op::name>(x, TETHER_LANES_SECOND_##arity); \
    w[ip->out] = acc;                                                                 \
    break;                                                                            \
  }
#define TETHER_LANES_TAPE_CASE(name, operands, value) \
  case Code::name: {                                  \
    TETHER_LANES_LOAD_##operands acc = (value);       \
    w[ip->out] = acc;                                 \
    break;                                            \
  }
      TETHER_EXPR_OPERATIONS(TETHER_LANES_GRAPH_CASE)
      TETHER_TAPE_OPERATIONS(TETHER_LANES_TAPE_CASE)
#undef TETHER_LANES_TAPE_CASE
#undef TETHER_LANES_GRAPH_CASE
#undef TETHER_LANES_SECOND_2
#undef TETHER_LANES_SECOND_1
#undef TETHER_LANES_LOAD_3
#undef TETHER_LANES_LOAD_2
#undef TETHER_LANES_LOAD_1
      case Code::kEnd: return;
    }
  }
}

}  // namespace tether::lanes
