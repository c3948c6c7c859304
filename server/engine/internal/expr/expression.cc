#include "engine/internal/expr/expression.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <ctime>
#include <iterator>
#include <limits>

namespace tether::expr {

const char* OpName(Op op) {
  if (static_cast<size_t>(op) >= std::size(kOperationInfo)) return "?";
  return Info(op).spelling;
}

bool IsUnary(Op op) { return Arity(op) == 1; }
bool IsBinary(Op op) { return Arity(op) == 2; }

double Apply(Op op, double a, double b) {
  switch (op) {
#define TETHER_OP_APPLY(name, spelling, arity, syntax, commutative, smooth, value, derivative) \
  case Op::name: return Scalar<Op::name>(a, b);
    TETHER_EXPR_OPERATIONS(TETHER_OP_APPLY)
#undef TETHER_OP_APPLY
    case Op::kConst:
    case Op::kVar: break;
  }
  assert(false && "Apply on a leaf");
  return std::numeric_limits<double>::quiet_NaN();
}

void NodeMap::Grow() {
  const size_t capacity = slots_.empty() ? 16 : slots_.size() * 2;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  for (const Slot& s : old) {
    if (s.key < 0) continue;
    size_t i = Home(s.key);
    while (slots_[i].key >= 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

uint64_t Graph::HashNode(const Node& n) {
  uint64_t h = static_cast<uint64_t>(n.op);
  auto mix = [&h](uint64_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(static_cast<uint32_t>(n.a));
  mix(static_cast<uint32_t>(n.b));
  mix(static_cast<uint32_t>(n.var));
  mix(std::bit_cast<uint64_t>(n.value));
  // Finalizer (the table uses the low bits).
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

bool Graph::SameNode(const Node& x, const Node& y) {
  return x.op == y.op && x.a == y.a && x.b == y.b && x.var == y.var &&
         std::bit_cast<uint64_t>(x.value) == std::bit_cast<uint64_t>(y.value);
}

void Graph::GrowIndex() {
  const size_t capacity = index_.empty() ? 1024 : index_.size() * 2;
  index_.assign(capacity, -1);
  index_mask_ = capacity - 1;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    size_t i = HashNode(nodes_[id]) & index_mask_;
    while (index_[i] >= 0) i = (i + 1) & index_mask_;
    index_[i] = static_cast<NodeId>(id);
  }
}

std::chrono::nanoseconds ThreadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

bool Graph::Poll() {
  if (stop_ != Stop::kNone) return true;
  if (memory_bytes() > limits_.max_bytes) {
    stop_ = Stop::kMemory;
  } else if (watch_.cancelled && watch_.cancelled()) {
    stop_ = Stop::kCancelled;
  } else if ((watch_.cpu_deadline != std::chrono::nanoseconds::max() &&
              ThreadCpuTime() >= watch_.cpu_deadline) ||
             (watch_.deadline != std::chrono::steady_clock::time_point::max() &&
              std::chrono::steady_clock::now() >= watch_.deadline)) {
    stop_ = Stop::kTime;
  }
  return stop_ != Stop::kNone;
}

NodeId Graph::Intern(const Node& n) {
  // Stopped: node 0 (the constant 0) stands in; callers check overflowed().
  if (stop_ != Stop::kNone) return 0;
  // -0.0 and 0.0 are the same constant for our purposes.
  Node stored = n;
  stored.value = n.value == 0.0 ? 0.0 : n.value;
  if ((nodes_.size() + 1) * 2 > index_.size()) GrowIndex();
  size_t slot = HashNode(stored) & index_mask_;
  for (; index_[slot] >= 0; slot = (slot + 1) & index_mask_) {
    if (SameNode(nodes_[static_cast<size_t>(index_[slot])], stored)) return index_[slot];
  }
  stored.depth = 0;
  stored.vars = 0;
  stored.var_lo = INT32_MAX;
  stored.var_hi = INT32_MIN;
  if (n.op == Op::kVar) {
    stored.vars = uint64_t{1} << (static_cast<uint32_t>(n.var) & 63);
    stored.var_lo = stored.var_hi = n.var;
  }
  for (NodeId operand : {n.a, n.b}) {
    if (operand < 0) continue;
    const Node& o = node(operand);
    stored.depth = std::max(stored.depth, o.depth + 1);
    stored.vars |= o.vars;
    stored.var_lo = std::min(stored.var_lo, o.var_lo);
    stored.var_hi = std::max(stored.var_hi, o.var_hi);
  }
  if (static_cast<int64_t>(nodes_.size()) >= limits_.max_nodes) {
    stop_ = Stop::kNodes;
    return 0;
  }
  if (stored.depth > limits_.max_depth) {
    stop_ = Stop::kDepth;
    return 0;
  }
  Charge();
  NodeId id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(stored);
  index_[slot] = id;
  return id;
}

NodeId Graph::Const(double value) {
  // Node 0 is the constant 0 (-0.0 too: Intern folds it; also the
  // placeholder once stopped), and 1 is asked for by every variable's
  // derivative: both without a lookup.
  if (value == 0.0 && !nodes_.empty()) return 0;
  if (value == 1.0 && one_ >= 0 && stop_ == Stop::kNone) return one_;
  Node n{Op::kConst};
  n.value = value;
  const NodeId id = Intern(n);
  if (value == 1.0 && stop_ == Stop::kNone) one_ = id;
  return id;
}

NodeId Graph::Var(int32_t index) {
  Node n{Op::kVar};
  n.var = index;
  return Intern(n);
}

// Termination of the simplifications in Unary and Binary: a rewrite never
// feeds itself. Unary(neg, .) calls nothing (-(-x) returns the inner x), and
// Unary never calls Binary; the other Unary rewrites call Unary only on an
// operand's operand, a strictly shallower node: sign(-x) -> -sign(x) (then
// neg, which calls nothing), abs(-x) -> abs(x); abs(abs(x)) returns the
// inner node itself. Binary's rewrites call Binary with a strictly smaller
// M = depth(first operand) + depth(second operand) (a constant's depth is 0)
// or, at equal M, an operation of strictly lower rank in {add, sub, div} >
// mul > pow:
//   add: x + -y -> x - y, -x + y -> y - x (M - 1); x + x -> 2 * x (M not
//        larger, add -> mul);
//   sub: x - -y -> x + y (M - 1);
//   mul: -x * -y -> x * y (M - 2); -x * y -> -(x * y), x * -y -> -(x * y)
//        (M - 1, then neg); (c1 * x) * c2 and c1 * (c2 * x) -> (c1 c2) * x
//        (M - 1); x * x -> x ^ 2 (M not larger, mul -> pow);
//   div: x / c -> (1/c) * x (same M, div -> mul);
//   pow: (x ^ c1) ^ c2 -> x ^ (c1 c2) (M - 1);
// and Binary calls Unary only for neg. Every chain of calls is therefore
// finite. Keep it so: a new rule must strictly reduce this measure.
NodeId Graph::Unary(Op op, NodeId a) {
  assert(IsUnary(op));
  const Node& na = node(a);
  if (na.op == Op::kConst) return Const(Apply(op, na.value, 0));
  if (op == Op::kNeg && na.op == Op::kNeg) return na.a;
  if (op == Op::kSign && na.op == Op::kNeg) {
    return Unary(Op::kNeg, Unary(Op::kSign, na.a));
  }
  if (op == Op::kAbs && na.op == Op::kAbs) return a;
  if (op == Op::kAbs && na.op == Op::kNeg) return Unary(Op::kAbs, na.a);
  Node n{op};
  n.a = a;
  return Intern(n);
}

NodeId Graph::Binary(Op op, NodeId a, NodeId b) {
  assert(IsBinary(op));
  const Node na = node(a);
  const Node nb = node(b);
  const bool ca = na.op == Op::kConst, cb = nb.op == Op::kConst;
  if (ca && cb) return Const(Apply(op, na.value, nb.value));
  switch (op) {
    case Op::kAdd:
      if (ca && na.value == 0) return b;
      if (cb && nb.value == 0) return a;
      if (nb.op == Op::kNeg) return Sub(a, nb.a);
      if (na.op == Op::kNeg) return Sub(b, na.a);
      if (a == b) return Mul(Const(2), a);
      break;
    case Op::kSub:
      if (cb && nb.value == 0) return a;
      if (ca && na.value == 0) return Neg(b);
      if (a == b) return Const(0);
      if (nb.op == Op::kNeg) return Add(a, nb.a);
      break;
    case Op::kMul:
      if ((ca && na.value == 0) || (cb && nb.value == 0)) return Const(0);
      if (ca && na.value == 1) return b;
      if (cb && nb.value == 1) return a;
      if (ca && na.value == -1) return Neg(b);
      if (cb && nb.value == -1) return Neg(a);
      if (na.op == Op::kNeg && nb.op == Op::kNeg) return Mul(na.a, nb.a);
      if (na.op == Op::kNeg) return Neg(Mul(na.a, b));
      if (nb.op == Op::kNeg) return Neg(Mul(a, nb.a));
      // c1 * (c2 * x) -> (c1 c2) * x
      if (cb && nb.op == Op::kConst && na.op == Op::kMul && node(na.a).op == Op::kConst) {
        return Mul(Const(nb.value * node(na.a).value), na.b);
      }
      if (ca && nb.op == Op::kMul && node(nb.a).op == Op::kConst) {
        return Mul(Const(na.value * node(nb.a).value), nb.b);
      }
      if (a == b) return Binary(Op::kPow, a, Const(2));
      break;
    case Op::kDiv:
      if (ca && na.value == 0) return Const(0);
      if (cb && nb.value == 1) return a;
      if (cb && nb.value == -1) return Neg(a);
      if (a == b) return Const(1);
      // x / c with c a power of two is an exact multiplication.
      if (cb && nb.value != 0 && std::isfinite(nb.value)) {
        int exponent = 0;
        double mantissa = std::frexp(nb.value, &exponent);
        if (std::fabs(mantissa) == 0.5) return Mul(Const(1.0 / nb.value), a);
      }
      break;
    case Op::kPow:
      if (cb && nb.value == 0) return Const(1);
      if (cb && nb.value == 1) return a;
      if (ca && na.value == 1) return Const(1);
      // (x^c1)^c2 with integer c1, c2 -> x^(c1 c2)
      if (cb && na.op == Op::kPow && node(na.b).op == Op::kConst) {
        double c1 = node(na.b).value, c2 = nb.value;
        if (c1 == std::round(c1) && c2 == std::round(c2)) {
          return Binary(Op::kPow, na.a, Const(c1 * c2));
        }
      }
      break;
    case Op::kMin:
    case Op::kMax:
      if (a == b) return a;
      break;
    default: break;
  }
  // Canonical operand order: a constant first, otherwise by id.
  if (IsCommutative(op) && !ca && (cb || a > b)) std::swap(a, b);
  Node n{op};
  n.a = a;
  n.b = b;
  return Intern(n);
}

// Computes cache[id] for `root` and every node below it that is not cached
// yet, operands first, iteratively (deep expressions cannot overflow the
// stack). `visit(id)` returns the node's value; it may read its operands'
// values from `cache` and may add nodes to the graph. Every entry added
// counts against Limits::max_derivative_nodes; once the graph is stopped
// the result is T{} (callers check overflowed()).
// Operands that cannot depend on `var` (MayDependOn) are neither visited nor
// cached: visit() reads them as 0.
template <class Visit>
int32_t Graph::PostOrder(NodeId root, int32_t var, NodeMap& cache, Visit&& visit) {
  return PostOrderIf(
      root, [this, var](NodeId id) { return MayDependOn(id, var); }, cache,
      std::forward<Visit>(visit));
}

template <class May, class Visit>
int32_t Graph::PostOrderIf(NodeId root, May&& may, NodeMap& cache, Visit&& visit) {
  if (!may(root)) {
    Charge();
    return 0;
  }
  if (const int32_t* hit = cache.find(root)) return *hit;
  const Graph& graph = *this;
  // The member scratch stack: visit() never re-enters PostOrder.
  std::vector<NodeId>& stack = stack_;
  stack.assign(1, root);
  while (!stack.empty()) {
    if (stop_ != Stop::kNone) return 0;
    const NodeId id = stack.back();
    if (cache.contains(id)) {
      stack.pop_back();
      continue;
    }
    const Node n = graph.node(id);  // a copy: visit() may grow the graph
    bool ready = true;
    for (NodeId operand : {n.a, n.b}) {
      if (operand >= 0 && may(operand) && !cache.contains(operand)) {
        stack.push_back(operand);
        ready = false;
      }
    }
    if (!ready) continue;
    stack.pop_back();
    const int32_t value = visit(id);
    if (memo_entries_ >= limits_.max_derivative_nodes) {
      stop_ = Stop::kDerivatives;
      return 0;
    }
    const size_t before = cache.bytes();
    cache.insert(id, value);
    memo_bytes_ += static_cast<int64_t>(cache.bytes() - before);
    ++memo_entries_;
    Charge();
  }
  if (stop_ != Stop::kNone) return 0;
  return *cache.find(root);
}

bool Graph::DependsOn(NodeId root, int32_t var) {
  if (stop_ != Stop::kNone) return false;
  auto& cache = depends_cache_[var];
  auto value = [&](NodeId x) { return MayDependOn(x, var) && *cache.find(x); };
  return PostOrder(root, var, cache, [&](NodeId id) -> int32_t {
           const Node& n = node(id);
           if (n.op == Op::kConst) return 0;
           if (n.op == Op::kVar) return n.var == var;
           return value(n.a) || (n.b >= 0 && value(n.b));
         }) != 0;
}

NodeId Graph::Rule(Op op, NodeId f, NodeId a, NodeId b, NodeId da, NodeId db) {
  NodeId d = Const(0);
  switch (op) {
#define TETHER_OP_DIFF(name, spelling, arity, syntax, commutative, smooth, value, derivative) \
  case Op::name: d = derivative; break;
    TETHER_EXPR_OPERATIONS(TETHER_OP_DIFF)
#undef TETHER_OP_DIFF
    case Op::kConst:
    case Op::kVar: break;
  }
  return d;
}

NodeId Graph::Diff(NodeId root, int32_t var) {
  if (stop_ != Stop::kNone) return 0;
  auto& cache = diff_cache_[var];
  // A subexpression that cannot depend on var has the derivative 0, which
  // is what differentiating it would give: every rule of operations.h is
  // 0 when da and db are (the products with 0, Add(0, 0), 0 / x fold).
  auto derivative = [&](NodeId x) -> NodeId { return MayDependOn(x, var) ? *cache.find(x) : 0; };
  return PostOrder(root, var, cache, [&](NodeId id) -> NodeId {
    const Node n = node(id);
    if (n.op == Op::kConst) return Const(0);
    if (n.op == Op::kVar) return Const(n.var == var ? 1 : 0);
    // The table's rule for the operation (see operations.h for its terms).
    return Rule(n.op, id, n.a, n.b, derivative(n.a), n.b >= 0 ? derivative(n.b) : -1);
  });
}

NodeId Graph::Tangent(NodeId root, int32_t direction, const std::vector<NodeId>& seeds) {
  if (stop_ != Stop::kNone) return 0;
  auto& cache = diff_cache_[-1 - direction];
  // The seeded variables' bits and range, as Node::vars keeps them: a node
  // outside them depends on no seeded variable (its tangent is 0).
  uint64_t mask = 0;
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (int32_t k = 0; k < static_cast<int32_t>(seeds.size()); ++k) {
    if (seeds[static_cast<size_t>(k)] < 0) continue;
    mask |= uint64_t{1} << (static_cast<uint32_t>(k) & 63);
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  const auto may = [&](NodeId id) {
    const Node& n = node(id);
    return (n.vars & mask) != 0 && n.var_lo <= hi && n.var_hi >= lo;
  };
  auto derivative = [&](NodeId x) -> NodeId { return may(x) ? *cache.find(x) : 0; };
  return PostOrderIf(root, may, cache, [&](NodeId id) -> NodeId {
    const Node n = node(id);
    if (n.op == Op::kConst) return Const(0);
    if (n.op == Op::kVar) {
      const bool seeded =
          n.var < static_cast<int32_t>(seeds.size()) && seeds[static_cast<size_t>(n.var)] >= 0;
      return seeded ? seeds[static_cast<size_t>(n.var)] : Const(0);
    }
    // The same table rule as Diff, with the operands' tangents for da, db.
    return Rule(n.op, id, n.a, n.b, derivative(n.a), n.b >= 0 ? derivative(n.b) : -1);
  });
}

std::vector<NodeId> Graph::Gradient(NodeId root, int32_t num_vars) {
  std::vector<NodeId> grad(static_cast<size_t>(num_vars), 0);
  if (stop_ != Stop::kNone) return grad;
  // The nodes root uses (ids are topological: operands before users).
  const size_t n_ids = static_cast<size_t>(root) + 1;
  std::vector<char> used(n_ids, 0);
  std::vector<NodeId>& stack = stack_;
  stack.assign(1, root);
  used[static_cast<size_t>(root)] = 1;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (NodeId operand : {node(id).a, node(id).b}) {
      if (operand >= 0 && !used[static_cast<size_t>(operand)]) {
        used[static_cast<size_t>(operand)] = 1;
        stack.push_back(operand);
      }
    }
  }
  // Adjoints, users first (-1: none yet).
  std::vector<NodeId> adjoint(n_ids, -1);
  adjoint[static_cast<size_t>(root)] = Const(1);
  const auto add_to = [&](NodeId operand, NodeId contribution) {
    NodeId& a = adjoint[static_cast<size_t>(operand)];
    a = a < 0 ? contribution : Add(a, contribution);
  };
  for (NodeId id = root; id >= 0; --id) {
    if (stop_ != Stop::kNone) return std::vector<NodeId>(static_cast<size_t>(num_vars), 0);
    const NodeId bar = adjoint[static_cast<size_t>(id)];
    if (!used[static_cast<size_t>(id)] || bar < 0) continue;
    const Node n = node(id);  // a copy: the rules grow the graph
    if (n.op == Op::kVar) {
      if (n.var >= 0 && n.var < num_vars) grad[static_cast<size_t>(n.var)] = bar;
      continue;
    }
    if (n.op == Op::kConst) continue;
    // The partial with respect to operand a (da = 1, db = 0), then b.
    for (int which = 0; which < (n.b >= 0 ? 2 : 1); ++which) {
      const NodeId operand = which == 0 ? n.a : n.b;
      if (IsConst(operand)) continue;
      const NodeId da = Const(which == 0 ? 1 : 0);
      const NodeId db = n.b >= 0 ? Const(which == 0 ? 0 : 1) : -1;
      const NodeId partial = Rule(n.op, id, n.a, n.b, da, db);
      add_to(operand, Mul(bar, partial));
    }
    if (++memo_entries_ >= limits_.max_derivative_nodes) {
      stop_ = Stop::kDerivatives;
      return std::vector<NodeId>(static_cast<size_t>(num_vars), 0);
    }
    Charge();
  }
  return grad;
}

double Graph::Evaluate(NodeId id, const std::vector<double>& vars) const {
  const Node& n = node(id);
  switch (n.op) {
    case Op::kConst: return n.value;
    case Op::kVar: return vars.at(static_cast<size_t>(n.var));
    default: break;
  }
  double a = Evaluate(n.a, vars);
  double b = n.b >= 0 ? Evaluate(n.b, vars) : 0.0;
  return Apply(n.op, a, b);
}

}  // namespace tether::expr
