// Expression graph: a hash-consed DAG of scalar operations over variables
// (t, q, v, inputs), with simplification at construction and symbolic
// differentiation. Every node is created after its operands, so node ids are
// a topological order (the tape relies on this).
//
// Parameters are folded into constants when an expression is parsed; the
// graph only knows variables by index.
#pragma once

#include "engine/internal/internal.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
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

// Bounds on one graph: every expression of a compilation and all their
// derivatives share it. The defaults are generous (tests and one-off
// graphs); a compilation passes its CompileLimits (engine/simulation.h).
struct Limits {
  // Nodes in the graph (about 150 bytes each at the peak: the node, its
  // entry in the hash index and the vector's growth).
  int64_t max_nodes = 4'000'000;
  // Memoized (node, variable) results of Diff and DependsOn together (about
  // 50 bytes each): the work and memory of differentiation, which grows
  // with the number of variables times the size of what is differentiated
  // even when no new node results.
  int64_t max_derivative_nodes = 40'000'000;
  int32_t max_depth = 20'000;
};

// How a compilation is stopped from outside: a wall-clock deadline and a
// cancel hook, both polled every Graph::kPollInterval units of work (node
// creations and memo entries) on the compiling thread.
struct Watch {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Called on the compiling thread; true stops the compilation. May be empty.
  std::function<bool()> cancelled;
};

// Why a graph stopped growing (Graph::stop()).
enum class Stop : uint8_t {
  kNone,
  kNodes,        // Limits::max_nodes reached
  kDerivatives,  // Limits::max_derivative_nodes reached
  kDepth,        // Limits::max_depth exceeded
  kTime,         // Watch::deadline passed
  kCancelled,    // Watch::cancelled returned true
};

class Graph {
 public:
  // Node 0 is always the constant 0.
  explicit Graph(Limits limits = {}, Watch watch = {}) : limits_(limits), watch_(std::move(watch)) {
    Const(0);
  }

  // Units of work between two polls of the watch (a power of two).
  static constexpr uint32_t kPollInterval = 4096;

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

  // Set when a limit was exceeded or the watch stopped the graph: from then
  // on no node is created and Diff, DependsOn and every builder return a
  // placeholder (node 0, false) at once. Callers check after building.
  bool overflowed() const { return stop_ != Stop::kNone; }
  Stop stop() const { return stop_; }
  const Limits& limits() const { return limits_; }
  // Memoized Diff and DependsOn results so far (Limits::max_derivative_nodes).
  int64_t derivative_nodes() const { return memo_entries_; }
  // Polls the watch now (also done every kPollInterval units of work);
  // returns overflowed(). For loops that run long without growing the graph.
  bool Poll();

  // Reference evaluation (recursive, for tests and one-off checks).
  double Evaluate(NodeId id, const std::vector<double>& vars) const;

 private:
  NodeId Intern(const Node& n);
  // Counts one unit of work, polling the watch every kPollInterval units.
  void Charge() {
    if ((++work_ & (kPollInterval - 1)) == 0) Poll();
  }
  template <class T, class Visit>
  T PostOrder(NodeId root, std::unordered_map<NodeId, T>& cache, Visit&& visit);

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
  Watch watch_;
  std::vector<Node> nodes_;
  std::unordered_map<Key, NodeId, KeyHash> index_;
  // diff_cache_[var][node] = derivative node.
  std::unordered_map<int32_t, std::unordered_map<NodeId, NodeId>> diff_cache_;
  std::unordered_map<int32_t, std::unordered_map<NodeId, bool>> depends_cache_;
  Stop stop_ = Stop::kNone;
  uint32_t work_ = 0;
  int64_t memo_entries_ = 0;
};

// The scalar value of operation `op` (b is ignored by unary ones): calls
// Scalar<op>, which the tape's handler for op calls too, so the reference
// evaluator and a tape instruction of that code give the same bits. (The
// tape's own codes, its specialisations of x^c and its fused operations,
// may round differently.)
double Apply(Op op, double a, double b);

}  // namespace tether::expr
