// What the FMU's tests share (tests/fmu_test.cc and tests/fmu_run_test.cc,
// one fmu_test binary): the FMU that `tether fmu` writes, imported as an
// FMI 2.0 master imports it (support/fmu_import.h: libzip, tinyxml2,
// dlopen), a logger that keeps every message, the reference values of
// fmu_reference, and the fixtures.
//
// FmuTest is the one parameterised suite: every FMU behaviour is tested on
// both backends (server/fmu/step_backend.h), Backend::kInProcess and
// Backend::kRemote (tether.server set to a tether-server child process on
// a loopback port, started once per process on first use), instantiated
// in fmu_test.cc. Tests of one backend only are FmuRemoteTest (a server, or
// both modes compared); those of the FMU's files, before a backend is
// chosen, FmuPackageTest.
//
// Deliberately links neither the engine nor protobuf (the FMU's copies are
// the process's only ones). TETHER_CLI, FMU_REFERENCE, TETHER_SOURCE_DIR
// and, with the service, TETHER_SERVER come from tests/CMakeLists.txt.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fmu/fmi2.h"
#include "support/fmu_import.h"

namespace tether::fmu_test {

using fmu_import::Fmi2;
using fmu_import::Fmu;

// Where an instance's communication steps run, chosen at
// fmi2ExitInitializationMode.
enum class Backend { kInProcess, kRemote };

// "InProcess", "Remote": the test names' suffix.
std::string BackendName(Backend backend);
// GoogleTest prints a test's parameter with it.
inline void PrintTo(Backend backend, std::ostream* os) { *os << BackendName(backend); }

// Every message the FMUs logged ("instance [status] category: text"), for
// the checks that an error says why; cleared before each test.
std::vector<std::string>& LogLines();
// Those of them with another status than fmi2OK.
std::vector<std::string>& ProblemLines();
bool LoggedContains(const std::string& text);
// The last message logged, "" when none (for failure messages).
std::string LastLog();
// The message argument of every FMI 2 log call as it came, not formatted:
// what a master that cannot reach the logger's variadic arguments prints
// (FMPy's Python callback, any ctypes logger); cleared before each test.
std::vector<std::string>& RawLogMessages();
// The callbacks every instance is given (the logger above).
extern const fmi2CallbackFunctions kCallbacks;

// This process's temporary directory, removed when the tests end.
const std::filesystem::path& WorkDir();
// Makes WorkDir() and clears the environment variables the FMU reads (its
// remote mode's), once per process; FmuFixture::SetUpTestSuite calls it,
// and suites without the pendulum (fmu3_test.cc) do.
void PrepareProcess();
// SPEC's FMU written with the CLI as WorkDir()/NAME.fmu, unzipped and
// loaded (a test failure and nullptr when that fails).
std::unique_ptr<Fmu> Import(const std::string& spec, const std::string& name);
// The FMU of x'' = exp(x) from rest, which blows up at t = pi/sqrt(2) =
// 2.22 (RK4, h = 0.01), as NAME.fmu.
std::unique_ptr<Fmu> ImportBlowUp(const std::string& name);
// TETHER_SOURCE_DIR/rel.
std::string Source(const std::string& rel);

bool SameBits(const std::vector<double>& a, const std::vector<double>& b);
// " 0x1.8p+0 ...": the exact values, for failure messages.
std::string Show(const std::vector<double>& a);

#ifdef TETHER_SERVER
// The address of one tether-server for the remote tests of this process,
// started on first use.
const std::string& ServerAddress();
// `tether sessions list` on `address`: the JSON.
std::string ListSessions(const std::string& address);
#endif

// The pendulum of examples/pendulum_force_input.json, imported once per
// process, and fmu_reference's values for it over kSteps communication
// steps of the schedule (fmu_schedule.h), with the helpers to drive it.
class FmuFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  void SetUp() override;

  static constexpr int kSteps = 60;
  static Fmu* pendulum_;
  // fmu_reference's lines: the time and every variable, by value reference.
  static std::vector<std::vector<double>>* reference_;

  const Fmi2& F() const { return pendulum_->api; }
  fmi2ValueReference ServerRef(const Fmu& fmu) const { return fmu.vr.at("tether.server"); }

  fmi2Component Instantiate(const char* name, const Fmu& fmu);
  // fmi2ExitInitializationMode with tether.server set to `address` first
  // ("": left as it is, so in process unless TETHER_FMU_SERVER is set).
  fmi2Status ExitInitializationOn(const std::string& address, const Fmu& fmu, fmi2Component c);
  // Instantiated and initialized at the description's start time on
  // `address`; null (and the status in *status) when initialization
  // fails, which is a test failure unless `status` is given.
  fmi2Component StartOn(const std::string& address, const char* name, const Fmu& fmu,
                        fmi2Status* status = nullptr);
  // The time (the reference's first column) and every variable.
  std::vector<double> Values(const Fmu& fmu, fmi2Component c, double t);
  // Communication step k of the schedule from time *t.
  fmi2Status Step(const Fmu& fmu, fmi2Component c, int k, double* t);
  // 20 steps, a state saved, 10 steps, the state restored, the same 10
  // steps: both times the reference's bits.
  void ExpectRestoredStepsRepeatBitForBit(fmi2Component c);
};

// The parameterised suite: the test's backend is GetParam().
class FmuTest : public FmuFixture, public ::testing::WithParamInterface<Backend> {
 protected:
  bool Remote() const { return GetParam() == Backend::kRemote; }
  // The backend's server address, "" in process.
  std::string Server() const;
  // `base` with the backend's name: for what each variant writes to
  // WorkDir() (a loaded FMU's files must not be overwritten).
  std::string Named(const std::string& base) const { return base + "_" + BackendName(GetParam()); }
  // fmi2ExitInitializationMode on the test's backend (after fmi2Reset
  // too, which puts tether.server back to its start value).
  fmi2Status ExitInitialization(const Fmu& fmu, fmi2Component c) {
    return ExitInitializationOn(Server(), fmu, c);
  }
  fmi2Component Start(const char* name, const Fmu& fmu) { return StartOn(Server(), name, fmu); }
};

}  // namespace tether::fmu_test
