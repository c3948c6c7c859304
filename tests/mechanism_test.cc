// The mechanism compiler's and the URDF reader's checks: every bad input is
// an error naming the element (a field path, or the file's line and
// element), and what a good mechanism compiles to (engine/mechanism.h,
// client/urdf/urdf_import.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/mechanism.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "urdf/urdf_import.h"

namespace tether {
namespace {

// A two-link arm; `patch` is spliced into the mechanism's JSON.
std::string Arm(
    const std::string& bodies_extra = "", const std::string& joints_extra = "",
    const std::string& joint2 = R"("type": "REVOLUTE", "axis": {"y": 1})",
    const std::string& mass2 = R"("mass": 1, "inertia": {"ixx": 0.01, "iyy": 0.01, "izz": 0.01})") {
  return R"({"system": {"mechanism": {
    "bodies": [{"name": "world"},
               {"name": "a", "mass": 1, "inertialOrigin": {"xyz": {"x": 0.5}}, "inertia": {"ixx": 0.01, "iyy": 0.1, "izz": 0.1}},
               {"name": "b", )" +
         mass2 + R"(})" + bodies_extra + R"(],
    "joints": [{"name": "j1", "type": "REVOLUTE", "parent": "world", "child": "a", "axis": {"z": 1}},
               {"name": "j2", "parent": "a", "child": "b", "origin": {"xyz": {"x": 1}}, )" +
         joint2 + R"(})" + joints_extra + R"(],
    "gravity": {"z": -9.81}}},
  "initial": {"q": [0, 0]}, "integrator": {"method": "RK4", "stepSize": 0.001}})";
}

std::vector<v1::Diagnostic> Errors(const std::string& json) {
  v1::SimulationSpec spec;
  Status s = ParseSpecJson(json, &spec);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<v1::Diagnostic> d;
  (void)ExpandMechanism(spec.system(), &d);
  return d;
}

// The first error's field, and its message containing `text`.
void ExpectError(const std::string& json, const std::string& field, const std::string& text) {
  const auto d = Errors(json);
  ASSERT_FALSE(d.empty()) << "no error, expected " << field;
  EXPECT_EQ(d[0].field(), field) << d[0].message();
  EXPECT_NE(d[0].message().find(text), std::string::npos) << d[0].message();
}

TEST(Mechanism, GoodArmCompilesAndRuns) {
  v1::SimulationSpec spec;
  ASSERT_TRUE(ParseSpecJson(Arm(), &spec).ok());
  std::vector<v1::Diagnostic> d;
  v1::SystemSpec out = ExpandMechanism(spec.system(), &d);
  ASSERT_TRUE(d.empty()) << d[0].message();
  ASSERT_EQ(out.coordinates_size(), 2);
  EXPECT_EQ(out.coordinates(0), "j1");
  EXPECT_EQ(out.coordinates(1), "j2");
  EXPECT_EQ(out.kinetic_energy(), "mechanism_T");
  EXPECT_FALSE(out.has_mechanism());
  auto sim = Simulation::Create(spec);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  EXPECT_EQ((*sim)->coordinate_names(), (std::vector<std::string>{"j1", "j2"}));
}

// n spherical joints hung from the world, each body on its own: 4 n
// coordinates (quaternions, each with its unit-norm constraint) and a
// block-diagonal M(q), so the dense KKT path whatever n; `constrained`
// holds each quaternion's vector part at 0 (4 n constraints in all).
std::string SphericalStar(int n, bool constrained) {
  std::string bodies = R"({"name": "world"})", joints, constraints, q;
  for (int i = 0; i < n; ++i) {
    const std::string k = std::to_string(i);
    bodies += R"(, {"name": "b)" + k +
              R"(", "mass": 1, "inertia": {"ixx": 0.01, "iyy": 0.02, "izz": 0.025}})";
    joints += std::string(i ? ", " : "") + R"({"name": "j)" + k +
              R"(", "type": "SPHERICAL", "parent": "world", "child": "b)" + k +
              R"(", "origin": {"xyz": {"z": -0.1}}})";
    if (constrained) {
      for (const char* c : {"qx", "qy", "qz"}) {
        constraints += std::string(constraints.empty() ? "" : ", ") + R"({"name": "u)" + k + c +
                       R"(", "expression": "j)" + k + "_" + c + R"("})";
      }
    }
    q += std::string(i ? ", " : "") + "1, 0, 0, 0";
  }
  return R"({"system": {"mechanism": {"bodies": [)" + bodies + R"(], "joints": [)" + joints +
         R"(], "gravity": {"z": -9.81}}, "constraints": [)" + constraints +
         R"(]}, "initial": {"q": [)" + q +
         R"(]}, "integrator": {"method": "RK4", "stepSize": 0.001}})";
}

