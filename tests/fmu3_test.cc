// The FMI 3.0 FMU (`tether fmu --fmi 3`, server/fmu/fmi3_api.cc), imported
// through an importer written from the FMI 3.0 standard
// (support/fmu_import3.h) and driven by the standard's Co-Simulation
// calling sequence: fmi3InstantiateCoSimulation,
// fmi3EnterInitializationMode, fmi3ExitInitializationMode, fmi3DoStep
// (with its out arguments) and fmi3GetFloat64 at every communication
// point, fmi3Terminate, fmi3FreeInstance; FMU states saved, restored,
// serialized and deserialized into another instance. Checked bit for bit
// against `tether run` and against the FMI 2.0 FMU of the same
// description, on a system that moves (a bead on a parabola pushed by its
// input), in process and (with the service) on a tether-server.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fmu/fmi3.h"
#include "fmu_test_fixture.h"
#include "support/fmu_import3.h"
#ifdef TETHER_SERVER
#include <signal.h>

#include <chrono>
#include <thread>

#include "support/server_process.h"
#endif

namespace tether::fmu_test {
namespace {

namespace fs = std::filesystem;
using fmu_import::Fmu3;

// A bead on the parabola y = x^2/2 under gravity, pushed along x by its
// input (default 0.5), released off the bottom: it moves from the first
// step.
constexpr char kBeadSpec[] =
    R"json({"system":{"coordinates":["x","y"],"parameters":[{"name":"grav","value":9.81}],"inputs":[{"name":"push","defaultValue":0.5}],"masses":{"values":[2,2]},"potentialEnergy":"2*grav*y","generalizedForces":["push","0"],"constraints":[{"name":"track","expression":"y - x^2/2"}],"baumgarte":{"alpha":10,"beta":10},"outputs":[{"name":"speed2","expression":"der(x)^2 + der(y)^2"}]},"initial":{"q":[0.8,0.32],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";

// Every message the FMI 3 instances logged, "[status] category: text".
std::vector<std::string>& Log3() {
  static std::vector<std::string> lines;
  return lines;
}
bool Logged3(const std::string& text) {
  for (const auto& l : Log3())
    if (l.find(text) != std::string::npos) return true;
  return false;
}
std::string Last3() { return Log3().empty() ? "" : Log3().back(); }

void Logger3(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
             fmi3String message) {
  // The environment is what the test passed: the log's owner.
  static_cast<std::vector<std::string>*>(env)->push_back(
      "[" + std::to_string(static_cast<int>(status)) + "] " + (category ? category : "") + ": " +
      (message ? message : ""));
}

class Fmu3Test : public ::testing::Test {
 protected:
  // The work directory and environment of fmu_test_fixture.h, without the
  // pendulum FmuFixture imports (each test is a process of its own).
  static void SetUpTestSuite() { PrepareProcess(); }
  void SetUp() override {
    LogLines().clear();
    ProblemLines().clear();
    Log3().clear();
  }

 public:
  // The importer's steps, shared with the free functions below.

  static std::unique_ptr<Fmu3> Import3(const std::string& json, const std::string& name) {
    const fs::path spec = WorkDir() / (name + ".json");
    std::ofstream(spec) << json;
    std::string error;
    auto fmu = fmu_import::Import3(TETHER_CLI, spec.string(), WorkDir(), name, &error);
    EXPECT_NE(fmu, nullptr) << error;
    return fmu;
  }

  // fmi3InstantiateCoSimulation as the standard's example calls it (no
  // event mode, early return allowed, no intermediate variables).
  static fmi3Instance Instantiate(const Fmu3& fmu, const char* name) {
    return fmu.api.fmi3InstantiateCoSimulation(name, fmu.token.c_str(), fmu.resource_path.c_str(),
                                               fmi3False, fmi3False, fmi3False, fmi3True, nullptr,
                                               0, &Log3(), Logger3, nullptr);
  }

  // Instantiated and initialised at t = 0 (stop time 10), tether.server
  // set to `server` first when not empty.
  static fmi3Instance Start(const Fmu3& fmu, const char* name, const std::string& server = "") {
    fmi3Instance c = Instantiate(fmu, name);
    EXPECT_NE(c, nullptr) << Last3();
    if (c == nullptr) return nullptr;
    if (!server.empty()) {
      const fmi3ValueReference ref = fmu.vr.at("tether.server");
      fmi3String value = server.c_str();
      EXPECT_EQ(fmu.api.fmi3SetString(c, &ref, 1, &value, 1), fmi3OK) << Last3();
    }
    EXPECT_EQ(fmu.api.fmi3EnterInitializationMode(c, fmi3False, 0, 0, fmi3True, 10), fmi3OK)
        << Last3();
    EXPECT_EQ(fmu.api.fmi3ExitInitializationMode(c), fmi3OK) << Last3();
    return c;
  }

