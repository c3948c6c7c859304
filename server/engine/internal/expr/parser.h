// Parser for Tether's expression language, straight into an expr::Graph.
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := ('-' | '+') unary | power
//   power   := primary ('^' unary)?          right associative: -x^2 = -(x^2)
//   primary := number | name | name '(' args ')' | '(' expr ')'
//
// Names resolve to coordinates (q), der(coordinate) (v), inputs, parameters
// (folded to constants), t and pi.
#pragma once

#include "engine/internal/base/internal.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "engine/internal/expr/expression.h"

namespace tether::expr {

// What names mean, and which kinds an expression may use.
struct Scope {
  // name -> variable index
  std::map<std::string, int32_t, std::less<>> coordinates;  // q_i
  std::map<std::string, int32_t, std::less<>> velocities;   // der(name) -> v_i
  std::map<std::string, int32_t, std::less<>> inputs;       // u_k
  std::map<std::string, double, std::less<>> parameters;
  int32_t time_var = -1;
  bool allow_velocities = true;
  bool allow_inputs = true;
  // Why velocities or inputs are not allowed here (for messages).
  std::string restriction;
};

struct ParseError {
  int column = 0;  // 1-based
  std::string message;
};

inline constexpr int kMaxExpressionLength = 100'000;
inline constexpr int kMaxNesting = 200;

// Parses `text` in `scope`; returns the root node or the first error.
// Never throws, never recurses deeper than kMaxNesting.
std::optional<NodeId> Parse(std::string_view text, const Scope& scope, Graph* graph,
                            ParseError* error);

// True for names that identifiers may not take (t, pi, der, functions).
bool IsReservedName(std::string_view name);
// Letter or '_' followed by letters, digits, '_'.
bool IsIdentifier(std::string_view name);

}  // namespace tether::expr
