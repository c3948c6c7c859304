// Expression graph: a hash-consed DAG of scalar operations over variables
// (t, q, v, inputs), with simplification at construction and symbolic
// differentiation. Every node is created after its operands, so node ids are
// a topological order (the tape relies on this).
//
// Parameters are folded into constants when an expression is parsed; the
// graph only knows variables by index.
#pragma once

#include "engine/internal/base/internal.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/internal/expr/operations.h"

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
  // A superset of the variables the node depends on: bit (index mod 64) of
  // vars, within [var_lo, var_hi]. Diff and DependsOn skip a subexpression
  // outside it (its derivative is the constant 0).
  uint64_t vars = 0;
  int32_t var_lo = INT32_MAX, var_hi = INT32_MIN;
};

// Bounds on one graph: every expression of a compilation and all their
// derivatives share it. The defaults are generous (tests and one-off
// graphs); a compilation passes its CompileLimits (engine/simulation.h).
struct Limits {
  // Nodes in the graph (about 100 bytes each at the peak: the node, its
  // slot in the hash index and the vector's growth).
  int64_t max_nodes = 4'000'000;
  // Memoized (node, variable) results of Diff and DependsOn together (about
  // 20 bytes each): the work and memory of differentiation, which grows
  // with the number of variables times the size of what is differentiated
  // that may depend on them (Node::vars), even when no new node results.
  int64_t max_derivative_nodes = 40'000'000;
  int32_t max_depth = 20'000;
  // Bytes held by the graph: its nodes, its hash index and the memo tables
  // of Diff and DependsOn (allocated capacity, checked when the watch is
  // polled, so a compilation may pass it by at most one table's growth).
  int64_t max_bytes = INT64_MAX;
};

// The CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
std::chrono::nanoseconds ThreadCpuTime();

// How a compilation is stopped from outside: a CPU-time deadline of the
// compiling thread, a wall-clock ceiling and a cancel hook, all polled every
// Graph::kPollInterval units of work (node creations and memo entries) on
// the compiling thread.
struct Watch {
  std::chrono::nanoseconds cpu_deadline = std::chrono::nanoseconds::max();  // ThreadCpuTime
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
  kMemory,       // Limits::max_bytes exceeded
  kTime,         // Watch::cpu_deadline or Watch::deadline passed
  kCancelled,    // Watch::cancelled returned true
};