  // The FMI 2.0 FMU of the same description, instantiated and initialised
  // at t = 0 in process (null, and a test failure, when that fails).
  static fmi2Component Start2(const Fmu& fmu, const char* name) {
    fmi2Component c =
        fmu.api.fmi2Instantiate(name, fmi2CoSimulation, fmu.guid.c_str(), fmu.resource_uri.c_str(),
                                &kCallbacks, fmi2False, fmi2False);
    EXPECT_NE(c, nullptr) << LastLog();
    if (c == nullptr) return nullptr;
    EXPECT_EQ(fmu.api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
    EXPECT_EQ(fmu.api.fmi2EnterInitializationMode(c), fmi2OK);
    EXPECT_EQ(fmu.api.fmi2ExitInitializationMode(c), fmi2OK) << LastLog();
    return c;
  }

  // Every Float64 variable's value (by value reference, time last).
  static std::vector<double> All(const Fmu3& fmu, fmi3Instance c) {
    std::vector<fmi3ValueReference> refs;
    for (const auto& v : fmu.vars)
      if (v.type == "Float64") refs.push_back(v.vr);
    std::vector<double> values(refs.size());
    EXPECT_EQ(fmu.api.fmi3GetFloat64(c, refs.data(), refs.size(), values.data(), values.size()),
              fmi3OK)
        << Last3();
    return values;
  }

  // One fmi3DoStep that must succeed whole.
  static void Step(const Fmu3& fmu, fmi3Instance c, double t, double h) {
    fmi3Boolean event = fmi3True, terminate = fmi3True, early = fmi3True;
    double last = -1;
    ASSERT_EQ(fmu.api.fmi3DoStep(c, t, h, fmi3True, &event, &terminate, &early, &last), fmi3OK)
        << "t = " << t << ": " << Last3();
    EXPECT_FALSE(event);
    EXPECT_FALSE(terminate);
    EXPECT_FALSE(early);     // never an early return, though allowed
    EXPECT_EQ(last, t + h);  // the step was completed: the master's t + h
  }
};

TEST_F(Fmu3Test, ModelDescriptionIsFmi3WithTheFmi2ValueReferences) {
  auto fmu = Import3(kBeadSpec, "bead3_md");
  ASSERT_NE(fmu, nullptr);
  EXPECT_EQ(fmu->fmi_version, "3.0");
  EXPECT_EQ(std::string(fmu->api.fmi3GetVersion()), "3.0");
  EXPECT_EQ(fmu->cosimulation.at("canGetAndSetFMUState"), "true");
  EXPECT_EQ(fmu->cosimulation.at("canSerializeFMUState"), "true");
  EXPECT_EQ(fmu->cosimulation.at("hasEventMode"), "false");
  EXPECT_EQ(fmu->cosimulation.at("mightReturnEarlyFromDoStep"), "false");
  // The FMI 2.0 FMU of the same description: the same names on the same
  // value references, and the same token as its GUID.
  auto fmu2 = Import(WorkDir() / "bead3_md.json", "bead2_md");
  ASSERT_NE(fmu2, nullptr);
  EXPECT_EQ(fmu->token, fmu2->guid);
  for (const auto& [name, vr] : fmu2->vr) EXPECT_EQ(fmu->vr.at(name), vr) << name;
  // One variable more: the independent variable time.
  ASSERT_EQ(fmu->vr.size(), fmu2->vr.size() + 1);
  const auto& time = fmu->vars.back();
  EXPECT_EQ(time.name, "time");
  EXPECT_EQ(time.causality, "independent");
  // Every output of the model structure is a calculated Float64 output.
  std::map<unsigned, const fmu_import::Variable3*> by_vr;
  for (const auto& v : fmu->vars) by_vr[v.vr] = &v;
  size_t outputs = 0;
  for (const auto& v : fmu->vars) outputs += v.causality == "output";
  EXPECT_EQ(fmu->outputs.size(), outputs);
  for (unsigned o : fmu->outputs) {
    EXPECT_EQ(by_vr.at(o)->causality, "output");
    EXPECT_EQ(by_vr.at(o)->type, "Float64");
  }
  // Parameters and inputs carry their start values, and so does the
  // initial state (parameters q0.*, v0.*: issue 27 point 5).
  EXPECT_TRUE(by_vr.at(fmu->vr.at("grav"))->has_start);
  EXPECT_EQ(by_vr.at(fmu->vr.at("push"))->start, 0.5);
  for (const auto& [name, start] :
       std::map<std::string, double>{{"q0.x", 0.8}, {"q0.y", 0.32}, {"v0.x", 0}, {"v0.y", 0}}) {
    const auto* v = by_vr.at(fmu->vr.at(name));
    EXPECT_EQ(v->causality, "parameter") << name;
    EXPECT_EQ(v->variability, "fixed") << name;
    EXPECT_TRUE(v->has_start) << name;
    EXPECT_EQ(v->start, start) << name;
  }
  // tether.project_start, a Boolean parameter through fmi3Get/SetBoolean:
  // false, settable before initialization only.
  EXPECT_EQ(by_vr.at(fmu->vr.at("tether.project_start"))->type, "Boolean");
  fmi3Instance c = Instantiate(*fmu, "bead3_md");
  ASSERT_NE(c, nullptr) << Last3();
  const fmi3ValueReference project = fmu->vr.at("tether.project_start");
  fmi3Boolean on = fmi3True;
  EXPECT_EQ(fmu->api.fmi3GetBoolean(c, &project, 1, &on, 1), fmi3OK) << Last3();
  EXPECT_FALSE(on);
  on = fmi3True;
  EXPECT_EQ(fmu->api.fmi3SetBoolean(c, &project, 1, &on, 1), fmi3OK) << Last3();
  on = fmi3False;
  EXPECT_EQ(fmu->api.fmi3GetBoolean(c, &project, 1, &on, 1), fmi3OK);
  EXPECT_TRUE(on);
  const fmi3ValueReference grav = fmu->vr.at("grav");
  EXPECT_EQ(fmu->api.fmi3GetBoolean(c, &grav, 1, &on, 1), fmi3Error);  // a Float64
  EXPECT_EQ(fmu->api.fmi3EnterInitializationMode(c, fmi3False, 0, 0, fmi3False, 0), fmi3OK);
  // The bead's start is on its track: nothing to project, nothing logged.
  EXPECT_EQ(fmu->api.fmi3ExitInitializationMode(c), fmi3OK) << Last3();
  EXPECT_FALSE(Logged3("projected")) << Last3();
  EXPECT_EQ(fmu->api.fmi3SetBoolean(c, &project, 1, &on, 1), fmi3Error);
  EXPECT_TRUE(Logged3("tether.project_start is fixed")) << Last3();
  fmu->api.fmi3FreeInstance(c);
}

// `tether run`'s CSV row `row` (0 = the initial frame): column -> value.
std::map<std::string, double> RunRow(const std::string& csv, size_t row) {
  std::istringstream lines(csv);
  std::string line, head;
  std::getline(lines, head);
  for (size_t r = 0; r <= row; ++r) std::getline(lines, line);
  std::map<std::string, double> out;
  std::istringstream h(head), l(line);
  std::string name, cell;
  while (std::getline(h, name, ',') && std::getline(l, cell, ','))
    out[name] = std::strtod(cell.c_str(), nullptr);
  return out;
}

// kBeadSpec with its force written as the ramp p0 + r (t - t0) (p0 = 0.5,
// r = 1.5, t0 = 0, parameters): what an FMU whose input the master ramps
// must match, bit for bit.
std::string BeadRampSpec() {
  std::string spec = kBeadSpec;
  spec.replace(spec.find(R"("generalizedForces":["push","0"])"),
               std::string(R"("generalizedForces":["push","0"])").size(),
               R"j("generalizedForces":["p0 + r*(t - t0)","0"])j");
  spec.replace(spec.find(R"({"name":"grav","value":9.81})"),
               std::string(R"({"name":"grav","value":9.81})").size(),
               R"({"name":"grav","value":9.81},{"name":"p0","value":0.5},)"
               R"({"name":"r","value":1.5},{"name":"t0","value":0})");
  return spec;
}

// The FMU variables compared with `tether run`'s CSV columns.
const std::vector<std::pair<std::string, std::string>>& RunColumns() {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"q.x", "x"},
      {"q.y", "y"},
      {"v.x", "v_x"},
      {"v.y", "v_y"},
      {"lambda.track", "lambda_track"},
      {"speed2", "speed2"}};
  return columns;
}

TEST_F(Fmu3Test, CommunicationStepsGiveTheBitsOfTetherRunAndOfTheFmi2Fmu) {
  auto fmu = Import3(kBeadSpec, "bead3_run");
  ASSERT_NE(fmu, nullptr);
  auto fmu2 = Import(WorkDir() / "bead3_run.json", "bead2_run");
  ASSERT_NE(fmu2, nullptr);
  constexpr int kSteps = 500, kEvery = 10;
  int rc = 0;
  const std::string csv = fmu_import::RunCommand(
      fmu_import::ShellQuote(TETHER_CLI) + " run " +
          fmu_import::ShellQuote((WorkDir() / "bead3_run.json").string()) + " --steps " +
          std::to_string(kSteps) + " --every " + std::to_string(kEvery) + " --quiet --format csv",
      &rc);
  ASSERT_EQ(rc, 0) << csv;

  fmi3Instance c = Start(*fmu, "bead3");
  ASSERT_NE(c, nullptr);
  fmi2Component c2 = Start2(*fmu2, "bead2");
  ASSERT_NE(c2, nullptr);

  const auto& compared = RunColumns();
  const double h = 1e-3 * kEvery;
  double t = 0;
  int differing = 0;
  std::string first;
  std::vector<double> start_values;
  for (int p = 0; p <= kSteps / kEvery; ++p) {
    if (p > 0) {
      Step(*fmu, c, t, h);
      ASSERT_EQ(fmu2->api.fmi2DoStep(c2, t, h, fmi2True), fmi2OK);
      t += h;
    }
    const std::vector<double> all = All(*fmu, c);
    if (p == 0) start_values = all;
    // Against the FMI 2 FMU: every Real variable (FMI 3's minus time).
    std::vector<fmi2ValueReference> refs2;
    for (const auto& v : fmu2->vars) refs2.push_back(v.vr);
    std::vector<double> all2(refs2.size());
    ASSERT_EQ(fmu2->api.fmi2GetReal(c2, refs2.data(), refs2.size(), all2.data()), fmi2OK);
    for (size_t i = 0; i < refs2.size(); ++i) {
      if (std::memcmp(&all[refs2[i]], &all2[i], sizeof(double)) != 0 && differing++ == 0)
        first = "FMI 2 at point " + std::to_string(p) + ", " + fmu2->vars[i].name;
    }
    // Against tether run.
    const auto row = RunRow(csv, static_cast<size_t>(p));
    for (const auto& [var, column] : compared) {
      const double want = row.at(column);
      const double got = all[fmu->vr.at(var)];
      if (std::memcmp(&want, &got, sizeof want) != 0 && differing++ == 0)
        first = "tether run at point " + std::to_string(p) + ", " + var;
    }
    EXPECT_NEAR(all.back(), t, 1e-12);  // time: the engine's, the master's up to rounding
  }
  EXPECT_EQ(differing, 0) << "first: " << first;
  // It moved: the bead is not where it started.
  EXPECT_GT(std::fabs(All(*fmu, c)[fmu->vr.at("q.x")] - start_values[fmu->vr.at("q.x")]), 0.1);
  EXPECT_EQ(fmu->api.fmi3Terminate(c), fmi3OK);
  fmu->api.fmi3FreeInstance(c);
  fmu2->api.fmi2FreeInstance(c2);
  for (const auto& l : Log3()) ADD_FAILURE() << "logged: " << l;
}

// The standard's rollback sequence: fmi3GetFMUState, steps, fmi3SetFMUState
// and the same steps again; then the state serialized, deserialized in
// another instance and continued there: the same bits every time.
void ExpectStatesRepeatBitForBit(const Fmu3& fmu, const std::string& server) {
  const auto& F = fmu.api;
  fmi3Instance c = Fmu3Test::Start(fmu, "states", server);
  ASSERT_NE(c, nullptr);
  const double h = 0.02;
  double t = 0;
  for (int k = 0; k < 10; ++k, t += h) Fmu3Test::Step(fmu, c, t, h);
  fmi3FMUState saved = nullptr;
  ASSERT_EQ(F.fmi3GetFMUState(c, &saved), fmi3OK) << Last3();
  const double t_saved = t;
  std::vector<std::vector<double>> first;
  for (int k = 0; k < 10; ++k, t += h) {
    Fmu3Test::Step(fmu, c, t, h);
    first.push_back(Fmu3Test::All(fmu, c));
  }
  ASSERT_EQ(F.fmi3SetFMUState(c, saved), fmi3OK) << Last3();
  t = t_saved;
  EXPECT_EQ(Fmu3Test::All(fmu, c).back(), t_saved);
  for (int k = 0; k < 10; ++k, t += h) {
    Fmu3Test::Step(fmu, c, t, h);
    EXPECT_TRUE(SameBits(Fmu3Test::All(fmu, c), first[static_cast<size_t>(k)]))
        << "restored, step " << k;
  }
  size_t size = 0;
  ASSERT_EQ(F.fmi3SerializedFMUStateSize(c, saved, &size), fmi3OK) << Last3();
  std::vector<fmi3Byte> bytes(size);
  ASSERT_EQ(F.fmi3SerializeFMUState(c, saved, bytes.data(), bytes.size()), fmi3OK) << Last3();
  // A wrong size is an error naming both sizes.
  EXPECT_EQ(F.fmi3SerializeFMUState(c, saved, bytes.data(), bytes.size() - 1), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3SerializeFMUState: size")) << Last3();
  fmi3Instance other = Fmu3Test::Start(fmu, "other", server);
  ASSERT_NE(other, nullptr);
  fmi3FMUState restored = nullptr;
  ASSERT_EQ(F.fmi3DeserializeFMUState(other, bytes.data(), bytes.size(), &restored), fmi3OK)
      << Last3();
  ASSERT_EQ(F.fmi3SetFMUState(other, restored), fmi3OK) << Last3();
  t = t_saved;
  for (int k = 0; k < 10; ++k, t += h) {
    Fmu3Test::Step(fmu, other, t, h);
    EXPECT_TRUE(SameBits(Fmu3Test::All(fmu, other), first[static_cast<size_t>(k)]))
        << "deserialized, step " << k;
  }
  // Damaged bytes are an error, never a crash.
  std::vector<fmi3Byte> damaged(bytes.begin(), bytes.begin() + static_cast<long>(size / 2));
  fmi3FMUState bad = nullptr;
  EXPECT_EQ(F.fmi3DeserializeFMUState(other, damaged.data(), damaged.size(), &bad), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3DeserializeFMUState: ")) << Last3();
  // A state is its own instance's: another instance's, or a freed one, is
  // an error naming the function, and stays as it was.
  EXPECT_EQ(F.fmi3SetFMUState(other, saved), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3SetFMUState: FMUState is not a state of this instance")) << Last3();
  EXPECT_EQ(F.fmi3SerializedFMUStateSize(other, saved, &size), fmi3Error);
  fmi3FMUState foreign = saved;
  EXPECT_EQ(F.fmi3FreeFMUState(other, &foreign), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3FreeFMUState: FMUState is not a state of this instance")) << Last3();
  EXPECT_EQ(foreign, saved);
  EXPECT_EQ(F.fmi3FreeFMUState(c, &saved), fmi3OK);
  EXPECT_EQ(saved, nullptr);
  EXPECT_EQ(F.fmi3SetFMUState(c, foreign), fmi3Error);  // freed
  EXPECT_TRUE(Logged3("already freed")) << Last3();
  EXPECT_EQ(F.fmi3FreeFMUState(other, &restored), fmi3OK);
  EXPECT_EQ(F.fmi3Terminate(c), fmi3OK);
  EXPECT_EQ(F.fmi3Terminate(other), fmi3OK);
  F.fmi3FreeInstance(c);
  F.fmi3FreeInstance(other);
}

TEST_F(Fmu3Test, StatesRestoredAndDeserializedRepeatTheStepsBitForBit) {
  auto fmu = Import3(kBeadSpec, "bead3_states");
  ASSERT_NE(fmu, nullptr);
  ExpectStatesRepeatBitForBit(*fmu, "");
}

#ifdef TETHER_SERVER
TEST_F(Fmu3Test, RemoteModeGivesTheInProcessBits) {
  auto fmu = Import3(kBeadSpec, "bead3_remote");
  ASSERT_NE(fmu, nullptr);
  ExpectStatesRepeatBitForBit(*fmu, ServerAddress());
  fmi3Instance local = Start(*fmu, "local");
  fmi3Instance remote = Start(*fmu, "remote", ServerAddress());
  ASSERT_NE(local, nullptr);
  ASSERT_NE(remote, nullptr);
  double t = 0;
  for (int k = 0; k < 20; ++k, t += 0.01) {
    Step(*fmu, local, t, 0.01);
    Step(*fmu, remote, t, 0.01);
    ASSERT_TRUE(SameBits(All(*fmu, local), All(*fmu, remote))) << "step " << k;
  }
  fmu->api.fmi3FreeInstance(local);
  fmu->api.fmi3FreeInstance(remote);
}

// A server that stops answering (SIGSTOP: the connection stays open, as
// with a host that vanished without closing it) makes fmi3DoStep an error
// naming the server within the step deadline (its ceiling
// TETHER_FMU_STEP_TIMEOUT, here 1 s), not a hang.
TEST_F(Fmu3Test, AStoppedServerMakesDoStepAnErrorNamingItWithinTheDeadline) {
  test_support::ServerProcessOptions options;
  options.terminate_with_parent = true;
  test_support::ServerProcess server({TETHER_SERVER, "--listen", "127.0.0.1:0"}, options);
  ASSERT_TRUE(server.ok()) << server.error();
  auto fmu = Import3(kBeadSpec, "bead3_stopped");
  ASSERT_NE(fmu, nullptr);
  setenv("TETHER_FMU_STEP_TIMEOUT", "1", 1);
  fmi3Instance c = Start(*fmu, "stopped", server.address());
  unsetenv("TETHER_FMU_STEP_TIMEOUT");
  ASSERT_NE(c, nullptr);
  Step(*fmu, c, 0, 0.01);
  ASSERT_TRUE(test_support::StopAndWait(server.pid()));
  fmi3Boolean event, terminate, early;
  double last = -1;
  const auto begin = std::chrono::steady_clock::now();
  const fmi3Status st =
      fmu->api.fmi3DoStep(c, 0.01, 0.01, fmi3True, &event, &terminate, &early, &last);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_EQ(kill(server.pid(), SIGCONT), 0);
  EXPECT_EQ(st, fmi3Error);
  EXPECT_GE(waited, 0.9);
  EXPECT_LT(waited, 10.0);  // the deadline, not TCP's minutes
  EXPECT_TRUE(Logged3("server " + server.address())) << Last3();
  EXPECT_TRUE(Logged3("DEADLINE_EXCEEDED")) << Last3();
  EXPECT_TRUE(Logged3("no response within 1000 ms")) << Last3();
  fmu->api.fmi3FreeInstance(c);
  server.Stop();
}

// HTTP/2 keepalive (TETHER_FMU_KEEPALIVE, here 1.25 s). Instance `idle`
// (ping timeout 30 s) pings the server every 1.25 s between steps, and a
// step after 3 s of pings succeeds: the server answers them and does not
// end the connection (tether-server permits client pings every second).
// Instance `watched` (ping timeout 1.25 s) finds the server stopped while
// the master is idle by an unanswered ping, so its next fmi3DoStep fails at
// once, naming the server, instead of after the step deadline (60 s here).
TEST_F(Fmu3Test, KeepalivePingsAreAllowedAndFindAStoppedServerWhileIdle) {
  test_support::ServerProcessOptions options;
  options.terminate_with_parent = true;
  test_support::ServerProcess server({TETHER_SERVER, "--listen", "127.0.0.1:0"}, options);
  ASSERT_TRUE(server.ok()) << server.error();
  auto fmu = Import3(kBeadSpec, "bead3_keepalive");
  ASSERT_NE(fmu, nullptr);
  setenv("TETHER_FMU_STEP_TIMEOUT", "60", 1);
  setenv("TETHER_FMU_KEEPALIVE", "1.25", 1);
  setenv("TETHER_FMU_KEEPALIVE_TIMEOUT", "30", 1);
  fmi3Instance idle = Start(*fmu, "idle", server.address());
  setenv("TETHER_FMU_KEEPALIVE_TIMEOUT", "1.25", 1);
  fmi3Instance watched = Start(*fmu, "watched", server.address());
  unsetenv("TETHER_FMU_STEP_TIMEOUT");
  unsetenv("TETHER_FMU_KEEPALIVE");
  unsetenv("TETHER_FMU_KEEPALIVE_TIMEOUT");
  ASSERT_NE(idle, nullptr);
  ASSERT_NE(watched, nullptr);
  Step(*fmu, idle, 0, 0.01);
  Step(*fmu, watched, 0, 0.01);
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  Step(*fmu, idle, 0.01, 0.01);
  ASSERT_TRUE(test_support::StopAndWait(server.pid()));
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  fmi3Boolean event, terminate, early;
  double last = -1;
  const auto begin = std::chrono::steady_clock::now();
  const fmi3Status st =
      fmu->api.fmi3DoStep(watched, 0.01, 0.01, fmi3True, &event, &terminate, &early, &last);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_EQ(kill(server.pid(), SIGCONT), 0);
  EXPECT_EQ(st, fmi3Error);
  EXPECT_LT(waited, 5.0);  // found by the pings before the step, not by its 60 s deadline
  EXPECT_TRUE(Logged3("server " + server.address())) << Last3();
  EXPECT_TRUE(Logged3("UNAVAILABLE: keepalive watchdog timeout")) << Last3();
  fmu->api.fmi3FreeInstance(watched);
  fmu->api.fmi3FreeInstance(idle);
  server.Stop();
}

// Deserialized FMU states cost the server nothing until used, and then no
// session: on a server with --max-sessions 2 (the states' source instance
// and the restoring one), an instance deserializes 5 states, restores each
// and steps from it with the bits the source had, and the server lists one
// session of the restoring instance throughout.
TEST_F(Fmu3Test, DeserializedStatesAreNoSessionsSoMoreThanMaxSessionsRestore) {
  test_support::ServerProcessOptions options;
  options.terminate_with_parent = true;
  test_support::ServerProcess server(
      {TETHER_SERVER, "--listen", "127.0.0.1:0", "--max-sessions", "2"}, options);
  ASSERT_TRUE(server.ok()) << server.error();
  auto fmu = Import3(kBeadSpec, "bead3_deserialized");
  ASSERT_NE(fmu, nullptr);
  const auto& F = fmu->api;
  fmi3Instance source = Start(*fmu, "source", server.address());
  ASSERT_NE(source, nullptr);
  constexpr int kStates = 5;
  const double h = 0.02;
  std::vector<std::vector<fmi3Byte>> bytes(kStates);
  std::vector<std::vector<double>> next(kStates);  // the values one step after state k
  for (int k = 0; k < kStates; ++k) {
    Step(*fmu, source, k * h, h);
    fmi3FMUState state = nullptr;
    ASSERT_EQ(F.fmi3GetFMUState(source, &state), fmi3OK) << Last3();
    size_t size = 0;
    ASSERT_EQ(F.fmi3SerializedFMUStateSize(source, state, &size), fmi3OK) << Last3();
    bytes[static_cast<size_t>(k)].resize(size);
    ASSERT_EQ(F.fmi3SerializeFMUState(source, state, bytes[static_cast<size_t>(k)].data(), size),
              fmi3OK);
    ASSERT_EQ(F.fmi3FreeFMUState(source, &state), fmi3OK);
    if (k > 0) next[static_cast<size_t>(k - 1)] = All(*fmu, source);
  }
  Step(*fmu, source, kStates * h, h);
  next[kStates - 1] = All(*fmu, source);
  fmi3Instance restorer = Start(*fmu, "restorer", server.address());
  ASSERT_NE(restorer, nullptr);  // the second and last session the server allows
  std::vector<fmi3FMUState> states(kStates, nullptr);
  for (int k = 0; k < kStates; ++k) {
    const auto& b = bytes[static_cast<size_t>(k)];
    ASSERT_EQ(
        F.fmi3DeserializeFMUState(restorer, b.data(), b.size(), &states[static_cast<size_t>(k)]),
        fmi3OK)
        << Last3();
  }
  auto sessions_of = [&](const std::string& name) {
    const std::string list = ListSessions(server.address());
    int n = 0;
    for (size_t at = list.find(name); at != std::string::npos; at = list.find(name, at + 1)) ++n;
    return n;
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (int k = kStates - 1; k >= 0; --k) {
      ASSERT_EQ(F.fmi3SetFMUState(restorer, states[static_cast<size_t>(k)]), fmi3OK) << Last3();
      Step(*fmu, restorer, (k + 1) * h, h);
      EXPECT_TRUE(SameBits(All(*fmu, restorer), next[static_cast<size_t>(k)]))
          << "state " << k << ", pass " << pass;
    }
  }
  EXPECT_EQ(sessions_of("restorer"), 1);
  EXPECT_EQ(sessions_of("source"), 1);
  for (auto& state : states) EXPECT_EQ(F.fmi3FreeFMUState(restorer, &state), fmi3OK);
  F.fmi3FreeInstance(restorer);
  F.fmi3FreeInstance(source);
  server.Stop();
}
#endif

TEST_F(Fmu3Test, ADiscardedStepReportsLastSuccessfulTimeAndStaysInStepMode) {
  // x'' = exp(x) from rest blows up at t = 2.22 (RK4, h = 0.01).
  auto fmu = Import3(R"json({"system": {"coordinates": ["x"], "masses": {"values": [1]},
    "potentialEnergy": "-exp(x)"}, "initial": {"q": [0], "v": [0]},
    "integrator": {"method": "RK4", "stepSize": 0.01}})json",
                     "blow3");
  ASSERT_NE(fmu, nullptr);
  const auto& F = fmu->api;
  fmi3Instance c = Start(*fmu, "blow");
  ASSERT_NE(c, nullptr);
  Step(*fmu, c, 0, 1.0);
  const auto at1 = All(*fmu, c);
  fmi3Boolean event = fmi3True, terminate = fmi3True, early = fmi3True;
  double last = -1;
  EXPECT_EQ(F.fmi3DoStep(c, 1.0, 5.0, fmi3True, &event, &terminate, &early, &last), fmi3Discard);
  EXPECT_EQ(last, 1.0);
  EXPECT_FALSE(early);
  EXPECT_FALSE(terminate);
  EXPECT_TRUE(Logged3("fmi3DoStep from t = 1 by h = 5 failed numerically")) << Last3();
  EXPECT_TRUE(SameBits(All(*fmu, c), at1));  // back at the last communication point
  // Still in Step Mode: a smaller step from there succeeds.
  Step(*fmu, c, 1.0, 0.5);
  EXPECT_EQ(F.fmi3Terminate(c), fmi3OK);
  F.fmi3FreeInstance(c);
}

// A master that retries a discarded step unchanged. FMI 2.0's state machine
// (section 4.2.4) puts the FMU in stepFailed after fmi2Discard, where
// fmi2DoStep is not allowed: the FMU asks to terminate there
// (fmi2Terminated, which FMPy's simulate_fmu and fmusim read and obey:
// fmu_test.cc), a retry anyway is fmi2Error at once, and a restored state
// steps again. FMI 3.0 has no Step Failed state: there the FMU asks
// to terminate after the default 3 discards in a row (fmi3DoStep's
// terminateSimulation) and refuses further steps from there.
TEST_F(Fmu3Test, AMasterThatRetriesADiscardedStepForeverIsToldToTerminate) {
  std::unique_ptr<Fmu> blow2 = ImportBlowUp("blow_retry2");
  ASSERT_NE(blow2, nullptr);
  const auto& F2 = blow2->api;
  fmi2Component c2 = Start2(*blow2, "retry2");
  ASSERT_NE(c2, nullptr);
  ASSERT_EQ(F2.fmi2DoStep(c2, 0, 1.0, fmi2True), fmi2OK);
  fmi2FMUstate at1 = nullptr;
  ASSERT_EQ(F2.fmi2GetFMUstate(c2, &at1), fmi2OK);
  ASSERT_EQ(F2.fmi2DoStep(c2, 1.0, 5.0, fmi2True), fmi2Discard);
  fmi2Boolean terminated = fmi2False;
  ASSERT_EQ(F2.fmi2GetBooleanStatus(c2, fmi2Terminated, &terminated), fmi2OK);
  EXPECT_TRUE(terminated);  // unless the master restores a state
  EXPECT_EQ(F2.fmi2DoStep(c2, 1.0, 5.0, fmi2True), fmi2Error);
  EXPECT_TRUE(LoggedContains("fmi2DoStep: not allowed in state 'stepFailed'")) << LastLog();
  EXPECT_EQ(F2.fmi2DoStep(c2, 1.0, 0.5, fmi2True), fmi2Error);  // smaller: still not allowed
  // A restored state steps again.
  ASSERT_EQ(F2.fmi2SetFMUstate(c2, at1), fmi2OK);
  EXPECT_EQ(F2.fmi2DoStep(c2, 1.0, 0.5, fmi2True), fmi2OK);
  F2.fmi2FreeFMUstate(c2, &at1);
  F2.fmi2FreeInstance(c2);

  // FMI 3: the same through terminateSimulation.
  auto blow3 = Import3(R"json({"system": {"coordinates": ["x"], "masses": {"values": [1]},
    "potentialEnergy": "-exp(x)"}, "initial": {"q": [0], "v": [0]},
    "integrator": {"method": "RK4", "stepSize": 0.01}})json",
                       "blow_retry3");
  ASSERT_NE(blow3, nullptr);
  const auto& F3 = blow3->api;
  fmi3Instance c3 = Start(*blow3, "retry3");
  ASSERT_NE(c3, nullptr);
  Step(*blow3, c3, 0, 1.0);
  int tries = 0;
  fmi3Boolean event = fmi3False, terminate = fmi3False, early = fmi3False;
  double last = -1;
  while (tries < 100) {
    ++tries;
    ASSERT_EQ(F3.fmi3DoStep(c3, 1.0, 5.0, fmi3True, &event, &terminate, &early, &last),
              fmi3Discard);
    EXPECT_EQ(last, 1.0);
    if (terminate) break;
  }
  EXPECT_EQ(tries, 3);
  EXPECT_EQ(F3.fmi3DoStep(c3, 1.0, 0.5, fmi3True, &event, &terminate, &early, &last), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3DoStep: the step from t = 1 was discarded 3 times")) << Last3();
  EXPECT_EQ(F3.fmi3Terminate(c3), fmi3OK);
  F3.fmi3FreeInstance(c3);
}

