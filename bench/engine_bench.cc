// Steps per second of the engine (tether::Simulation, certificate off and
// on) against hand-written, allocation-free scalar C++ of the same model and
// the same algorithm (bench/reference_models.h), for
//   circle   the circle pendulum (examples/circle_pendulum.json),
//   double   a double pendulum in Cartesian coordinates,
//   chain/N  N point masses in a chain, N = 1, 2, 4, ..., 256,
//   ladder/N N masses on two rails joined by rungs (closed loops, W banded),
//            N = 16, 32, ..., 256 (bench/large_models.h),
//   grid/N   a k x k net of N = k^2 masses (W's graph a 2D mesh),
//            N = 16, 64, 144, 256.
// From 16 constraints up the engine takes its sparse KKT path
// (engine/internal/model/sparse_analysis.h); chain/16..64 also run forced dense
// (engine_dense_cert_off), the algorithm before the switch.
// Every model: alpha = beta = 10, gravity 9.81, RK4 with h = 1e-3.
//
// Before anything is timed, main() runs every model for kCheckSteps steps
// with the engine (certificate off and on) and with its references, and
// aborts unless the states agree to 1e-9 (relative to max(1, |x|)): the
// comparison is of equal work on the same trajectory.
//
// One benchmark iteration = reset to the initial state + kStepsPerIteration
// RK4 steps (engine: SetState + BeginRun{steps = every = K} + Advance(K),
// so one frame per iteration; reference: Reset + K steps). items_per_second
// is steps per second. Run bench/run_engine_bench.sh for the table.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "engine/internal/model/model.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "large_models.h"
#include "reference_models.h"

namespace {

using tether_bench::ChainBandedRef;
using tether_bench::ChainDenseRef;
using tether_bench::CirclePendulumRef;
using tether_bench::DoublePendulumRef;
using tether_bench::Rk4;

constexpr double kH = 1e-3;
constexpr double kGrav = 9.81;
constexpr double kAlpha = 10, kBeta = 10;
constexpr long kStepsPerIteration = 1000;  // the validated trajectory: t in [0, 1]
constexpr long kCheckSteps = 1000;
constexpr double kTolerance = 1e-9;

std::string Num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// Masses of the chain (not all equal, so M^-1 is not the identity).
double ChainMass(int i) { return 1.0 + 0.5 * (i % 3); }

// ---------------------------------------------------------------------------
// Specs, generated as JSON (the protobuf JSON mapping users write).

struct ModelCase {
  std::string name;  // "circle", "double", "chain"
  int n = 0;         // masses
  std::string json;
  std::vector<double> q0, v0;
};

std::string JsonArray(const std::vector<double>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + Num(xs[i]);
  return s + "]";
}

std::string SpecJson(const std::vector<std::string>& coords, const std::string& params,
                     const std::vector<double>& masses, const std::string& potential,
                     const std::vector<std::pair<std::string, std::string>>& constraints,
                     const std::vector<double>& q0, const std::vector<double>& v0) {
  std::string j = R"({"system":{"coordinates":[)";
  for (size_t i = 0; i < coords.size(); ++i) j += (i ? ",\"" : "\"") + coords[i] + "\"";
  j += R"(],"parameters":[)" + params + R"(],"masses":{"values":)" + JsonArray(masses) +
       R"(},"potentialEnergy":")" + potential + R"(","constraints":[)";
  for (size_t i = 0; i < constraints.size(); ++i) {
    j += std::string(i ? "," : "") + R"({"name":")" + constraints[i].first + R"(","expression":")" +
         constraints[i].second + R"("})";
  }
  j += R"(],"baumgarte":{"alpha":)" + Num(kAlpha) + R"(,"beta":)" + Num(kBeta) +
       R"(}},"initial":{"q":)" + JsonArray(q0) + R"(,"v":)" + JsonArray(v0) +
       R"(},"integrator":{"method":"RK4","stepSize":)" + Num(kH) + "}}";
  return j;
}

