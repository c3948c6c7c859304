// Named definitions (SystemSpec.definitions, issue 23 point 1): parsed once
// into the expression graph and shared by every later expression; their
// errors name the definition's field and column; a description written
// with them runs bit for bit as the same description written out.
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/internal/expr/expression.h"
#include "engine/internal/expr/parser.h"
#include "engine/session_export.h"
#include "engine/simulation.h"
#include "large_models.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::SpecFromJson;

v1::SimulationSpec LoadExample(const std::string& name) {
  std::ifstream in(std::string(TETHER_SOURCE_DIR) + "/examples/" + name);
  std::stringstream json;
  json << in.rdbuf();
  EXPECT_FALSE(json.str().empty()) << name;
  return SpecFromJson(json.str());
}

// ---- Parser -----------------------------------------------------------------

// Variables: 0 = t, 1 = x, 2 = y, 3 = der(x), 4 = der(y), 5 = u.
struct ParserFixture {
  expr::Scope scope;
  expr::Graph graph;
  std::vector<expr::Definition> definitions;

  ParserFixture() {
    scope.time_var = 0;
    scope.coordinates = {{"x", 1}, {"y", 2}};
    scope.velocities = {{"x", 3}, {"y", 4}};
    scope.inputs = {{"u", 5}};
    scope.parameters = {{"k", 2.5}};
    scope.definitions = &definitions;
  }
  // Parses `text` as the next definition `name`.
  expr::NodeId Define(const std::string& name, const std::string& text) {
    const int index = static_cast<int>(definitions.size());
    scope.visible_definitions = index;
    scope.definition_names[name] = index;
    definitions.push_back({});
    definitions.back().index = index;
    definitions.back().name = name;
    expr::ParseError error;
    expr::Uses uses;
    auto node = expr::Parse(text, scope, &graph, &error, &uses);
    EXPECT_TRUE(node) << text << ": " << error.message;
    definitions.back().node = node.value_or(-1);
    definitions.back().velocity = uses.velocity;
    definitions.back().input = uses.input;
    scope.visible_definitions = index + 1;
    return definitions.back().node;
  }
  std::optional<expr::NodeId> Parse(const std::string& text, expr::ParseError* error,
                                    expr::Uses* uses = nullptr) {
    return expr::Parse(text, scope, &graph, error, uses);
  }
};

TEST(DefinitionsParserTest, ANameIsTheNodeOfItsExpressionNotACopy) {
  ParserFixture f;
  const expr::NodeId s = f.Define("s", "sin(x)*k + y");
  const size_t size = f.graph.size();
  expr::ParseError error;
  expr::Uses uses;
  auto used = f.Parse("s*s + s", &error, &uses);
  ASSERT_TRUE(used) << error.message;
  // s*s + s adds s^2 and the sum, nothing of s itself.
  EXPECT_EQ(f.graph.size(), size + 3);  // the constant 2, s^2, s^2 + s
  EXPECT_EQ(uses.definitions, (std::vector<int>{0, 0, 0}));
  // Written out, hash-consing gives the very same node.
  auto expanded = f.Parse("(sin(x)*k + y)*(sin(x)*k + y) + (sin(x)*k + y)", &error);
  EXPECT_EQ(expanded, used);
  EXPECT_EQ(
      f.graph.Evaluate(*used, {0, 0.3, -0.2, 0, 0, 0}),
      f.graph.Evaluate(s, {0, 0.3, -0.2, 0, 0, 0}) * f.graph.Evaluate(s, {0, 0.3, -0.2, 0, 0, 0}) +
          f.graph.Evaluate(s, {0, 0.3, -0.2, 0, 0, 0}));
}