// The dense path's work per evaluation is bounded before anything
// evaluates (CompileLimits::max_dense_kkt_work): a large mechanism with a
// non-diagonal M(q) is refused in about the time its compilation takes,
// naming system and its sizes, where its one evaluation at the initial
// state took 7.6 s and 500 MB.
TEST(Mechanism, TheDenseSolvesWorkIsBoundedBeforeAnyEvaluation) {
  v1::SimulationSpec big;
  ASSERT_TRUE(ParseSpecJson(SphericalStar(511, true), &big).ok());
  v1::ValidationReport report;
  Status s = Validate(big, CompileOptions{}, &report);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.message();
  ASSERT_FALSE(s.violations().empty());
  EXPECT_EQ(s.violations()[0].field, "system");
  for (const char* text :
       {"dense path", "mass matrix is not diagonal", "2044 coordinates", "2044 constraints",
        "max_dense_kkt_work = 400000000", "factorised at every evaluation"}) {
    EXPECT_NE(s.message().find(text), std::string::npos) << text << " in " << s.message();
  }
  // A small star is well within the default, and refused under a limit
  // below its work: 8 coordinates and 8 constraints, 8 * 64 / 2 + 64 * 8 /
  // 2 + 512 / 6 + 512 / 6 = 682.7 multiply-adds (M(q)'s Cholesky included).
  v1::SimulationSpec small;
  ASSERT_TRUE(ParseSpecJson(SphericalStar(2, true), &small).ok());
  EXPECT_TRUE(Validate(small, CompileOptions{}, &report).ok());
  EXPECT_TRUE(report.valid()) << report.DebugString();
  CompileOptions tight;
  tight.limits.max_dense_kkt_work = 683;
  EXPECT_TRUE(Validate(small, tight, &report).ok());
  tight.limits.max_dense_kkt_work = 682;
  s = Validate(small, tight, &report);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.message();
  EXPECT_NE(s.message().find("about 683 multiply-adds"), std::string::npos) << s.message();
  // With only the unit-norm constraints (2): 2 * 64 / 2 + 4 * 8 / 2 + 8 / 6
  // + 512 / 6 = 166.7.
  v1::SimulationSpec free_star;
  ASSERT_TRUE(ParseSpecJson(SphericalStar(2, false), &free_star).ok());
  tight.limits.max_dense_kkt_work = 167;
  EXPECT_TRUE(Validate(free_star, tight, &report).ok());
  tight.limits.max_dense_kkt_work = 166;
  EXPECT_EQ(Validate(free_star, tight, &report).code(), StatusCode::kResourceExhausted);
}