// fmi3GetDirectionalDerivative, fmi3GetAdjointDerivative and
// fmi2GetDirectionalDerivative at a moving state: the same partials in
// both standards, the adjoint the transpose, and the partials with respect
// to the input those of central differences of the FMU's own values
// (fmi3SetFloat64 of the input, fmi3GetFloat64 at the same state). The
// engine's Jacobians against finite differences in q and v are
// tests/sensitivity_test.cc's.
TEST_F(Fmu3Test, DirectionalDerivativesAreTheExactPartialsInBothStandards) {
  auto fmu = Import3(kBeadSpec, "bead3_dd");
  ASSERT_NE(fmu, nullptr);
  auto fmu2 = Import(WorkDir() / "bead3_dd.json", "bead2_dd");
  ASSERT_NE(fmu2, nullptr);
  EXPECT_EQ(fmu->cosimulation.at("providesDirectionalDerivatives"), "true");
  EXPECT_EQ(fmu->cosimulation.at("providesAdjointDerivatives"), "true");
  const auto& F = fmu->api;
  fmi3Instance c = Start(*fmu, "dd");
  ASSERT_NE(c, nullptr);
  fmi2Component c2 = Start2(*fmu2, "dd2");
  ASSERT_NE(c2, nullptr);
  double t = 0;
  for (int k = 0; k < 30; ++k, t += 0.01) {
    Step(*fmu, c, t, 0.01);
    ASSERT_EQ(fmu2->api.fmi2DoStep(c2, t, 0.01, fmi2True), fmi2OK);
  }
  const std::vector<std::string> unknown_names = {"a.x", "a.y", "lambda.track", "speed2", "q.x"};
  const std::vector<std::string> known_names = {"push", "q.x", "q.y", "v.x", "v.y"};
  std::vector<fmi3ValueReference> unknowns, knowns;
  for (const auto& n : unknown_names) unknowns.push_back(fmu->vr.at(n));
  for (const auto& n : known_names) knowns.push_back(fmu->vr.at(n));
  const size_t nu = unknowns.size(), nk = knowns.size();
  // The Jacobian column by column (FMI 3 and FMI 2) and row by row (adjoint).
  std::vector<double> by_column(nu * nk), by_column2(nu * nk), by_row(nu * nk);
  for (size_t j = 0; j < nk; ++j) {
    std::vector<double> seed(nk, 0.0), col(nu), col2(nu);
    seed[j] = 1;
    ASSERT_EQ(F.fmi3GetDirectionalDerivative(c, unknowns.data(), nu, knowns.data(), nk, seed.data(),
                                             nk, col.data(), nu),
              fmi3OK)
        << Last3();
    ASSERT_EQ(fmu2->api.fmi2GetDirectionalDerivative(c2, unknowns.data(), nu, knowns.data(), nk,
                                                     seed.data(), col2.data()),
              fmi2OK)
        << LastLog();
    for (size_t i = 0; i < nu; ++i) {
      by_column[i * nk + j] = col[i];
      by_column2[i * nk + j] = col2[i];
    }
  }
  for (size_t i = 0; i < nu; ++i) {
    std::vector<double> seed(nu, 0.0), row(nk);
    seed[i] = 1;
    ASSERT_EQ(F.fmi3GetAdjointDerivative(c, unknowns.data(), nu, knowns.data(), nk, seed.data(), nu,
                                         row.data(), nk),
              fmi3OK)
        << Last3();
    for (size_t j = 0; j < nk; ++j) by_row[i * nk + j] = row[j];
  }
  EXPECT_TRUE(SameBits(by_column, by_column2)) << Show(by_column) << " vs " << Show(by_column2);
  EXPECT_TRUE(SameBits(by_column, by_row)) << Show(by_column) << " vs " << Show(by_row);
  // q.x's row is the identity on q.x's column.
  for (size_t j = 0; j < nk; ++j) EXPECT_EQ(by_column[4 * nk + j], j == 1 ? 1.0 : 0.0);
  // The input's column against central differences of the FMU's values.
  const fmi3ValueReference push = fmu->vr.at("push");
  double u0 = 0;
  ASSERT_EQ(F.fmi3GetFloat64(c, &push, 1, &u0, 1), fmi3OK);
  const double h = 1e-5;
  auto values_at = [&](double u) {
    EXPECT_EQ(F.fmi3SetFloat64(c, &push, 1, &u, 1), fmi3OK);
    std::vector<double> y(nu);
    EXPECT_EQ(F.fmi3GetFloat64(c, unknowns.data(), nu, y.data(), nu), fmi3OK);
    return y;
  };
  const auto plus = values_at(u0 + h), minus = values_at(u0 - h);
  values_at(u0);
  double largest = 0;
  for (size_t i = 0; i < nu; ++i) {
    const double fd = (plus[i] - minus[i]) / (2 * h);
    const double exact = by_column[i * nk + 0];
    largest = std::max(largest, std::fabs(exact));
    EXPECT_NEAR(exact, fd, 1e-6 * std::max(1.0, std::fabs(exact))) << unknown_names[i];
  }
  EXPECT_GT(largest, 0.1);  // the input moves the accelerations
  // A parameter is no known; time no unknown.
  const fmi3ValueReference m = fmu->vr.at("grav"), time = fmu->vr.at("time");
  double seed = 1, out = 0;
  EXPECT_EQ(F.fmi3GetDirectionalDerivative(c, unknowns.data(), 1, &m, 1, &seed, 1, &out, 1),
            fmi3Error);
  EXPECT_TRUE(Logged3("known valueReference")) << Last3();
  EXPECT_TRUE(Logged3("(grav) is not an input, q.* or v.*")) << Last3();
  EXPECT_EQ(F.fmi3GetDirectionalDerivative(c, &time, 1, knowns.data(), 1, &seed, 1, &out, 1),
            fmi3Error);
  EXPECT_EQ(
      F.fmi3GetDirectionalDerivative(c, unknowns.data(), 1, knowns.data(), 1, &seed, 2, &out, 1),
      fmi3Error);
  F.fmi3FreeInstance(c);
  fmu2->api.fmi2FreeInstance(c2);
}