TEST(DefinitionsParserTest, DerOfADefinitionIsItsTimeDerivative) {
  ParserFixture f;
  f.Define("px", "k*sin(x)*y + t^2");
  expr::ParseError error;
  expr::Uses uses;
  auto d = f.Parse("der(px)", &error, &uses);
  ASSERT_TRUE(d) << error.message;
  EXPECT_EQ(uses.velocity, "der(px)");
  // d/dt = k cos(x) y x' + k sin(x) y' + 2t
  const std::vector<double> at = {0.7, 0.3, -0.2, 1.5, -0.4, 0};
  EXPECT_NEAR(f.graph.Evaluate(*d, at),
              2.5 * std::cos(0.3) * -0.2 * 1.5 + 2.5 * std::sin(0.3) * -0.4 + 2 * 0.7, 1e-14);
  // Built once: a second use is the same node and adds nothing.
  const size_t size = f.graph.size();
  EXPECT_EQ(f.Parse("der(px)", &error), d);
  EXPECT_EQ(f.graph.size(), size);

  // Not for definitions of velocities or inputs.
  f.Define("w", "der(x)*y");
  f.Define("f", "u + x");
  EXPECT_FALSE(f.Parse("1 + der(w)", &error));
  EXPECT_EQ(error.column, 9);  // the definition's name
  EXPECT_NE(error.message.find("der(w) is not defined: definition 'w' uses der(x)"),
            std::string::npos)
      << error.message;
  EXPECT_FALSE(f.Parse("der(f)", &error));
  EXPECT_NE(error.message.find("definition 'f' uses input 'u'"), std::string::npos)
      << error.message;
}

TEST(DefinitionsParserTest, OrderSelfReferenceAndRestrictions) {
  ParserFixture f;
  f.Define("a", "x + 1");
  // b is known but comes later: as if parsing definition 1 of 3.
  f.scope.definition_names["b"] = 2;
  f.scope.visible_definitions = 1;
  expr::ParseError error;
  EXPECT_FALSE(f.Parse("a + b", &error));
  EXPECT_EQ(error.column, 5);
  EXPECT_EQ(error.message,
            "definition 'b' is used before it is defined (it is system.definitions[2]); a "
            "definition may use only the definitions before it");
  f.scope.definition_names["c"] = 1;
  EXPECT_FALSE(f.Parse("c", &error));
  EXPECT_NE(error.message.find("definition 'c' refers to itself"), std::string::npos);

  f.scope.definition_names.erase("b");
  f.scope.definition_names.erase("c");
  f.Define("v", "der(y)^2");
  f.Define("g", "v*u");
  f.scope.allow_velocities = false;
  f.scope.allow_inputs = false;
  f.scope.restriction = "no velocities here";
  EXPECT_FALSE(f.Parse("x + g", &error));
  EXPECT_EQ(error.column, 5);
  EXPECT_EQ(error.message,
            "definition 'g' uses der(y), which is not allowed here: no "
            "velocities here");
  f.scope.allow_velocities = true;
  EXPECT_FALSE(f.Parse("x + g", &error));
  EXPECT_EQ(error.message,
            "definition 'g' uses input 'u', which is not allowed here: no "
            "velocities here");
  EXPECT_TRUE(f.Parse("a*v", &error)) << error.message;

  // A broken definition: a consequence, flagged so that it is not reported
  // twice.
  f.definitions[0].node = -1;
  EXPECT_FALSE(f.Parse("2*a", &error));
  EXPECT_TRUE(error.follows_from_definition);
  // Unknown names list the definitions.
  error = {};
  EXPECT_FALSE(f.Parse("zz", &error));
  EXPECT_FALSE(error.follows_from_definition);
  EXPECT_NE(error.message.find("a definition (a, v, g)"), std::string::npos) << error.message;
}

// ---- Compiler and validation ------------------------------------------------

