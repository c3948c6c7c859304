// Expression graph: a hash-consed DAG of scalar operations over variables
// (t, q, v, inputs), with simplification at construction and symbolic
// differentiation. Every node is created after its operands, so node ids are
// a topological order (the tape relies on this).
//
// Parameters are folded into constants when an expression is parsed; the
// graph only knows variables by index.
#pragma once

#include "engine/internal/internal.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/internal/operations.h"

namespace tether::expr {

// The operations (Op, Arity, IsCommutative, Scalar) are generated from the
// table in operations.h.
const char* OpName(Op op);
bool IsUnary(Op op);
bool IsBinary(Op op);

using NodeId = int32_t;

struct Node {
  Op op;
  NodeId a = -1;      // first operand
  NodeId b = -1;      // second operand
  int32_t var = -1;   // kVar only
  double value = 0;   // kConst only
  int32_t depth = 0;  // longest path to a leaf
};

// Raised (as a Status by callers) when the graph would exceed its limits.
struct Limits {
  int64_t max_nodes = 4'000'000;
  int32_t max_depth = 20'000;
};

class Graph {
 public:
  // Node 0 is always the constant 0.
  explicit Graph(Limits limits = {}) : limits_(limits) { Const(0); }

  NodeId Const(double value);
  NodeId Var(int32_t index);
  // Builds op(a) or op(a, b), simplified: constant folding, identities
  // (x + 0, x * 1, x * 0, x - x, x / 1, x ^ 1, -(-x), ...), canonical
  // operand order for commutative operations, and sharing of equal nodes.
  // Every rewrite terminates (the measure is argued above Graph::Unary).
  NodeId Unary(Op op, NodeId a);
  NodeId Binary(Op op, NodeId a, NodeId b);

  NodeId Add(NodeId a, NodeId b) { return Binary(Op::kAdd, a, b); }
  NodeId Sub(NodeId a, NodeId b) { return Binary(Op::kSub, a, b); }
  NodeId Mul(NodeId a, NodeId b) { return Binary(Op::kMul, a, b); }
  NodeId Div(NodeId a, NodeId b) { return Binary(Op::kDiv, a, b); }
  NodeId Neg(NodeId a) { return Unary(Op::kNeg, a); }

  // d(node)/d(variable `var`), simplified; memoized per variable.
  NodeId Diff(NodeId node, int32_t var);

  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  size_t size() const { return nodes_.size(); }
  bool IsConst(NodeId id) const { return node(id).op == Op::kConst; }
  bool IsConst(NodeId id, double value) const { return IsConst(id) && node(id).value == value; }
  // True when the expression depends on variable `var`.
  bool DependsOn(NodeId id, int32_t var);

  // Set when a limit was exceeded; further nodes are not created (the
  // result is then a placeholder constant). Callers check after building.
  bool overflowed() const { return overflowed_; }
  const Limits& limits() const { return limits_; }

  // Reference evaluation (recursive, for tests and one-off checks).
  double Evaluate(NodeId id, const std::vector<double>& vars) const;

 private:
  NodeId Intern(const Node& n);

  struct Key {
    Op op;
    NodeId a, b;
    int32_t var;
    uint64_t bits;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };

  Limits limits_;
  std::vector<Node> nodes_;
  std::unordered_map<Key, NodeId, KeyHash> index_;
  // diff_cache_[var][node] = derivative node.
  std::unordered_map<int32_t, std::unordered_map<NodeId, NodeId>> diff_cache_;
  std::unordered_map<int32_t, std::unordered_map<NodeId, bool>> depends_cache_;
  bool overflowed_ = false;
};

// The scalar value of operation `op` (b is ignored by unary ones): calls
// Scalar<op>, which the tape's handler for op calls too, so the reference
// evaluator and a tape instruction of that code give the same bits. (The
// tape's own codes, its specialisations of x^c and its fused operations,
// may round differently.)
double Apply(Op op, double a, double b);

}  // namespace tether::expr