TEST_F(Fmu3Test, CallsOutOfSequenceAndBadArgumentsAreErrorsThatSayWhy) {
  auto fmu = Import3(kBeadSpec, "bead3_errors");
  ASSERT_NE(fmu, nullptr);
  const auto& F = fmu->api;
  // A wrong token: no instance, and the message says which.
  EXPECT_EQ(F.fmi3InstantiateCoSimulation("x", "{wrong}", fmu->resource_path.c_str(), fmi3False,
                                          fmi3False, fmi3False, fmi3False, nullptr, 0, &Log3(),
                                          Logger3, nullptr),
            nullptr);
  EXPECT_TRUE(Logged3("instantiationToken mismatch: the importer gave '{wrong}'")) << Last3();
  // Event mode and Model Exchange are not this FMU's.
  EXPECT_EQ(F.fmi3InstantiateCoSimulation("x", fmu->token.c_str(), fmu->resource_path.c_str(),
                                          fmi3False, fmi3False, fmi3True, fmi3False, nullptr, 0,
                                          &Log3(), Logger3, nullptr),
            nullptr);
  EXPECT_TRUE(Logged3("eventModeUsed is true")) << Last3();
  EXPECT_EQ(F.fmi3InstantiateModelExchange("x", fmu->token.c_str(), fmu->resource_path.c_str(),
                                           fmi3False, fmi3False, &Log3(), Logger3),
            nullptr);
  EXPECT_TRUE(Logged3("Co-Simulation only")) << Last3();

  fmi3Instance c = Instantiate(*fmu, "seq");
  ASSERT_NE(c, nullptr);
  fmi3Boolean b1, b2, b3;
  double last;
  EXPECT_EQ(F.fmi3DoStep(c, 0, 0.1, fmi3True, &b1, &b2, &b3, &last), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3DoStep: not allowed in state 'instantiated'")) << Last3();
  EXPECT_EQ(F.fmi3EnterInitializationMode(c, fmi3False, 0, 0, fmi3True, 1.0), fmi3OK);
  EXPECT_EQ(F.fmi3ExitInitializationMode(c), fmi3OK);
  // Value arrays: nValues must match (every variable is a scalar).
  const fmi3ValueReference x = fmu->vr.at("q.x");
  double v[2] = {0, 0};
  EXPECT_EQ(F.fmi3GetFloat64(c, &x, 1, v, 2), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3GetFloat64: 2 values for 1 value references")) << Last3();
  // An output cannot be set, a parameter only before initialization.
  EXPECT_EQ(F.fmi3SetFloat64(c, &x, 1, v, 1), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3SetFloat64: q.x is an output")) << Last3();
  const fmi3ValueReference grav = fmu->vr.at("grav");
  EXPECT_EQ(F.fmi3SetFloat64(c, &grav, 1, v, 1), fmi3Error);
  EXPECT_TRUE(Logged3("it can be set only before fmi3ExitInitializationMode")) << Last3();
  const fmi3ValueReference unknown = 9999;
  EXPECT_EQ(F.fmi3GetFloat64(c, &unknown, 1, v, 1), fmi3Error);
  EXPECT_TRUE(Logged3("unknown valueReference 9999")) << Last3();
  // No variables of the other types.
  fmi3Int32 i32 = 0;
  EXPECT_EQ(F.fmi3GetInt32(c, &x, 1, &i32, 1), fmi3Error);
  EXPECT_TRUE(Logged3("this FMU has no Int32 variables")) << Last3();
  // Past the stop time.
  EXPECT_EQ(F.fmi3DoStep(c, 0, 2.0, fmi3True, &b1, &b2, &b3, &last), fmi3Error);
  EXPECT_TRUE(Logged3("past the stopTime")) << Last3();
  // An input set in Step Mode moves the next step; fmi3Reset goes back to
  // the start, inputs and all.
  const auto at0 = All(*fmu, c);
  const fmi3ValueReference push = fmu->vr.at("push");
  const double stronger = 3.0;
  EXPECT_EQ(F.fmi3SetFloat64(c, &push, 1, &stronger, 1), fmi3OK);
  Step(*fmu, c, 0, 0.1);
  EXPECT_EQ(F.fmi3Reset(c), fmi3OK);
  EXPECT_EQ(F.fmi3EnterInitializationMode(c, fmi3False, 0, 0, fmi3False, 0), fmi3OK);
  EXPECT_EQ(F.fmi3ExitInitializationMode(c), fmi3OK);
  EXPECT_TRUE(SameBits(All(*fmu, c), at0));
  EXPECT_EQ(F.fmi3Terminate(c), fmi3OK);
  EXPECT_EQ(F.fmi3DoStep(c, 0, 0.1, fmi3True, &b1, &b2, &b3, &last), fmi3Error);
  EXPECT_TRUE(Logged3("fmi3DoStep: not allowed in state 'terminated'")) << Last3();
  F.fmi3FreeInstance(c);
}

// The bead with an explicit time in a force and an output, and a step of
// 1e-4 s: the output derivatives' every term (d/dq v, d/dv a, d/du u',
// d/dt) is exercised and central differences along the trajectory are
// accurate to ~1e-8.
constexpr char kTimedBeadSpec[] =
    R"json({"system":{"coordinates":["x","y"],"parameters":[{"name":"grav","value":9.81}],"inputs":[{"name":"push","defaultValue":0.5}],"masses":{"values":[2,2]},"potentialEnergy":"2*grav*y","generalizedForces":["push*(1 + x^2) + 0.3*cos(2*t)","0"],"constraints":[{"name":"track","expression":"y - x^2/2"}],"baumgarte":{"alpha":10,"beta":10},"outputs":[{"name":"speed2","expression":"der(x)^2 + der(y)^2"},{"name":"xt","expression":"x*sin(3*t) + push*der(y)"}]},"initial":{"q":[0.8,0.32],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.0001}})json";

// fmi3GetOutputDerivatives and fmi2GetRealOutputDerivatives (order 1): the
// time derivatives of every kind of output at a moving state, the same bits
// in both standards; then (FMI 2) against central differences of the FMU's
// own values one engine step before and after along the trajectory, the
// input ramped through the three points by fmi2SetRealInputDerivatives, so
// that every term (d/dq v, d/dv a, d/du u', d/dt) counts.
TEST_F(Fmu3Test, OutputDerivativesAreTheTimeDerivativesAlongTheTrajectory) {
  auto fmu = Import3(kTimedBeadSpec, "timed3_od");
  ASSERT_NE(fmu, nullptr);
  auto fmu2 = Import(WorkDir() / "timed3_od.json", "timed2_od");
  ASSERT_NE(fmu2, nullptr);
  EXPECT_EQ(fmu->cosimulation.at("maxOutputDerivativeOrder"), "1");
  EXPECT_NE(fmu2->xml_text.find("maxOutputDerivativeOrder=\"1\""), std::string::npos);
  EXPECT_NE(fmu2->xml_text.find("canInterpolateInputs=\"true\""), std::string::npos);
  const auto& F = fmu->api;
  const auto& F2 = fmu2->api;
  fmi3Instance c = Start(*fmu, "od");
  ASSERT_NE(c, nullptr);
  fmi2Component c2 = Start2(*fmu2, "od2");
  ASSERT_NE(c2, nullptr);
  const std::vector<std::string> names = {"q.x", "q.y",          "v.x",    "v.y", "a.x",
                                          "a.y", "lambda.track", "speed2", "xt"};
  std::vector<fmi3ValueReference> refs;
  for (const auto& name : names) refs.push_back(fmu->vr.at(name));
  const size_t n = refs.size();
  const std::vector<fmi2ValueReference> refs2(refs.begin(), refs.end());
  std::vector<fmi3Int32> orders3(n, 1);
  std::vector<fmi2Integer> orders(n, 1);
  // Both standards at the same state, inputs held: the same bits.
  double t = 0;
  for (int k = 0; k < 20; ++k, t += 0.01) {
    Step(*fmu, c, t, 0.01);
    ASSERT_EQ(F2.fmi2DoStep(c2, t, 0.01, fmi2True), fmi2OK);
  }
  std::vector<double> exact(n), exact3(n);
  ASSERT_EQ(F.fmi3GetOutputDerivatives(c, refs.data(), n, orders3.data(), exact3.data(), n), fmi3OK)
      << Last3();
  ASSERT_EQ(F2.fmi2GetRealOutputDerivatives(c2, refs2.data(), n, orders.data(), exact.data()),
            fmi2OK)
      << LastLog();
  EXPECT_TRUE(SameBits(exact, exact3)) << Show(exact) << " vs " << Show(exact3);
  F.fmi3FreeInstance(c);

  // Central differences about t_mid = 0.3 at one and two engine steps each
  // side, combined to fourth order (Richardson), the input ramping
  // p + rate (t - t_mid) through the five points.
  const fmi2ValueReference push = fmu2->vr.at("push");
  const double delta = 1e-4, rate = 2.0, p = 0.7, t_mid = 0.3;
  auto set_input = [&](double value, double derivative) {
    const fmi2Integer order = 1;
    ASSERT_EQ(F2.fmi2SetReal(c2, &push, 1, &value), fmi2OK) << LastLog();
    ASSERT_EQ(F2.fmi2SetRealInputDerivatives(c2, &push, 1, &order, &derivative), fmi2OK)
        << LastLog();
  };
  auto values = [&] {
    std::vector<double> y(n);
    EXPECT_EQ(F2.fmi2GetReal(c2, refs2.data(), n, y.data()), fmi2OK) << LastLog();
    return y;
  };
  for (int k = 0; k < 9; ++k, t += 0.01) ASSERT_EQ(F2.fmi2DoStep(c2, t, 0.01, fmi2True), fmi2OK);
  ASSERT_EQ(F2.fmi2DoStep(c2, t, 0.01 - 2 * delta, fmi2True), fmi2OK);
  // y at t_mid + j delta, j = -2..2; the derivatives at j = 0.
  std::vector<std::vector<double>> at(5);
  for (int j = -2; j <= 2; ++j) {
    set_input(p + rate * j * delta, rate);
    at[static_cast<size_t>(j + 2)] = values();
    if (j == 0) {
      ASSERT_EQ(F2.fmi2GetRealOutputDerivatives(c2, refs2.data(), n, orders.data(), exact.data()),
                fmi2OK)
          << LastLog();
    }
    if (j < 2) {
      ASSERT_EQ(F2.fmi2DoStep(c2, t_mid + j * delta, delta, fmi2True), fmi2OK) << LastLog();
    }
  }
  double largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d1 = (at[3][i] - at[1][i]) / (2 * delta);
    const double d2 = (at[4][i] - at[0][i]) / (4 * delta);
    const double fd = (4 * d1 - d2) / 3;  // the delta^2 terms cancel
    EXPECT_NEAR(exact[i], fd, 1e-8 * std::max(1.0, std::fabs(exact[i])))
        << names[i] << " at t = " << t_mid << " (second order: " << d1 << ")";
    largest = std::max(largest, std::fabs(exact[i]));
  }
  EXPECT_GT(largest, 0.1);  // a moving state
  // Orders above 1, inputs and other variables are errors that say why.
  const fmi2Integer one = 1, two = 2;
  double out = 0;
  EXPECT_EQ(F2.fmi2GetRealOutputDerivatives(c2, refs2.data(), 1, &two, &out), fmi2Error);
  EXPECT_TRUE(LoggedContains("order 2 is not provided (maxOutputDerivativeOrder=\"1\")"))
      << LastLog();
  EXPECT_EQ(F2.fmi2GetRealOutputDerivatives(c2, &push, 1, &one, &out), fmi2Error);
  EXPECT_TRUE(LoggedContains("(push) is not an output")) << LastLog();
  EXPECT_EQ(F2.fmi2SetRealInputDerivatives(c2, &push, 1, &two, &out), fmi2Error);
  EXPECT_TRUE(LoggedContains("order 2 is not provided (inputs are interpolated linearly"))
      << LastLog();
  EXPECT_EQ(F2.fmi2SetRealInputDerivatives(c2, refs2.data(), 1, &one, &out), fmi2Error);
  EXPECT_TRUE(LoggedContains("(q.x) is not an input")) << LastLog();
  F2.fmi2FreeInstance(c2);
}

// fmi2SetRealInputDerivatives: the input ramps u + u' (t - t_c) inside
// the engine's steps of the next fmi2DoStep. One communication step of
// 500 engine steps gives the bits of `tether run` of the description whose
// force is that ramp written out (`p0 + r*(t - t0)`, parameters); steps of
// a master that sets each step's value and slope on a line follow the
// closed form of a mass pushed by a + b t (RK4 integrates x'' = a + b t
// exactly), where held inputs (no derivative) miss it by O(H).
TEST_F(Fmu3Test, InputDerivativesRampTheInputInsideTheStepAsTetherRunOfTheRamp) {
  const fs::path ramp_path = WorkDir() / "bead_ramp.json";
  std::ofstream(ramp_path) << BeadRampSpec();
  int rc = 0;
  const std::string csv = fmu_import::RunCommand(
      fmu_import::ShellQuote(TETHER_CLI) + " run " + fmu_import::ShellQuote(ramp_path.string()) +
          " --steps 500 --every 500 --quiet --format csv",
      &rc);
  ASSERT_EQ(rc, 0) << csv;
  const auto row = RunRow(csv, 1);

  const fs::path bead_path = WorkDir() / "bead2_ramp_src.json";
  std::ofstream(bead_path) << kBeadSpec;
  auto fmu2 = Import(bead_path.string(), "bead2_ramp");
  ASSERT_NE(fmu2, nullptr);
  const auto& F = fmu2->api;
  fmi2Component c = Start2(*fmu2, "ramp");
  ASSERT_NE(c, nullptr);
  const fmi2ValueReference push = fmu2->vr.at("push");
  const fmi2Integer order = 1;
  const double p0 = 0.5, r = 1.5;
  ASSERT_EQ(F.fmi2SetReal(c, &push, 1, &p0), fmi2OK);
  ASSERT_EQ(F.fmi2SetRealInputDerivatives(c, &push, 1, &order, &r), fmi2OK) << LastLog();
  ASSERT_EQ(F.fmi2DoStep(c, 0, 0.5, fmi2True), fmi2OK) << LastLog();
  // The ramp's end value, as the run's force evaluates it at t = 0.5, so
  // that the evaluation at the communication point (lambda) is the run's.
  const double end = p0 + r * (0.5 - 0.0);
  ASSERT_EQ(F.fmi2SetReal(c, &push, 1, &end), fmi2OK);
  int differing = 0;
  for (const auto& [var, column] :
       std::vector<std::pair<std::string, std::string>>{{"q.x", "x"},
                                                        {"q.y", "y"},
                                                        {"v.x", "v_x"},
                                                        {"v.y", "v_y"},
                                                        {"lambda.track", "lambda_track"},
                                                        {"speed2", "speed2"}}) {
    const fmi2ValueReference ref = fmu2->vr.at(var);
    double got = 0;
    ASSERT_EQ(F.fmi2GetReal(c, &ref, 1, &got), fmi2OK);
    const double want = row.at(column);
    if (std::memcmp(&want, &got, sizeof want) != 0) {
      ++differing;
      ADD_FAILURE() << var << ": FMU " << got << ", tether run " << want;
    }
  }
  EXPECT_EQ(differing, 0);
  // The derivative was for that step only: the next one holds the input.
  double x_held = 0, x_ramped = 0;
  fmi2FMUstate at_half = nullptr;
  ASSERT_EQ(F.fmi2GetFMUstate(c, &at_half), fmi2OK);
  const fmi2ValueReference qx = fmu2->vr.at("q.x");
  ASSERT_EQ(F.fmi2DoStep(c, 0.5, 0.1, fmi2True), fmi2OK);
  ASSERT_EQ(F.fmi2GetReal(c, &qx, 1, &x_held), fmi2OK);
  ASSERT_EQ(F.fmi2SetFMUstate(c, at_half), fmi2OK);
  ASSERT_EQ(F.fmi2SetRealInputDerivatives(c, &push, 1, &order, &r), fmi2OK);
  ASSERT_EQ(F.fmi2DoStep(c, 0.5, 0.1, fmi2True), fmi2OK);
  ASSERT_EQ(F.fmi2GetReal(c, &qx, 1, &x_ramped), fmi2OK);
  EXPECT_NE(x_held, x_ramped);
  F.fmi2FreeFMUstate(c, &at_half);
  F.fmi2FreeInstance(c);

  // A mass pushed by u(t) = a + b t, the master giving each communication
  // point's value and slope: x(t) = x0 + v0 t + (a t^2/2 + b t^3/6) / m.
  const fs::path mass_path = WorkDir() / "mass_ramp.json";
  std::ofstream(mass_path) << R"json({"system":{"coordinates":["x"],"inputs":[{"name":"u"}],
    "masses":{"values":[2]},"generalizedForces":["u"]},"initial":{"q":[0.25],"v":[-0.5]},
    "integrator":{"method":"RK4","stepSize":0.01}})json";
  auto mass2 = Import(mass_path.string(), "mass2_ramp");
  ASSERT_NE(mass2, nullptr);
  const double a = 1.25, b = -3.0, H = 0.1, m = 2, x0 = 0.25, v0 = -0.5;
  auto run = [&](const Fmu& f, bool with_derivatives, double* x_end, double* v_end) {
    const auto& M = f.api;
    const fmi2ValueReference u = f.vr.at("u"), x = f.vr.at("q.x"), v = f.vr.at("v.x");
    fmi2Component cm = Start2(f, with_derivatives ? "ramped" : "held");
    ASSERT_NE(cm, nullptr);
    for (int k = 0; k < 10; ++k) {
      const double tc = k * H, value = a + b * tc;
      ASSERT_EQ(M.fmi2SetReal(cm, &u, 1, &value), fmi2OK);
      if (with_derivatives) {
        ASSERT_EQ(M.fmi2SetRealInputDerivatives(cm, &u, 1, &order, &b), fmi2OK) << LastLog();
      }
      ASSERT_EQ(M.fmi2DoStep(cm, tc, H, fmi2True), fmi2OK) << LastLog();
    }
    ASSERT_EQ(M.fmi2GetReal(cm, &x, 1, x_end), fmi2OK);
    ASSERT_EQ(M.fmi2GetReal(cm, &v, 1, v_end), fmi2OK);
    M.fmi2FreeInstance(cm);
  };
  const double T = 1.0;
  const double x_exact = x0 + v0 * T + (a * T * T / 2 + b * T * T * T / 6) / m;
  const double v_exact = v0 + (a * T + b * T * T / 2) / m;
  double xr = 0, vr = 0, xh = 0, vh = 0;
  run(*mass2, true, &xr, &vr);
  run(*mass2, false, &xh, &vh);
  EXPECT_NEAR(xr, x_exact, 1e-12);
  EXPECT_NEAR(vr, v_exact, 1e-12);
  EXPECT_GT(std::fabs(vh - v_exact), 0.05);  // held: b H^2 / (2 m) per step, 0.075 in all
  // An implicit method interpolates too: its stages see the ramp and its
  // Newton matrix is prepared with the inputs at its own time. RADAU_IIA
  // (collocation of degree 3) is exact for the cubic x(t): one
  // communication step lands on it, where the held input misses it. (Over
  // ten communication steps RADAU_IIA drifts from the closed form whether
  // the input ramps or the force is written as a + b*t: its large steps
  // after each restart, not the ramp; left to the integrator's owners.)
  const fs::path radau_path = WorkDir() / "mass_radau.json";
  std::ofstream(radau_path) << R"json({"system":{"coordinates":["x"],"inputs":[{"name":"u"}],
    "masses":{"values":[2]},"generalizedForces":["u"]},"initial":{"q":[0.25],"v":[-0.5]},
    "integrator":{"method":"RADAU_IIA","stepSize":0.01}})json";
  auto radau = Import(radau_path.string(), "mass_radau");
  ASSERT_NE(radau, nullptr);
  EXPECT_NE(radau->xml_text.find("canInterpolateInputs=\"true\""), std::string::npos);
  {
    const auto& R = radau->api;
    const fmi2ValueReference u = radau->vr.at("u"), x = radau->vr.at("q.x"),
                             v = radau->vr.at("v.x");
    double x1[2] = {0, 0}, v1[2] = {0, 0};
    for (int ramped = 0; ramped < 2; ++ramped) {
      fmi2Component cr = Start2(*radau, ramped ? "radau_ramped" : "radau_held");
      ASSERT_NE(cr, nullptr);
      ASSERT_EQ(R.fmi2SetReal(cr, &u, 1, &a), fmi2OK);
      if (ramped) {
        ASSERT_EQ(R.fmi2SetRealInputDerivatives(cr, &u, 1, &order, &b), fmi2OK);
      }
      ASSERT_EQ(R.fmi2DoStep(cr, 0, H, fmi2True), fmi2OK) << LastLog();
      ASSERT_EQ(R.fmi2GetReal(cr, &x, 1, &x1[ramped]), fmi2OK);
      ASSERT_EQ(R.fmi2GetReal(cr, &v, 1, &v1[ramped]), fmi2OK);
      R.fmi2FreeInstance(cr);
    }
    EXPECT_NEAR(x1[1], x0 + v0 * H + (a * H * H / 2 + b * H * H * H / 6) / m, 1e-12);
    EXPECT_NEAR(v1[1], v0 + (a * H + b * H * H / 2) / m, 1e-12);
    EXPECT_GT(std::fabs(v1[0] - v1[1]), 0.5 * std::fabs(b) * H * H / (2 * m));
  }
}

