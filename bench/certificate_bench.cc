// The certificate's cost (issue 9 point 6, issue 10 point 2, issue 22 point
// 6): steps per second with the certificate off, SAMPLED and ENCLOSED, on
// the circle, the double pendulum and chains of 16..256 masses (RK4,
// h = 1e-3, from rest), and the same models with constraints that are not
// polynomials (ENCLOSED's general Taylor path): the rods written as
// sqrt(dx^2 + dy^2) - l (circle-sqrt, double-sqrt, chain16-sqrt) and a
// bead on a sine wire (wire: y - sin(x) = 0), and a slider-crank in its
// joint angle (crank: sin and cos of one angle).
//
//   build/bin/tether_certificate_bench [--quick]
//   build/bin/tether_certificate_bench --run MODEL off|SAMPLED|ENCLOSED STEPS
//     MODEL: circle, double, circle-sqrt, double-sqrt, wire, crank, chainN, chainN-sqrt
//
// --certificate MODEL off|SAMPLED|ENCLOSED STEPS runs STEPS steps and
// prints the final state and the certificate (text format, every double in
// full): two builds' outputs compared with diff show whether a change moved
// any bit of the trajectory or of the certificate.
//
// --run only runs STEPS steps of one variant (no check, no timing), for
// instruction counts:
//   valgrind --tool=callgrind --toggle-collect='(anonymous namespace)::Run(*'
// (not '*Advance*': callgrind toggles collection at every entry and exit of
// a matching function, and Advance's callees nest, so that drops part of
// the step).
//
// Equal work first: for each model the three variants run the same steps
// and must end in the same state, bit for bit (the certificate only reads),
// with a certificate covering every step; a mismatch aborts. Then each
// variant is timed in rounds, interleaved (off, SAMPLED, ENCLOSED, off, ...)
// so that background load hits all alike; the table gives the median of 7
// rounds and the ratios of those medians (time per step against off).
// Figures in docs/benchmarks.md ("The certificate's cost").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "google/protobuf/text_format.h"
#include "large_models.h"
#include "tether/v1/simulation.pb.h"

namespace {

using tether::v1::CertificateOptions;

const char* kCircle =
    R"json({"system":{"coordinates":["x","y"],"masses":{"values":[1,1]},"potentialEnergy":"9.81*y",
"constraints":[{"name":"rod","expression":"(x^2 + y^2 - 1)/2"}],"baumgarte":{"alpha":10,"beta":10}},
"initial":{"q":[1,0],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";
const char* kDouble =
    R"json({"system":{"coordinates":["x1","y1","x2","y2"],"masses":{"values":[1,1,1,1]},
"potentialEnergy":"9.81*(y1 + y2)","constraints":[{"name":"r1","expression":"(x1^2 + y1^2 - 1)/2"},
{"name":"r2","expression":"((x2 - x1)^2 + (y2 - y1)^2 - 1)/2"}],"baumgarte":{"alpha":10,"beta":10}},
"initial":{"q":[1,0,2,0],"v":[0,0,0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";

// Two bodies on rods written as distances, sqrt(dx^2 + dy^2) - l: the same
// motion as kCircle / kDouble, but not a polynomial in q.
const char* kCircleSqrt =
    R"json({"system":{"coordinates":["x","y"],"masses":{"values":[1,1]},"potentialEnergy":"9.81*y",
"constraints":[{"name":"rod","expression":"sqrt(x^2 + y^2) - 1"}],"baumgarte":{"alpha":10,"beta":10}},
"initial":{"q":[1,0],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";
const char* kDoubleSqrt =
    R"json({"system":{"coordinates":["x1","y1","x2","y2"],"masses":{"values":[1,1,1,1]},
"potentialEnergy":"9.81*(y1 + y2)","constraints":[{"name":"r1","expression":"sqrt(x1^2 + y1^2) - 1"},
{"name":"r2","expression":"sqrt((x2 - x1)^2 + (y2 - y1)^2) - 1"}],"baumgarte":{"alpha":10,"beta":10}},
"initial":{"q":[1,0,2,0],"v":[0,0,0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";
// A bead on the wire y = sin(x) under gravity, from x = 1 at rest.
const char* kWire =
    R"json({"system":{"coordinates":["x","y"],"masses":{"values":[1,1]},"potentialEnergy":"9.81*y",
"constraints":[{"name":"wire","expression":"y - sin(x)"}],"baumgarte":{"alpha":10,"beta":10}},
"initial":{"q":[1,0.8414709848078965],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json";

// A slider-crank in its joint coordinates (the crank angle th and the
// slider's s): the rod's constraint has sin(th) and cos(th) of one
// angle, as mechanisms' loop closures do.
const char* kCrank =
    R"json({"system":{"coordinates":["th","s"],"masses":{"values":[0.002,0.5]},
"generalizedForces":["0","-2*der(s)"],"constraints":[{"name":"rod",
"expression":"((s - 0.1*cos(th))^2 + (0.1*sin(th))^2 - 0.09)/2"}],"baumgarte":{"alpha":20,"beta":20}},
"initial":{"q":[1.5707963267948966,0.28284271247461906],"v":[30,-3]},
"integrator":{"method":"RK4","stepSize":0.0005}})json";

