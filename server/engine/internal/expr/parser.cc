#include "engine/internal/expr/parser.h"

#include "engine/status.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <string>
#include <vector>

namespace tether::expr {
namespace {

// The operations users call by name (Syntax::kFunction), in table order;
// pow is also spelled '^' and the operators are the grammar's.
const OperationInfo* FindFunction(std::string_view name) {
  for (const OperationInfo& f : kOperationInfo) {
    if (f.syntax == Syntax::kFunction && name == f.spelling) return &f;
  }
  return nullptr;
}

// The Op of a kFunction entry of kOperationInfo.
Op OpOf(const OperationInfo* f) { return static_cast<Op>(f - kOperationInfo); }

std::string FunctionList() {
  std::string out;
  for (const OperationInfo& f : kOperationInfo) {
    if (f.syntax != Syntax::kFunction) continue;
    if (!out.empty()) out += ", ";
    out += f.spelling;
  }
  return out;
}

template <typename Map>
std::string Names(const Map& map) {
  std::string out;
  for (const auto& [name, unused] : map) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// "system.definitions[i]", the field of a definition, for messages.
std::string DefinitionField(int index) {
  return "system.definitions[" + std::to_string(index) + "]";
}

// The names of the definitions an expression may use (those before it, in
// order), the first few: O(1) whatever the number of definitions.
std::string DefinitionNames(const Scope& scope) {
  constexpr int kListed = 20;
  const int visible = scope.definitions ? std::min(scope.visible_definitions,
                                                   static_cast<int>(scope.definitions->size()))
                                        : 0;
  std::string out;
  for (int i = 0; i < visible && i < kListed; ++i) {
    if (!out.empty()) out += ", ";
    out += (*scope.definitions)[static_cast<size_t>(i)].name;
  }
  if (visible > kListed) out += ", ... (" + std::to_string(visible) + " in all)";
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, const Scope& scope, Graph* graph, Uses* uses)
      : text_(text), scope_(scope), graph_(graph), uses_(uses ? uses : &own_uses_) {}

  std::optional<NodeId> Run(ParseError* error) {
    SkipSpace();
    if (pos_ >= text_.size()) {
      Fail("expected an expression, found nothing");
    } else {
      std::optional<NodeId> root = Expr();
      if (root && !failed_) {
        SkipSpace();
        if (pos_ < text_.size()) {
          Fail("expected an operator or the end of the expression, found " + Describe());
        } else {
          return root;
        }
      }
    }
    *error = error_;
    return std::nullopt;
  }

 private:
  // Each returns nullopt after recording the first error.
  std::optional<NodeId> Expr() {
    std::optional<NodeId> left = Term();
    while (left) {
      SkipSpace();
      char c = Peek();
      if (c != '+' && c != '-') break;
      ++pos_;
      std::optional<NodeId> right = Term();
      if (!right) return std::nullopt;
      left = c == '+' ? graph_->Add(*left, *right) : graph_->Sub(*left, *right);
    }
    return left;
  }

  std::optional<NodeId> Term() {
    std::optional<NodeId> left = Unary();
    while (left) {
      SkipSpace();
      char c = Peek();
      if (c != '*' && c != '/') break;
      ++pos_;
      std::optional<NodeId> right = Unary();
      if (!right) return std::nullopt;
      left = c == '*' ? graph_->Mul(*left, *right) : graph_->Div(*left, *right);
    }
    return left;
  }

  std::optional<NodeId> Unary() {
    SkipSpace();
    char c = Peek();
    if (c == '-' || c == '+') {
      ++pos_;
      if (!Enter()) return std::nullopt;
      std::optional<NodeId> operand = Unary();
      Leave();
      if (!operand) return std::nullopt;
      return c == '-' ? graph_->Neg(*operand) : *operand;
    }
    return Power();
  }

  std::optional<NodeId> Power() {
    std::optional<NodeId> base = Primary();
    if (!base) return std::nullopt;
    SkipSpace();
    if (Peek() != '^') return base;
    ++pos_;
    if (!Enter()) return std::nullopt;
    std::optional<NodeId> exponent = Unary();  // right associative
    Leave();
    if (!exponent) return std::nullopt;
    return graph_->Binary(Op::kPow, *base, *exponent);
  }

  std::optional<NodeId> Primary() {
    SkipSpace();
    if (pos_ >= text_.size()) {
      Fail("expected a number, a name or '(', found the end of the expression");
      return std::nullopt;
    }
    char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return Name();
    if (c == '(') {
      ++pos_;
      if (!Enter()) return std::nullopt;
      std::optional<NodeId> inner = Expr();
      Leave();
      if (!inner) return std::nullopt;
      if (!Expect(')')) return std::nullopt;
      return inner;
    }
    Fail("expected a number, a name or '(', found " + Describe());
    return std::nullopt;
  }

  std::optional<NodeId> Number() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t save = pos_;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      } else {
        pos_ = save;  // not an exponent: "2e" is 2 followed by a name
      }
    }
    std::string literal(text_.substr(start, pos_ - start));
    char* end = nullptr;
    errno = 0;
    double value = std::strtod(literal.c_str(), &end);
    if (end != literal.c_str() + literal.size() || literal == ".") {
      FailAt(start, "malformed number " + QuoteForMessage(literal));
      return std::nullopt;
    }
    if (!std::isfinite(value) || (errno == ERANGE && std::fabs(value) > 1)) {
      FailAt(start,
             "number " + QuoteForMessage(literal) + " is out of range; expected a finite double");
      return std::nullopt;
    }
    return graph_->Const(value);
  }

  std::optional<NodeId> Name() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    std::string_view name = text_.substr(start, pos_ - start);
    SkipSpace();
    if (Peek() == '(') return Call(name, start);

    if (auto it = scope_.coordinates.find(name); it != scope_.coordinates.end()) {
      return graph_->Var(it->second);
    }
    if (auto it = scope_.parameters.find(name); it != scope_.parameters.end()) {
      return graph_->Const(it->second);
    }
    if (auto it = scope_.inputs.find(name); it != scope_.inputs.end()) {
      if (!scope_.allow_inputs) {
        FailAt(start,
               "input " + QuoteForMessage(name) + " is not allowed here: " + scope_.restriction);
        return std::nullopt;
      }
      if (uses_->input.empty()) uses_->input = name;
      return graph_->Var(it->second);
    }
    if (name == "t") return graph_->Var(scope_.time_var);
    if (name == "pi") return graph_->Const(std::numbers::pi);
    if (auto it = scope_.definition_names.find(name); it != scope_.definition_names.end()) {
      const Definition* d = UseDefinition(it->second, name, start);
      if (!d) return std::nullopt;
      return d->node;
    }
    if (FindFunction(name) || name == "der") {
      FailAt(start,
             "function " + QuoteForMessage(name) + " needs arguments: expected '(' after it");
      return std::nullopt;
    }
    std::string expected = "a coordinate (" + Names(scope_.coordinates) + ")";
    if (!scope_.parameters.empty()) expected += ", a parameter (" + Names(scope_.parameters) + ")";
    if (!scope_.inputs.empty() && scope_.allow_inputs) {
      expected += ", an input (" + Names(scope_.inputs) + ")";
    }
    if (const std::string defined = DefinitionNames(scope_); !defined.empty()) {
      expected += ", a definition (" + defined + ")";
    }
    expected += ", t or pi";
    FailAt(start, "unknown name " + QuoteForMessage(name) + "; expected " + expected);
    return std::nullopt;
  }

  std::optional<NodeId> Call(std::string_view name, size_t start) {
    ++pos_;  // '('
    if (name == "der") {
      SkipSpace();
      size_t arg_start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      std::string_view arg = text_.substr(arg_start, pos_ - arg_start);
      auto it = scope_.velocities.find(arg);
      auto def = scope_.definition_names.find(arg);
      if (arg.empty() || (it == scope_.velocities.end() && def == scope_.definition_names.end())) {
        std::string expected = Names(scope_.coordinates);
        if (const std::string defined = DefinitionNames(scope_); !defined.empty()) {
          expected += "; or a definition: " + defined;
        }
        FailAt(arg_start, "der() expects a coordinate name (" + expected + "), found " +
                              (arg.empty() ? Describe() : QuoteForMessage(arg)));
        return std::nullopt;
      }
      if (!scope_.allow_velocities) {
        FailAt(start, "der(" + std::string(arg) + ") is not allowed here: " + scope_.restriction);
        return std::nullopt;
      }
      if (it == scope_.velocities.end()) {
        std::optional<NodeId> derivative = DefinitionTimeDerivative(def->second, arg, arg_start);
        if (!derivative || !Expect(')')) return std::nullopt;
        return derivative;
      }
      if (!Expect(')')) return std::nullopt;
      if (uses_->velocity.empty()) uses_->velocity = "der(" + std::string(arg) + ")";
      return graph_->Var(it->second);
    }
    const OperationInfo* f = FindFunction(name);
    if (!f) {
      FailAt(start, "unknown function " + QuoteForMessage(name) + "; expected one of " +
                        FunctionList() + " or der");
      return std::nullopt;
    }
    if (!Enter()) return std::nullopt;
    std::vector<NodeId> args;
    SkipSpace();
    if (Peek() != ')') {
      while (true) {
        std::optional<NodeId> arg = Expr();
        if (!arg) {
          Leave();
          return std::nullopt;
        }
        args.push_back(*arg);
        SkipSpace();
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        break;
      }
    }
    Leave();
    if (!Expect(')')) return std::nullopt;
    if (static_cast<int>(args.size()) != f->arity) {
      FailAt(start, std::string(f->spelling) + "() expects " + std::to_string(f->arity) +
                        (f->arity == 1 ? " argument" : " arguments") + ", found " +
                        std::to_string(args.size()));
      return std::nullopt;
    }
    if (f->arity == 1) return graph_->Unary(OpOf(f), args[0]);
    return graph_->Binary(OpOf(f), args[0], args[1]);
  }

  // The definition `index` named at `start`, after the checks of its use:
  // defined before (a definition may use only those before it), parsed
  // without error, and using nothing this expression may not. Records the
  // use. nullptr after recording an error.
  const Definition* UseDefinition(int index, std::string_view name, size_t start) {
    const std::string quoted = "definition " + QuoteForMessage(name);
    if (index >= scope_.visible_definitions) {
      FailAt(start, index == scope_.visible_definitions
                        ? quoted + " refers to itself; expected an expression of the names " +
                              "before it (a definition may use only the definitions before it)"
                        : quoted + " is used before it is defined (it is " +
                              DefinitionField(index) +
                              "); a definition may use only the definitions before it");
      return nullptr;
    }
    const Definition& d = (*scope_.definitions)[static_cast<size_t>(index)];
    if (d.node < 0) {
      if (!failed_) error_.follows_from_definition = true;
      FailAt(start, quoted + " cannot be used: its expression (" + DefinitionField(index) +
                        ".expression) has an error");
      return nullptr;
    }
    if (!scope_.allow_velocities && !d.velocity.empty()) {
      FailAt(start,
             quoted + " uses " + d.velocity + ", which is not allowed here: " + scope_.restriction);
      return nullptr;
    }
    if (!scope_.allow_inputs && !d.input.empty()) {
      FailAt(start, quoted + " uses input " + QuoteForMessage(d.input) +
                        ", which is not allowed here: " + scope_.restriction);
      return nullptr;
    }
    uses_->definitions.push_back(index);
    if (uses_->velocity.empty()) uses_->velocity = d.velocity;
    if (uses_->input.empty()) uses_->input = d.input;
    return &d;
  }

  // der(name) of definition `index`: sum_j d(name)/dq_j v_j + d(name)/dt
  // (the constraint jets' e' = G v + g_t), built once per definition. Only
  // for definitions of coordinates, parameters and t: the time derivative
  // of a velocity needs the acceleration, and an input's is not defined.
  std::optional<NodeId> DefinitionTimeDerivative(int index, std::string_view name, size_t start) {
    const Definition* used = UseDefinition(index, name, start);
    if (!used) return std::nullopt;
    Definition& d = (*scope_.definitions)[static_cast<size_t>(index)];
    if (!d.velocity.empty() || !d.input.empty()) {
      FailAt(start, "der(" + std::string(name) + ") is not defined: definition " +
                        QuoteForMessage(name) + " uses " +
                        (d.velocity.empty() ? "input " + QuoteForMessage(d.input) : d.velocity) +
                        "; expected a definition of coordinates, parameters and t only (its "
                        "time derivative would need " +
                        (d.velocity.empty() ? "the input's" : "the accelerations") + ")");
      return std::nullopt;
    }
    if (uses_->velocity.empty()) uses_->velocity = "der(" + std::string(name) + ")";
    if (d.time_derivative >= 0) return d.time_derivative;
    const std::vector<std::pair<int32_t, int32_t>>& qv = CoordinateVars();
    NodeId sum = scope_.time_var >= 0 ? graph_->Diff(d.node, scope_.time_var) : graph_->Const(0);
    // Only the coordinates within the node's variable range (Node::var_lo,
    // var_hi) can matter. (Copies: the loop grows the graph, which moves
    // its nodes.)
    const int32_t lo = graph_->node(d.node).var_lo, hi = graph_->node(d.node).var_hi;
    for (auto it = std::lower_bound(qv.begin(), qv.end(), std::pair{lo, INT32_MIN});
         it != qv.end() && it->first <= hi; ++it) {
      const auto [q, v] = *it;
      if (!graph_->MayDependOn(d.node, q)) continue;
      sum = graph_->Add(sum, graph_->Mul(graph_->Diff(d.node, q), graph_->Var(v)));
    }
    // A stopped graph (a compile limit) returns placeholders: not cached.
    if (!graph_->overflowed()) d.time_derivative = sum;
    return sum;
  }

  // Scope::coordinate_vars, or the same derived once from the maps.
  const std::vector<std::pair<int32_t, int32_t>>& CoordinateVars() {
    if (!scope_.coordinate_vars.empty() || scope_.coordinates.empty()) {
      return scope_.coordinate_vars;
    }
    if (own_coordinate_vars_.empty()) {
      for (const auto& [coordinate, q] : scope_.coordinates) {
        if (auto v = scope_.velocities.find(coordinate); v != scope_.velocities.end()) {
          own_coordinate_vars_.emplace_back(q, v->second);
        }
      }
      std::sort(own_coordinate_vars_.begin(), own_coordinate_vars_.end());
    }
    return own_coordinate_vars_;
  }

  bool Enter() {
    if (++depth_ > kMaxNesting) {
      Fail("expression nests deeper than " + std::to_string(kMaxNesting) + " levels");
      return false;
    }
    return true;
  }
  void Leave() { --depth_; }

  bool Expect(char c) {
    SkipSpace();
    if (Peek() == c) {
      ++pos_;
      return true;
    }
    Fail(std::string("expected '") + c + "', found " + Describe());
    return false;
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  std::string Describe() const {
    if (pos_ >= text_.size()) return "the end of the expression";
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (std::isprint(c)) return std::string("'") + text_[pos_] + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }
  void Fail(std::string message) { FailAt(pos_, std::move(message)); }
  void FailAt(size_t pos, std::string message) {
    if (failed_) return;
    failed_ = true;
    error_.column = static_cast<int>(pos) + 1;
    error_.message = std::move(message);
  }

  std::string_view text_;
  const Scope& scope_;
  Graph* graph_;
  Uses own_uses_;  // when the caller asks for none
  std::vector<std::pair<int32_t, int32_t>> own_coordinate_vars_;
  Uses* uses_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool failed_ = false;
  ParseError error_;
};

}  // namespace