// What a master's intermediateUpdate callback saw and did (FMI 3.0
// Intermediate Update Mode): it sets the input to the ramp p0 + r (t - t0)
// whenever asked, and records the values at every completed engine step.
struct IntermediateMaster {
  const Fmu3* fmu = nullptr;
  fmi3Instance instance = nullptr;
  std::vector<std::string> log;
  std::vector<double> set_times;  // evaluations inside steps (stages, samples)
  std::vector<std::pair<double, std::vector<double>>> finished;  // time, values
  std::vector<fmi3ValueReference> recorded;
  int refused_gets = 0;  // a get tried at a stage, refused as the flags say
  int misordered = 0;    // a time before the last finished one, or out of the step
  double lo = 0, hi = 0;
  double p0 = 0.5, r = 1.5, t0 = 0;
};

void IntermediateLogger(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                        fmi3String message) {
  static_cast<IntermediateMaster*>(env)->log.push_back(
      "[" + std::to_string(static_cast<int>(status)) + "] " + (category ? category : "") + ": " +
      (message ? message : ""));
}

void IntermediateCallback(fmi3InstanceEnvironment env, fmi3Float64 time, fmi3Boolean set_requested,
                          fmi3Boolean get_allowed, fmi3Boolean step_finished,
                          fmi3Boolean can_return_early, fmi3Boolean* early_return_requested,
                          fmi3Float64* early_return_time) {
  auto& m = *static_cast<IntermediateMaster*>(env);
  const auto& F = m.fmu->api;
  if (can_return_early) ++m.misordered;  // never offered
  const double last_finished = m.finished.empty() ? m.lo : m.finished.back().first;
  // Within the communication step (up to the rounding of its end, t + h of
  // the engine's last step), never before the last finished step.
  if (time < last_finished || time < m.lo || time > m.hi + 1e-12 * m.hi) ++m.misordered;
  if (set_requested) {
    // The ramp as the description writes it: p0 + r*(t - t0).
    const double u = m.p0 + m.r * (time - m.t0);
    const fmi3ValueReference push = m.fmu->vr.at("push");
    if (F.fmi3SetFloat64(m.instance, &push, 1, &u, 1) != fmi3OK) ++m.misordered;
  }
  if (!step_finished) {
    m.set_times.push_back(time);
    if (m.set_times.size() == 7) {
      double x = 0;
      const fmi3ValueReference qx = m.fmu->vr.at("q.x");
      if (F.fmi3GetFloat64(m.instance, &qx, 1, &x, 1) == fmi3Error) ++m.refused_gets;
    }
  }
  if (get_allowed && step_finished) {
    std::vector<double> values(m.recorded.size());
    if (F.fmi3GetFloat64(m.instance, m.recorded.data(), m.recorded.size(), values.data(),
                         values.size()) != fmi3OK)
      ++m.misordered;
    m.finished.emplace_back(time, std::move(values));
  }
  *early_return_requested = fmi3False;
  *early_return_time = time;
}