// A pendulum in Cartesian coordinates using definitions in every kind of
// expression: kinetic and potential energy, forces, constraint, outputs.
constexpr const char* kCartesian = R"j({"system":{"coordinates":["x","y"],
  "parameters":[{"name":"l","value":1},{"name":"grav","value":9.81},{"name":"m","value":2}],
  "inputs":[{"name":"push","defaultValue":0.5}],
  "definitions":[
    {"name":"r2","expression":"x^2 + y^2"},
    {"name":"speed2","expression":"der(x)^2 + der(y)^2"},
    {"name":"kinetic","expression":"m*speed2/2"},
    {"name":"height","expression":"y"},
    {"name":"drag","expression":"-0.1*der(x) + push"},
    {"name":"energy","expression":"kinetic + m*grav*height"}],
  "kineticEnergy":"kinetic","potentialEnergy":"m*grav*height",
  "generalizedForces":["drag","0"],
  "constraints":[{"name":"rod","expression":"(r2 - l^2)/2"}],
  "baumgarte":{"alpha":10,"beta":10},
  "outputs":[{"name":"E","expression":"energy"},{"name":"r","expression":"sqrt(r2)"}]},
  "initial":{"q":[0.6,-0.8],"v":[0.8,0.6]},
  "integrator":{"method":"RK4","stepSize":0.001}})j";

// Every frame of a run of `steps` steps (every 50th) and the certificate,
// serialized.
std::vector<std::string> RunBits(const v1::SimulationSpec& spec, int steps);

std::map<std::string, std::string> ByField(const v1::ValidationReport& report,
                                           v1::Diagnostic::Severity severity) {
  std::map<std::string, std::string> out;
  for (const auto& d : report.diagnostics()) {
    if (d.severity() == severity) out[d.field()] += d.message();
  }
  return out;
}

TEST(DefinitionsTest, UsableInEnergiesForcesConstraintsAndOutputs) {
  v1::ValidationReport report = Validate(SpecFromJson(kCartesian));
  ASSERT_TRUE(report.valid()) << report.DebugString();
  EXPECT_TRUE(ByField(report, v1::Diagnostic::WARNING).empty()) << report.DebugString();
  const v1::Frame& f = report.initial();
  ASSERT_EQ(f.outputs_size(), 2);
  EXPECT_DOUBLE_EQ(f.outputs(0), 2 * 1.0 / 2 + 2 * 9.81 * -0.8);
  EXPECT_DOUBLE_EQ(f.outputs(1), 1.0);
  // The force uses the input's default through its definition: the tangential
  // acceleration is that of the same pendulum written out.
  v1::SimulationSpec expanded = SpecFromJson(kCartesian);
  auto* sys = expanded.mutable_system();
  sys->clear_definitions();
  sys->set_kinetic_energy("m*(der(x)^2 + der(y)^2)/2");
  sys->set_potential_energy("m*grav*y");
  sys->set_generalized_forces(0, "-0.1*der(x) + push");
  sys->mutable_constraints(0)->set_expression("((x^2 + y^2) - l^2)/2");
  sys->mutable_outputs(0)->set_expression("m*(der(x)^2 + der(y)^2)/2 + m*grav*y");
  sys->mutable_outputs(1)->set_expression("sqrt(x^2 + y^2)");
  v1::ValidationReport plain = Validate(expanded);
  ASSERT_TRUE(plain.valid()) << plain.DebugString();
  EXPECT_EQ(plain.initial().SerializeAsString(), f.SerializeAsString())
      << plain.initial().DebugString() << f.DebugString();
  // And a run: every frame and the certificate, bit for bit.
  EXPECT_TRUE(RunBits(SpecFromJson(kCartesian), 500) == RunBits(expanded, 500));
}

