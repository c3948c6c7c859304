// The FMU's outputs against `tether run` of the same description (issue 11
// point 7): communication steps of K engine steps (h K, K = 1 and 10) give
// the q, v, lambda and outputs that `tether run --every K` prints, bit for
// bit (its CSV has 17 significant digits, which round-trip a double
// exactly), at every communication point of 2000 engine steps, with an
// input that is not zero. Part of the FMU's parameterised suite
// (fmu_test_fixture.h): on both backends, and nothing logged but fmi2OK.
// The same for a description with definitions (issue 23).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fmu_test_fixture.h"

namespace tether::fmu_test {
namespace {

namespace fs = std::filesystem;

// The pendulum of examples/pendulum_force_input.json, started off the
// bottom and pushed by its input's default.
constexpr char kSpec[] =
    R"json({"system":{"coordinates":["x","y"],"parameters":[{"name":"l","value":1},{"name":"grav","value":9.81}],"inputs":[{"name":"Fx","defaultValue":0.75}],"masses":{"values":[1,1]},"potentialEnergy":"grav*y","generalizedForces":["Fx","0"],"constraints":[{"name":"rod","expression":"(x^2 + y^2 - l^2)/2"}],"baumgarte":{"alpha":10,"beta":10},"outputs":[{"name":"angle","expression":"atan2(x, -y)"},{"name":"omega","expression":"(-y*der(x) + x*der(y))/(x^2 + y^2)"}]},"initial":{"q":[0.6,-0.8],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";

// `tether run`'s CSV rows: column name -> values, one per frame.
std::vector<std::vector<std::string>> Csv(const std::string& text, std::vector<std::string>* head) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    std::string f;
    while (std::getline(fields, f, ',')) cells.push_back(f);
    if (first) {
      *head = cells;
      first = false;
    } else {
      rows.push_back(cells);
    }
  }
  return rows;
}

// The pendulum with two definitions, used by the constraint and the
// outputs (issue 23).
constexpr char kDefinitionsSpec[] =
    R"json({"system":{"coordinates":["x","y"],"parameters":[{"name":"l","value":1},{"name":"grav","value":9.81}],"inputs":[{"name":"Fx","defaultValue":0.75}],"definitions":[{"name":"r2","expression":"x^2 + y^2"},{"name":"spin","expression":"-y*der(x) + x*der(y)"}],"masses":{"values":[1,1]},"potentialEnergy":"grav*y","generalizedForces":["Fx","0"],"constraints":[{"name":"rod","expression":"(r2 - l^2)/2"}],"baumgarte":{"alpha":10,"beta":10},"outputs":[{"name":"angle","expression":"atan2(x, -y)"},{"name":"omega","expression":"spin/r2"}]},"initial":{"q":[0.6,-0.8],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";

// FMU variable -> `tether run` CSV column.
using Compared = std::vector<std::pair<std::string, std::string>>;
// Instantiates and initialises an FMU on the test's backend (FmuTest::Start).
using Starter = std::function<fmi2Component(const Fmu&)>;

// `run_json` (default: `json`) is the description `tether run` runs: the
// FMU's own edited as the starter sets its parameters.
// `ks`: the numbers of engine steps per communication step compared.
void ExpectTheBitsOfTetherRun(const std::string& json, const std::string& name,
                              const Compared& compared, const Starter& start,
                              const std::string& run_json = "",
                              const std::vector<int>& ks = {1, 10});

TEST_P(FmuTest, CommunicationStepsOfKEngineStepsGiveTheBitsOfTetherRun) {
  ExpectTheBitsOfTetherRun(kSpec, Named("pendulum_run"),
                           {{"q.x", "x"},
                            {"q.y", "y"},
                            {"v.x", "v_x"},
                            {"v.y", "v_y"},
                            {"lambda.rod", "lambda_rod"},
                            {"angle", "angle"},
                            {"omega", "omega"}},
                           [this](const Fmu& fmu) { return Start("run", fmu); });
}