// FMI 3.0's intermediate update, in process: the master's callback sets
// the input at every evaluation inside the engine's steps (FMI 3.0's way
// to give inputs that vary over a communication step), so one
// communication step of 50 engine steps gives, at every completed engine
// step where the callback reads the values, the bits of `tether run` of
// the description whose force is the ramp written out (p0 + r*(t - t0));
// the callback's times never go back past a finished step, gets at a
// stage are refused, and a second instance without intermediate update,
// its input held, ends elsewhere.
TEST_F(Fmu3Test, IntermediateUpdateSetsInputsAtTheEngineTimesAsTetherRunOfTheRamp) {
  const fs::path ramp_path = WorkDir() / "bead3_iu_ramp.json";
  std::ofstream(ramp_path) << BeadRampSpec();
  constexpr int kSteps = 50;
  int rc = 0;
  const std::string csv = fmu_import::RunCommand(
      fmu_import::ShellQuote(TETHER_CLI) + " run " + fmu_import::ShellQuote(ramp_path.string()) +
          " --steps " + std::to_string(kSteps) + " --every 1 --quiet --format csv",
      &rc);
  ASSERT_EQ(rc, 0) << csv;

  auto fmu = Import3(kBeadSpec, "bead3_iu");
  ASSERT_NE(fmu, nullptr);
  EXPECT_NE(fmu->xml_text.find("providesIntermediateUpdate=\"true\""), std::string::npos);
  const auto& compared = RunColumns();
  IntermediateMaster m;
  m.fmu = fmu.get();
  for (const auto& [var, column] : compared) m.recorded.push_back(fmu->vr.at(var));
  std::vector<fmi3ValueReference> required = m.recorded;
  required.push_back(fmu->vr.at("push"));
  const auto& F = fmu->api;
  m.instance = F.fmi3InstantiateCoSimulation(
      "iu", fmu->token.c_str(), fmu->resource_path.c_str(), fmi3False, fmi3False, fmi3False,
      fmi3True, required.data(), required.size(), &m, IntermediateLogger, IntermediateCallback);
  ASSERT_NE(m.instance, nullptr) << (m.log.empty() ? "" : m.log.back());
  const fmi3ValueReference push = fmu->vr.at("push");
  const double u0 = m.p0 + m.r * (0.0 - m.t0);
  ASSERT_EQ(F.fmi3SetFloat64(m.instance, &push, 1, &u0, 1), fmi3OK);
  ASSERT_EQ(F.fmi3EnterInitializationMode(m.instance, fmi3False, 0, 0, fmi3True, 10), fmi3OK);
  ASSERT_EQ(F.fmi3ExitInitializationMode(m.instance), fmi3OK);
  const double H = kSteps * 1e-3;
  m.lo = 0;
  m.hi = H;
  fmi3Boolean event = fmi3True, terminate = fmi3True, early = fmi3True;
  double last = -1;
  ASSERT_EQ(F.fmi3DoStep(m.instance, 0, H, fmi3True, &event, &terminate, &early, &last), fmi3OK)
      << (m.log.empty() ? "" : m.log.back());
  EXPECT_FALSE(early);
  EXPECT_EQ(m.misordered, 0);
  EXPECT_EQ(m.refused_gets, 1);
  // RK4: three new stage times a step (t + h/2 twice, t + h), and the
  // certificate's sample at t + h/2.
  EXPECT_GE(m.set_times.size(), static_cast<size_t>(3 * kSteps));
  ASSERT_EQ(m.finished.size(), static_cast<size_t>(kSteps));
  int differing = 0;
  std::string first;
  for (size_t k = 0; k < m.finished.size(); ++k) {
    const auto row = RunRow(csv, k + 1);
    EXPECT_NEAR(m.finished[k].first, row.at("t"), 1e-15);
    for (size_t i = 0; i < compared.size(); ++i) {
      const double want = row.at(compared[i].second);
      const double got = m.finished[k].second[i];
      if (std::memcmp(&want, &got, sizeof want) != 0 && differing++ == 0)
        first = "engine step " + std::to_string(k + 1) + ", " + compared[i].first;
    }
  }
  EXPECT_EQ(differing, 0) << "first: " << first;
  // Held instead (no intermediate update): elsewhere at the end.
  fmi3Instance held = Start(*fmu, "iu_held");
  ASSERT_NE(held, nullptr);
  ASSERT_EQ(F.fmi3SetFloat64(held, &push, 1, &u0, 1), fmi3OK);
  Step(*fmu, held, 0, H);
  double x_held = 0;
  const fmi3ValueReference qx = fmu->vr.at("q.x");
  ASSERT_EQ(F.fmi3GetFloat64(held, &qx, 1, &x_held, 1), fmi3OK);
  EXPECT_NE(x_held, m.finished.back().second[0]);
  F.fmi3FreeInstance(held);
  // Out of the callback, the instance is in Step Mode as after any step.
  double x_end = 0;
  ASSERT_EQ(F.fmi3GetFloat64(m.instance, &qx, 1, &x_end, 1), fmi3OK);
  EXPECT_EQ(x_end, m.finished.back().second[0]);
  EXPECT_EQ(F.fmi3Terminate(m.instance), fmi3OK);
  F.fmi3FreeInstance(m.instance);

  // A parameter is no intermediate variable: the instantiation says so.
  const fmi3ValueReference grav = fmu->vr.at("grav");
  IntermediateMaster bad;
  EXPECT_EQ(F.fmi3InstantiateCoSimulation("iu_bad", fmu->token.c_str(), fmu->resource_path.c_str(),
                                          fmi3False, fmi3False, fmi3False, fmi3True, &grav, 1, &bad,
                                          IntermediateLogger, IntermediateCallback),
            nullptr);
  ASSERT_FALSE(bad.log.empty());
  EXPECT_NE(bad.log.back().find("requiredIntermediateVariables[0]"), std::string::npos)
      << bad.log.back();
#ifdef TETHER_SERVER
  // Remote mode cannot call back inside the server's step: an error saying
  // so, not a step that silently holds the input.
  IntermediateMaster remote;
  remote.fmu = fmu.get();
  remote.instance = F.fmi3InstantiateCoSimulation(
      "iu_remote", fmu->token.c_str(), fmu->resource_path.c_str(), fmi3False, fmi3False, fmi3False,
      fmi3True, &push, 1, &remote, IntermediateLogger, IntermediateCallback);
  ASSERT_NE(remote.instance, nullptr);
  const std::string address = ServerAddress();
  const fmi3ValueReference server = fmu->vr.at("tether.server");
  fmi3String value = address.c_str();
  ASSERT_EQ(F.fmi3SetString(remote.instance, &server, 1, &value, 1), fmi3OK);
  ASSERT_EQ(F.fmi3EnterInitializationMode(remote.instance, fmi3False, 0, 0, fmi3True, 10), fmi3OK);
  ASSERT_EQ(F.fmi3ExitInitializationMode(remote.instance), fmi3OK);
  EXPECT_EQ(F.fmi3DoStep(remote.instance, 0, H, fmi3True, &event, &terminate, &early, &last),
            fmi3Error);
  ASSERT_FALSE(remote.log.empty());
  EXPECT_NE(remote.log.back().find("runs in process only"), std::string::npos) << remote.log.back();
  EXPECT_TRUE(remote.set_times.empty());
  F.fmi3FreeInstance(remote.instance);
#endif
}

