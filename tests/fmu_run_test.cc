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

void ExpectTheBitsOfTetherRun(const std::string& json, const std::string& name,
                              const Compared& compared, const Starter& start);

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

void ExpectTheBitsOfTetherRun(const std::string& json, const std::string& name,
                              const Compared& compared, const Starter& start) {
  const fs::path spec = WorkDir() / (name + ".json");
  std::ofstream(spec) << json;
  auto fmu = Import(spec.string(), name);
  ASSERT_NE(fmu, nullptr);
  const auto& F = fmu->api;
  std::vector<fmi2ValueReference> refs;
  for (const auto& [var, column] : compared) refs.push_back(fmu->vr.at(var));

  constexpr int kSteps = 2000;
  for (int k : {1, 10}) {
    int rc = 0;
    const std::string out = fmu_import::RunCommand(
        fmu_import::ShellQuote(TETHER_CLI) + " run " + fmu_import::ShellQuote(spec.string()) +
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