TEST(Mechanism, ErrorsNameTheElement) {
  ExpectError(Arm("", "", R"("type": "REVOLUTE", "axis": {})"), "system.mechanism.joints[1].axis",
              "non-zero length");
  ExpectError(Arm("", "", R"("type": "REVOLUTE", "axis": {"x": 1e308, "y": "Infinity"})"),
              "system.mechanism.joints[1].axis", "expected a finite axis");
  ExpectError(Arm(R"(, {"name": "c", "mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": 1}})",
                  R"(, {"name": "j3", "type": "FIXED", "parent": "nowhere", "child": "c"})"),
              "system.mechanism.joints[2].parent", "no body named 'nowhere'");
  ExpectError(Arm("", "", R"("type": "REVOLUTE", "axis": {"y": 1})", R"("mass": -1)"),
              "system.mechanism.bodies[2].mass", "expected a finite mass >= 0");
  ExpectError(Arm("", "", R"("type": "REVOLUTE", "axis": {"y": 1})",
                  R"("mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": -1})"),
              "system.mechanism.bodies[2].inertia", "not positive definite");
  ExpectError(Arm("", "", R"("type": "REVOLUTE", "axis": {"y": 1})",
                  R"("mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": 3})"),
              "system.mechanism.bodies[2].inertia", "triangle inequality");
  ExpectError(Arm(R"(, {"name": "a"})"), "system.mechanism.bodies[3].name",
              "duplicate body name 'a'");
  ExpectError(Arm("", R"(, {"name": "j1", "type": "FIXED", "parent": "b", "child": "world"})"),
              "system.mechanism.joints[2].name", "duplicate joint name 'j1'");
  // A cycle: b -> c -> b, not reached from the root.
  ExpectError(Arm(R"(, {"name": "c", "mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": 1}},
                     {"name": "d", "mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": 1}})",
                  R"(, {"name": "j3", "type": "FIXED", "parent": "c", "child": "d"},
                     {"name": "j4", "type": "FIXED", "parent": "d", "child": "c"})"),
              "system.mechanism.joints[2].parent", "cycle");
  ExpectError(Arm(R"(, {"name": "loose", "mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": 1}})"),
              "system.mechanism.bodies[3]", "exactly one root");
  ExpectError(Arm("", "", R"("type": "REVOLUTE", "axis": {"y": 1}, "actuatorInput": "tau")"),
              "system.mechanism.joints[1].actuator_input", "no input named 'tau'");
  ExpectError(Arm("", "", R"("type": "SPHERICAL", "damping": 0.1)"),
              "system.mechanism.joints[1].damping", "one-coordinate joints only");
  ExpectError(Arm("", "", R"("type": "REVOLUTE", "axis": {"y": 1})", R"("mass": 0)"),
              "system.mechanism.bodies[2].mass", "has mass");
  // A generated name that another name takes names the element it is
  // made from: body b's frame (b_R11) after a joint named so, ball joint
  // j2's rotation (j2_Q11) after a parameter named so.
  ExpectError(Arm(R"(, {"name": "c", "mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": 1}})",
                  R"(, {"name": "b_R11", "type": "REVOLUTE", "parent": "b", "child": "c",
                        "axis": {"z": 1}})"),
              "system.mechanism.bodies[2].name", "generated name 'b_R11' is already used");
  std::string parameter = Arm("", "", R"("type": "SPHERICAL")");
  parameter.replace(parameter.find(R"({"system": {)"), 12,
                    R"({"system": {"parameters": [{"name": "j2_Q11", "value": 1}], )");
  ExpectError(parameter, "system.mechanism.joints[1].name",
              "generated name 'j2_Q11' is already used");
  // A gravity that is not finite is named (it was an "overflow" of
  // mechanism_V, naming no field); a planar pin's normal set to zero is a
  // mistake, not "unset" (a ball joint between the bodies: dependent
  // constraints, or in space a silent change of joint; found by an audit).
  std::string nan_gravity = Arm();
  nan_gravity.replace(nan_gravity.find(R"("gravity": {"z": -9.81})"), 23,
                      R"("gravity": {"y": "NaN", "z": -9.81})");
  ExpectError(nan_gravity, "system.mechanism.gravity", "expected finite numbers");
  std::string pin = Arm(R"(, {"name": "c", "mass": 1, "inertia": {"ixx": 1, "iyy": 1, "izz": 1}})",
                        R"(, {"name": "j3", "type": "REVOLUTE", "parent": "world", "child": "c",
                              "axis": {"z": 1}, "origin": {"xyz": {"x": 2}}})");
  pin.replace(pin.find(R"("gravity")"), 9,
              R"("loopClosures": [{"name": "pin", "type": "POINT_TO_POINT", "bodyA": "b",
                  "pointA": {"x": 1}, "bodyB": "c", "pointB": {"x": 1},
                  "planeNormal": {}}], "gravity")");
  ExpectError(pin, "system.mechanism.loop_closures[0].plane_normal", "expected a non-zero normal");
  // Coordinates and an inertia beside a mechanism.
  std::string both = Arm();
  both.replace(both.find(R"({"system": {)"), 12, R"({"system": {"coordinates": ["x"], )");
  ExpectError(both, "system.coordinates", "leave empty");
}

// The state after `steps` RK4 steps of `json` from q = (0.3, -0.2), v =
// (0.5, 1), and its certificate.
struct Ran {
  std::vector<double> q, v;
  v1::Certificate certificate;
};
Ran RunFor(const std::string& json, int steps, std::vector<double> q, std::vector<double> v) {
  v1::SimulationSpec spec;
  EXPECT_TRUE(ParseSpecJson(json, &spec).ok());
  *spec.mutable_initial()->mutable_q() = {q.begin(), q.end()};
  *spec.mutable_initial()->mutable_v() = {v.begin(), v.end()};
  auto sim = Simulation::Create(spec);
  EXPECT_TRUE(sim.ok()) << sim.status().message();
  Ran out;
  if (!sim.ok()) return out;
  RunOptions run;
  run.until_time = steps * spec.integrator().step_size();
  EXPECT_TRUE((*sim)->BeginRun(run).ok());
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  Status st;
  while (st.ok() && (*sim)->run_active()) st = (*sim)->Advance(1000, &frames, 1);
  EXPECT_TRUE(st.ok()) << st.message();
  v1::State state;
  (*sim)->GetState(&state);
  out.q.assign(state.q().begin(), state.q().end());
  out.v.assign(state.v().begin(), state.v().end());
  (*sim)->GetCertificate(&out.certificate);
  return out;
}

