// fmu_dump TETHER_CLI SPEC.json STEPS: the FMU that TETHER_CLI writes for
// SPEC.json, imported as an FMI 2.0 master imports it (fmu_import.h) and
// driven on the schedule of fmu_schedule.h; prints every Real variable at
// every communication point as C hexadecimal floating point (exact), then
// the same after restoring a state serialized halfway (get, serialize, free,
// deserialize, set) and stepping to the end again. A bit-identity witness
// for scripts/compare-frames.sh: two CLIs (with their own FMU libraries)
// print the same bytes when their FMUs compute the same bits. Exit 0, or 1
// with the failing call on stderr.
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fmu_schedule.h"
#include "support/fmu_import.h"

namespace {

namespace fs = std::filesystem;
using tether::fmu_import::Fmu;

void Logger(fmi2ComponentEnvironment, fmi2String, fmi2Status status, fmi2String category,
            fmi2String message, ...) {
  va_list args;
  va_start(args, message);
  const std::string text = tether::fmu_import::FormatLogMessage(message, args);
  va_end(args);
  if (status != fmi2OK) std::fprintf(stderr, "fmu_dump: FMU log %s: %s\n", category, text.c_str());
}
const fmi2CallbackFunctions kCallbacks = {Logger, std::calloc, std::free, nullptr, nullptr};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fmu_dump: %s\n", what.c_str());
  std::exit(1);
}

void Check(fmi2Status status, const char* call) {
  if (status != fmi2OK) Fail(std::string(call) + " returned " + std::to_string(status));
}

// Prints the communication point `k` at master time t.
void Print(const Fmu& fmu, fmi2Component c, int k, double t) {
  std::vector<fmi2ValueReference> refs;
  for (const auto& v : fmu.vars) refs.push_back(v.vr);
  std::vector<double> values(refs.size());
  Check(fmu.api.fmi2GetReal(c, refs.data(), refs.size(), values.data()), "fmi2GetReal");
  std::printf("%d %a", k, t);
  for (double x : values) std::printf(" %a", x);
  std::printf("\n");
}

// Steps k in [from, to) from master time *t.
void Steps(const Fmu& fmu, fmi2Component c, int from, int to, double* t) {
  for (int k = from; k < to; ++k) {
    const double u = tether::fmu_test::InputValue(k);
    for (fmi2ValueReference vr : fmu.inputs)
      Check(fmu.api.fmi2SetReal(c, &vr, 1, &u), "fmi2SetReal");
    const double h = tether::fmu_test::StepSize(k);
    Check(fmu.api.fmi2DoStep(c, *t, h, fmi2True), "fmi2DoStep");
    *t += h;
    Print(fmu, c, k + 1, *t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fmu_dump TETHER_CLI SPEC.json STEPS\n");
    return 2;
  }
  const int steps = std::atoi(argv[3]);
  char tmpl[] = "/tmp/tether-fmu-dump.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) Fail("mkdtemp failed");
  const fs::path dir = tmpl;
  std::string error;
  auto fmu = tether::fmu_import::Import(argv[1], argv[2], dir, "dumped", &error);
  if (fmu == nullptr) {
    fs::remove_all(dir);
    Fail(error);
  }
  const auto& F = fmu->api;
  fmi2Component c = F.fmi2Instantiate("dump", fmi2CoSimulation, fmu->guid.c_str(),
                                      fmu->resource_uri.c_str(), &kCallbacks, fmi2False, fmi2False);
  if (c == nullptr) Fail("fmi2Instantiate returned null");
  Check(F.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), "fmi2SetupExperiment");
  Check(F.fmi2EnterInitializationMode(c), "fmi2EnterInitializationMode");
  Check(F.fmi2ExitInitializationMode(c), "fmi2ExitInitializationMode");
  double t = 0;
  Print(*fmu, c, 0, t);
  const int half = steps / 2;
  Steps(*fmu, c, 0, half, &t);
  // The state halfway, serialized and dropped, to be restored below.
  fmi2FMUstate state = nullptr;
  Check(F.fmi2GetFMUstate(c, &state), "fmi2GetFMUstate");
  size_t size = 0;
  Check(F.fmi2SerializedFMUstateSize(c, state, &size), "fmi2SerializedFMUstateSize");
  std::vector<fmi2Byte> bytes(size);
  Check(F.fmi2SerializeFMUstate(c, state, bytes.data(), size), "fmi2SerializeFMUstate");
  Check(F.fmi2FreeFMUstate(c, &state), "fmi2FreeFMUstate");
  const double t_half = t;
  Steps(*fmu, c, half, steps, &t);
  std::printf("restored\n");
  Check(F.fmi2DeSerializeFMUstate(c, bytes.data(), size, &state), "fmi2DeSerializeFMUstate");
  Check(F.fmi2SetFMUstate(c, state), "fmi2SetFMUstate");
  Check(F.fmi2FreeFMUstate(c, &state), "fmi2FreeFMUstate");
  t = t_half;
  Steps(*fmu, c, half, steps, &t);
  Check(F.fmi2Terminate(c), "fmi2Terminate");
  F.fmi2FreeInstance(c);
  fs::remove_all(dir);
  return 0;
}
