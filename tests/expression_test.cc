// Parser, simplification and symbolic derivatives (every rule against
// central finite differences).
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/internal/expr/expression.h"
#include "engine/internal/expr/parser.h"

namespace tether::expr {
namespace {

// Variables: 0 = t, 1 = x, 2 = y, 3 = der(x), 4 = u.
Scope TestScope() {
  Scope s;
  s.time_var = 0;
  s.coordinates = {{"x", 1}, {"y", 2}};
  s.velocities = {{"x", 3}};
  s.inputs = {{"u", 4}};
  s.parameters = {{"k", 2.5}};
  return s;
}

NodeId MustParse(Graph& g, const std::string& text) {
  ParseError error;
  auto root = Parse(text, TestScope(), &g, &error);
  EXPECT_TRUE(root.has_value()) << text << ": column " << error.column << ": " << error.message;
  return root.value_or(0);
}

ParseError MustFail(const std::string& text, Scope scope = TestScope()) {
  Graph g;
  ParseError error;
  auto root = Parse(text, scope, &g, &error);
  EXPECT_FALSE(root.has_value()) << text;
  return error;
}

double Eval(const std::string& text, std::vector<double> vars = {0.3, 0.7, -1.2, 0.4, 2.0}) {
  Graph g;
  return g.Evaluate(MustParse(g, text), vars);
}

TEST(ParserTest, PrecedenceAndAssociativity) {
  EXPECT_DOUBLE_EQ(Eval("1 + 2 * 3"), 7);
  EXPECT_DOUBLE_EQ(Eval("(1 + 2) * 3"), 9);
  EXPECT_DOUBLE_EQ(Eval("2 ^ 3 ^ 2"), 512);  // right associative
  EXPECT_DOUBLE_EQ(Eval("-2 ^ 2"), -4);      // -x^2 = -(x^2)
  EXPECT_DOUBLE_EQ(Eval("2 ^ -1"), 0.5);
  EXPECT_DOUBLE_EQ(Eval("8 / 4 / 2"), 1);  // left associative
  EXPECT_DOUBLE_EQ(Eval("10 - 4 - 3"), 3);
  EXPECT_DOUBLE_EQ(Eval("1.5e2 + .5"), 150.5);
  EXPECT_DOUBLE_EQ(Eval("pi"), std::numbers::pi);
  EXPECT_DOUBLE_EQ(Eval("k * x + t"), 2.5 * 0.7 + 0.3);
  EXPECT_DOUBLE_EQ(Eval("der(x) + u"), 0.4 + 2.0);
  EXPECT_DOUBLE_EQ(Eval("atan2(y, x)"), std::atan2(-1.2, 0.7));
  EXPECT_DOUBLE_EQ(Eval("pow(x, 3)"), std::pow(0.7, 3));
  EXPECT_DOUBLE_EQ(Eval("min(x, y) + max(x, y)"), -1.2 + 0.7);
}

TEST(ParserTest, ErrorsNameColumnFoundAndExpected) {
  ParseError e = MustFail("x + z");
  EXPECT_EQ(e.column, 5);
  EXPECT_NE(e.message.find("unknown name 'z'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("x, y"), std::string::npos) << e.message;

  e = MustFail("sine(x)");
  EXPECT_EQ(e.column, 1);
  EXPECT_NE(e.message.find("unknown function 'sine'"), std::string::npos) << e.message;

  e = MustFail("atan2(x)");
  EXPECT_NE(e.message.find("atan2() expects 2 arguments, found 1"), std::string::npos) << e.message;

  e = MustFail("(x + 1");
  EXPECT_EQ(e.column, 7);
  EXPECT_NE(e.message.find("expected ')'"), std::string::npos) << e.message;

  e = MustFail("x + * y");
  EXPECT_EQ(e.column, 5);

  e = MustFail("");
  EXPECT_NE(e.message.find("found nothing"), std::string::npos);

  e = MustFail("der(k)");
  EXPECT_NE(e.message.find("der() expects a coordinate name"), std::string::npos) << e.message;

  e = MustFail("1e999");
  EXPECT_NE(e.message.find("out of range"), std::string::npos) << e.message;

  e = MustFail("x y");
  EXPECT_EQ(e.column, 3);
}

// Every operation of the table (operations.h): a function row is callable
// by its spelling with its arity, builds that operation, is a reserved name
// and is listed when a function is unknown; the others are not callable.
TEST(ParserTest, FunctionsAreTheTablesFunctionRows) {
  const std::string unknown = MustFail("sine(x)").message;
  int functions = 0;
  for (size_t i = kFirstOperation; i < std::size(kOperationInfo); ++i) {
    const Op op = static_cast<Op>(i);
    const OperationInfo& info = Info(op);
    const std::string name = info.spelling;
    const std::string call = name + (info.arity == 1 ? "(x)" : "(x, y)");
    if (info.syntax != Syntax::kFunction) {
      EXPECT_FALSE(IsReservedName(name)) << name;
      EXPECT_NE(MustFail(call).message.find("unknown function '" + name + "'"), std::string::npos)
          << call;
      continue;
    }
    ++functions;
    EXPECT_TRUE(IsReservedName(name)) << name;
    EXPECT_NE(unknown.find(name), std::string::npos) << name << " missing from: " << unknown;
    Graph g;
    const NodeId root = MustParse(g, call);
    EXPECT_EQ(g.node(root).op, op) << call << " built " << OpName(g.node(root).op);
    const std::string wrong = name + (info.arity == 1 ? "(x, y)" : "(x)");
    EXPECT_NE(MustFail(wrong).message.find(name + "() expects " + std::to_string(info.arity)),
              std::string::npos)
        << wrong;
  }
  EXPECT_GE(functions, 17);
  // The list is the table's function rows in order, then der.
  size_t at = unknown.find("expected one of ");
  ASSERT_NE(at, std::string::npos) << unknown;
  const char* separator = "expected one of ";
  for (const OperationInfo& info : kOperationInfo) {
    if (info.syntax != Syntax::kFunction) continue;
    const std::string item = separator + std::string(info.spelling);
    EXPECT_EQ(unknown.compare(at, item.size(), item), 0)
        << item << " expected at " << at << " in: " << unknown;
    at += item.size();
    separator = ", ";
  }
  EXPECT_EQ(unknown.substr(at), " or der") << unknown;
}

TEST(ParserTest, RestrictionsForVelocitiesAndInputs) {
  Scope s = TestScope();
  s.allow_velocities = false;
  s.allow_inputs = false;
  s.restriction = "constraints use q and t only";
  ParseError e = MustFail("x + der(x)", s);
  EXPECT_NE(e.message.find("not allowed here: constraints use q and t only"), std::string::npos);
  e = MustFail("x + u", s);
  EXPECT_NE(e.message.find("input 'u' is not allowed"), std::string::npos) << e.message;
}

TEST(ParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep(10000, '(');
  deep += "x";
  deep += std::string(10000, ')');
  ParseError e = MustFail(deep);
  EXPECT_NE(e.message.find("nests deeper"), std::string::npos);
  std::string minus(10000, '-');
  e = MustFail(minus + "x");
  EXPECT_NE(e.message.find("nests deeper"), std::string::npos);
  std::string powers = "x";
  for (int i = 0; i < 5000; ++i) powers += "^x";
  e = MustFail(powers);
  EXPECT_NE(e.message.find("nests deeper"), std::string::npos);
}

TEST(ParserTest, LongFlatSumsParseAndDifferentiate) {
  // 6000 terms: deep as a tree, but parsed with loops and differentiated
  // iteratively.
  std::string sum = "x";
  for (int i = 0; i < 6000; ++i) sum += i % 2 ? " + x*y" : " + sin(x)";
  Graph g;
  NodeId root = MustParse(g, sum);
  NodeId d = g.Diff(root, 1);
  EXPECT_FALSE(g.overflowed());
  EXPECT_TRUE(std::isfinite(g.Evaluate(d, {0, 0.1, 0.2, 0, 0})));
}

TEST(GraphTest, SharesCommonSubexpressionsAndSimplifies) {
  Graph g;
  NodeId a = MustParse(g, "sin(x) * y + sin(x)");
  size_t before = g.size();
  NodeId b = MustParse(g, "sin(x) * y + sin(x)");
  EXPECT_EQ(a, b);
  EXPECT_EQ(g.size(), before);
  EXPECT_TRUE(g.IsConst(MustParse(g, "x - x"), 0));
  EXPECT_TRUE(g.IsConst(MustParse(g, "0 * sin(y)"), 0));
  EXPECT_EQ(MustParse(g, "1 * x + 0"), MustParse(g, "x"));
  EXPECT_EQ(MustParse(g, "-(-x)"), MustParse(g, "x"));
  EXPECT_EQ(MustParse(g, "x * y"), MustParse(g, "y * x"));  // canonical order
  EXPECT_TRUE(g.IsConst(MustParse(g, "2 * k + 1"), 6));     // parameters fold
  // d/dx of x^2/2 is exactly x.
  EXPECT_EQ(g.Diff(MustParse(g, "x^2/2"), 1), MustParse(g, "x"));
}

// Simplifications terminate (each rewrite reduces a measure: see
// Graph::Unary) and keep the value: every composition of neg, abs, sign and
// step up to depth 5 over x, built through Graph::Unary, evaluates to the
// operations applied one by one. abs(abs(x)) used to recurse forever.
// min and max keep their operands in the order written: fmin of two zeros
// of opposite sign may give either (glibc's and the compiler's minsd differ),
// so min(x, y) and min(y, x) are two nodes, each evaluated in its own order,
// never merged or swapped into the other's.
TEST(GraphTest, MinAndMaxKeepTheirOperandOrder) {
  Graph g;
  const NodeId x = MustParse(g, "x"), y = MustParse(g, "y");
  for (const char* f : {"min", "max"}) {
    SCOPED_TRACE(f);
    const NodeId xy = MustParse(g, std::string(f) + "(x, y)");
    const NodeId yx = MustParse(g, std::string(f) + "(y, x)");
    EXPECT_NE(xy, yx);
    EXPECT_EQ(g.node(xy).a, x);
    EXPECT_EQ(g.node(xy).b, y);
    EXPECT_EQ(g.node(yx).a, y);
    EXPECT_EQ(g.node(yx).b, x);
  }
  EXPECT_FALSE(IsCommutative(Op::kMin));
  EXPECT_FALSE(IsCommutative(Op::kMax));
}

TEST(GraphTest, NestedSignShapesTerminateAndKeepTheirValue) {
  Graph g;
  EXPECT_EQ(MustParse(g, "abs(abs(x))"), MustParse(g, "abs(x)"));
  EXPECT_EQ(MustParse(g, "abs(-abs(-x))"), MustParse(g, "abs(x)"));
  EXPECT_EQ(MustParse(g, "abs(abs(abs(-(-x))))"), MustParse(g, "abs(x)"));
  EXPECT_EQ(MustParse(g, "-abs(-(-abs(x)))"), MustParse(g, "-abs(x)"));
  const NodeId x = g.Var(1);
  EXPECT_EQ(g.Unary(Op::kSign, g.Neg(x)), g.Neg(g.Unary(Op::kSign, x)));
  EXPECT_TRUE(
      std::isfinite(g.Evaluate(g.Diff(MustParse(g, "abs(abs(x*y))"), 1), {0, 0.3, -0.2, 0, 0})));

  const Op ops[] = {Op::kNeg, Op::kAbs, Op::kSign, Op::kStep};
  const double values[] = {-1.5, -0.0, 0.0, 0.25, 2.0};
  int shapes = 0;
  std::function<void(NodeId, std::vector<Op>&)> grow = [&](NodeId node, std::vector<Op>& path) {
    ++shapes;
    for (double value : values) {
      double expected = value;
      for (Op op : path) expected = Apply(op, expected, 0);
      const double found = g.Evaluate(node, {0, value, 0, 0, 0});
      EXPECT_EQ(found, expected) << "at x = " << value << ", path of " << path.size();
    }
    if (path.size() == 5) return;
    for (Op op : ops) {
      path.push_back(op);
      grow(g.Unary(op, node), path);
      path.pop_back();
    }
  };
  std::vector<Op> path;
  grow(x, path);
  EXPECT_EQ(shapes, 1 + 4 + 16 + 64 + 256 + 1024);
}

// d/dvar of `text` against a central difference at `vars`.
void ExpectDerivative(const std::string& text, int var, std::vector<double> vars) {
  Graph g;
  NodeId f = MustParse(g, text);
  NodeId df = g.Diff(f, var);
  const double h = 1e-6 * std::max(1.0, std::fabs(vars[static_cast<size_t>(var)]));
  auto at = [&](double delta) {
    std::vector<double> v = vars;
    v[static_cast<size_t>(var)] += delta;
    return g.Evaluate(f, v);
  };
  const double fd = (at(h) - at(-h)) / (2 * h);
  const double sym = g.Evaluate(df, vars);
  EXPECT_NEAR(sym, fd, 1e-6 * std::max(1.0, std::fabs(fd))) << "d/dvar" << var << " of " << text;
}

// Compositions as users write them (each rule alone: the table test below).
TEST(DiffTest, ParsedCompositionsAgreeWithFiniteDifferences) {
  const std::vector<double> at = {0.3, 0.7, -0.4, 0.2, 1.3};
  const char* cases[] = {
      "-x",
      "x + y",
      "x - y",
      "x * y",
      "x / y",
      "x ^ 3",
      "x ^ y",
      "(-y) ^ 2.5 + x^0.5",
      "pow(x, y)",
      "sin(x)",
      "cos(x)",
      "tan(x)",
      "asin(x)",
      "acos(x)",
      "atan(x)",
      "atan2(y, x)",
      "sinh(x)",
      "cosh(x)",
      "tanh(x)",
      "exp(x)",
      "log(x)",
      "sqrt(x)",
      "abs(y)",
      "abs(x)",
      "min(x, y)",
      "max(x, y)",
      "min(x*x, y+1)",
      "max(2*x, -y)",
      "sin(x*y)^2 + exp(-x/y)",
      "x^-2",
      "1/x",
      "x^x",
      "log(2*x + y*y)",
      "atan2(x*y, 1 + x)",
      "sqrt(x^2 + y^2)",
      "tanh(x - y) * cosh(y)",
  };
  for (const char* c : cases) {
    ExpectDerivative(c, 1, at);
    ExpectDerivative(c, 2, at);
  }
  // Time and velocity variables too.
  ExpectDerivative("sin(3*t) * x + der(x)^2 * t", 0, at);
  ExpectDerivative("sin(3*t) * x + der(x)^2 * t", 3, at);
  ExpectDerivative("u * x^2", 4, at);
}

// Every row's derivative rule of the table (operations.h) against central
// differences, with non-trivial inner functions (so the chain-rule factors
// da, db count), each operand a variable or a constant (pow's two rules),
// both operand orders, at points on either side of the kinks; points where
// the operation is undefined or not smooth are skipped. A new row is
// checked without being listed here.
TEST(DiffTest, EveryTableRowAgreesWithFiniteDifferences) {
  const std::vector<std::vector<double>> points = {
      {0, 0.7, 0.4, 0, 0}, {0, -0.6, 0.5, 0, 0}, {0, -1.6, 0.5, 0, 0}, {0, 0.3, -1.1, 0, 0}};
  for (size_t i = kFirstOperation; i < std::size(kOperationInfo); ++i) {
    const Op op = static_cast<Op>(i);
    int checked = 0;
    Graph g;
    const NodeId x = g.Var(1), y = g.Var(2);
    // u = 0.2 + x y / 2, w = 0.6 + x / 4 - y / 10
    const NodeId u = g.Add(g.Const(0.2), g.Mul(g.Const(0.5), g.Mul(x, y)));
    const NodeId w = g.Sub(g.Add(g.Const(0.6), g.Mul(g.Const(0.25), x)), g.Mul(g.Const(0.1), y));
    std::vector<NodeId> cases;
    if (IsUnary(op)) {
      cases = {g.Unary(op, u), g.Unary(op, w)};
    } else {
      cases = {g.Binary(op, u, w), g.Binary(op, w, u), g.Binary(op, u, g.Const(1.3)),
               g.Binary(op, g.Const(1.3), u), g.Binary(op, x, g.Const(3))};
    }
    for (NodeId f : cases) {
      for (int var : {1, 2}) {
        const NodeId df = g.Diff(f, var);
        for (const std::vector<double>& at : points) {
          const double h = 1e-6;
          auto value = [&](double delta) {
            std::vector<double> v = at;
            v[static_cast<size_t>(var)] += delta;
            return g.Evaluate(f, v);
          };
          const double lo = value(-h), mid = value(0), hi = value(h);
          // Not defined, or a kink or jump within [-h, h].
          if (!std::isfinite(lo) || !std::isfinite(mid) || !std::isfinite(hi)) continue;
          const double left = (mid - lo) / h, right = (hi - mid) / h;
          if (std::fabs(left - right) > 1e-3 * std::max(1.0, std::fabs(left))) continue;
          const double fd = (hi - lo) / (2 * h);
          const double sym = g.Evaluate(df, at);
          EXPECT_NEAR(sym, fd, 1e-6 * std::max(1.0, std::fabs(fd)))
              << "d/dvar" << var << " of " << OpName(op) << " (node " << f << ") at x = " << at[1]
              << ", y = " << at[2];
          ++checked;
        }
      }
    }
    EXPECT_GE(checked, 8) << OpName(op) << ": too few points where it is smooth";
  }
}

// Graph::Tangent and Graph::Gradient (the compiler's velocity terms and
// momenta of a kinetic energy) against Diff, for every table row, with
// operands that share nodes and a repeated operand (u op u): the same
// rules, so the same values to rounding. The tangent's direction is
// (t, x) -> (1, v) with y unseeded; the gradient is every partial.
TEST(DiffTest, TangentAndGradientAgreeWithDiffOnEveryTableRow) {
  const std::vector<std::vector<double>> points = {
      {0.1, 0.7, 0.4, 0.3, 0}, {0.2, -0.6, 0.5, -1.1, 0}, {0.3, 0.3, -1.1, 0.8, 0}};
  for (size_t i = kFirstOperation; i < std::size(kOperationInfo); ++i) {
    const Op op = static_cast<Op>(i);
    Graph g;
    const NodeId t = g.Var(0), x = g.Var(1), y = g.Var(2), v = g.Var(3);
    const NodeId u = g.Add(g.Add(g.Const(0.2), g.Mul(g.Const(0.5), g.Mul(x, y))), g.Mul(v, t));
    const NodeId w = g.Sub(g.Add(g.Const(0.6), g.Mul(g.Const(0.25), x)), g.Mul(g.Const(0.1), y));
    std::vector<NodeId> cases;
    if (IsUnary(op)) {
      cases = {g.Unary(op, u), g.Mul(g.Unary(op, w), u)};
    } else {
      cases = {g.Binary(op, u, w), g.Binary(op, w, u), g.Binary(op, u, u),
               g.Binary(op, u, g.Const(1.3)), g.Binary(op, x, g.Const(3))};
    }
    const std::vector<NodeId> seeds = {g.Const(1), v, -1, -1, -1};
    int checked = 0;
    // Each pair: (what Diff gives, what the new pass gives).
    for (NodeId f : cases) {
      std::vector<std::pair<NodeId, NodeId>> pairs = {
          {g.Add(g.Diff(f, 0), g.Mul(g.Diff(f, 1), v)), g.Tangent(f, 0, seeds)}};
      const std::vector<NodeId> grad = g.Gradient(f, 5);
      ASSERT_EQ(grad.size(), 5u);
      for (int var = 0; var < 5; ++var)
        pairs.push_back({g.Diff(f, var), grad[static_cast<size_t>(var)]});
      for (const auto& [want_node, got_node] : pairs) {
        for (const std::vector<double>& at : points) {
          const double want = g.Evaluate(want_node, at), got = g.Evaluate(got_node, at);
          if (!std::isfinite(want)) continue;
          EXPECT_NEAR(got, want, 1e-13 * std::max(1.0, std::fabs(want)))
              << OpName(op) << " (node " << f << ") at x = " << at[1] << ", y = " << at[2];
          ++checked;
        }
      }
    }
    EXPECT_GE(checked, 12) << OpName(op) << ": too few points where it is defined";
    EXPECT_FALSE(g.overflowed());
  }
}

// One tangent of many momenta costs one pass over their shared graph: for
// p_i = v_i * c_i with c_i = sin(x_1 + ... + x_i) (a chain's shared
// partial sums), sum_j dp_i/dx_j v_j over all i builds O(n^2) nodes, the
// tangents O(n).
TEST(DiffTest, TangentOfSharedChainsIsLinear) {
  const int n = 60;
  Graph per_variable, tangent;
  size_t sizes[2];
  for (Graph* g : {&per_variable, &tangent}) {
    std::vector<NodeId> seeds(static_cast<size_t>(2 * n), -1);
    for (int j = 0; j < n; ++j) seeds[static_cast<size_t>(j)] = g->Var(n + j);
    NodeId partial = g->Const(0);
    const size_t before = g->size();
    for (int i = 0; i < n; ++i) {
      partial = g->Add(partial, g->Var(i));
      const NodeId p = g->Mul(g->Var(n + i), g->Unary(Op::kSin, partial));
      if (g == &tangent) {
        g->Tangent(p, 0, seeds);
      } else {
        NodeId sum = g->Const(0);
        for (int j = 0; j < n; ++j) sum = g->Add(sum, g->Mul(g->Diff(p, j), g->Var(n + j)));
      }
    }
    sizes[g == &tangent] = g->size() - before;
  }
  EXPECT_GT(sizes[0], static_cast<size_t>(n * n / 2));
  EXPECT_LT(sizes[1], static_cast<size_t>(12 * n));
}

// Reverse accumulation builds O(nodes) for all the partial derivatives: the
// product of n factors sin(x_i) has n derivatives of n - 1 factors each,
// n^2 nodes differentiated one variable at a time, O(n) at once.
TEST(DiffTest, GradientOfAProductIsLinear) {
  const int n = 60;
  Graph per_variable, reverse;
  size_t sizes[2];
  for (Graph* g : {&per_variable, &reverse}) {
    NodeId f = g->Const(1);
    for (int i = 0; i < n; ++i) f = g->Mul(f, g->Unary(Op::kSin, g->Var(i)));
    const size_t before = g->size();
    if (g == &reverse) {
      g->Gradient(f, n);
    } else {
      for (int i = 0; i < n; ++i) g->Diff(f, i);
    }
    sizes[g == &reverse] = g->size() - before;
  }
  EXPECT_GT(sizes[0], static_cast<size_t>(n * n / 2));
  EXPECT_LT(sizes[1], static_cast<size_t>(8 * n));
}

TEST(DiffTest, SecondDerivativesAgreeWithFiniteDifferences) {
  Graph g;
  NodeId f = MustParse(g, "x^2 * cos(y) + exp(x*y)");
  NodeId fx = g.Diff(f, 1);
  NodeId fxy = g.Diff(fx, 2);
  std::vector<double> v = {0, 0.3, 0.5, 0, 0};
  const double h = 1e-5;
  auto fx_at = [&](double y) {
    std::vector<double> w = v;
    w[2] = y;
    return g.Evaluate(fx, w);
  };
  EXPECT_NEAR(g.Evaluate(fxy, v), (fx_at(0.5 + h) - fx_at(0.5 - h)) / (2 * h), 1e-7);
}

TEST(DiffTest, DependsOnIsExact) {
  Graph g;
  NodeId f = MustParse(g, "x * der(x) + t");
  EXPECT_TRUE(g.DependsOn(f, 1));
  EXPECT_TRUE(g.DependsOn(f, 3));
  EXPECT_TRUE(g.DependsOn(f, 0));
  EXPECT_FALSE(g.DependsOn(f, 2));
  // d2/dv2 of v^2 x is 2x: no velocity left.
  NodeId m = g.Diff(g.Diff(MustParse(g, "der(x)^2 * x"), 3), 3);
  EXPECT_FALSE(g.DependsOn(m, 3));
}

// Differentiating a chain of local expressions by every variable costs the
// part of the graph that may depend on each variable, not variables x
// graph: the Jacobian of n local constraints (4 variables each) over 2n
// variables memoizes O(n) entries, and its entries are the derivatives.
TEST(DiffTest, LocalExpressionsCostLinearWorkOverAllVariables) {
  for (int n : {100, 400}) {
    Graph g;
    std::vector<NodeId> x, y, c;
    for (int i = 0; i < n; ++i) {
      x.push_back(g.Var(2 * i));
      y.push_back(g.Var(2 * i + 1));
    }
    for (int i = 0; i < n; ++i) {
      const NodeId px = i ? x[i - 1] : g.Const(0), py = i ? y[i - 1] : g.Const(0);
      const NodeId dx = g.Sub(x[i], px), dy = g.Sub(y[i], py);
      c.push_back(g.Mul(g.Const(0.5), g.Sub(g.Add(g.Mul(dx, dx), g.Mul(dy, dy)), g.Const(1))));
    }
    int nonzero = 0;
    for (int i = 0; i < n; ++i) {
      for (int v = 0; v < 2 * n; ++v) {
        const NodeId d = g.Diff(c[i], v);
        const bool local = v / 2 == i || v / 2 == i - 1;
        EXPECT_EQ(d != 0, local) << i << " " << v;
        nonzero += d != 0;
        if (local) {
          // The value: d/dx_i of ((x_i - x_{i-1})^2 + ...)/2 - 1/2 at
          // x_k = k, y_k = 2k is (x_i - x_{i-1}) = 1 (y: 2), with the
          // opposite sign for the previous point.
          std::vector<double> vars(static_cast<size_t>(2 * n));
          for (int k = 0; k < n; ++k) {
            vars[static_cast<size_t>(2 * k)] = k + 1;
            vars[static_cast<size_t>(2 * k + 1)] = 2 * (k + 1);
          }
          const double sign = v / 2 == i ? 1 : -1;
          EXPECT_EQ(g.Evaluate(d, vars), sign * (v % 2 ? 2 : 1)) << i << " " << v;
        }
      }
    }
    EXPECT_EQ(nonzero, 4 * n - 2);
    EXPECT_FALSE(g.DependsOn(c[n - 1], 0));
    EXPECT_TRUE(g.DependsOn(c[n - 1], 2 * n - 1));
    // About 10 memo entries per constraint and variable it has, not 2n.
    EXPECT_LT(g.derivative_nodes(), 20 * 4 * n) << n;
  }
}

}  // namespace
}  // namespace tether::expr