TEST_P(FmuTest, ADescriptionWithDefinitionsGivesTheBitsOfTetherRun) {
  ExpectTheBitsOfTetherRun(kDefinitionsSpec, Named("definitions_run"),
                           {{"q.x", "x"}, {"lambda.rod", "lambda_rod"}, {"omega", "omega"}},
                           [this](const Fmu& fmu) { return Start("run", fmu); });
}

// Issue 27 point 5: q0.*, v0.* and a parameter set before initialization
// start the FMU's run where `tether run` of the description edited the
// same way starts, and every communication point has its bits. The start
// set (x, y) = (0.8, -0.6), (vx, vy) = (0.3, 0.4) is on the rod and
// tangent to it, so nothing is warned (ProblemLines() stays empty).
TEST_P(FmuTest, StartsAndAParameterSetBeforeInitializationGiveTheBitsOfTetherRunEdited) {
  std::string edited = kSpec;
  auto replace = [&edited](const std::string& from, const std::string& to) {
    const size_t at = edited.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    edited.replace(at, from.size(), to);
  };
  replace(R"("initial":{"q":[0.6,-0.8],"v":[0,0]})", R"("initial":{"q":[0.8,-0.6],"v":[0.3,0.4]})");
  replace(R"({"name":"grav","value":9.81})", R"({"name":"grav","value":3.7})");
  ExpectTheBitsOfTetherRun(
      kSpec, Named("starts_run"),
      {{"q.x", "x"}, {"q.y", "y"}, {"v.x", "v_x"}, {"v.y", "v_y"}, {"lambda.rod", "lambda_rod"}},
      [this](const Fmu& fmu) -> fmi2Component {
        fmi2Component c = Instantiate("starts", fmu);
        if (c == nullptr) return nullptr;
        const std::vector<fmi2ValueReference> refs = {fmu.vr.at("q0.x"), fmu.vr.at("q0.y"),
                                                      fmu.vr.at("v0.x"), fmu.vr.at("v0.y"),
                                                      fmu.vr.at("grav")};
        const std::vector<double> values = {0.8, -0.6, 0.3, 0.4, 3.7};
        std::vector<double> before(refs.size());
        // The start values are those of the description.
        EXPECT_EQ(fmu.api.fmi2GetReal(c, refs.data(), refs.size(), before.data()), fmi2OK);
        EXPECT_EQ(before, (std::vector<double>{0.6, -0.8, 0, 0, 9.81}));
        EXPECT_EQ(fmu.api.fmi2SetReal(c, refs.data(), refs.size(), values.data()), fmi2OK);
        EXPECT_EQ(fmu.api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
        EXPECT_EQ(fmu.api.fmi2EnterInitializationMode(c), fmi2OK);
        EXPECT_EQ(ExitInitialization(fmu, c), fmi2OK) << LastLog();
        // Fixed after initialization.
        EXPECT_EQ(fmu.api.fmi2SetReal(c, refs.data(), 1, values.data()), fmi2Error);
        ProblemLines().clear();  // the refused set above; none may follow
        return c;
      },
      edited, {10});  // K = 1 is the tests above's: communication steps of 10 engine steps
}

// Issue 27 point 5: a mass named by a parameter (system.masses.expressions)
// is an FMU parameter that changes the run: set to 2.5 before
// initialization, the FMU's communication points have the bits of
// `tether run` of the description with the masses written as 2.5; and the
// parameter is read, so no unused-parameter warning is logged.
TEST_P(FmuTest, AMassParameterSetBeforeInitializationGivesTheBitsOfTetherRunOfTheLiteral) {
  std::string named = kSpec, literal = kSpec;
  auto replace = [](std::string* text, const std::string& from, const std::string& to) {
    const size_t at = text->find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text->replace(at, from.size(), to);
  };
  replace(&named, R"("masses":{"values":[1,1]})", R"("masses":{"expressions":["m","m"]})");
  replace(&named, R"({"name":"grav","value":9.81})",
          R"({"name":"grav","value":9.81},{"name":"m","value":1})");
  replace(&literal, R"("masses":{"values":[1,1]})", R"("masses":{"values":[2.5,2.5]})");
  ExpectTheBitsOfTetherRun(
      named, Named("mass_parameter_run"),
      {{"q.x", "x"}, {"q.y", "y"}, {"v.x", "v_x"}, {"v.y", "v_y"}, {"lambda.rod", "lambda_rod"}},
      [this](const Fmu& fmu) -> fmi2Component {
        fmi2Component c = Instantiate("mass", fmu);
        if (c == nullptr) return nullptr;
        EXPECT_FALSE(LoggedContains("no expression of the description reads it")) << LastLog();
        const fmi2ValueReference m = fmu.vr.at("m");
        const double value = 2.5;
        EXPECT_EQ(fmu.api.fmi2SetReal(c, &m, 1, &value), fmi2OK);
        EXPECT_EQ(fmu.api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
        EXPECT_EQ(fmu.api.fmi2EnterInitializationMode(c), fmi2OK);
        EXPECT_EQ(ExitInitialization(fmu, c), fmi2OK) << LastLog();
        return c;
      },
      literal, {10});
}

// A rod length set to 2 leaves the description's start (on the unit
// circle) off the constraint: without tether.project_start the FMU warns
// through the logger with the engine's consistency judgement and runs
// from there; with it, the start is projected. With the velocity (1, 0),
// not tangent, set as well: the minimum-norm projection onto
// x^2 + y^2 = 4 is radial, (1.2, -1.6); onto the tangent there, v loses
// its radial part: (1, 0) - 0.6 (0.6, -0.8) = (0.64, 0.48). Closed forms,
// not Tether's numbers.
TEST_P(FmuTest, AnInconsistentStartIsWarnedAndProjectedOnRequest) {
  const fs::path spec = WorkDir() / (Named("projected") + ".json");
  std::ofstream(spec) << kSpec;
  auto fmu = Import(spec.string(), Named("projected"));
  ASSERT_NE(fmu, nullptr);
  {
    fmi2Component c = Instantiate("inconsistent", *fmu);
    ASSERT_NE(c, nullptr);
    const fmi2ValueReference l = fmu->vr.at("l");
    const double two = 2;
    ASSERT_EQ(fmu->api.fmi2SetReal(c, &l, 1, &two), fmi2OK);
    EXPECT_EQ(fmu->api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
    EXPECT_EQ(fmu->api.fmi2EnterInitializationMode(c), fmi2OK);
    EXPECT_EQ(ExitInitialization(*fmu, c), fmi2OK) << LastLog();
    EXPECT_TRUE(
        LoggedContains("with the parameters set: initial: the initial state is not "
                       "consistent: |g|_inf = 1.5"))
        << LastLog();
    EXPECT_FALSE(LoggedContains("projected"));
    EXPECT_EQ(fmu->api.fmi2DoStep(c, 0, 0.01, fmi2True), fmi2OK);
    fmu->api.fmi2Terminate(c);
    fmu->api.fmi2FreeInstance(c);
  }
  fmi2Component c = Instantiate("projected", *fmu);
  ASSERT_NE(c, nullptr);
  const std::vector<fmi2ValueReference> refs = {fmu->vr.at("l"), fmu->vr.at("v0.x")};
  const std::vector<double> values = {2, 1};
  ASSERT_EQ(fmu->api.fmi2SetReal(c, refs.data(), refs.size(), values.data()), fmi2OK);
  const fmi2ValueReference project = fmu->vr.at("tether.project_start");
  fmi2Boolean on = fmi2False;
  ASSERT_EQ(fmu->api.fmi2GetBoolean(c, &project, 1, &on), fmi2OK);
  EXPECT_EQ(on, fmi2False);  // off unless asked
  on = fmi2True;
  ASSERT_EQ(fmu->api.fmi2SetBoolean(c, &project, 1, &on), fmi2OK);
  EXPECT_EQ(fmu->api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  EXPECT_EQ(fmu->api.fmi2EnterInitializationMode(c), fmi2OK);
  ASSERT_EQ(ExitInitialization(*fmu, c), fmi2OK) << LastLog();
  EXPECT_TRUE(
      LoggedContains("tether.project_start: projected the start onto the constraints: "
                     "|g|_inf 1.5 -> "))
      << LastLog();
  const std::vector<fmi2ValueReference> state = {fmu->vr.at("q.x"),  fmu->vr.at("q.y"),
                                                 fmu->vr.at("v.x"),  fmu->vr.at("v.y"),
                                                 fmu->vr.at("q0.x"), fmu->vr.at("v0.y")};
  std::vector<double> got(state.size());
  ASSERT_EQ(fmu->api.fmi2GetReal(c, state.data(), state.size(), got.data()), fmi2OK);
  const std::vector<double> want = {1.2, -1.6, 0.64, 0.48, 1.2, 0.48};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
  // Fixed after initialization.
  EXPECT_EQ(fmu->api.fmi2SetBoolean(c, &project, 1, &on), fmi2Error);
  double t = 0;
  EXPECT_EQ(fmu->api.fmi2DoStep(c, t, 0.01, fmi2True), fmi2OK);
  fmu->api.fmi2Terminate(c);
  fmu->api.fmi2FreeInstance(c);
}

// A start the description cannot be evaluated at (q0.x = 1e308: g is not
// finite) fails initialization with the cause once and the variables set
// named (it printed the cause twice and named only `initial`; found by an
// audit).
TEST_P(FmuTest, AStartThatCannotBeEvaluatedNamesTheVariablesSet) {
  const fs::path spec = WorkDir() / (Named("unevaluable") + ".json");
  std::ofstream(spec) << kSpec;
  auto fmu = Import(spec.string(), Named("unevaluable"));
  ASSERT_NE(fmu, nullptr);
  fmi2Component c = Instantiate("unevaluable", *fmu);
  ASSERT_NE(c, nullptr);
  const std::vector<fmi2ValueReference> refs = {fmu->vr.at("q0.x"), fmu->vr.at("grav")};
  const std::vector<double> values = {1e308, 9.81};  // grav as it was: not named
  ASSERT_EQ(fmu->api.fmi2SetReal(c, refs.data(), refs.size(), values.data()), fmi2OK);
  EXPECT_EQ(fmu->api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  EXPECT_EQ(fmu->api.fmi2EnterInitializationMode(c), fmi2OK);
  EXPECT_EQ(ExitInitialization(*fmu, c), fmi2Error);
  const std::string log = LastLog();
  const std::string cause = "constraint 'rod' g is not finite";
  const std::size_t first = log.find(cause);
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(cause, first + 1), std::string::npos) << "said once: " << log;
  EXPECT_NE(log.find("(set since instantiation: q0.x = 1e+308)"), std::string::npos) << log;
  fmu->api.fmi2FreeInstance(c);
  ProblemLines().clear();  // the failed initialization above, as intended
}

// A parameter no expression reads (m, with the masses written as numbers)
// is warned by `tether fmu` and in the FMU's log at instantiation (which
// is before a backend is chosen: one test, not one per backend).
class FmuParameterTest : public FmuFixture {
 protected:
  static std::string Named(const std::string& base) { return base; }
};

TEST_F(FmuParameterTest, AParameterNothingReadsIsWarned) {
  std::string json = kSpec;
  const std::string grav = R"({"name":"grav","value":9.81})";
  json.insert(json.find(grav) + grav.size(), R"(,{"name":"m","value":2})");
  const fs::path spec = WorkDir() / (Named("unused") + ".json");
  std::ofstream(spec) << json;
  int rc = 0;
  const std::string out = fmu_import::RunCommand(
      fmu_import::ShellQuote(TETHER_CLI) + " fmu " + fmu_import::ShellQuote(spec.string()) +
          " --output " +
          fmu_import::ShellQuote((WorkDir() / (Named("unused_cli") + ".fmu")).string()) + " 2>&1",
      &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string warning =
      "parameter 'm' is exported as an FMU parameter but no expression of the description "
      "reads it";
  EXPECT_NE(out.find("warning: system.parameters: " + warning), std::string::npos) << out;
  EXPECT_EQ(out.find("parameter 'grav'"), std::string::npos) << out;
  EXPECT_EQ(out.find("parameter 'l'"), std::string::npos) << out;
  auto fmu = Import(spec.string(), Named("unused"));
  ASSERT_NE(fmu, nullptr);
  fmi2Component c = Instantiate("unused", *fmu);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(LoggedContains(warning)) << LastLog();
  fmu->api.fmi2FreeInstance(c);
}

void ExpectTheBitsOfTetherRun(const std::string& json, const std::string& name,
                              const Compared& compared, const Starter& start,
                              const std::string& run_json, const std::vector<int>& ks) {
  const fs::path spec = WorkDir() / (name + ".json");
  std::ofstream(spec) << json;
  const fs::path run_spec = WorkDir() / (name + "_run.json");
  std::ofstream(run_spec) << (run_json.empty() ? json : run_json);
  auto fmu = Import(spec.string(), name);
  ASSERT_NE(fmu, nullptr);
  const auto& F = fmu->api;
  std::vector<fmi2ValueReference> refs;
  for (const auto& [var, column] : compared) refs.push_back(fmu->vr.at(var));

  constexpr int kSteps = 2000;
  for (int k : ks) {
    int rc = 0;
    const std::string out = fmu_import::RunCommand(
        fmu_import::ShellQuote(TETHER_CLI) + " run " + fmu_import::ShellQuote(run_spec.string()) +
            " --steps " + std::to_string(kSteps) + " --every " + std::to_string(k) +
            " --quiet --format csv",
        &rc);
    ASSERT_EQ(rc, 0) << out;
    std::vector<std::string> head;
    auto rows = Csv(out, &head);
    ASSERT_EQ(rows.size(), static_cast<size_t>(kSteps / k + 1));
    std::vector<size_t> columns;
    for (const auto& [var, column] : compared) {
      auto it = std::find(head.begin(), head.end(), column);
      ASSERT_NE(it, head.end()) << column;
      columns.push_back(static_cast<size_t>(it - head.begin()));
    }

    fmi2Component c = start(*fmu);
    ASSERT_NE(c, nullptr);
    // The master's time, accumulated as masters do.
    double t = 0;
    const double h = 1e-3 * k;
    int differing = 0;
    std::string first;
    std::vector<double> got(refs.size());
    for (size_t p = 0; p < rows.size(); ++p) {
      if (p > 0) {
        ASSERT_EQ(F.fmi2DoStep(c, t, h, fmi2True), fmi2OK) << "K = " << k << ", point " << p;
        t += h;
      }
      ASSERT_EQ(F.fmi2GetReal(c, refs.data(), refs.size(), got.data()), fmi2OK);
      for (size_t i = 0; i < refs.size(); ++i) {
        const double want = std::strtod(rows[p][columns[i]].c_str(), nullptr);
        if (std::memcmp(&want, &got[i], sizeof want) != 0) {
          if (differing++ == 0) {
            char buf[200];
            std::snprintf(buf, sizeof buf, "point %zu, %s: FMU %a, tether run %a", p,
                          compared[i].first.c_str(), got[i], want);
            first = buf;
          }
        }
      }
    }
    EXPECT_EQ(differing, 0) << "K = " << k << ": first " << first;
    F.fmi2Terminate(c);
    F.fmi2FreeInstance(c);
  }
  EXPECT_TRUE(ProblemLines().empty())
      << ProblemLines().size() << " messages, the first " << ProblemLines().front();
}

}  // namespace
}  // namespace tether::fmu_test
