#include "fmu_test_fixture.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fmu_schedule.h"
#ifdef TETHER_SERVER
#include "support/server_process.h"
#endif

namespace tether::fmu_test {

namespace fs = std::filesystem;

namespace {

std::string Quote(const std::string& s) { return fmu_import::ShellQuote(s); }

void Logger(fmi2ComponentEnvironment, fmi2String instance, fmi2Status status, fmi2String category,
            fmi2String message, ...) {
  RawLogMessages().push_back(message ? message : "");
  va_list args;
  va_start(args, message);
  const std::string text = fmu_import::FormatLogMessage(message, args);
  va_end(args);
  const std::string line = std::string(instance ? instance : "") + " [" +
                           std::to_string(static_cast<int>(status)) + "] " +
                           (category ? category : "") + ": " + text;
  LogLines().push_back(line);
  if (status != fmi2OK) ProblemLines().push_back(line);
}

fs::path& MutableWorkDir() {
  static fs::path dir;
  return dir;
}

// Removes WorkDir() after the last test.
class WorkDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    if (WorkDir().empty()) return;
    std::error_code ec;
    fs::remove_all(WorkDir(), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kWorkDirCleanup =
    ::testing::AddGlobalTestEnvironment(new WorkDirCleanup);

// fmu_reference's lines for `spec` over `steps` communication steps.
std::vector<std::vector<double>> Reference(const std::string& spec, int steps) {
  int rc = 0;
  std::string out = fmu_import::RunCommand(
      Quote(FMU_REFERENCE) + " " + Quote(spec) + " " + std::to_string(steps), &rc);
  EXPECT_EQ(rc, 0) << out;
  std::vector<std::vector<double>> rows;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<double> row;
    std::string w;
    while (words >> w) row.push_back(std::strtod(w.c_str(), nullptr));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

extern const fmi2CallbackFunctions kCallbacks = {Logger, std::calloc, std::free, nullptr, nullptr};

std::string BackendName(Backend backend) {
  return backend == Backend::kRemote ? "Remote" : "InProcess";
}

std::vector<std::string>& LogLines() {
  static std::vector<std::string> lines;
  return lines;
}

std::vector<std::string>& RawLogMessages() {
  static std::vector<std::string> messages;
  return messages;
}

std::vector<std::string>& ProblemLines() {
  static std::vector<std::string> lines;
  return lines;
}

bool LoggedContains(const std::string& text) {
  for (const auto& l : LogLines())
    if (l.find(text) != std::string::npos) return true;
  return false;
}

std::string LastLog() { return LogLines().empty() ? "" : LogLines().back(); }

const fs::path& WorkDir() { return MutableWorkDir(); }

std::unique_ptr<Fmu> Import(const std::string& spec, const std::string& name) {
  std::string error;
  auto fmu = fmu_import::Import(TETHER_CLI, spec, WorkDir(), name, &error);
  EXPECT_NE(fmu, nullptr) << error;
  return fmu;
}

std::unique_ptr<Fmu> ImportBlowUp(const std::string& name) {
  const fs::path spec = WorkDir() / (name + ".json");
  std::ofstream(spec) << R"json({"system": {"coordinates": ["x"], "masses": {"values": [1]},
    "potentialEnergy": "-exp(x)"}, "initial": {"q": [0], "v": [0]},
    "integrator": {"method": "RK4", "stepSize": 0.01}})json";
  return Import(spec.string(), name);
}

std::string Source(const std::string& rel) { return std::string(TETHER_SOURCE_DIR) + "/" + rel; }

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

std::string Show(const std::vector<double>& a) {
  std::string s;
  char buf[40];
  for (double x : a) {
    std::snprintf(buf, sizeof buf, " %a", x);
    s += buf;
  }
  return s;
}

#ifdef TETHER_SERVER
const std::string& ServerAddress() {
  static test_support::ServerProcess* server = [] {
    test_support::ServerProcessOptions options;
    options.terminate_with_parent = true;
    return new test_support::ServerProcess({TETHER_SERVER, "--listen", "127.0.0.1:0"}, options);
  }();
  EXPECT_TRUE(server->ok()) << server->error();
  return server->address();
}

std::string ListSessions(const std::string& address) {
  int rc = 0;
  std::string out = fmu_import::RunCommand(
      Quote(TETHER_CLI) + " sessions list --server " + Quote(address) + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  return out;
}
#endif

// ---------------------------------------------------------------- fixture

Fmu* FmuFixture::pendulum_ = nullptr;
std::vector<std::vector<double>>* FmuFixture::reference_ = nullptr;

void PrepareProcess() {
  if (!WorkDir().empty()) return;  // once per process
  // The FMU reads these (its remote mode's server and connection): a
  // developer's settings must not turn the in-process tests remote or
  // change how the remote tests connect.
  for (const char* name :
       {"TETHER_FMU_SERVER", "TETHER_TLS_CA", "TETHER_CLIENT_TLS_CERT", "TETHER_CLIENT_TLS_KEY",
        "TETHER_TLS_CERT", "TETHER_TLS_KEY", "TETHER_TLS_SERVER_NAME", "TETHER_TOKEN",
        "TETHER_TOKEN_FILE", "TETHER_ALLOW_PLAINTEXT_TOKEN"}) {
    unsetenv(name);
  }
  char tmpl[] = "/tmp/tether-fmu-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  MutableWorkDir() = tmpl;
}

void FmuFixture::SetUpTestSuite() {
  if (pendulum_ != nullptr) return;  // once per process, for every suite
  PrepareProcess();
  pendulum_ = Import(Source("examples/pendulum_force_input.json"), "pendulum").release();
  ASSERT_NE(pendulum_, nullptr);
  reference_ = new std::vector<std::vector<double>>(
      Reference(Source("examples/pendulum_force_input.json"), kSteps));
  ASSERT_EQ(reference_->size(), static_cast<size_t>(kSteps + 1));
}

void FmuFixture::SetUp() {
  ASSERT_NE(pendulum_, nullptr) << "the pendulum's FMU was not imported";
  LogLines().clear();
  ProblemLines().clear();
  RawLogMessages().clear();
}

fmi2Component FmuFixture::Instantiate(const char* name, const Fmu& fmu) {
  return fmu.api.fmi2Instantiate(name, fmi2CoSimulation, fmu.guid.c_str(), fmu.resource_uri.c_str(),
                                 &kCallbacks, fmi2False, fmi2False);
}

fmi2Status FmuFixture::ExitInitializationOn(const std::string& address, const Fmu& fmu,
                                            fmi2Component c) {
  if (!address.empty()) {
    const fmi2ValueReference ref = ServerRef(fmu);
    const fmi2String value = address.c_str();
    EXPECT_EQ(fmu.api.fmi2SetString(c, &ref, 1, &value), fmi2OK);
  }
  return fmu.api.fmi2ExitInitializationMode(c);
}

fmi2Component FmuFixture::StartOn(const std::string& address, const char* name, const Fmu& fmu,
                                  fmi2Status* status) {
  fmi2Component c = Instantiate(name, fmu);
  EXPECT_NE(c, nullptr) << LastLog();
  if (c == nullptr) return nullptr;
  EXPECT_EQ(fmu.api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  EXPECT_EQ(fmu.api.fmi2EnterInitializationMode(c), fmi2OK);
  const fmi2Status s = ExitInitializationOn(address, fmu, c);
  if (status != nullptr) *status = s;
  if (s != fmi2OK) {
    EXPECT_TRUE(status != nullptr) << "fmi2ExitInitializationMode: " << LastLog();
    fmu.api.fmi2FreeInstance(c);
    return nullptr;
  }
  return c;
}

std::vector<double> FmuFixture::Values(const Fmu& fmu, fmi2Component c, double t) {
  std::vector<fmi2ValueReference> refs;
  for (const auto& v : fmu.vars) refs.push_back(v.vr);
  std::vector<double> out(refs.size() + 1);
  // The FMU's own time (the engine's, on its step grid), which is the
  // master's t up to the master's rounding of t + h.
  EXPECT_EQ(fmu.api.fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &out[0]), fmi2OK);
  EXPECT_NEAR(out[0], t, 1e-12 * std::max(1.0, std::fabs(t)));
  EXPECT_EQ(fmu.api.fmi2GetReal(c, refs.data(), refs.size(), out.data() + 1), fmi2OK);
  return out;
}

fmi2Status FmuFixture::Step(const Fmu& fmu, fmi2Component c, int k, double* t) {
  std::vector<double> u(fmu.inputs.size(), InputValue(k));
  EXPECT_EQ(fmu.api.fmi2SetReal(c, fmu.inputs.data(), fmu.inputs.size(), u.data()), fmi2OK);
  fmi2Status s = fmu.api.fmi2DoStep(c, *t, StepSize(k), fmi2True);
  if (s == fmi2OK) *t += StepSize(k);
  return s;
}

void FmuFixture::ExpectRestoredStepsRepeatBitForBit(fmi2Component c) {
  double t = 0;
  for (int k = 0; k < 20; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  fmi2FMUstate saved = nullptr;
  ASSERT_EQ(F().fmi2GetFMUstate(c, &saved), fmi2OK);
  const double t_saved = t;
  std::vector<std::vector<double>> first, second;
  for (int k = 20; k < 30; ++k) {
    ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
    first.push_back(Values(*pendulum_, c, t));
  }
  ASSERT_EQ(F().fmi2SetFMUstate(c, saved), fmi2OK);
  t = t_saved;
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[20]));
  for (int k = 20; k < 30; ++k) {
    ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
    second.push_back(Values(*pendulum_, c, t));
  }
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(SameBits(first[i], second[i])) << i;
    EXPECT_TRUE(SameBits(first[i], (*reference_)[21 + i])) << i;
  }
  EXPECT_EQ(F().fmi2FreeFMUstate(c, &saved), fmi2OK);
  EXPECT_EQ(saved, nullptr);
}

std::string FmuTest::Server() const {
#ifdef TETHER_SERVER
  if (Remote()) return ServerAddress();
#endif
  return "";
}

}  // namespace tether::fmu_test
