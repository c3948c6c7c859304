#include "engine/internal/expr/subgraph.h"

#include <algorithm>

#include "engine/internal/base/heap_bytes.h"

namespace tether::expr {

Subgraph Subgraph::Build(const Graph& graph, std::span<const NodeId> roots) {
  Subgraph p;
  // Mark what the roots need (ids are a topological order: operands first).
  NodeId last = -1;
  for (NodeId r : roots) last = std::max(last, r);
  std::vector<int32_t> index(static_cast<size_t>(last + 1), -1);
  std::vector<char> need(static_cast<size_t>(last + 1), 0);
  for (NodeId r : roots) need[static_cast<size_t>(r)] = 1;
  for (NodeId id = last; id >= 0; --id) {
    if (!need[static_cast<size_t>(id)]) continue;
    const expr::Node& n = graph.node(id);
    if (n.a >= 0) need[static_cast<size_t>(n.a)] = 1;
    if (n.b >= 0) need[static_cast<size_t>(n.b)] = 1;
  }
  std::vector<char> var_seen;
  for (NodeId id = 0; id <= last; ++id) {
    if (!need[static_cast<size_t>(id)]) continue;
    const expr::Node& n = graph.node(id);
    Node out{n.op};
    if (n.op == Op::kConst) out.value = n.value;
    if (n.op == Op::kVar) {
      out.var = n.var;
      if (static_cast<size_t>(n.var) >= var_seen.size())
        var_seen.resize(static_cast<size_t>(n.var) + 1);
      var_seen[static_cast<size_t>(n.var)] = 1;
    }
    if (n.a >= 0) out.a = index[static_cast<size_t>(n.a)];
    if (n.b >= 0) out.b = index[static_cast<size_t>(n.b)];
    index[static_cast<size_t>(id)] = static_cast<int32_t>(p.nodes.size());
    p.nodes.push_back(out);
  }
  for (NodeId r : roots) p.roots.push_back(index[static_cast<size_t>(r)]);
  for (size_t v = 0; v < var_seen.size(); ++v)
    if (var_seen[v]) p.var_list.push_back(static_cast<int32_t>(v));
  return p;
}

int64_t Subgraph::heap_bytes() const { return HeapBytesOf(nodes, roots, var_list); }

}  // namespace tether::expr
