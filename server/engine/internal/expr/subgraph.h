// A copy of the part of an expression graph that some roots need, kept
// after the graph is freed: the compiled model holds one for the ENCLOSED
// certificate's Taylor-mode evaluation of g (certificate/taylor.h), so the
// evaluators never reach back into the compiler's graph.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <span>
#include <vector>

#include "engine/internal/expr/expression.h"

namespace tether::expr {

// The nodes one set of roots needs, in topological order, with operand
// indices into `nodes` (the graph is not kept after compilation).
struct Subgraph {
  struct Node {
    Op op;
    int32_t a = -1, b = -1;  // operand nodes
    int32_t var = -1;        // kVar: the tape variable ([t, q, v, u] layout)
    double value = 0;        // kConst
  };
  std::vector<Node> nodes;
  std::vector<int32_t> roots;     // one per output
  std::vector<int32_t> var_list;  // the distinct variables used, ascending

  // Heap bytes held (base/heap_bytes.h).
  int64_t heap_bytes() const;

  // Linear in the nodes the roots need.
  static Subgraph Build(const Graph& graph, std::span<const NodeId> roots);
};

}  // namespace tether::expr
