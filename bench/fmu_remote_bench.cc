// The FMU's remote-mode cost (issue 11 point 8): a remote FMU's fmi2DoStep
// round trip against a plain C++-client CoSimulate Exchange, the work they
// both wrap, on the same server; the in-process FMU's fmi2DoStep for
// context. Figures and command in docs/benchmarks.md ("FMU").
//
//   tether_fmu_remote_bench --server BUILD/bin/tether-server --cli BUILD/bin/tether
//       --client BUILD/bin/tether_fmu_remote_bench_client
//       [--spec examples/pendulum_force_input.json] [--steps 1000] [--blocks 8] [--h 0.01]
//
// It starts tether-server on 127.0.0.1 (ephemeral port), writes the FMU of
// SPEC with `tether fmu`, unzips and dlopen()s it as a master does, and then
// runs interleaved blocks of STEPS communication steps of H each (input Fx
// = Input(k), bench/fmu_remote_bench_schedule.h):
//   - client: the client process (fmu_remote_bench_client.cc) times each
//     Exchange on its own session (communication_step H, the input,
//     ON_FAILURE_DISCARD);
//   - remote FMU: one instance with tether.server set; fmi2SetReal(Fx),
//     then fmi2DoStep timed, then fmi2GetReal of every Real variable timed
//     with it (the master's read of the outputs);
//   - in-process FMU: the same without a server.
// Equal work first: every block's final q and v must be bit-identical
// across the three, else the benchmark fails. The first kWarmup steps of
// each block are not counted (connection, first compile of the stream).
// Reported: median, p10 and p90 of the pooled per-step times, and the
// ratio of the medians remote doStep / client Exchange.
#include <dlfcn.h>
#include <zip.h>

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fmu/fmi2.h"
#include "fmu_remote_bench_schedule.h"
#include "service_bench_statistics.h"
#include "support/server_process.h"

namespace {

namespace fs = std::filesystem;
using tether::fmu_remote_bench::Input;
using tether::service_bench::Fmt;
using tether::service_bench::Median;
using tether::service_bench::Percentile;

constexpr int kWarmup = 20;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "fmu_remote_bench: %s\n", message.c_str());
  std::exit(1);
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string Run(const std::string& command, int* rc) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) Die("cannot run " + command);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

void Unzip(const std::string& zip_path, const fs::path& dir) {
  int err = 0;
  zip_t* z = zip_open(zip_path.c_str(), ZIP_RDONLY, &err);
  if (z == nullptr) Die("cannot open " + zip_path);
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st);
    const fs::path target = dir / st.name;
    fs::create_directories(target.parent_path());
    zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    std::ofstream out(target, std::ios::binary);
    char buf[65536];
    zip_int64_t got;
    while ((got = zip_fread(f, buf, sizeof buf)) > 0) out.write(buf, got);
    zip_fclose(f);
  }
  zip_close(z);
}

void Logger(fmi2ComponentEnvironment, fmi2String instance, fmi2Status status, fmi2String,
            fmi2String message, ...) {
  if (status == fmi2OK) return;
  char buf[4096];
  va_list args;
  va_start(args, message);
  std::vsnprintf(buf, sizeof buf, message, args);
  va_end(args);
  std::fprintf(stderr, "fmu %s: %s\n", instance, buf);
}
const fmi2CallbackFunctions kCallbacks = {Logger, std::calloc, std::free, nullptr, nullptr};

struct Fmi2 {
#define TETHER_FMI2_SHIM_FN(name) decltype(&::name) name = nullptr;
#include "fmu/fmi2_functions.inc"
#undef TETHER_FMI2_SHIM_FN
};

// The FMU, unzipped and loaded, and what the benchmark needs of its
// modelDescription.xml (read with a string search: the file is
// Tether's own, written by fmu::ModelDescriptionXml).
struct Fmu {
  Fmi2 api;
  std::string guid, resources;
  std::map<std::string, fmi2ValueReference> vr;
  std::vector<fmi2ValueReference> reals;
  std::vector<fmi2ValueReference> q, v;  // coordinate order, as in a Frame
};

std::string Attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = element.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return element.substr(start, element.find('"', start) - start);
}