// An axis is any finite non-zero vector, normalised without its squares
// underflowing or overflowing: (3e-160, 4e-160, 0) normalised to length
// 1.0000056 before (its squares subnormal) and moved the arm by 1e-6 in a
// second; (1e200, 0, 0) was refused; both are now the axes (3, 4, 0) and
// (1, 0, 0).
TEST(Mechanism, AnAxisOfAnyFiniteNonZeroLengthIsThatDirection) {
  const auto arm = [](const std::string& axis) {
    return Arm("", "", R"("type": "REVOLUTE", "axis": )" + axis);
  };
  for (const auto& [tiny, plain] : std::vector<std::pair<std::string, std::string>>{
           {R"({"x": 3e-160, "y": 4e-160})", R"({"x": 3, "y": 4})"},
           {R"({"x": 1e200})", R"({"x": 1})"},
           {R"({"y": -5e-324})", R"({"y": -1})"},
           {R"({"x": 1.5e308, "z": -1.5e308})", R"({"x": 1, "z": -1})"}}) {
    const Ran a = RunFor(arm(tiny), 1000, {0.3, -0.2}, {0.5, 1});
    const Ran b = RunFor(arm(plain), 1000, {0.3, -0.2}, {0.5, 1});
    ASSERT_EQ(a.q.size(), 2u) << tiny;
    ASSERT_EQ(b.q.size(), 2u) << plain;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_NEAR(a.q[i], b.q[i], 1e-13) << tiny;
      EXPECT_NEAR(a.v[i], b.v[i], 1e-12) << tiny;
    }
  }
}

// A quaternion joint's norm direction gets M's entry k = 4/3 of the trace
// of the inertia, about the joint, of everything it turns (docs/MECHANISMS.md).
// Before, k came from the child's own inertia about its centre of mass:
// for a 1 kg bob with I = 1e-6 a metre from a ball joint, M's condition was
// about 1e6 and judgement (b) failed (418 gamma) on a correct run; and a
// massless gimbal carrying the mass on a slider had k = 0, M singular, and
// the run stopped at its first step.
TEST(Mechanism, AQuaternionJointsNormScaleIsWhatItTurnsAboutTheJoint) {
  const std::string ball = R"({"system": {"baumgarte": {"alpha": 20, "beta": 20},
    "mechanism": {"bodies": [{"name": "pivot"},
        {"name": "bob", "mass": 1, "inertialOrigin": {"xyz": {"x": 1}},
         "inertia": {"ixx": 1e-6, "iyy": 1e-6, "izz": 1e-6}}],
      "joints": [{"name": "ball", "type": "SPHERICAL", "parent": "pivot", "child": "bob"}],
      "gravity": {"z": -9.81}}},
    "integrator": {"method": "RK4", "stepSize": 0.0001}})";
  {
    v1::SimulationSpec spec;
    ASSERT_TRUE(ParseSpecJson(ball, &spec).ok());
    std::vector<v1::Diagnostic> d;
    const v1::SystemSpec out = ExpandMechanism(spec.system(), &d);
    ASSERT_TRUE(d.empty()) << d[0].message();
    std::string T;
    for (const auto& def : out.definitions())
      if (def.name() == "mechanism_T") T = def.expression();
    // k / 2 = 2/3 (tr I + 2 m |c|^2) = 2/3 (3e-6 + 2).
    const size_t at = T.find("*ball_norm_rate^2");
    ASSERT_NE(at, std::string::npos) << T;
    const size_t from = T.rfind(' ', at) + 1;
    EXPECT_NEAR(std::stod(T.substr(from, at - from)), 2.0 / 3.0 * (3e-6 + 2), 1e-15) << T;
  }
  // A consistent moving start (unit quaternion, velocity tangent to it).
  const std::vector<double> q = {0.8944271909999159, 0, 0.447213595499958, 0};
  const std::vector<double> v = {-0.3354101966249685, 0.2683281572999747, 0.6708203932499369,
                                 0.5366563145999494};
  const Ran bob = RunFor(ball, 10000, q, v);
  EXPECT_TRUE(bob.certificate.feedback_verified())
      << bob.certificate.kkt_backward_error() << " at " << bob.certificate.worst_kkt_row();
  EXPECT_LT(bob.certificate.max_position_residual(), 1e-12);

  const std::string gimbal = R"({"system": {"baumgarte": {"alpha": 20, "beta": 20},
    "outputs": [{"name": "energy", "expression": "mechanism_T + mechanism_V"}],
    "mechanism": {"bodies": [{"name": "pivot"}, {"name": "gimbal"},
        {"name": "bob", "mass": 1, "inertia": {"ixx": 0.001, "iyy": 0.002, "izz": 0.003}}],
      "joints": [{"name": "ball", "type": "SPHERICAL", "parent": "pivot", "child": "gimbal"},
                 {"name": "slide", "type": "PRISMATIC", "parent": "gimbal", "child": "bob",
                  "origin": {"xyz": {"x": 0.4}}, "axis": {"x": 1}}],
      "gravity": {"z": -9.81}}},
    "integrator": {"method": "RK4", "stepSize": 0.001}})";
  std::vector<double> q5 = q, v5 = v;
  q5.push_back(0.1);
  v5.push_back(0.2);
  const Ran slid = RunFor(gimbal, 1000, q5, v5);
  ASSERT_EQ(slid.q.size(), 5u);
  EXPECT_TRUE(slid.certificate.feedback_verified()) << slid.certificate.kkt_backward_error();
  EXPECT_LT(slid.certificate.max_position_residual(), 1e-9);
}

