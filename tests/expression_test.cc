// Parser, simplification and symbolic derivatives (every rule against
// central finite differences).
#include <cmath>
#include <functional>
#include <numbers>

#include <gtest/gtest.h>

#include "engine/internal/expression.h"
#include "engine/internal/parser.h"

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
  EXPECT_DOUBLE_EQ(Eval("8 / 4 / 2"), 1);    // left associative
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

TEST(DiffTest, EveryRuleAgreesWithFiniteDifferences) {
  const std::vector<double> at = {0.3, 0.7, -0.4, 0.2, 1.3};
  const char* cases[] = {
      "-x", "x + y", "x - y", "x * y", "x / y", "x ^ 3", "x ^ y", "(-y) ^ 2.5 + x^0.5",
      "pow(x, y)", "sin(x)", "cos(x)", "tan(x)", "asin(x)", "acos(x)", "atan(x)",
      "atan2(y, x)", "sinh(x)", "cosh(x)", "tanh(x)", "exp(x)", "log(x)", "sqrt(x)",
      "abs(y)", "abs(x)", "min(x, y)", "max(x, y)", "min(x*x, y+1)", "max(2*x, -y)",
      "sin(x*y)^2 + exp(-x/y)", "x^-2", "1/x", "x^x", "log(2*x + y*y)",
      "atan2(x*y, 1 + x)", "sqrt(x^2 + y^2)", "tanh(x - y) * cosh(y)",
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

}  // namespace
}  // namespace tether::expr
