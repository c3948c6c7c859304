// The FMU's cost (issue 11 point 8): one fmi2DoStep of the in-process FMU
// against one step of `tether run`, on the circle and the double pendulum
// (RK4, h = 1e-3, certificate SAMPLED as both default to).
//
//   build/bin/tether_fmu_bench
//
// The FMU row is what a master pays a communication step of one engine
// step: fmi2SetReal of the inputs (none here), fmi2DoStep(t, h) and
// fmi2GetReal of every variable. The `tether run` row is the CLI's own
// stepping (`tether run SPEC --steps N --every N --quiet --format csv`),
// its per-step time from two runs, (T(N2) - T(N1)) / (N2 - N1), so that
// process start, compiling and writing cancel.
//
// Equal work first: after N1 communication steps the FMU's q and v are
// those `tether run --steps N1` prints for its last step, bit for bit (its
// CSV's 17 digits round-trip a double; the FMU steps from the engine's
// grid time, so its steps are the CLI's); a mismatch aborts.
// Then rounds, interleaved (FMU, run, FMU, ...), medians of 7 and their
// ratio. Figures in docs/COSIMULATION.md.
//
// Links neither the engine nor protobuf (tests/support/fmu_import.h): the
// FMU brings its own.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/fmu_import.h"

namespace {

namespace fs = std::filesystem;
using tether::fmu_import::Fmu;

struct Case {
  const char* name;
  const char* json;
  std::vector<std::string> coordinates;
};

const Case kCases[] = {
    {"circle",
     R"json({"system":{"coordinates":["x","y"],"masses":{"values":[1,1]},"potentialEnergy":"9.81*y",
"constraints":[{"name":"rod","expression":"(x^2 + y^2 - 1)/2"}],"baumgarte":{"alpha":10,"beta":10}},
"initial":{"q":[1,0],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json",
     {"x", "y"}},
    {"double pendulum",
     R"json({"system":{"coordinates":["x1","y1","x2","y2"],"masses":{"values":[1,1,1,1]},
"potentialEnergy":"9.81*(y1 + y2)","constraints":[{"name":"r1","expression":"(x1^2 + y1^2 - 1)/2"},
{"name":"r2","expression":"((x2 - x1)^2 + (y2 - y1)^2 - 1)/2"}],"baumgarte":{"alpha":10,"beta":10}},
"initial":{"q":[1,0,2,0],"v":[0,0,0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json",
     {"x1", "y1", "x2", "y2"}},
};

constexpr double kStep = 1e-3;
constexpr int kN1 = 10000, kN2 = 1010000;  // steps of the two CLI runs
constexpr int kFmuSteps = 200000;          // communication steps a round
constexpr int kRounds = 7;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "tether_fmu_bench: %s\n", message.c_str());
  std::exit(1);
}

void Logger(fmi2ComponentEnvironment, fmi2String instance, fmi2Status status, fmi2String category,
            fmi2String message, ...) {
  va_list args;
  va_start(args, message);
  const std::string text = tether::fmu_import::FormatLogMessage(message, args);
  va_end(args);
  std::fprintf(stderr, "fmu %s [%d] %s: %s\n", instance ? instance : "", static_cast<int>(status),
               category ? category : "", text.c_str());
}
const fmi2CallbackFunctions kCallbacks = {Logger, std::calloc, std::free, nullptr, nullptr};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// `steps` communication steps of h = kStep from the start; the seconds they
// took and the q and v reached.
double RunFmu(const Fmu& fmu, int steps, std::vector<double>* qv, const Case& c) {
  const auto& F = fmu.api;
  fmi2Component inst =
      F.fmi2Instantiate("bench", fmi2CoSimulation, fmu.guid.c_str(), fmu.resource_uri.c_str(),
                        &kCallbacks, fmi2False, fmi2False);
  if (inst == nullptr) Die("fmi2Instantiate failed");
  if (F.fmi2SetupExperiment(inst, fmi2False, 0, 0, fmi2False, 0) != fmi2OK ||
      F.fmi2EnterInitializationMode(inst) != fmi2OK || F.fmi2ExitInitializationMode(inst) != fmi2OK)
    Die("initialization failed");
  std::vector<fmi2ValueReference> all;
  for (const auto& v : fmu.vars) all.push_back(v.vr);
  std::vector<double> values(all.size());
  double t = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) {
    if (F.fmi2DoStep(inst, t, kStep, fmi2True) != fmi2OK) Die("fmi2DoStep failed");
    t += kStep;
    if (F.fmi2GetReal(inst, all.data(), all.size(), values.data()) != fmi2OK)
      Die("fmi2GetReal failed");
  }
  const double seconds = Seconds(std::chrono::steady_clock::now() - start);
  qv->clear();
  for (const char* prefix : {"q.", "v."}) {
    for (const auto& name : c.coordinates) {
      auto it = fmu.vr.find(prefix + name);
      if (it == fmu.vr.end()) Die("no variable " + std::string(prefix) + name);
      qv->push_back(
          values[static_cast<size_t>(std::find(all.begin(), all.end(), it->second) - all.begin())]);
    }
  }
  F.fmi2Terminate(inst);
  F.fmi2FreeInstance(inst);
  return seconds;
}