ModelCase CircleCase() {
  // Identical to examples/circle_pendulum.json.
  ModelCase c{"circle", 1, "", {1, 0}, {0, 0}};
  c.json = SpecJson({"x", "y"}, R"({"name":"l","value":1},{"name":"grav","value":9.81})", {1, 1},
                    "grav*y", {{"rod", "(x^2 + y^2 - l^2)/2"}}, c.q0, c.v0);
  return c;
}

ModelCase DoubleCase() {
  // First rod horizontal, second rod at 45 degrees above it; at rest.
  const double s = std::sqrt(0.5);
  ModelCase c{"double", 2, "", {1, 0, 1 + s, s}, {0, 0, 0, 0}};
  c.json = SpecJson(
      {"x1", "y1", "x2", "y2"},
      R"({"name":"l1","value":1},{"name":"l2","value":1},)"
      R"({"name":"m1","value":1},{"name":"m2","value":1},{"name":"grav","value":9.81})",
      {1, 1, 1, 1}, "grav*(m1*y1 + m2*y2)",
      {{"rod1", "(x1^2 + y1^2 - l1^2)/2"}, {"rod2", "((x2 - x1)^2 + (y2 - y1)^2 - l2^2)/2"}}, c.q0,
      c.v0);
  return c;
}

ModelCase ChainCase(int n) {
  // A horizontal chain of unit links, released from rest.
  ModelCase c{"chain", n, "", {}, {}};
  std::vector<std::string> coords;
  std::vector<double> masses;
  std::string potential = "grav*(";
  std::vector<std::pair<std::string, std::string>> cons;
  for (int i = 0; i < n; ++i) {
    const std::string x = "x" + std::to_string(i + 1), y = "y" + std::to_string(i + 1);
    coords.push_back(x);
    coords.push_back(y);
    masses.push_back(ChainMass(i));
    masses.push_back(ChainMass(i));
    potential += (i ? " + " : "") + Num(ChainMass(i)) + "*" + y;
    std::string e;
    if (i == 0) {
      e = "(" + x + "^2 + " + y + "^2 - l^2)/2";
    } else {
      const std::string px = "x" + std::to_string(i), py = "y" + std::to_string(i);
      e = "((" + x + " - " + px + ")^2 + (" + y + " - " + py + ")^2 - l^2)/2";
    }
    cons.push_back({"link" + std::to_string(i + 1), e});
    c.q0.push_back(i + 1.0);
    c.q0.push_back(0.0);
  }
  potential += ")";
  c.v0.assign(c.q0.size(), 0.0);
  c.json = SpecJson(coords, R"({"name":"l","value":1},{"name":"grav","value":9.81})", masses,
                    potential, cons, c.q0, c.v0);
  return c;
}

tether::v1::SimulationSpec ParseOrDie(const ModelCase& c) {
  tether::v1::SimulationSpec spec;
  tether::Status s = tether::ParseSpecJson(c.json, &spec, c.name);
  if (!s.ok()) {
    std::fprintf(stderr, "bad generated spec for %s/%d: %s\n", c.name.c_str(), c.n,
                 s.message().c_str());
    std::abort();
  }
  return spec;
}

std::unique_ptr<tether::Simulation> MakeSim(const tether::v1::SimulationSpec& spec,
                                            tether::KktPath kkt = tether::KktPath::kAuto) {
  tether::CompileOptions options;
  options.kkt = kkt;
  // grid/256 differentiates 496 constraints in 512 coordinates: more
  // (node, variable) pairs than the default compile limit allows (the
  // compile's own scaling is not what this benchmark measures).
  options.limits.max_derivative_nodes = 64'000'000;
  options.limits.max_nodes = 16'000'000;
  options.limits.time_budget = std::chrono::milliseconds(0);
  auto created = tether::Simulation::Create(spec, nullptr, options);
  if (!created.ok()) {
    std::fprintf(stderr, "Simulation::Create failed: %s\n", created.status().message().c_str());
    std::abort();
  }
  return std::move(created).value();
}