// An open-addressing hash map from node ids (>= 0) to 32-bit values:
// linear probing in a power-of-two table of (key, value) pairs, at most 70%
// full. The memo tables of Diff and DependsOn hold one entry per (node,
// variable) visited, millions for a large description: 8 bytes a slot
// (11 to 23 an entry) instead of a node-based map's ~50, and one probe
// sequence per lookup instead of a pointer chase.
class NodeMap {
 public:
  // The value stored for `key`, or nullptr.
  const int32_t* find(NodeId key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key < 0) return nullptr;
    }
  }
  bool contains(NodeId key) const { return find(key) != nullptr; }
  // Adds key -> value (key must not be present).
  void insert(NodeId key, int32_t value) {
    if ((size_ + 1) * 10 > slots_.size() * 7) Grow();
    size_t i = Home(key);
    while (slots_[i].key >= 0) i = (i + 1) & mask_;
    slots_[i] = {key, value};
    ++size_;
  }
  size_t size() const { return size_; }
  // Bytes of its table.
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    NodeId key = -1;
    int32_t value = 0;
  };
  size_t Home(NodeId key) const {
    // Fibonacci hashing: the top bits of key * 2^64 / phi.
    return static_cast<size_t>(
        (static_cast<uint64_t>(static_cast<uint32_t>(key)) * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  void Grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  int shift_ = 64;
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
  // The directional derivative sum_k d(node)/d(var k) seeds[k] (seeds[k] a
  // node, or -1 where the direction has no component), built by one forward
  // pass of the same rules as Diff: what sum_k Diff(node, k) * seeds[k]
  // gives mathematically, with one new node per node that may depend on a
  // seeded variable instead of one per (node, variable) pair. Memoized per
  // `direction`, a key >= 0 the caller gives each seed vector (the same key
  // must always come with the same seeds).
  NodeId Tangent(NodeId node, int32_t direction, const std::vector<NodeId>& seeds);
  // Every partial derivative of `node` at once, d(node)/d(var k) for
  // k < num_vars (the constant 0 where it does not depend on var k), by
  // reverse accumulation over the nodes it uses (the adjoint of each is the
  // sum over its users of the user's adjoint times the table rule's partial
  // derivative, the rule taken with da, db = 1, 0 and 0, 1): O(nodes) new
  // nodes for all num_vars derivatives, where num_vars calls of Diff build
  // up to num_vars times as many.
  std::vector<NodeId> Gradient(NodeId node, int32_t num_vars);

  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  size_t size() const { return nodes_.size(); }
  bool IsConst(NodeId id) const { return node(id).op == Op::kConst; }
  bool IsConst(NodeId id, double value) const { return IsConst(id) && node(id).value == value; }
  // False when the expression certainly does not depend on variable `var`
  // (from Node::vars, var_lo, var_hi: O(1)).
  bool MayDependOn(NodeId id, int32_t var) const {
    const Node& n = node(id);
    return ((n.vars >> (static_cast<uint32_t>(var) & 63)) & 1) && var >= n.var_lo &&
           var <= n.var_hi;
  }
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
  // Bytes held now (Limits::max_bytes).
  int64_t memory_bytes() const {
    return static_cast<int64_t>(nodes_.capacity() * sizeof(Node) +
                                index_.capacity() * sizeof(NodeId)) +
           memo_bytes_;
  }
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
  // The derivative of f = op(a, b) from its operands' derivatives da, db
  // (db unused for a unary op): the operation table's rule (operations.h),
  // shared by Diff, Tangent and Gradient.
  NodeId Rule(Op op, NodeId f, NodeId a, NodeId b, NodeId da, NodeId db);
  template <class Visit>
  int32_t PostOrder(NodeId root, int32_t var, NodeMap& cache, Visit&& visit);
  // PostOrder over the nodes for which may(id) holds (the others read as 0).
  template <class May, class Visit>
  int32_t PostOrderIf(NodeId root, May&& may, NodeMap& cache, Visit&& visit);

  // The hash-consing index: an open-addressing table of node ids (-1
  // empty), keyed by the node's fields (op, operands, variable, value bits).
  static uint64_t HashNode(const Node& n);
  static bool SameNode(const Node& x, const Node& y);
  void GrowIndex();

  Limits limits_;
  Watch watch_;
  std::vector<Node> nodes_;
  std::vector<NodeId> index_;  // power-of-two size, at most half full
  size_t index_mask_ = 0;
  // diff_cache_[var][node] = derivative node (Tangent's under the key
  // -1 - direction); depends_cache_: 0 or 1.
  std::unordered_map<int32_t, NodeMap> diff_cache_;
  std::unordered_map<int32_t, NodeMap> depends_cache_;
  Stop stop_ = Stop::kNone;
  NodeId one_ = -1;            // the constant 1, once it exists
  std::vector<NodeId> stack_;  // PostOrder's scratch
  uint32_t work_ = 0;
  int64_t memo_entries_ = 0;
  int64_t memo_bytes_ = 0;  // the memo tables' bytes, kept as they grow
};

// The scalar value of operation `op` (b is ignored by unary ones): calls
// Scalar<op>, which the tape's handler for op calls too, so the reference
// evaluator and a tape instruction of that code give the same bits. (The
// tape's own codes, its specialisations of x^c and its fused operations,
// may round differently.)
double Apply(Op op, double a, double b);

}  // namespace tether::expr