TEST(DefinitionsTest, ErrorsNameTheDefinitionItsFieldAndTheColumn) {
  auto with = [](const std::string& definitions, const std::string& potential = "y") {
    return SpecFromJson(
        R"j({"system":{"coordinates":["x","y"],"parameters":[{"name":"k","value":1}],
            "inputs":[{"name":"u","defaultValue":0}],"masses":{"values":[1,1]},
            "definitions":[)j" +
        definitions + R"j(],"potentialEnergy":")j" + potential +
        R"j(","outputs":[{"name":"o","expression":"a"}]},
            "initial":{"q":[0,0]},"integrator":{"method":"RK4","stepSize":0.01}})j");
  };
  auto errors = [](const v1::SimulationSpec& spec) {
    v1::ValidationReport report = Validate(spec);
    EXPECT_FALSE(report.valid());
    return ByField(report, v1::Diagnostic::ERROR);
  };
  // Order: a later definition, and itself.
  auto e = errors(with(R"({"name":"a","expression":"x + b"},{"name":"b","expression":"y"})"));
  ASSERT_EQ(e.size(), 1u) << e.begin()->first;
  EXPECT_EQ(e["system.definitions[0].expression"],
            "column 5: definition 'b' is used before it is defined (it is "
            "system.definitions[1]); a definition may use only the definitions before it");
  e = errors(with(R"({"name":"a","expression":"2*a"})"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e["system.definitions[0].expression"].find("column 3: definition 'a' refers to itself"),
            std::string::npos);
  // Shadowing a coordinate, a parameter, an input; a duplicate; reserved.
  for (const auto& [name, owner] : std::vector<std::pair<std::string, std::string>>{
           {"x", "coordinate system.coordinates[0]"},
           {"k", "parameter system.parameters[0]"},
           {"u", "input system.inputs[0]"},
           {"a", "definition system.definitions[0]"}}) {
    e = errors(
        with(R"({"name":"a","expression":"x"},{"name":")" + name + R"(","expression":"y"})"));
    ASSERT_EQ(e.size(), 1u) << name;
    EXPECT_EQ(e["system.definitions[1].name"],
              "name '" + name + "' is already used by " + owner + "; names must be unique");
  }
  e = errors(with(R"({"name":"a","expression":"x"},{"name":"sin","expression":"y"})"));
  EXPECT_NE(e["system.definitions[1].name"].find("'sin' is reserved"), std::string::npos);
  // A syntax error in a definition is reported once, at the definition, not
  // again at every expression that uses it.
  e = errors(with(R"({"name":"a","expression":"x +"})", "a*y"));
  ASSERT_EQ(e.size(), 1u) << e.begin()->first;
  EXPECT_NE(e["system.definitions[0].expression"].find("column 4: expected a number"),
            std::string::npos)
      << e["system.definitions[0].expression"];
  // What a definition uses must be allowed where it is used.
  e = errors(with(R"({"name":"a","expression":"der(x)*x"})", "y + a"));
  EXPECT_EQ(e["system.potential_energy"],
            "column 5: definition 'a' uses der(x), which is not allowed here: the potential "
            "energy V(q, t) may use coordinates, parameters and t");
  e = errors(with(R"({"name":"a","expression":"u*x"},{"name":"b","expression":"a + 1"})", "b"));
  EXPECT_EQ(e["system.potential_energy"],
            "column 1: definition 'b' uses input 'u', which is not allowed here: the potential "
            "energy V(q, t) may use coordinates, parameters and t");
}

TEST(DefinitionsTest, ConstraintsAndKineticEnergyRefuseWhatTheyCannotUse) {
  v1::SimulationSpec spec = SpecFromJson(kCartesian);
  spec.mutable_system()->mutable_constraints(0)->set_expression("(r2 - l^2)/2 + 0*speed2");
  auto e = ByField(Validate(spec), v1::Diagnostic::ERROR);
  EXPECT_EQ(e["system.constraints[0].expression"],
            "column 18: definition 'speed2' uses der(x), which is not allowed here: holonomic "
            "constraints g(q, t) may use coordinates, parameters and t");
  spec = SpecFromJson(kCartesian);
  spec.mutable_system()->set_kinetic_energy("kinetic + 0*drag");
  e = ByField(Validate(spec), v1::Diagnostic::ERROR);
  EXPECT_EQ(e["system.kinetic_energy"],
            "column 13: definition 'drag' uses input 'push', which is not allowed here: the "
            "kinetic energy may use coordinates, der(), parameters and t");
}