#ifdef TETHER_SERVER
// fmi2SetRealInputDerivatives in remote mode: each fmi2DoStep carries the
// rates (CoSimulateRequest.input_rates) and the server ramps the inputs
// over that step as the engine in process does, so the two modes give the
// same bits at every communication point, with a slope that changes from
// step to step and steps without one, under an ENCLOSED certificate too
// (constraints read no input).
TEST_F(Fmu3Test, InputDerivativesInRemoteModeGiveTheInProcessBits) {
  const fs::path bead_path = WorkDir() / "bead2_remote_ramp_src.json";
  std::ofstream(bead_path) << kBeadSpec;
  auto fmu2 = Import(bead_path.string(), "bead2_remote_ramp");
  ASSERT_NE(fmu2, nullptr);
  const auto& F = fmu2->api;
  auto start = [&](const char* name, const char* certificate) {
    fmi2Component c =
        F.fmi2Instantiate(name, fmi2CoSimulation, fmu2->guid.c_str(), fmu2->resource_uri.c_str(),
                          &kCallbacks, fmi2False, fmi2False);
    EXPECT_NE(c, nullptr) << LastLog();
    if (c == nullptr) return c;
    EXPECT_EQ(F.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
    EXPECT_EQ(F.fmi2EnterInitializationMode(c), fmi2OK);
    const std::string address = ServerAddress();
    const fmi2ValueReference server = fmu2->vr.at("tether.server");
    fmi2String value = address.c_str();
    EXPECT_EQ(F.fmi2SetString(c, &server, 1, &value), fmi2OK) << LastLog();
    if (certificate != nullptr) {
      const fmi2ValueReference ref = fmu2->vr.at("tether.certificate");
      EXPECT_EQ(F.fmi2SetString(c, &ref, 1, &certificate), fmi2OK) << LastLog();
    }
    EXPECT_EQ(F.fmi2ExitInitializationMode(c), fmi2OK) << LastLog();
    return c;
  };
  fmi2Component local = Start2(*fmu2, "ramp_local");
  fmi2Component remote = start("ramp_remote", nullptr);
  ASSERT_NE(local, nullptr);
  ASSERT_NE(remote, nullptr);
  std::vector<fmi2ValueReference> refs;
  for (const auto& [name, ref] : fmu2->vr) {
    if (name.rfind("tether.", 0) != 0) refs.push_back(ref);
  }
  auto values = [&](fmi2Component c) {
    std::vector<double> v(refs.size());
    EXPECT_EQ(F.fmi2GetReal(c, refs.data(), refs.size(), v.data()), fmi2OK) << LastLog();
    return v;
  };
  const fmi2ValueReference push = fmu2->vr.at("push");
  const fmi2Integer order = 1;
  const double H = 0.02;
  for (int k = 0; k < 6; ++k) {
    const double t = k * H, u = 0.5 + 0.25 * k, rate = k % 3 == 2 ? 0.0 : 1.5 - k;
    for (fmi2Component c : {local, remote}) {
      ASSERT_EQ(F.fmi2SetReal(c, &push, 1, &u), fmi2OK);
      if (rate != 0) {
        ASSERT_EQ(F.fmi2SetRealInputDerivatives(c, &push, 1, &order, &rate), fmi2OK) << LastLog();
      }
      ASSERT_EQ(F.fmi2DoStep(c, t, H, fmi2True), fmi2OK) << "step " << k << ": " << LastLog();
    }
    ASSERT_TRUE(SameBits(values(local), values(remote))) << "step " << k;
  }
  // Held instead of ramped: other values, so the bits above are the ramp's.
  fmi2Component held = start("ramp_held", nullptr);
  ASSERT_NE(held, nullptr);
  for (int k = 0; k < 6; ++k) {
    const double u = 0.5 + 0.25 * k;
    ASSERT_EQ(F.fmi2SetReal(held, &push, 1, &u), fmi2OK);
    ASSERT_EQ(F.fmi2DoStep(held, k * H, H, fmi2True), fmi2OK) << LastLog();
  }
  EXPECT_FALSE(SameBits(values(held), values(remote)));
  F.fmi2FreeInstance(held);
  F.fmi2FreeInstance(local);
  F.fmi2FreeInstance(remote);

  fmi2Component enclosed = start("ramp_enclosed", "enclosed");
  ASSERT_NE(enclosed, nullptr);
  const double rate = 1.5;
  ASSERT_EQ(F.fmi2SetRealInputDerivatives(enclosed, &push, 1, &order, &rate), fmi2OK);
  EXPECT_EQ(F.fmi2DoStep(enclosed, 0, H, fmi2True), fmi2OK) << LastLog();
  F.fmi2FreeInstance(enclosed);
}
#endif

}  // namespace
}  // namespace tether::fmu_test