// Chain(n) with every link's "(dx^2 + dy^2 - l^2)/2" written as
// "sqrt(dx^2 + dy^2) - l" (l = 1 in Chain).
std::string SqrtChain(int n) {
  std::string j = tether_bench::Chain(n).json, out;
  const std::string tail = " - 1)/2";
  size_t at = 0;
  for (;;) {
    const size_t e = j.find("\"expression\":\"(", at);
    if (e == std::string::npos) break;
    const size_t open = e + 14;  // the '(' after "expression":"
    const size_t close = j.find(tail, open);
    out += j.substr(at, open - at) + "sqrt" + j.substr(open, close - open) + ") - 1";
    at = close + tail.size();
  }
  return out + j.substr(at);
}

enum Variant { kOff, kSampled, kEnclosed, kVariants };
const char* kNames[] = {"off", "SAMPLED", "ENCLOSED"};

std::unique_ptr<tether::Simulation> Make(const std::string& json, Variant v) {
  tether::v1::SimulationSpec spec;
  tether::Status s = tether::ParseSpecJson(json, &spec);
  if (!s.ok()) {
    std::fprintf(stderr, "bad spec: %s\n", s.message().c_str());
    std::abort();
  }
  spec.mutable_certificate()->set_mode(v == kEnclosed ? CertificateOptions::ENCLOSED
                                                      : CertificateOptions::SAMPLED);
  auto sim = tether::Simulation::Create(spec);
  if (!sim.ok()) {
    std::fprintf(stderr, "create: %s\n", sim.status().message().c_str());
    std::abort();
  }
  return std::move(sim).value();
}

// Runs `steps` steps from the initial state; returns the final state.
tether::v1::State Run(tether::Simulation* sim, const tether::v1::State& initial, long steps,
                      Variant v, tether::v1::Certificate* cert) {
  google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
  tether::Status s = sim->SetState(initial);
  if (s.ok()) {
    s = sim->BeginRun({.steps = static_cast<uint64_t>(steps),
                       .until_time = std::nullopt,
                       .every = static_cast<uint64_t>(steps),
                       .emit_start = false,
                       .output_interval = std::nullopt,
                       .certificate = v != kOff});
  }
  if (s.ok()) s = sim->Advance(static_cast<uint64_t>(steps), &frames);
  if (!s.ok()) {
    std::fprintf(stderr, "run failed: %s\n", s.message().c_str());
    std::abort();
  }
  if (cert && v != kOff) sim->GetCertificate(cert);
  tether::v1::State state;
  sim->GetState(&state);
  return state;
}

struct Row {
  std::string name;
  int n = 0;
  double steps_per_s[kVariants] = {};
};

Row Measure(const std::string& name, int n, const std::string& json, bool quick) {
  Row row{name, n};
  std::unique_ptr<tether::Simulation> sims[kVariants];
  for (int v = 0; v < kVariants; ++v) sims[v] = Make(json, static_cast<Variant>(v));
  tether::v1::State initial;
  sims[0]->GetState(&initial);
  // Equal work: the same final bits, every step certified.
  const long check = 2000;
  tether::v1::State end[kVariants];
  for (int v = 0; v < kVariants; ++v) {
    tether::v1::Certificate cert;
    end[v] = Run(sims[v].get(), initial, check, static_cast<Variant>(v), &cert);
    if (v != kOff && cert.steps() != static_cast<uint64_t>(check)) {
      std::fprintf(stderr, "%s: the %s certificate covers %llu steps\n", name.c_str(), kNames[v],
                   static_cast<unsigned long long>(cert.steps()));
      std::abort();
    }
    if (v == kEnclosed &&
        (cert.mode() != CertificateOptions::ENCLOSED || cert.unenclosed_steps())) {
      std::fprintf(stderr, "%s: not enclosed\n", name.c_str());
      std::abort();
    }
  }
  for (int v = 1; v < kVariants; ++v) {
    if (end[v].SerializeAsString() != end[0].SerializeAsString()) {
      std::fprintf(stderr, "%s: the %s run ends elsewhere than the run without certificate\n",
                   name.c_str(), kNames[v]);
      std::abort();
    }
  }
  // Steps per round: about 0.1 s without the certificate.
  const auto t0 = std::chrono::steady_clock::now();
  Run(sims[0].get(), initial, check, kOff, nullptr);
  const double per_step =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / check;
  const long steps = std::max(200L, static_cast<long>((quick ? 0.02 : 0.1) / per_step));
  const int rounds = quick ? 3 : 7;
  std::vector<double> times[kVariants];
  for (int r = 0; r < rounds; ++r) {
    for (int v = 0; v < kVariants; ++v) {
      const auto a = std::chrono::steady_clock::now();
      Run(sims[v].get(), initial, steps, static_cast<Variant>(v), nullptr);
      times[v].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    }
  }
  for (int v = 0; v < kVariants; ++v) {
    std::sort(times[v].begin(), times[v].end());
    row.steps_per_s[v] = steps / times[v][times[v].size() / 2];
  }
  return row;
}