TEST(DefinitionsTest, UnusedDefinitionsAreWarnings) {
  v1::SimulationSpec spec = SpecFromJson(kCartesian);
  auto* defs = spec.mutable_system()->mutable_definitions();
  // "spare" used only by "spare2", which nothing uses: both unused.
  auto* spare = defs->Add();
  spare->set_name("spare");
  spare->set_expression("x*y");
  auto* spare2 = defs->Add();
  spare2->set_name("spare2");
  spare2->set_expression("spare + 1");
  v1::ValidationReport report = Validate(spec);
  EXPECT_TRUE(report.valid());
  auto w = ByField(report, v1::Diagnostic::WARNING);
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w["system.definitions[6]"],
            "definition 'spare' is not used: no energy, force, constraint, output or used "
            "definition refers to it; expected each definition to be used (remove it or use it)");
  EXPECT_NE(w["system.definitions[7]"].find("'spare2' is not used"), std::string::npos);
  // Used through an output, both are used.
  auto* out = spec.mutable_system()->add_outputs();
  out->set_name("s");
  out->set_expression("spare2");
  EXPECT_TRUE(ByField(Validate(spec), v1::Diagnostic::WARNING).empty());
}

// A definition chain that doubles the expression at each step, d_k =
// d_(k-1) * d_(k-1) + sin(d_(k-1)): as text 2^k long, in the graph a few
// nodes per step. Its depth grows with k: a long chain is refused with the
// depth limit at the definition that passes it, quickly; a short one
// compiles, and its derivatives stay linear in k.
v1::SimulationSpec DoublingChain(int k) {
  v1::SimulationSpec spec;
  auto* sys = spec.mutable_system();
  sys->add_coordinates("x");
  sys->mutable_masses()->add_values(1);
  auto* d = sys->add_definitions();
  d->set_name("d0");
  d->set_expression("x");
  for (int i = 1; i <= k; ++i) {
    d = sys->add_definitions();
    const std::string prev = "d" + std::to_string(i - 1);
    d->set_name("d" + std::to_string(i));
    d->set_expression(prev + "*" + prev + "*1e-3 + sin(" + prev + ")");
  }
  sys->set_potential_energy("d" + std::to_string(k));
  spec.mutable_initial()->add_q(0.1);
  spec.mutable_integrator()->set_method(v1::IntegratorSpec::RK4);
  spec.mutable_integrator()->set_step_size(0.01);
  return spec;
}