bool IsReservedName(std::string_view name) {
  return name == "t" || name == "pi" || name == "der" || FindFunction(name) != nullptr;
}

bool IsIdentifier(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::optional<NodeId> Parse(std::string_view text, const Scope& scope, Graph* graph,
                            ParseError* error, Uses* uses) {
  if (text.size() > static_cast<size_t>(kMaxExpressionLength)) {
    error->column = kMaxExpressionLength + 1;
    error->message = "expression is " + std::to_string(text.size()) + " characters long; at most " +
                     std::to_string(kMaxExpressionLength) + " are accepted";
    return std::nullopt;
  }
  Parser parser(text, scope, graph, uses);
  std::optional<NodeId> root = parser.Run(error);
  if (root && graph->overflowed()) {
    // The depth (a property of the description, INVALID_ARGUMENT); the
    // other limits are the compiler's RESOURCE_EXHAUSTED (Compiler::Stopped).
    error->column = 1;
    error->message = graph->stop() == Stop::kDepth
                         ? "expression nests deeper than " +
                               std::to_string(graph->limits().max_depth) +
                               " operations (the limit on an expression's depth)"
                         : "expression is too large (more than " +
                               std::to_string(graph->limits().max_nodes) + " nodes)";
    return std::nullopt;
  }
  return root;
}

}  // namespace tether::expr
