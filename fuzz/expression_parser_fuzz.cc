// Fuzz target: the expression parser and symbolic differentiation
// (engine/internal/expr/parser.h, expression.h).
//
// The input is one expression over a fixed scope (t, coordinates x and y,
// der(x), der(y), input u, parameters k and l). It either parses or fails
// with a column inside the text and a message. What parses is differentiated
// with respect to every variable, and each first derivative again with
// respect to every variable (the engine builds G and H this way): every
// rewrite must terminate (abs(abs(x)) once recursed forever), and every node
// must be created after its operands (the tape relies on this order).
// The root and first derivatives are evaluated at a point (no UB in the
// arithmetic).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/internal/expr/expression.h"
#include "engine/internal/expr/parser.h"
#include "fuzz_check.h"

namespace {

using tether::expr::Graph;
using tether::expr::NodeId;

// Variables: 0 = t, 1 = x, 2 = y, 3 = der(x), 4 = der(y), 5 = u.
constexpr int32_t kVariables = 6;

tether::expr::Scope FuzzScope() {
  tether::expr::Scope s;
  s.time_var = 0;
  s.coordinates = {{"x", 1}, {"y", 2}};
  s.velocities = {{"x", 3}, {"y", 4}};
  s.inputs = {{"u", 5}};
  s.parameters = {{"k", 2.5}, {"l", -0.0}};
  return s;
}

// Nodes [from, graph.size()) refer only to earlier nodes.
void CheckTopological(const Graph& graph, size_t from) {
  for (size_t id = from; id < graph.size(); ++id) {
    const tether::expr::Node& n = graph.node(static_cast<NodeId>(id));
    TETHER_FUZZ_CHECK(n.a < static_cast<NodeId>(id) && n.b < static_cast<NodeId>(id),
                      "node %zu (%s) has operands %d, %d", id, tether::expr::OpName(n.op), n.a,
                      n.b);
  }
}

void CheckNode(const Graph& graph, NodeId id, const char* what) {
  TETHER_FUZZ_CHECK(id >= 0 && static_cast<size_t>(id) < graph.size(), "%s is node %d of %zu", what,
                    id, graph.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kFuzzMaxInputBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const tether::expr::Scope scope = FuzzScope();
  // Smaller limits than the engine's, so that an input that blows up (x^x
  // differentiated twice grows quickly) still runs in milliseconds; the
  // limits themselves are part of what is tested.
  Graph graph(tether::expr::Limits{.max_nodes = 200'000, .max_depth = 2'000});
  tether::expr::ParseError error;
  const std::optional<NodeId> root = tether::expr::Parse(text, scope, &graph, &error);
  if (!root) {
    TETHER_FUZZ_CHECK(error.column >= 1 && static_cast<size_t>(error.column) <= size + 1,
                      "error column %d in a text of %zu bytes", error.column, size);
    TETHER_FUZZ_CHECK(!error.message.empty(), "a parse error without a message");
    return 0;
  }
  CheckNode(graph, *root, "the root");
  CheckTopological(graph, 0);
  std::vector<NodeId> first(kVariables);
  for (int32_t i = 0; i < kVariables && !graph.overflowed(); ++i) {
    const size_t before = graph.size();
    first[i] = graph.Diff(*root, i);
    CheckNode(graph, first[i], "a first derivative");
    CheckTopological(graph, before);
  }
  // The reference evaluator (recursive; depth is bounded by the limits) at a
  // point, for the arithmetic alone: any value, NaN included, is fine.
  if (!graph.overflowed()) {
    const std::vector<double> point = {0.25, 0.5, -1.5, 2.0, 0.0, -3.0};
    graph.Evaluate(*root, point);
    for (const NodeId d : first) graph.Evaluate(d, point);
  }
  for (int32_t i = 0; i < kVariables && !graph.overflowed(); ++i) {
    for (int32_t j = 0; j < kVariables && !graph.overflowed(); ++j) {
      const size_t before = graph.size();
      CheckNode(graph, graph.Diff(first[i], j), "a second derivative");
      CheckTopological(graph, before);
    }
  }
  TETHER_FUZZ_CHECK(graph.size() <= static_cast<size_t>(graph.limits().max_nodes),
                    "%zu nodes with a limit of %lld", graph.size(),
                    static_cast<long long>(graph.limits().max_nodes));
  return 0;
}