TEST(DefinitionsTest, ADoublingChainIsBoundedInTheGraphAndRefusedClearlyWhenTooDeep) {
  // 300 steps: 2^300 characters written out; a few thousand nodes here.
  v1::ValidationReport report = Validate(DoublingChain(300));
  EXPECT_TRUE(report.valid()) << report.DebugString().substr(0, 2000);

  const auto start = std::chrono::steady_clock::now();
  report = Validate(DoublingChain(20'000));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(report.valid());
  ASSERT_EQ(report.diagnostics_size(), 1) << report.DebugString().substr(0, 2000);
  const v1::Diagnostic& d = report.diagnostics(0);
  EXPECT_EQ(d.field().rfind("system.definitions[", 0), 0u) << d.field();
  EXPECT_NE(d.message().find("nests deeper than 20000 operations"), std::string::npos)
      << d.message();
  EXPECT_LT(seconds, 20.0);

  // Within the depth limit but past the derivative budget: the limit names
  // the expression being differentiated.
  CompileOptions options;
  options.limits.max_derivative_nodes = 1000;
  auto created = Simulation::Create(DoublingChain(2000), nullptr, options);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(created.status().violations().at(0).field, "system.potential_energy");
}

// Many coordinates, a tree of definitions over them, and der() of many of
// them in outputs: each time derivative has a term per coordinate its
// definition depends on; the derivative limit stops it, naming the output.
TEST(DefinitionsTest, TimeDerivativesOfManyDefinitionsAreBoundedByTheCompileLimits) {
  v1::SimulationSpec spec;
  auto* sys = spec.mutable_system();
  const int d = 256, n = 4000;
  for (int i = 0; i < d; ++i) {
    sys->add_coordinates("q" + std::to_string(i));
    sys->mutable_masses()->add_values(1);
    spec.mutable_initial()->add_q(0.1);
  }
  auto* a = sys->add_definitions();
  a->set_name("a0");
  a->set_expression("q0");
  for (int k = 1; k < n; ++k) {
    a = sys->add_definitions();
    a->set_name("a" + std::to_string(k));
    a->set_expression("a" + std::to_string(k / 2) + "*q" + std::to_string(k % d) + " + a" +
                      std::to_string((k - 1) / 2));
  }
  for (int k = 0; k < n; k += 3) {
    auto* o = sys->add_outputs();
    o->set_name("o" + std::to_string(k));
    o->set_expression("der(a" + std::to_string(k) + ")");
  }
  spec.mutable_integrator()->set_method(v1::IntegratorSpec::RK4);
  spec.mutable_integrator()->set_step_size(0.01);
  CompileOptions options;
  options.limits.max_derivative_nodes = 200'000;
  auto created = Simulation::Create(spec, nullptr, options);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(created.status().violations().at(0).field.rfind("system.outputs[", 0), 0u)
      << created.status().ToString();
  EXPECT_NE(created.status().message().find("max_derivative_nodes = 200000"), std::string::npos);
}

TEST(DefinitionsTest, TooManyDefinitionsAreRefusedBeforeParsing) {
  v1::SimulationSpec spec = SpecFromJson(kCartesian);
  for (int i = 0; i < 65537; ++i) {
    auto* d = spec.mutable_system()->add_definitions();
    d->set_name("z" + std::to_string(i));
    d->set_expression("1");
  }
  auto e = ByField(Validate(spec), v1::Diagnostic::ERROR);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e["system.definitions"], "65543 definitions; at most 65536 are supported");
}

// ---- Physics: the same bits as the description written out -------------------

std::vector<std::string> RunBits(const v1::SimulationSpec& spec, int steps) {
  RunOptions options;
  options.steps = static_cast<uint64_t>(steps);
  options.every = 50;
  testing::RunOutput out = testing::RunSpec(spec, options);
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
  std::vector<std::string> bits;
  for (const v1::Frame& f : out.frames) bits.push_back(f.SerializeAsString());
  bits.push_back(out.certificate.SerializeAsString());
  return bits;
}

TEST(DefinitionsPhysicsTest, AnAngleChainWithDefinitionsRunsBitForBitAsWrittenOut) {
  for (int n : {2, 10}) {
    const v1::SimulationSpec with = SpecFromJson(tether_bench::AngleChainDefinitions(n));
    const v1::SimulationSpec without = SpecFromJson(tether_bench::AngleChain(n));
    ASSERT_EQ(with.system().definitions_size(), 3 * n);
    const auto a = RunBits(with, 1000), b = RunBits(without, 1000);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(a[i] == b[i]) << "n = " << n << ", frame " << i;
  }
}

// examples/double_pendulum_definitions.json: tip positions as definitions,
// T from their time derivatives der(x1) ... against the classical double
// pendulum's kinetic energy written out in the angles.
TEST(DefinitionsPhysicsTest, DoublePendulumFromDerOfDefinitionsMatchesTheClassicalForm) {
  const v1::SimulationSpec with = LoadExample("double_pendulum_definitions.json");
  v1::SimulationSpec classical = with;
  auto* sys = classical.mutable_system();
  sys->clear_definitions();
  sys->clear_outputs();
  sys->set_kinetic_energy(
      "(m1 + m2)*l1^2*der(th1)^2/2 + m2*l2^2*der(th2)^2/2 + "
      "m2*l1*l2*cos(th1 - th2)*der(th1)*der(th2)");
  sys->set_potential_energy("-(m1 + m2)*grav*l1*cos(th1) - m2*grav*l2*cos(th2)");
  RunOptions options;
  options.steps = 2000;
  options.every = 2000;
  options.emit_start = false;
  testing::RunOutput a = testing::RunSpec(with, options), b = testing::RunSpec(classical, options);
  ASSERT_TRUE(a.status.ok() && b.status.ok()) << a.status.ToString() << b.status.ToString();
  ASSERT_EQ(a.frames.size(), 1);
  ASSERT_EQ(b.frames.size(), 1);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(a.frames[0].q(i), b.frames[0].q(i), 1e-12);
    EXPECT_NEAR(a.frames[0].v(i), b.frames[0].v(i), 1e-11);
  }
  // Energy (an output built from the definitions) is conserved to RK4's
  // accuracy over 2 s.
  const double e0 = Validate(with).initial().outputs(2);
  EXPECT_NEAR(a.frames[0].outputs(2), e0, 1e-8);

  // With the tips' velocities written by hand instead of der(x1) ...: the
  // same bits (the time derivative builds the same nodes as the chain
  // rule written out).
  v1::SimulationSpec by_hand = with;
  auto* defs = by_hand.mutable_system()->mutable_definitions();
  std::vector<std::pair<std::string, std::string>> list;
  for (const auto& d : *defs) {
    if (d.name() == "kinetic") {
      list.emplace_back("vx1", "l1*cos(th1)*der(th1)");
      list.emplace_back("vy1", "l1*sin(th1)*der(th1)");
      list.emplace_back("vx2", "vx1 + l2*cos(th2)*der(th2)");
      list.emplace_back("vy2", "vy1 + l2*sin(th2)*der(th2)");
      list.emplace_back("kinetic", "m1*(vx1^2 + vy1^2)/2 + m2*(vx2^2 + vy2^2)/2");
    } else {
      list.emplace_back(d.name(), d.expression());
    }
  }
  defs->Clear();
  for (const auto& [name, expression] : list) {
    auto* d = defs->Add();
    d->set_name(name);
    d->set_expression(expression);
  }
  EXPECT_TRUE(RunBits(with, 2000) == RunBits(by_hand, 2000));
}