// One engine run of `steps` steps from the spec's initial state.
void EngineRun(tether::Simulation* sim, const tether::v1::State& initial, long steps, bool cert,
               google::protobuf::RepeatedPtrField<tether::v1::Frame>* frames) {
  frames->Clear();
  tether::Status s = sim->SetState(initial);
  if (s.ok()) {
    s = sim->BeginRun({.steps = static_cast<uint64_t>(steps),
                       .until_time = std::nullopt,
                       .every = static_cast<uint64_t>(steps),
                       .emit_start = false,
                       .output_interval = std::nullopt,
                       .certificate = cert});
  }
  if (s.ok()) s = sim->Advance(static_cast<uint64_t>(steps), frames);
  if (!s.ok()) {
    std::fprintf(stderr, "engine run failed: %s\n", s.message().c_str());
    std::abort();
  }
}

// Timed iterations run in this process (all benchmarks): Google Benchmark
// may run a benchmark more than once, and engine_bench_instructions.sh
// divides the instructions it counts by this (printed at exit).
long g_timed_iterations = 0;

// The timed engine iteration (a separate symbol so that
// engine_bench_instructions.sh can count it apart from the agreement check).
[[gnu::noinline]] void TimedEngineIteration(
    tether::Simulation* sim, const tether::v1::State& initial, bool cert,
    google::protobuf::RepeatedPtrField<tether::v1::Frame>* frames) {
  EngineRun(sim, initial, kStepsPerIteration, cert, frames);
  ++g_timed_iterations;
}

// ---------------------------------------------------------------------------
// The references, type-erased for registration.

struct Reference {
  std::string variant;            // "reference" or "reference_banded"
  std::function<void(long)> run;  // reset + steps
  std::function<const double*()> q, v;
};

template <class Model>
Reference MakeReference(std::string variant, const Model& model, const ModelCase& c) {
  auto rk = std::make_shared<Rk4<Model>>(model, kH);
  std::vector<double> q0 = c.q0, v0 = c.v0;
  Reference r;
  r.variant = std::move(variant);
  r.run = [rk, q0, v0](long steps) {
    rk->Reset(q0.data(), v0.data());
    rk->Steps(steps);
  };
  r.q = [rk] { return rk->q(); };
  r.v = [rk] { return rk->v(); };
  return r;
}

template <int N>
tether_bench::ChainParams<N> ChainParamsFor() {
  tether_bench::ChainParams<N> p;
  p.l = 1;
  p.grav = kGrav;
  for (int i = 0; i < N; ++i) p.mass[static_cast<size_t>(i)] = ChainMass(i);
  p.k = {kAlpha, kBeta};
  return p;
}

template <int N>
std::vector<Reference> ChainReferences(const ModelCase& c) {
  ChainBandedRef<N> banded{ChainParamsFor<N>()};
  if constexpr (N > 64) {
    // The dense reference is O(N^3): the banded one only.
    return {MakeReference("reference_banded", banded, c)};
  } else {
    ChainDenseRef<N> dense{ChainParamsFor<N>()};
    return {MakeReference("reference", dense, c), MakeReference("reference_banded", banded, c)};
  }
}

