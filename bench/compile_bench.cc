// Compile benchmark: wall time and peak memory of Validate (compile the
// description, evaluate it at the initial state, judge it) for large
// descriptions, each case in a fresh process so the peak (VmHWM of
// /proc/self/status) is that case's alone.
//
//   tether_compile_bench            all cases, one child process each
//   tether_compile_bench CASE       one case in this process (what the
//                                   children run); prints one line
//   tether_compile_bench --spec CASE  print the case's description (JSON)
//   tether_compile_bench --raise-limits [CASE...]  the same, with the
//                                   compile limits (node, derivative, tape,
//                                   bytes) 10 times the defaults and no
//                                   time budget
//
// Cases:
//   cartesian/N  N point masses in a planar chain of unit links (2N
//                coordinates, N distance constraints, diagonal masses).
//   angles/N     N links in absolute angles th_i (from the horizontal), no
//                constraints, the kinetic energy written out in angles:
//                T = 1/2 sum_i m_i ((sum_{j<=i} cos th_j th_j')^2 +
//                (sum_{j<=i} sin th_j th_j')^2), so M(q) comes from the
//                compiler's second derivatives of T (O(N^2) characters).
//   angles-defs/N  the same chain written with definitions (each link's
//                velocity and height from the previous link's): O(N)
//                characters, the same expression graph.
// Time: the median of 3 Validate calls in the child (after the first, which
// is also timed and reported: it includes first-touch costs).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "large_models.h"

namespace {

using tether_bench::AngleChain;
using tether_bench::AngleChainDefinitions;
using tether_bench::large_models_internal::Join;
using tether_bench::large_models_internal::Mass;
using tether_bench::large_models_internal::Num;

std::string Quoted(const std::vector<std::string>& items) {
  std::vector<std::string> q;
  for (const auto& s : items) q.push_back("\"" + s + "\"");
  return Join(q, ",");
}

// A horizontal chain of unit links from the origin, at rest.
std::string CartesianChain(int n) {
  std::vector<std::string> coords, masses, cons, q;
  std::string potential;
  for (int i = 0; i < n; ++i) {
    const std::string x = "x" + std::to_string(i + 1), y = "y" + std::to_string(i + 1);
    coords.push_back(x);
    coords.push_back(y);
    masses.push_back(Num(Mass(i)));
    masses.push_back(Num(Mass(i)));
    potential += (i ? " + " : "") + Num(Mass(i)) + "*" + y;
    const std::string px = i ? "x" + std::to_string(i) : "0",
                      py = i ? "y" + std::to_string(i) : "0";
    cons.push_back("{\"name\":\"link" + std::to_string(i + 1) + "\",\"expression\":\"((" + x +
                   " - " + px + ")^2 + (" + y + " - " + py + ")^2 - 1)/2\"}");
    q.push_back(Num(i + 1));
    q.push_back("0");
  }
  return "{\"system\":{\"coordinates\":[" + Quoted(coords) + "],\"masses\":{\"values\":[" +
         Join(masses, ",") + "]},\"potentialEnergy\":\"9.81*(" + potential +
         ")\",\"constraints\":[" + Join(cons, ",") +
         "],\"baumgarte\":{\"alpha\":10,\"beta\":10}},\"initial\":{\"q\":[" + Join(q, ",") +
         "]},\"integrator\":{\"method\":\"RK4\",\"stepSize\":0.001}}";
}

// The same chain with T as the expanded quadratic form
// 1/2 sum_{i,j} c_ij cos(th_i - th_j) th_i' th_j', c_ij = sum_{k >= max(i,j)} m_k.
std::string AngleChainExpanded(int n) {
  std::vector<std::string> coords, q, terms;
  std::string potential;
  for (int i = 0; i < n; ++i) {
    coords.push_back("th" + std::to_string(i + 1));
    q.push_back(Num(0.1 * (i % 2 ? -1 : 1)));
  }
  std::vector<double> tail(static_cast<size_t>(n) + 1, 0.0);
  for (int k = n - 1; k >= 0; --k) tail[static_cast<size_t>(k)] = tail[k + 1] + Mass(k);
  for (int i = 0; i < n; ++i) {
    const std::string& a = coords[static_cast<size_t>(i)];
    for (int j = 0; j < n; ++j) {
      const std::string& b = coords[static_cast<size_t>(j)];
      const double c = tail[static_cast<size_t>(std::max(i, j))];
      terms.push_back(Num(c) + "*" +
                      (i == j ? "der(" + a + ")^2"
                              : "cos(" + a + " - " + b + ")*der(" + a + ")*der(" + b + ")"));
    }
    potential += (i ? " + " : "") + Num(tail[static_cast<size_t>(i)]) + "*sin(" + a + ")";
  }
  return "{\"system\":{\"coordinates\":[" + Quoted(coords) + "],\"kineticEnergy\":\"0.5*(" +
         Join(terms, " + ") + ")\",\"potentialEnergy\":\"9.81*(" + potential +
         ")\"},\"initial\":{\"q\":[" + Join(q, ",") +
         "]},\"integrator\":{\"method\":\"RK4\",\"stepSize\":0.001}}";
}

// The chain in relative angles phi_i (link i at phi_1 + ... + phi_i):
// T as in AngleChain with th_j = sum_{k<=j} phi_k written out.
std::string RelativeAngleChain(int n) {
  std::vector<std::string> coords, q, terms, th, thd;
  std::string potential;
  for (int i = 0; i < n; ++i) {
    coords.push_back("phi" + std::to_string(i + 1));
    q.push_back(Num(i == 0 ? 0.1 : 0.0));
  }
  for (int j = 0; j < n; ++j) {
    std::vector<std::string> a, ad;
    for (int k = 0; k <= j; ++k) {
      a.push_back(coords[static_cast<size_t>(k)]);
      ad.push_back("der(" + coords[static_cast<size_t>(k)] + ")");
    }
    th.push_back("(" + Join(a, " + ") + ")");
    thd.push_back("(" + Join(ad, " + ") + ")");
  }
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> cx, cy, y;
    for (int j = 0; j <= i; ++j) {
      cx.push_back("cos" + th[static_cast<size_t>(j)] + "*" + thd[static_cast<size_t>(j)]);
      cy.push_back("sin" + th[static_cast<size_t>(j)] + "*" + thd[static_cast<size_t>(j)]);
      y.push_back("sin" + th[static_cast<size_t>(j)]);
    }
    terms.push_back(Num(Mass(i)) + "*((" + Join(cx, " + ") + ")^2 + (" + Join(cy, " + ") + ")^2)");
    potential += (i ? " + " : "") + Num(Mass(i)) + "*(" + Join(y, " + ") + ")";
  }
  return "{\"system\":{\"coordinates\":[" + Quoted(coords) + "],\"kineticEnergy\":\"0.5*(" +
         Join(terms, " + ") + ")\",\"potentialEnergy\":\"9.81*(" + potential +
         ")\"},\"initial\":{\"q\":[" + Join(q, ",") +
         "]},\"integrator\":{\"method\":\"RK4\",\"stepSize\":0.001}}";
}

