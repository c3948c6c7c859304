// Parser for Tether's expression language, straight into an expr::Graph.
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := ('-' | '+') unary | power
//   power   := primary ('^' unary)?          right associative: -x^2 = -(x^2)
//   primary := number | name | name '(' args ')' | '(' expr ')'
//
// Names resolve to coordinates (q), der(coordinate) (v), inputs, parameters
// (folded to constants), t, pi and definitions (the node their expression
// was parsed into: shared, not expanded), der(definition) to the
// definition's time derivative.
#pragma once

#include "engine/internal/base/internal.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/internal/expr/expression.h"

namespace tether::expr {

// A named expression (SystemSpec.definitions): what its name stands for and
// what it uses, directly or through the definitions it uses, so that a use
// where der() or inputs are not allowed is refused naming both.
struct Definition {
  int index = 0;     // position in system.definitions
  NodeId node = -1;  // its expression; -1 when it failed to parse
  // The first der(...) and the first input it uses ("" for none).
  std::string velocity;
  std::string input;
  // der(name): sum_j d(node)/dq_j v_j + d(node)/dt, built on first use.
  NodeId time_derivative = -1;
};

// What a parse used (Parse's optional output).
struct Uses {
  std::string velocity;          // the first der(...) used, directly or through a definition
  std::string input;             // the first input used, likewise
  std::vector<int> definitions;  // indices of the definitions named, in order of use
};

// What names mean, and which kinds an expression may use.
struct Scope {
  // name -> variable index
  std::map<std::string, int32_t, std::less<>> coordinates;  // q_i
  std::map<std::string, int32_t, std::less<>> velocities;   // der(name) -> v_i
  std::map<std::string, int32_t, std::less<>> inputs;       // u_k
  std::map<std::string, double, std::less<>> parameters;
  int32_t time_var = -1;
  // name -> index into *definitions; only those with index < visible_definitions
  // may be used (a definition may use the ones before it).
  std::map<std::string, int, std::less<>> definition_names;
  std::vector<Definition>* definitions = nullptr;  // the parser fills time_derivative
  int visible_definitions = 0;
  bool allow_velocities = true;
  bool allow_inputs = true;
  // Why velocities or inputs are not allowed here (for messages).
  std::string restriction;
};

struct ParseError {
  int column = 0;  // 1-based
  std::string message;
  // The expression names a definition whose own expression has an error:
  // a consequence of that error, which its own field reports.
  bool follows_from_definition = false;
};

inline constexpr int kMaxExpressionLength = 100'000;
inline constexpr int kMaxNesting = 200;

// Parses `text` in `scope`; returns the root node or the first error.
// Never throws, never recurses deeper than kMaxNesting. `uses`, when given,
// receives what the expression used.
std::optional<NodeId> Parse(std::string_view text, const Scope& scope, Graph* graph,
                            ParseError* error, Uses* uses = nullptr);

// True for names that identifiers may not take (t, pi, der, functions).
bool IsReservedName(std::string_view name);
// Letter or '_' followed by letters, digits, '_'.
bool IsIdentifier(std::string_view name);

}  // namespace tether::expr