// A tiny inertia beside a large one makes M ill-conditioned (about m c^2 /
// I for a bob of inertia I carried at c): the accelerations may lose digits
// that the backward error does not show, and validation says so, naming
// the soft direction (the spin about the rod, ball_qx for a rod along x).
// A diagonal M with any mass ratio and a well-conditioned M do not warn.
TEST(Mechanism, AnIllConditionedMassMatrixIsAWarningAtValidation) {
  const auto warnings = [](const std::string& json) {
    v1::SimulationSpec spec;
    EXPECT_TRUE(ParseSpecJson(json, &spec).ok());
    v1::ValidationReport report;
    EXPECT_TRUE(Validate(spec, CompileOptions{}, &report).ok());
    std::vector<std::string> found;
    for (const auto& d : report.diagnostics()) {
      EXPECT_NE(d.severity(), v1::Diagnostic::ERROR) << d.field() << ": " << d.message();
      if (d.message().find("ill-conditioned") != std::string::npos) {
        found.push_back(d.field() + ": " + d.message());
      }
    }
    return found;
  };
  const auto ball = [](const char* inertia) {
    return std::string(R"({"system": {"baumgarte": {"alpha": 20, "beta": 20},
      "mechanism": {"bodies": [{"name": "pivot"},
          {"name": "bob", "mass": 1, "inertialOrigin": {"xyz": {"x": 1}},
           "inertia": {"ixx": )") +
           inertia + R"(, "iyy": 1e-3, "izz": 1e-3}}],
        "joints": [{"name": "ball", "type": "SPHERICAL", "parent": "pivot", "child": "bob"}],
        "gravity": {"z": -9.81}}},
      "initial": {"q": [1, 0, 0, 0]}, "integrator": {"method": "RK4", "stepSize": 0.0001}})";
  };
  EXPECT_TRUE(warnings(ball("1e-3")).empty());
  const auto tiny = warnings(ball("1e-13"));
  ASSERT_EQ(tiny.size(), 1u);
  EXPECT_EQ(tiny[0].rfind("system.kinetic_energy: ", 0), 0u) << tiny[0];
  EXPECT_NE(tiny[0].find("cond_1(M) is about 1e+13"), std::string::npos) << tiny[0];
  EXPECT_NE(tiny[0].find("coordinate 'ball_qx'"), std::string::npos) << tiny[0];
  // A constant M: diag(1, 1e-12) rotated by 45 degrees (cond 1e12) warns;
  // a diagonal mass of the same ratio does not (solved exactly by parts).
  const std::string dense = R"({"system": {"coordinates": ["x", "y"],
      "massMatrix": {"values": [0.5000000000005, 0.4999999999995, 0.4999999999995, 0.5000000000005]}},
    "initial": {"q": [0, 0]}, "integrator": {"method": "RK4", "stepSize": 0.001}})";
  const auto constant = warnings(dense);
  ASSERT_EQ(constant.size(), 1u);
  EXPECT_EQ(constant[0].rfind("system.mass_matrix: ", 0), 0u) << constant[0];
  EXPECT_TRUE(warnings(R"({"system": {"coordinates": ["x", "y"],
      "masses": {"values": [1, 1e-12]}}, "initial": {"q": [0, 0]}, "integrator": {"method": "RK4", "stepSize": 0.001}})")
                  .empty());
}

// Every documented definition is defined, trivial or not, so that outputs
// may name it (docs/MECHANISMS.md): a body whose centre of mass is its
// origin has B_vc = B_v, and a loop closure's L_d may be a plain
// coordinate; both were folded away, and an output naming them was
// "unknown name".
TEST(Mechanism, DocumentedDefinitionsAreDefinedEvenWhenTrivial) {
  std::string json = Arm("", "", R"("type": "PRISMATIC", "axis": {"x": 1})");
  json.replace(
      json.find(R"({"system": {)"), 12,
      R"({"system": {"outputs": [{"name": "vcx", "expression": "b_vcx + b_vcy + b_T"}], )");
  v1::SimulationSpec spec;
  ASSERT_TRUE(ParseSpecJson(json, &spec).ok());
  const v1::ValidationReport report = Validate(spec);
  EXPECT_TRUE(report.valid()) << (report.diagnostics_size() ? report.diagnostics(0).message() : "");
}