// `tether run SPEC --steps N`: its wall time, and the q and v of its last
// CSV line (columns step, t, q..., v..., ...).
double RunCli(const std::string& cli, const std::string& spec, int steps, size_t n,
              std::vector<double>* qv) {
  const std::string command = tether::fmu_import::ShellQuote(cli) + " run " +
                              tether::fmu_import::ShellQuote(spec) + " --steps " +
                              std::to_string(steps) + " --every " + std::to_string(steps) +
                              " --quiet --format csv";
  int rc = 0;
  const auto start = std::chrono::steady_clock::now();
  const std::string out = tether::fmu_import::RunCommand(command, &rc);
  const double seconds = Seconds(std::chrono::steady_clock::now() - start);
  if (rc != 0) Die(command + " exited with " + std::to_string(rc));
  std::string last, line;
  std::istringstream lines(out);
  while (std::getline(lines, line))
    if (!line.empty()) last = line;
  std::vector<double> cols;
  std::istringstream fields(last);
  std::string f;
  while (std::getline(fields, f, ',')) cols.push_back(std::strtod(f.c_str(), nullptr));
  if (cols.size() < 2 + 2 * n) Die("unexpected CSV line: " + last);
  qv->assign(cols.begin() + 2, cols.begin() + 2 + static_cast<long>(2 * n));
  return seconds;
}

std::string Hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/tether-fmu-bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) Die("mkdtemp failed");
  const fs::path dir = tmpl;
  std::printf(
      "| model | FMU doStep + GetReal | `tether run` step | ratio |\n|---|---:|---:|---:|\n");
  for (const Case& c : kCases) {
    const fs::path spec = dir / (std::string(c.name) + ".json");
    std::ofstream(spec) << c.json;
    std::string error;
    const std::string name = c.name[0] == 'c' ? "circle" : "double";
    auto fmu = tether::fmu_import::Import(TETHER_CLI, spec.string(), dir, name, &error);
    if (!fmu) Die(error);

    // Equal work.
    std::vector<double> fmu_qv, cli_qv;
    RunFmu(*fmu, kN1, &fmu_qv, c);
    RunCli(TETHER_CLI, spec.string(), kN1, c.coordinates.size(), &cli_qv);
    for (size_t i = 0; i < fmu_qv.size(); ++i) {
      if (std::memcmp(&fmu_qv[i], &cli_qv[i], sizeof(double)) != 0) {
        Die(std::string(c.name) + ": the FMU and `tether run` disagree after " +
            std::to_string(kN1) + " steps: component " + std::to_string(i) + " " + Hex(fmu_qv[i]) +
            " vs " + Hex(cli_qv[i]));
      }
    }

    std::vector<double> fmu_per_step, cli_per_step;
    for (int r = 0; r < kRounds; ++r) {
      fmu_per_step.push_back(RunFmu(*fmu, kFmuSteps, &fmu_qv, c) / kFmuSteps);
      const double t1 = RunCli(TETHER_CLI, spec.string(), kN1, c.coordinates.size(), &cli_qv);
      const double t2 = RunCli(TETHER_CLI, spec.string(), kN2, c.coordinates.size(), &cli_qv);
      cli_per_step.push_back((t2 - t1) / (kN2 - kN1));
    }
    const double f = Median(fmu_per_step), r = Median(cli_per_step);
    std::printf("| %s | %.3f us | %.3f us | %.2fx |\n", c.name, f * 1e6, r * 1e6, f / r);
    std::fflush(stdout);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