std::string Rate(double x) {
  char buf[32];
  if (x >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", x / 1e6);
  } else if (x >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k", x / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", x);
  }
  return buf;
}

// The model of a --run name (see the header), or "" when unknown.
std::string ModelJson(const std::string& name) {
  if (name == "circle") return kCircle;
  if (name == "double") return kDouble;
  if (name == "circle-sqrt") return kCircleSqrt;
  if (name == "double-sqrt") return kDoubleSqrt;
  if (name == "wire") return kWire;
  if (name == "crank") return kCrank;
  if (name.rfind("chain", 0) == 0) {
    const bool sqrt = name.size() > 5 && name.find("-sqrt") != std::string::npos;
    const int n = std::atoi(name.c_str() + 5);
    if (n > 0) return sqrt ? SqrtChain(n) : tether_bench::Chain(n).json;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const bool print = argc == 5 && std::strcmp(argv[1], "--certificate") == 0;
  if (argc == 5 && (print || std::strcmp(argv[1], "--run") == 0)) {
    const std::string json = ModelJson(argv[2]), variant = argv[3];
    int v = -1;
    for (int k = 0; k < kVariants; ++k)
      if (variant == kNames[k]) v = k;
    if (json.empty() || v < 0) {
      std::fprintf(stderr,
                   "--run|--certificate circle|double|circle-sqrt|double-sqrt|wire|crank|chainN|"
                   "chainN-sqrt off|SAMPLED|ENCLOSED STEPS\n");
      return 2;
    }
    auto sim = Make(json, static_cast<Variant>(v));
    tether::v1::State initial;
    sim->GetState(&initial);
    tether::v1::Certificate cert;
    const tether::v1::State end = Run(sim.get(), initial, std::atol(argv[4]),
                                      static_cast<Variant>(v), print ? &cert : nullptr);
    if (print) {
      google::protobuf::TextFormat::Printer printer;
      printer.SetUseShortRepeatedPrimitives(true);
      std::string text;
      printer.PrintToString(end, &text);
      std::string cert_text;
      printer.PrintToString(cert, &cert_text);
      std::printf("%s%s", text.c_str(), cert_text.c_str());
    }
    return 0;
  }
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::vector<Row> rows;
  rows.push_back(Measure("circle", 1, kCircle, quick));
  rows.push_back(Measure("double pendulum", 2, kDouble, quick));
  for (int n : {16, 32, 64, 128, 256})
    rows.push_back(Measure("chain", n, tether_bench::Chain(n).json, quick));
  // Constraints that are not polynomials (ENCLOSED's general path).
  rows.push_back(Measure("circle, sqrt rod", 1, kCircleSqrt, quick));
  rows.push_back(Measure("double pendulum, sqrt rods", 2, kDoubleSqrt, quick));
  rows.push_back(Measure("sine wire", 1, kWire, quick));
  rows.push_back(Measure("slider-crank, sin and cos", 1, kCrank, quick));
  rows.push_back(Measure("chain, sqrt links", 16, SqrtChain(16), quick));
  std::printf(
      "| model | N | off steps/s | SAMPLED steps/s | ENCLOSED steps/s | SAMPLED cost (x off) | "
      "ENCLOSED cost (x off) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %d | %s | %s | %s | %.2fx | %.2fx |\n", r.name.c_str(), r.n,
                Rate(r.steps_per_s[kOff]).c_str(), Rate(r.steps_per_s[kSampled]).c_str(),
                Rate(r.steps_per_s[kEnclosed]).c_str(),
                r.steps_per_s[kOff] / r.steps_per_s[kSampled],
                r.steps_per_s[kOff] / r.steps_per_s[kEnclosed]);
  }
  // Growth of the per-step cost over the chains (least squares on logs).
  for (int v = 0; v < kVariants; ++v) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (const Row& r : rows) {
      if (r.name != "chain") continue;
      const double x = std::log(r.n), y = -std::log(r.steps_per_s[v]);
      sx += x, sy += y, sxx += x * x, sxy += x * y, ++k;
    }
    std::printf("chain growth, certificate %s: N^%.2f\n", kNames[v],
                (k * sxy - sx * sy) / (k * sxx - sx * sx));
  }
  return 0;
}