struct Case {
  ModelCase model;
  tether::v1::SimulationSpec spec;
  std::vector<Reference> refs;
  bool dense_too = false;  // also engine_dense_cert_off (the forced dense path)
};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  auto add = [&](ModelCase m, std::vector<Reference> refs) {
    tether::v1::SimulationSpec spec = ParseOrDie(m);
    cases.push_back({std::move(m), std::move(spec), std::move(refs)});
  };
  {
    ModelCase m = CircleCase();
    CirclePendulumRef model;
    model.l = 1;
    model.m = 1;
    model.grav = kGrav;
    model.k = {kAlpha, kBeta};
    add(m, {MakeReference("reference", model, m)});
  }
  {
    ModelCase m = DoubleCase();
    DoublePendulumRef model;
    model.grav = kGrav;
    model.k = {kAlpha, kBeta};
    add(m, {MakeReference("reference", model, m)});
  }
  auto chain = [&](auto n_const) {
    constexpr int N = decltype(n_const)::value;
    ModelCase m = ChainCase(N);
    add(m, ChainReferences<N>(m));
  };
  chain(std::integral_constant<int, 1>{});
  chain(std::integral_constant<int, 2>{});
  chain(std::integral_constant<int, 4>{});
  chain(std::integral_constant<int, 8>{});
  chain(std::integral_constant<int, 16>{});
  chain(std::integral_constant<int, 32>{});
  chain(std::integral_constant<int, 64>{});
  chain(std::integral_constant<int, 128>{});
  chain(std::integral_constant<int, 256>{});
  for (Case& c : cases) c.dense_too = c.model.name == "chain" && c.model.n >= 16 && c.model.n <= 64;
  auto large = [&](const std::string& name, const tether_bench::LargeModel& lm) {
    ModelCase m{name, lm.masses, lm.json, {}, {}};
    tether::v1::SimulationSpec spec = ParseOrDie(m);
    m.q0.assign(spec.initial().q().begin(), spec.initial().q().end());
    m.v0.assign(spec.initial().v().begin(), spec.initial().v().end());
    cases.push_back({std::move(m), std::move(spec), {}});
  };
  for (int panels : {8, 16, 32, 64, 128}) large("ladder", tether_bench::Ladder(panels));
  for (int k : {4, 8, 12, 16}) large("grid", tether_bench::Grid(k));
  return cases;
}

// ---------------------------------------------------------------------------
// The agreement check (once, before any timing).

// Whether --benchmark_filter selects any benchmark of this case (only those
// are checked, so a filtered run, e.g. under valgrind, stays short).
bool Selected(const Case& c) {
  std::string filter = benchmark::GetBenchmarkFilter();
  if (filter.empty() || filter == "all") return true;
  bool negate = false;
  if (filter[0] == '-') {
    negate = true;
    filter = filter.substr(1);
  }
  const std::regex re(filter);
  const std::string prefix = c.model.name + "/" + std::to_string(c.model.n) + "/";
  std::vector<std::string> names = {prefix + "engine_cert_off", prefix + "engine_cert_on",
                                    prefix + "engine_cert_disabled",
                                    prefix + "engine_dense_cert_off"};
  for (const Reference& r : c.refs) names.push_back(prefix + r.variant);
  for (const std::string& name : names) {
    if (std::regex_search(name, re) != negate) return true;
  }
  return false;
}

double MaxRelDiff(const double* a, const double* b, int n) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const double d = std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i]));
    worst = std::isfinite(d) ? std::max(worst, d) : INFINITY;
  }
  return worst;
}

bool CheckAgreement(std::vector<Case>& cases) {
  bool ok = true;
  google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
  std::fprintf(stderr, "agreement after %ld RK4 steps (max |diff| / max(1, |x|) over q and v):\n",
               kCheckSteps);
  for (Case& c : cases) {
    if (!Selected(c)) continue;
    const int nq = static_cast<int>(c.model.q0.size());
    tether::v1::State engine_state[2];
    for (int cert = 0; cert < 2; ++cert) {
      auto sim = MakeSim(c.spec);
      EngineRun(sim.get(), c.spec.initial(), kCheckSteps, cert != 0, &frames);
      sim->GetState(&engine_state[cert]);
      if (cert) {
        tether::v1::Certificate certificate;
        sim->GetCertificate(&certificate);
        if (certificate.steps() != static_cast<uint64_t>(kCheckSteps)) {
          std::fprintf(stderr, "  %s/%d: certificate covers %llu steps, expected %ld\n",
                       c.model.name.c_str(), c.model.n,
                       static_cast<unsigned long long>(certificate.steps()), kCheckSteps);
          ok = false;
        }
      }
    }
    {
      auto sim = MakeSim(c.spec);
      std::fprintf(stderr,
                   "  %-7s N=%-3d engine tapes: dynamics %zu instructions, constraints %zu; "
                   "KKT %s (nnz(L) %d)\n",
                   c.model.name.c_str(), c.model.n, sim->model().dynamics.num_instructions(),
                   sim->model().constraints.num_instructions(),
                   sim->model().sparse.enabled ? "sparse" : "dense", sim->model().sparse.l_nnz());
    }
    const double* eq = engine_state[0].q().data();
    const double* ev = engine_state[0].v().data();
    const double cert_diff = std::max(MaxRelDiff(engine_state[1].q().data(), eq, nq),
                                      MaxRelDiff(engine_state[1].v().data(), ev, nq));
    if (cert_diff != 0) {
      std::fprintf(stderr, "  %s/%d: certificate on changes the trajectory (%.3g)\n",
                   c.model.name.c_str(), c.model.n, cert_diff);
      ok = false;
    }
    for (Reference& r : c.refs) {
      r.run(kCheckSteps);
      const double d = std::max(MaxRelDiff(r.q(), eq, nq), MaxRelDiff(r.v(), ev, nq));
      const bool good = d <= kTolerance;
      std::fprintf(stderr, "  %-7s N=%-3d %-17s %.3g %s\n", c.model.name.c_str(), c.model.n,
                   r.variant.c_str(), d, good ? "ok" : "MISMATCH");
      ok &= good;
    }
  }
  return ok;
}