TEST(Mechanism, ActuatorsDampersAndSpringsBecomeForcesAndEnergy) {
  std::string json =
      Arm("", "",
          R"("type": "REVOLUTE", "axis": {"y": 1}, "actuatorInput": "tau", "damping": 0.5,
                            "spring": {"stiffness": 3, "rest": 0.25})");
  json.replace(json.find(R"({"system": {)"), 12, R"({"system": {"inputs": [{"name": "tau"}], )");
  v1::SimulationSpec spec;
  ASSERT_TRUE(ParseSpecJson(json, &spec).ok());
  std::vector<v1::Diagnostic> d;
  v1::SystemSpec out = ExpandMechanism(spec.system(), &d);
  ASSERT_TRUE(d.empty()) << d[0].message();
  ASSERT_EQ(out.generalized_forces_size(), 2);
  EXPECT_EQ(out.generalized_forces(0), "0");
  EXPECT_EQ(out.generalized_forces(1), "-0.5*der(j2) + tau");
  std::string V;
  for (const auto& def : out.definitions())
    if (def.name() == "mechanism_V") V = def.expression();
  EXPECT_NE(V.find("1.5*j2^2 - 0.75*j2"), std::string::npos) << V;
}

TEST(Mechanism, InlinedDefinitionsLeaveNone) {
  v1::SimulationSpec spec;
  ASSERT_TRUE(ParseSpecJson(Arm(), &spec).ok());
  std::vector<v1::Diagnostic> d;
  ExpandOptions o;
  o.inline_definitions = true;
  v1::SystemSpec out = ExpandMechanism(spec.system(), &d, o);
  EXPECT_EQ(out.definitions_size(), 0);
  EXPECT_EQ(out.kinetic_energy().find("mechanism_T"), std::string::npos);
}

// ---- URDF

Status Urdf(const std::string& body, urdf::Import* imp) {
  return urdf::ImportUrdf("<?xml version=\"1.0\"?>\n<robot name=\"r\">\n" + body + "</robot>\n",
                          "t.urdf", imp);
}

const char* kLink =
    R"(<link name="%s"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
)";

std::string Link(const std::string& name) {
  std::string s = kLink;
  s.replace(s.find("%s"), 2, name);
  return s;
}

std::string Joint(const std::string& name, const std::string& type, const std::string& parent,
                  const std::string& child, const std::string& extra = "<axis xyz=\"0 0 1\"/>") {
  return "<joint name=\"" + name + "\" type=\"" + type + "\"><parent link=\"" + parent +
         "\"/><child link=\"" + child + "\"/>" + extra + "</joint>\n";
}

