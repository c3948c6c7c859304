// The expression operations, each described once (an X-macro in the style
// of MuJoCo's MJOPTION_FIELDS). Everything that lists operations is
// generated from TETHER_EXPR_OPERATIONS: the Op enum, OpName, IsUnary,
// IsBinary, IsCommutative, Apply and the per-operation scalar functions
// (here), Graph::Diff's rules (expression.cc), the parser's function list
// and its "expected one of ..." message (parser.cc), and the tape's codes,
// handlers and operand counts (tape.h, tape.cc).
//
// A row is X(name, spelling, arity, syntax, commutative, smooth, value, derivative):
//   name         the enumerator (Op::name; the tape's Tape::Code::name).
//   spelling     what users write for a function, and OpName otherwise.
//   arity        1 or 2: the operands read, a and, for 2, b.
//   syntax       kFunction: callable by users as spelling(args), in the
//                order of the rows in messages; kOperator: written with the
//                grammar's symbols (- + * /, and pow's '^' besides pow());
//                kInternal: made only by differentiation (sign, step).
//   commutative  op(a, b) and op(b, a) have the same bits for all a, b
//                (a NaN's payload aside); the graph then puts the operands
//                in canonical order and the tape may swap them. min and max
//                are not: fmin(0, -0) and fmin(-0, 0) may differ in sign,
//                so their operands stay in the order written.
//   smooth       kSmooth: infinitely differentiable where defined; kKink:
//                continuous with a jump in the first derivative (abs, min,
//                max); kJump: the value jumps (sign, step, atan2 across its
//                branch cut x < 0, y = 0). Validation warns when an
//                expression whose derivatives enter the KKT system uses a
//                kKink or kJump operation (compiler_checks.cc, NonSmoothMasks).
//   value        the scalar value, an expression in the doubles a and b; it
//                becomes Scalar<Op::name>, which Apply, the reference
//                evaluator and the tape's handler for the code all call.
//   derivative   d(op)/d(var), an expression evaluated inside Graph::Diff
//                in terms of the operand nodes a and b, their derivatives da
//                and db (db only for arity 2), the node itself f, and
//                Graph's builders (Const, Unary, Binary, Add, Sub, Mul, Div,
//                Neg, IsConst, node). It must build only from operations in
//                this table; the derivative of every row is checked against
//                finite differences by tests/expression_test.cc.
//
// Adding an operation (say erf) is one row here; a kFunction row is then
// parsed, reserved as a name, listed in messages, differentiated, compiled
// onto the tape and covered by the table-driven tests. The row order is
// the parser's message order; the enum's numeric values carry no meaning
// outside this process.
#pragma once

#include "engine/internal/base/internal.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>

// clang-format off
#define TETHER_EXPR_OPERATIONS(X)                                                            \
  X(kNeg,   "neg",   1, kOperator, false, kSmooth, -a,                Neg(da))                        \
  X(kAdd,   "add",   2, kOperator, true, kSmooth,  a + b,             Add(da, db))                    \
  X(kSub,   "sub",   2, kOperator, false, kSmooth, a - b,             Sub(da, db))                    \
  X(kMul,   "mul",   2, kOperator, true, kSmooth,  a * b,             Add(Mul(da, b), Mul(a, db)))    \
  /* (da - (a/b) db) / b */                                                                  \
  X(kDiv,   "div",   2, kOperator, false, kSmooth, a / b,             Div(Sub(da, Mul(f, db)), b))    \
  X(kSin,   "sin",   1, kFunction, false, kSmooth, std::sin(a),       Mul(Unary(Op::kCos, a), da))    \
  X(kCos,   "cos",   1, kFunction, false, kSmooth, std::cos(a),       Neg(Mul(Unary(Op::kSin, a), da))) \
  /* (1 + tan^2) da */                                                                       \
  X(kTan,   "tan",   1, kFunction, false, kSmooth, std::tan(a),                                       \
    Mul(Add(Const(1), Binary(Op::kPow, f, Const(2))), da))                                   \
  /* da / sqrt(1 - a^2) */                                                                   \
  X(kAsin,  "asin",  1, kFunction, false, kSmooth, std::asin(a),                                      \
    Div(da, Unary(Op::kSqrt, Sub(Const(1), Binary(Op::kPow, a, Const(2))))))                 \
  X(kAcos,  "acos",  1, kFunction, false, kSmooth, std::acos(a),                                      \
    Neg(Div(da, Unary(Op::kSqrt, Sub(Const(1), Binary(Op::kPow, a, Const(2)))))))            \
  /* da / (1 + a^2) */                                                                       \
  X(kAtan,  "atan",  1, kFunction, false, kSmooth, std::atan(a),                                      \
    Div(da, Add(Const(1), Binary(Op::kPow, a, Const(2)))))                                   \
  /* atan2(y, x): (x dy - y dx) / (x^2 + y^2) */                                             \
  X(kAtan2, "atan2", 2, kFunction, false, kJump, std::atan2(a, b),                                  \
    Div(Sub(Mul(b, da), Mul(a, db)),                                                         \
        Add(Binary(Op::kPow, a, Const(2)), Binary(Op::kPow, b, Const(2)))))                  \
  X(kSinh,  "sinh",  1, kFunction, false, kSmooth, std::sinh(a),      Mul(Unary(Op::kCosh, a), da))   \
  X(kCosh,  "cosh",  1, kFunction, false, kSmooth, std::cosh(a),      Mul(Unary(Op::kSinh, a), da))   \
  /* (1 - tanh^2) da */                                                                      \
  X(kTanh,  "tanh",  1, kFunction, false, kSmooth, std::tanh(a),                                      \
    Mul(Sub(Const(1), Binary(Op::kPow, f, Const(2))), da))                                   \
  X(kExp,   "exp",   1, kFunction, false, kSmooth, std::exp(a),       Mul(f, da))                     \
  X(kLog,   "log",   1, kFunction, false, kSmooth, std::log(a),       Div(da, a))                     \
  X(kSqrt,  "sqrt",  1, kFunction, false, kSmooth, std::sqrt(a),      Div(da, Mul(Const(2), f)))      \
  X(kAbs,   "abs",   1, kFunction, false, kKink, std::fabs(a),      Mul(Unary(Op::kSign, a), da))   \
  /* constant exponent c: c a^(c-1) da; otherwise a^b (db log a + b da / a) */               \
  X(kPow,   "pow",   2, kFunction, false, kSmooth, std::pow(a, b),                                    \
    IsConst(b)                                                                               \
        ? Mul(Mul(Const(node(b).value), Binary(Op::kPow, a, Const(node(b).value - 1))), da)  \
        : Mul(f, Add(Mul(db, Unary(Op::kLog, a)), Div(Mul(b, da), a))))                      \
  /* a <= b ? da : db  ==  da + step(a - b) (db - da) */                                     \
  X(kMin,   "min",   2, kFunction, false, kKink, std::fmin(a, b),                                   \
    Add(da, Mul(Unary(Op::kStep, Sub(a, b)), Sub(db, da))))                                  \
  /* a >= b ? da : db  ==  da + step(b - a) (db - da) */                                     \
  X(kMax,   "max",   2, kFunction, false, kKink, std::fmax(a, b),                                   \
    Add(da, Mul(Unary(Op::kStep, Sub(b, a)), Sub(db, da))))                                  \
  /* -1, 0, 1 (the derivative of abs) */                                                     \
  X(kSign,  "sign",  1, kInternal, false, kJump, a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0), Const(0))      \
  /* a > 0 ? 1 : 0 (in the derivatives of min and max) */                                    \
  X(kStep,  "step",  1, kInternal, false, kJump, a > 0 ? 1.0 : 0.0, Const(0))