// ---------------------------------------------------------------------------
// Registration.

// An engine benchmark: `spec` (kept alive by the caller) run with or
// without a certificate, on the dense KKT path when `dense`. (Not named
// Register*: engine_bench_instructions.sh counts the reference by the
// pattern *Register*lambda...#1.)
void AddEngineBenchmark(const std::string& name, const tether::v1::SimulationSpec* spec, bool cert,
                        bool dense) {
  benchmark::RegisterBenchmark(name.c_str(), [spec, cert, dense](benchmark::State& st) {
    auto sim = dense ? MakeSim(*spec, tether::KktPath::kDense) : MakeSim(*spec);
    google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
    for (auto _ : st) {
      TimedEngineIteration(sim.get(), spec->initial(), cert, &frames);
      benchmark::DoNotOptimize(frames.Mutable(0));
    }
    st.SetItemsProcessed(st.iterations() * kStepsPerIteration);
  })->Unit(benchmark::kMicrosecond);
}

void Register(std::vector<Case>& cases) {
  for (Case& c : cases) {
    const std::string prefix = c.model.name + "/" + std::to_string(c.model.n) + "/";
    for (Reference& r : c.refs) {
      Reference* ref = &r;
      benchmark::RegisterBenchmark((prefix + r.variant).c_str(), [ref](benchmark::State& st) {
        for (auto _ : st) {
          ref->run(kStepsPerIteration);
          ++g_timed_iterations;
          benchmark::DoNotOptimize(ref->q()[0]);
          benchmark::ClobberMemory();
        }
        st.SetItemsProcessed(st.iterations() * kStepsPerIteration);
      })->Unit(benchmark::kMicrosecond);
    }
    if (c.dense_too) AddEngineBenchmark(prefix + "engine_dense_cert_off", &c.spec, false, true);
    // certificate.disabled in the description, the run asking for one: what
    // a user who turns the certificate off gets (its cost against
    // engine_cert_off is what "costs nothing" means; the instruction counts
    // of engine_bench_instructions.sh compare them exactly).
    static std::deque<tether::v1::SimulationSpec> disabled_specs;
    disabled_specs.push_back(c.spec);
    disabled_specs.back().mutable_certificate()->set_disabled(true);
    AddEngineBenchmark(prefix + "engine_cert_disabled", &disabled_specs.back(), true, false);
    AddEngineBenchmark(prefix + "engine_cert_off", &c.spec, false, false);
    AddEngineBenchmark(prefix + "engine_cert_on", &c.spec, true, false);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  static std::vector<Case> cases = AllCases();
  if (!CheckAgreement(cases)) {
    std::fprintf(stderr, "reference and engine disagree: not benchmarking unequal work\n");
    return 2;
  }
  Register(cases);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::fprintf(stderr, "timed iterations: %ld\n", g_timed_iterations);
  return 0;
}