// ---- Export and import --------------------------------------------------------

TEST(DefinitionsTest, ExportImportKeepsTheDefinitionsAndContinuesBitForBit) {
  const v1::SimulationSpec spec = SpecFromJson(kCartesian);
  auto sim = testing::CreateOrFail(spec);
  ASSERT_TRUE(sim);
  RunOptions options;
  options.steps = 100;
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  ASSERT_TRUE(sim->BeginRun(options).ok());
  while (sim->run_active()) ASSERT_TRUE(sim->Advance(1000, &frames).ok());
  const std::string bytes = ExportSimulation(*sim);
  v1::SessionExport decoded;
  ASSERT_TRUE(DecodeSessionExport(bytes, &decoded).ok());
  EXPECT_EQ(decoded.spec().system().definitions_size(), 6);
  EXPECT_EQ(decoded.spec().SerializeAsString(), spec.SerializeAsString());
  // The hash covers the definitions: another definition is another spec.
  v1::SimulationSpec changed = spec;
  changed.mutable_system()->mutable_definitions(0)->set_expression("y^2 + x^2");
  EXPECT_NE(SpecSha256(changed), SpecSha256(spec));

  auto imported = ImportSimulation(bytes);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  google::protobuf::RepeatedPtrField<v1::Frame> original_next, imported_next;
  ASSERT_TRUE(sim->BeginRun(options).ok());
  while (sim->run_active()) ASSERT_TRUE(sim->Advance(1000, &original_next).ok());
  ASSERT_TRUE((*imported)->BeginRun(options).ok());
  while ((*imported)->run_active()) ASSERT_TRUE((*imported)->Advance(1000, &imported_next).ok());
  ASSERT_EQ(original_next.size(), imported_next.size());
  for (int i = 0; i < original_next.size(); ++i) {
    EXPECT_EQ(original_next[i].SerializeAsString(), imported_next[i].SerializeAsString()) << i;
  }
}

}  // namespace
}  // namespace tether