bool SpecFor(const std::string& name, std::string* json) {
  auto slash = name.find('/');
  if (slash == std::string::npos) return false;
  const std::string kind = name.substr(0, slash);
  const int n = std::atoi(name.c_str() + slash + 1);
  if (n <= 0) return false;
  if (kind == "cartesian") {
    *json = CartesianChain(n);
  } else if (kind == "angles") {
    *json = AngleChain(n);
  } else if (kind == "angles-defs") {
    *json = AngleChainDefinitions(n);
  } else if (kind == "angles-expanded") {
    *json = AngleChainExpanded(n);
  } else if (kind == "relative-angles") {
    *json = RelativeAngleChain(n);
  } else {
    return false;
  }
  return true;
}

// --raise-limits: the compile limits 10 times the defaults, no time budget.
bool raise_limits = false;

// VmHWM (peak resident set) of this process, in kB.
long PeakKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

int RunCase(const std::string& name) {
  std::string json;
  if (!SpecFor(name, &json)) {
    std::cerr << "unknown case " << name << "\n";
    return 2;
  }
  tether::v1::SimulationSpec spec;
  tether::Status s = tether::ParseSpecJson(json, &spec);
  if (!s.ok()) {
    std::cerr << name << ": " << s.ToString() << "\n";
    return 2;
  }
  const long base_kb = PeakKb();
  std::vector<double> ms;
  bool valid = true;
  std::string why;
  for (int k = 0; k < 4; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    tether::v1::ValidationReport report;
    if (raise_limits) {
      tether::CompileOptions options;
      tether::CompileLimits& l = options.limits;
      l.max_nodes *= 10;
      l.max_derivative_nodes *= 10;
      l.max_tape_length *= 10;
      l.max_bytes *= 10;
      l.time_budget = std::chrono::milliseconds(0);
      const tether::Status status = tether::Validate(spec, options, &report);
      if (!status.ok()) {
        report.Clear();
        auto* d = report.add_diagnostics();
        d->set_severity(tether::v1::Diagnostic::ERROR);
        d->set_message(status.message());
      }
    } else {
      report = tether::Validate(spec);
    }
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (!report.valid()) {
      valid = false;
      for (const auto& d : report.diagnostics()) {
        if (d.severity() == tether::v1::Diagnostic::ERROR) why = d.field() + ": " + d.message();
      }
      break;
    }
  }
  const long peak_kb = PeakKb();
  std::vector<double> rest(ms.begin() + (ms.size() > 1 ? 1 : 0), ms.end());
  std::sort(rest.begin(), rest.end());
  std::printf("%-14s %8.0f %10.1f %10.1f %10.1f %10.1f  %s\n", name.c_str(),
              static_cast<double>(json.size()), ms[0], rest[rest.size() / 2],
              static_cast<double>(base_kb) / 1024, static_cast<double>(peak_kb) / 1024,
              valid ? "valid" : ("INVALID " + why.substr(0, 200)).c_str());
  return valid ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--spec") == 0) {
    std::string json;
    if (!SpecFor(argv[2], &json)) return 2;
    std::cout << json << "\n";
    return 0;
  }
  const char* self = argv[0];
  if (argc >= 2 && std::strcmp(argv[1], "--raise-limits") == 0) {
    raise_limits = true;
    --argc;
    ++argv;
  }
  if (argc == 2) return RunCase(argv[1]);
  std::vector<std::string> cases = {"cartesian/64", "cartesian/128", "cartesian/256", "angles/10",
                                    "angles/20",    "angles/30",     "angles/50"};
  if (argc > 2) cases.assign(argv + 1, argv + argc);
  std::printf("%-14s %8s %10s %10s %10s %10s\n", "case", "bytes", "first_ms", "median_ms",
              "base_MB", "peak_MB");
  std::fflush(stdout);
  int failures = 0;
  for (const auto& c : cases) {
    pid_t pid = fork();
    if (pid == 0) {
      if (raise_limits) {
        execl("/proc/self/exe", self, "--raise-limits", c.c_str(), static_cast<char*>(nullptr));
      } else {
        execl("/proc/self/exe", self, c.c_str(), static_cast<char*>(nullptr));
      }
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  return failures ? 1 : 0;
}