void ExpectUrdfError(const std::string& body, const std::string& where, const std::string& text) {
  urdf::Import imp;
  Status s = Urdf(body, &imp);
  ASSERT_FALSE(s.ok()) << "expected an error at " << where;
  EXPECT_NE(s.message().find(where), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

TEST(Urdf, ImportsJointsInFileOrderWithWarnings) {
  urdf::Import imp;
  Status s = Urdf("<link name=\"base\"/>\n" + Link("l2") + Link("l1") + Link("tip-frame") +
                      Joint("second", "revolute", "l1", "l2",
                            "<axis xyz=\"0 1 0\"/><limit lower=\"-1\" upper=\"1\"/>") +
                      Joint("first", "prismatic", "base", "l1", "<dynamics damping=\"0.3\"/>") +
                      Joint("tip", "fixed", "l2", "tip-frame", "") + "<gazebo/>\n",
                  &imp);
  ASSERT_TRUE(s.ok()) << s.message();
  const auto& m = imp.spec.system().mechanism();
  ASSERT_EQ(m.joints_size(), 3);
  EXPECT_EQ(m.joints(1).damping(), 0.3);
  EXPECT_EQ(m.gravity().z(), -9.81);
  EXPECT_EQ(imp.spec.initial().q_size(), 2);
  std::vector<v1::Diagnostic> d;
  v1::SystemSpec out = ExpandMechanism(imp.spec.system(), &d);
  ASSERT_TRUE(d.empty());
  EXPECT_EQ(out.coordinates(0), "second");
  EXPECT_EQ(out.coordinates(1), "first");
  std::string all;
  for (const auto& w : imp.warnings) all += w + "\n";
  EXPECT_NE(all.find("not enforced"), std::string::npos) << all;
  EXPECT_NE(all.find("second"), std::string::npos) << all;
  EXPECT_NE(all.find("<gazebo>"), std::string::npos) << all;
  EXPECT_NE(all.find("tip_frame"), std::string::npos) << all;
  auto sim = Simulation::Create(imp.spec);
  EXPECT_TRUE(sim.ok()) << sim.status().message();
}

// What MuJoCo's reader takes is taken: a point mass (zero inertia) fixed
// to a moving link, and <dynamics damping> on a fixed or floating joint
// (nothing to damp; ignored with a note). Both were errors.
TEST(Urdf, PointMassesAndDampingOnJointsWithoutOneRateAreTaken) {
  urdf::Import imp;
  Status s = Urdf("<link name=\"base\"/>\n" + Link("arm") +
                      "<link name=\"cam\"><inertial><origin xyz=\"0.2 0 0\"/><mass value=\"0.05\"/>"
                      "<inertia ixx=\"0\" ixy=\"0\" ixz=\"0\" iyy=\"0\" iyz=\"0\" izz=\"0\"/>"
                      "</inertial></link>\n" +
                      Joint("j", "revolute", "base", "arm", "<axis xyz=\"0 1 0\"/>") +
                      Joint("mount", "fixed", "arm", "cam", "<dynamics damping=\"0.5\"/>"),
                  &imp);
  ASSERT_TRUE(s.ok()) << s.message();
  std::string all;
  for (const auto& w : imp.warnings) all += w + "\n";
  EXPECT_NE(all.find("<dynamics damping> on a fixed joint"), std::string::npos) << all;
  EXPECT_EQ(imp.spec.system().mechanism().joints(1).damping(), 0);
  auto sim = Simulation::Create(imp.spec);
  EXPECT_TRUE(sim.ok()) << sim.status().message();
}

TEST(Urdf, ErrorsNameLineAndElement) {
  // Line 1 is <?xml>, line 2 <robot>: the body starts on line 3.
  ExpectUrdfError(
      "<link name=\"base\"/>\n<link name=\"arm\"/>\n" + Joint("j", "revolute", "base", "arm"),
      "t.urdf:4: <link name='arm'>", "missing <inertial>");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("arm") + Joint("j", "revolute", "ghost", "arm"),
                  "t.urdf:5: <parent>", "no link named 'ghost'");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("arm") +
                      Joint("j", "revolute", "base", "arm", "<axis xyz=\"0 0 0\"/>"),
                  "t.urdf:5: <axis>", "length zero");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") + Link("b") +
                      Joint("j1", "revolute", "base", "a") + Joint("j2", "revolute", "b", "b2"),
                  "no link named 'b2'", "");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") + Link("b") +
                      Joint("j1", "revolute", "a", "b") + Joint("j2", "revolute", "b", "a"),
                  "t.urdf:6: <joint name='j1'>", "cycle");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") + Joint("j", "planar", "base", "a"),
                  "t.urdf:5: <joint name='j'>", "not supported");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") +
                      Joint("j", "revolute", "base", "a", "<origin xyz=\"1 2\"/>"),
                  "t.urdf:5: <origin>", "expected 3 numbers");
  // Problems only the whole description's checks find (the expression
  // language, the energy's numbers, the initial evaluation) are import
  // errors too, at the element they come from where there is one: before,
  // tether urdf wrote these and `tether run` failed naming fields of the
  // expanded description the user never wrote.
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") + Joint("sin", "revolute", "base", "a"),
                  "t.urdf:5: <joint name='sin'>", "'sin' is reserved in expressions");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") + Joint("j", "fixed", "base", "a"),
                  "no joint moves (every joint is FIXED)", "");
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") +
                      Joint("j", "revolute", "base", "a", "<origin xyz=\"0 0 1e308\"/>"),
                  "the mechanism's numbers overflow", "");
  urdf::Import imp;
  Status s = urdf::ImportUrdf("<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"aaaa\">]><robot/>",
                              "x.urdf", &imp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("DOCTYPE"), std::string::npos) << s.message();
  std::string deep = "<robot name=\"r\">";
  for (int i = 0; i < 40; ++i) deep += "<a>";
  for (int i = 0; i < 40; ++i) deep += "</a>";
  s = urdf::ImportUrdf(deep + "</robot>", "x.urdf", &imp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nested"), std::string::npos) << s.message();
  // Tags counted before the DOM is built (16 MiB of "<a/>" held 540 MB).
  std::string many = "<robot name=\"r\">";
  for (size_t i = 0; i < urdf::kMaxUrdfTags; ++i) many += "<a/>";
  s = urdf::ImportUrdf(many + "</robot>", "x.urdf", &imp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tags"), std::string::npos) << s.message();
  s = urdf::ImportUrdf("<robot><link name=\"a\"></robot>", "x.urdf", &imp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 1"), std::string::npos) << s.message();
  // What expat (the Python reader's parser) refuses, this one refuses too:
  // a second root element, bytes that are not UTF-8; and an empty file, a
  // nesting too deep and an empty name say where (found by an audit).
  s = urdf::ImportUrdf("<robot name=\"r\"/>\n<robot name=\"s\"/>", "x.urdf", &imp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 2: not well-formed XML: an element <robot> after the root"),
            std::string::npos)
      << s.message();
  s = urdf::ImportUrdf("<robot name=\"r\">\n<link name=\"\xff\xfe\"/></robot>", "x.urdf", &imp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 2: not well-formed XML: a byte 0xFF that is not UTF-8"),
            std::string::npos)
      << s.message();
  s = urdf::ImportUrdf(" \n", "x.urdf", &imp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the file is empty"), std::string::npos) << s.message();
  s = urdf::ImportUrdf(deep + "</robot>", "x.urdf", &imp);
  EXPECT_NE(s.message().find("line 1: elements nested more than 32 deep"), std::string::npos)
      << s.message();
  ExpectUrdfError("<link name=\"base\"/>\n" + Link("a") + Joint("", "revolute", "base", "a"),
                  "t.urdf:5: <joint name=''>", "the name is empty");
  // A second <origin>, <axis>, <mass> or <inertial> is an error (which one
  // counts would be a guess; the first was taken).
  ExpectUrdfError(
      "<link name=\"base\"/>\n" + Link("a") +
          Joint("j", "revolute", "base", "a", "<axis xyz=\"0 0 1\"/>\n<axis xyz=\"1 0 0\"/>"),
      "t.urdf:6: <axis>", "a second <axis> in <joint> (the first is at line 5)");
  ExpectUrdfError(
      "<link name=\"base\"/>\n<link name=\"a\"><inertial><mass value=\"1\"/>"
      "<mass value=\"2\"/><inertia ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"1\" iyz=\"0\" "
      "izz=\"1\"/></inertial></link>\n" +
          Joint("j", "revolute", "base", "a"),
      "t.urdf:4: <mass>", "a second <mass> in <inertial>");
}

// A typo inside <joint> or <inertial> (an element or an attribute URDF
// does not have there) changed the robot without a word: the centre of mass
// at the link's origin, the axis x, the rotation zero. Each is now a
// warning naming the line, the element and what URDF reads there (found
// by an audit).
TEST(Urdf, ElementsAndAttributesItDoesNotReadAreWarnings) {
  urdf::Import imp;
  Status s = Urdf(
      "<link name=\"base\"/>\n"
      "<link name=\"a\"><inertial><orgin xyz=\"0.5 0 0\"/><mass value=\"1\" units=\"kg\"/>"
      "<inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/>"
      "</inertial></link>\n" +
          Joint("j", "revolute", "base", "a", "<axes xyz=\"0 1 0\"/><origin rpY=\"1 0 0\"/>"),
      &imp);
  ASSERT_TRUE(s.ok()) << s.message();
  std::string all;
  for (const auto& w : imp.warnings) all += w + "\n";
  for (const char* want :
       {"warning: t.urdf:4: <orgin>: not an element URDF reads in <inertial> (expected origin, "
        "mass or inertia); not read",
        "warning: t.urdf:4: <mass>: attribute 'units' is not one URDF reads there (expected value)",
        "warning: t.urdf:5: <axes>: not an element URDF reads in <joint> (expected origin, parent, "
        "child, axis, calibration, dynamics, limit, mimic or safety_controller); not read",
        "warning: t.urdf:5: <origin>: attribute 'rpY' is not one URDF reads there (expected xyz or "
        "rpy)"}) {
    EXPECT_NE(all.find(want), std::string::npos) << want << "\nin:\n" << all;
  }
  // What URDF has and this reader leaves alone is not warned about.
  s = Urdf(
      "<link name=\"base\"/>\n" + Link("a") +
          Joint("j", "revolute", "base", "a",
                "<axis xyz=\"0 0 1\"/><calibration rising=\"0\"/><safety_controller "
                "k_velocity=\"1\"/><limit lower=\"0\" upper=\"1\" effort=\"1\" velocity=\"1\"/>"),
      &imp);
  ASSERT_TRUE(s.ok()) << s.message();
  for (const auto& w : imp.warnings) EXPECT_EQ(w.find("warning: t.urdf"), std::string::npos) << w;
  // A joint named energy: the energy output is energy_ (two columns of one
  // name in the frames otherwise).
  s = Urdf("<link name=\"base\"/>\n" + Link("a") + Joint("energy", "revolute", "base", "a"), &imp);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(imp.spec.system().outputs_size(), 1);
  EXPECT_EQ(imp.spec.system().outputs(0).name(), "energy_");
}

}  // namespace
}  // namespace tether