Fmu Load(const fs::path& dir) {
  Fmu fmu;
  std::ifstream in(dir / "modelDescription.xml");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string xml = ss.str();
  fmu.guid = Attribute(xml.substr(xml.find("<fmiModelDescription")), "guid");
  const std::string id = Attribute(xml.substr(xml.find("<CoSimulation")), "modelIdentifier");
  for (size_t at = xml.find("<ScalarVariable"); at != std::string::npos;
       at = xml.find("<ScalarVariable", at + 1)) {
    const std::string element = xml.substr(at, xml.find('>', at) - at);
    const auto ref =
        static_cast<fmi2ValueReference>(std::stoul(Attribute(element, "valueReference")));
    const std::string name = Attribute(element, "name");
    fmu.vr[name] = ref;
    const size_t end = xml.find("</ScalarVariable>", at);
    if (xml.find("<Real", at) < end) {
      fmu.reals.push_back(ref);
      if (name.rfind("q.", 0) == 0) fmu.q.push_back(ref);
      if (name.rfind("v.", 0) == 0) fmu.v.push_back(ref);
    }
  }
  const fs::path so = dir / "binaries" / "linux64" / (id + ".so");
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) Die(std::string("dlopen: ") + dlerror());
#define TETHER_FMI2_SHIM_FN(name)                                                \
  fmu.api.name = reinterpret_cast<decltype(fmu.api.name)>(dlsym(handle, #name)); \
  if (fmu.api.name == nullptr) Die("dlsym " #name);
#include "fmu/fmi2_functions.inc"
#undef TETHER_FMI2_SHIM_FN
  fmu.resources = "file://" + (dir / "resources").string();
  return fmu;
}

// One block's per-step times (microseconds) and its final q, v.
struct Block {
  std::vector<double> step_us;       // fmi2DoStep, or the client's Exchange
  std::vector<double> step_read_us;  // fmi2DoStep + fmi2GetReal (FMU only)
  std::vector<double> final_state;   // q then v
};

Block RunFmu(const Fmu& fmu, const std::string& server, int steps, double h) {
  const auto& f = fmu.api;
  fmi2Component c =
      f.fmi2Instantiate(server.empty() ? "bench local" : "bench remote", fmi2CoSimulation,
                        fmu.guid.c_str(), fmu.resources.c_str(), &kCallbacks, fmi2False, fmi2False);
  if (c == nullptr) Die("fmi2Instantiate failed");
  if (f.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0) != fmi2OK ||
      f.fmi2EnterInitializationMode(c) != fmi2OK)
    Die("initialization failed");
  if (!server.empty()) {
    const fmi2ValueReference ref = fmu.vr.at("tether.server");
    const fmi2String value = server.c_str();
    if (f.fmi2SetString(c, &ref, 1, &value) != fmi2OK) Die("fmi2SetString failed");
  }
  if (f.fmi2ExitInitializationMode(c) != fmi2OK) Die("fmi2ExitInitializationMode failed");
  Block block;
  std::vector<double> values(fmu.reals.size());
  const fmi2ValueReference fx = fmu.vr.at("Fx");
  double t = 0;
  for (int k = 0; k < steps; ++k) {
    const double u = Input(k);
    if (f.fmi2SetReal(c, &fx, 1, &u) != fmi2OK) Die("fmi2SetReal failed");
    const auto start = std::chrono::steady_clock::now();
    if (f.fmi2DoStep(c, t, h, fmi2True) != fmi2OK)
      Die("fmi2DoStep failed at step " + std::to_string(k));
    const auto stepped = std::chrono::steady_clock::now();
    if (f.fmi2GetReal(c, fmu.reals.data(), fmu.reals.size(), values.data()) != fmi2OK)
      Die("fmi2GetReal failed");
    const auto read = std::chrono::steady_clock::now();
    t += h;
    if (k < kWarmup) continue;
    block.step_us.push_back(std::chrono::duration<double, std::micro>(stepped - start).count());
    block.step_read_us.push_back(std::chrono::duration<double, std::micro>(read - start).count());
  }
  for (const auto* refs : {&fmu.q, &fmu.v}) {
    for (fmi2ValueReference ref : *refs) {
      double x = 0;
      if (f.fmi2GetReal(c, &ref, 1, &x) != fmi2OK) Die("fmi2GetReal failed");
      block.final_state.push_back(x);
    }
  }
  f.fmi2Terminate(c);
  f.fmi2FreeInstance(c);
  return block;
}

Block RunClient(const std::string& client, const std::string& address, const std::string& spec,
                int steps, double h) {
  int rc = 0;
  const std::string out = Run(Quote(client) + " " + Quote(address) + " " + Quote(spec) + " " +
                                  std::to_string(steps) + " " + Fmt("%.17g", h),
                              &rc);
  if (rc != 0) Die("the client process failed:\n" + out);
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  std::istringstream words(line);
  std::string word;
  words >> word;  // "state"
  words >> word;  // t
  Block block;
  while (words >> word) block.final_state.push_back(std::strtod(word.c_str(), nullptr));
  for (int k = 0; std::getline(lines, line); ++k) {
    if (k >= kWarmup) block.step_us.push_back(std::strtod(line.c_str(), nullptr));
  }
  return block;
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

std::string Show(const std::vector<double>& xs) {
  std::string s;
  for (double x : xs) s += Fmt(" %a", x);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server_path, cli, client, spec = "examples/pendulum_force_input.json";
  int steps = 1000, blocks = 8;
  double h = 0.01;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--server")
      server_path = value;
    else if (flag == "--cli")
      cli = value;
    else if (flag == "--client")
      client = value;
    else if (flag == "--spec")
      spec = value;
    else if (flag == "--steps")
      steps = std::atoi(value.c_str());
    else if (flag == "--blocks")
      blocks = std::atoi(value.c_str());
    else if (flag == "--h")
      h = std::strtod(value.c_str(), nullptr);
    else
      Die("unknown flag " + flag);
  }
  if (server_path.empty() || cli.empty() || client.empty())
    Die("--server, --cli and --client are required");
  if (steps <= kWarmup || blocks < 1) Die("--steps must exceed 20 and --blocks be at least 1");

  tether::test_support::ServerProcessOptions options;
  options.terminate_with_parent = true;
  tether::test_support::ServerProcess server(
      {server_path, "--listen", "127.0.0.1:0", "--log-level", "warn"}, options);
  if (!server.ok()) Die("tether-server: " + server.error());

  char tmpl[] = "/tmp/tether-fmu-bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) Die("mkdtemp failed");
  const fs::path work = tmpl;
  int rc = 0;
  const std::string out = Run(Quote(cli) + " fmu " + Quote(spec) + " --output " +
                                  Quote((work / "bench.fmu").string()) + " --quiet 2>&1",
                              &rc);
  if (rc != 0) Die("tether fmu failed:\n" + out);
  Unzip((work / "bench.fmu").string(), work / "fmu");
  const Fmu fmu = Load(work / "fmu");

  std::vector<double> client_us, remote_us, remote_read_us, local_us, local_read_us;
  for (int b = 0; b < blocks; ++b) {
    const Block c = RunClient(client, server.address(), spec, steps, h);
    const Block r = RunFmu(fmu, server.address(), steps, h);
    const Block l = RunFmu(fmu, "", steps, h);
    if (!SameBits(c.final_state, r.final_state) || !SameBits(c.final_state, l.final_state)) {
      Die("unequal work in block " + std::to_string(b) +
          ": final q, v\n  client:    " + Show(c.final_state) +
          "\n  remote FMU:" + Show(r.final_state) + "\n  local FMU: " + Show(l.final_state));
    }
    client_us.insert(client_us.end(), c.step_us.begin(), c.step_us.end());
    remote_us.insert(remote_us.end(), r.step_us.begin(), r.step_us.end());
    remote_read_us.insert(remote_read_us.end(), r.step_read_us.begin(), r.step_read_us.end());
    local_us.insert(local_us.end(), l.step_us.begin(), l.step_us.end());
    local_read_us.insert(local_read_us.end(), l.step_read_us.begin(), l.step_read_us.end());
    std::fprintf(stderr, "block %d/%d: equal work (final q, v bit-identical)\n", b + 1, blocks);
  }
  std::error_code ec;
  fs::remove_all(work, ec);

  std::printf("%s, %d blocks x %d steps of h = %g (first %d of each block not counted)\n",
              spec.c_str(), blocks, steps, h, kWarmup);
  std::printf("| per communication step | median | p10 | p90 |\n| --- | --- | --- | --- |\n");
  auto row = [](const char* name, const std::vector<double>& us) {
    std::printf("| %s | %s us | %s us | %s us |\n", name, Fmt("%.1f", Median(us)).c_str(),
                Fmt("%.1f", Percentile(us, 0.1)).c_str(), Fmt("%.1f", Percentile(us, 0.9)).c_str());
  };
  row("C++ client CoSimulate Exchange", client_us);
  row("remote FMU fmi2DoStep", remote_us);
  row("remote FMU fmi2DoStep + fmi2GetReal (all)", remote_read_us);
  row("in-process FMU fmi2DoStep", local_us);
  row("in-process FMU fmi2DoStep + fmi2GetReal (all)", local_read_us);
  std::printf("remote fmi2DoStep / CoSimulate Exchange (medians): %.2fx\n",
              Median(remote_us) / Median(client_us));
  std::printf("remote fmi2DoStep + fmi2GetReal / CoSimulate Exchange (medians): %.2fx\n",
              Median(remote_read_us) / Median(client_us));
  return 0;
}