// clang-format on

namespace tether::expr {

enum class Op : uint8_t {
  kConst,  // value
  kVar,    // variable index in Node::var
#define TETHER_OP_ENUM(name, spelling, arity, syntax, commutative, smooth, value, derivative) name,
  TETHER_EXPR_OPERATIONS(TETHER_OP_ENUM)
#undef TETHER_OP_ENUM
};

// The leaves kConst and kVar come first; operations follow in row order.
inline constexpr int kFirstOperation = static_cast<int>(Op::kVar) + 1;
#define TETHER_OP_COUNT(name, spelling, arity, syntax, commutative, smooth, value, derivative) +1
inline constexpr int kNumOperations = 0 TETHER_EXPR_OPERATIONS(TETHER_OP_COUNT);
#undef TETHER_OP_COUNT

enum class Syntax : uint8_t { kLeaf, kOperator, kFunction, kInternal };
enum class Smoothness : uint8_t { kSmooth, kKink, kJump };

struct OperationInfo {
  const char* spelling;
  int arity;  // operands read: 0 (leaves), 1 (a) or 2 (a, b)
  Syntax syntax;
  bool commutative;
  Smoothness smooth;
};

// Indexed by Op.
// Kept by hand: one X-macro expansion a line.
// clang-format off
inline constexpr OperationInfo kOperationInfo[] = {
    {"const", 0, Syntax::kLeaf, false, Smoothness::kSmooth},
    {"var", 0, Syntax::kLeaf, false, Smoothness::kSmooth},
#define TETHER_OP_INFO(name, spelling, arity, syntax, commutative, smooth, value, derivative) \
  {spelling, arity, Syntax::syntax, commutative, Smoothness::smooth},
    TETHER_EXPR_OPERATIONS(TETHER_OP_INFO)
#undef TETHER_OP_INFO
};
// clang-format on
static_assert(std::size(kOperationInfo) == static_cast<size_t>(kFirstOperation + kNumOperations));

constexpr const OperationInfo& Info(Op op) { return kOperationInfo[static_cast<size_t>(op)]; }
constexpr int Arity(Op op) { return Info(op).arity; }
constexpr bool IsCommutative(Op op) { return Info(op).commutative; }
constexpr bool IsSmooth(Op op) { return Info(op).smooth == Smoothness::kSmooth; }

// The scalar value of each operation (b is ignored by unary ones). Always
// inlined: the tape's handlers call these in its hot loop.
template <Op op>
double Scalar(double a, double b);
#define TETHER_OP_SCALAR(name, spelling, arity, syntax, commutative, smooth, value, derivative) \
  template <>                                                                                   \
  [[gnu::always_inline]] inline double Scalar<Op::name>(double a, [[maybe_unused]] double b) {  \
    return value;                                                                               \
  }
TETHER_EXPR_OPERATIONS(TETHER_OP_SCALAR)
#undef TETHER_OP_SCALAR

}  // namespace tether::expr
