// Mechanisms against MuJoCo on the same URDF (issue 23 point 5): steps per
// second of Tether's engine (the mechanism compiled from the URDF, RK4,
// certificate off and on) and of MuJoCo (Debian's libmujoco 2.2.2, its own
// URDF importer, mj_step with its RK4 integrator, contacts, limits, friction
// loss, damping and armature off: tests/support/mujoco_urdf.h), at the same
// step h = 1e-3, for
//   arm7     a 7-joint arm laid out like a Franka Panda
//            (tests/data/mechanism/arm7.urdf),
//   chain/N  a spatial N-link chain (joints alternately about y and z, offset
//            origins, full inertia tensors), N = 5, 10, 20, 30, generated
//            here as URDF text (ChainUrdf),
// and what it costs to get there: Tether's URDF import (URDF -> description,
// `tether urdf`'s reader), its compile (description -> compiled model and
// the initial evaluation: Simulation::Create with the default limits) and
// MuJoCo's mj_loadXML (URDF -> mjModel).
//
// Before anything is timed, main() runs every model for kCheckSteps steps
// in both engines from the same state and aborts unless q and v agree to
// 1e-9 (relative to max(1, |x|)), and unless the certificate changes no bit
// of Tether's trajectory: the comparison is of equal work on the same
// trajectory.
//
// One stepping iteration = reset to the initial state + kStepsPerIteration
// steps (Tether: SetState + BeginRun{steps = every = K} + Advance(K), one
// frame; MuJoCo: mj_resetData, the state, K mj_step). items_per_second is
// steps per second (compiles per second for the compile rows). Run
// bench/run_mechanism_bench.sh for the table; figures in docs/benchmarks.md
// ("Mechanisms").
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "engine/internal/expr/parser.h"
#include "engine/internal/expr/tape.h"
#include "engine/internal/model/model.h"
#include "engine/mechanism.h"
#include "engine/simulation.h"
#include "support/mujoco_urdf.h"
#include "urdf/urdf_import.h"

namespace {

constexpr double kH = 1e-3;
constexpr long kStepsPerIteration = 100;
constexpr long kCheckSteps = 1000;  // t in [0, 1]
constexpr double kTolerance = 1e-9;

// A spatial chain of n links as URDF text: link i hangs from link i-1 by a
// revolute joint about y (odd i) or z (even i), 0.2 m further along x and
// turned by 0.1 rad about x; centres of mass off the link's axis; inertia
// tensors with products of inertia. Every number varies with i a little,
// so that no two links are alike.
std::string ChainUrdf(int n) {
  std::string s = "<?xml version=\"1.0\"?>\n<robot name=\"chain" + std::to_string(n) +
                  "\">\n  <mujoco><compiler fusestatic=\"false\" discardvisual=\"true\" "
                  "balanceinertia=\"false\"/></mujoco>\n  <link name=\"base\"/>\n";
  char buf[1024];
  for (int i = 1; i <= n; ++i) {
    const std::string parent = i == 1 ? "base" : "link" + std::to_string(i - 1);
    const double mass = 0.5 + 0.1 * (i % 3), k = 1 + 0.05 * (i % 4);
    std::snprintf(buf, sizeof buf,
                  "  <joint name=\"j%d\" type=\"revolute\">\n"
                  "    <parent link=\"%s\"/>\n    <child link=\"link%d\"/>\n"
                  "    <origin xyz=\"%s\" rpy=\"0.1 0 0\"/>\n    <axis xyz=\"%s\"/>\n"
                  "  </joint>\n"
                  "  <link name=\"link%d\">\n    <inertial>\n"
                  "      <origin xyz=\"0.1 %.3f 0.004\" rpy=\"0 0.05 0\"/>\n"
                  "      <mass value=\"%.3f\"/>\n"
                  "      <inertia ixx=\"%.6g\" ixy=\"1e-5\" ixz=\"-2e-5\" iyy=\"%.6g\" "
                  "iyz=\"1e-5\" izz=\"%.6g\"/>\n"
                  "    </inertial>\n  </link>\n",
                  i, parent.c_str(), i, i == 1 ? "0 0 0" : "0.2 0 0", i % 2 ? "0 1 0" : "0 0 1", i,
                  0.002 * (i % 5), mass, 2e-4 * k, 2e-3 * k, 2.1e-3 * k);
    s += buf;
  }
  return s + "</robot>\n";
}

struct Case {
  std::string name;  // "arm7", "chain/5", ...
  std::string urdf;  // file path
  tether::v1::SimulationSpec spec;
  std::vector<std::string> names;  // Tether's coordinates (= joint names)
  std::vector<double> q0, v0;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "mechanism_bench: %s\n", what.c_str());
  std::exit(2);
}

Case MakeCase(std::string name, std::string urdf, std::vector<double> q0, std::vector<double> v0) {
  tether::urdf::Import imp;
  const tether::Status s = tether::urdf::ImportUrdfFile(urdf, &imp);
  if (!s.ok()) Die(urdf + ": " + s.message());
  Case c{std::move(name), std::move(urdf), imp.spec, {}, std::move(q0), std::move(v0)};
  c.spec.mutable_integrator()->set_step_size(kH);
  c.spec.mutable_initial()->clear_q();
  c.spec.mutable_initial()->clear_v();
  for (double x : c.q0) c.spec.mutable_initial()->add_q(x);
  for (double x : c.v0) c.spec.mutable_initial()->add_v(x);
  // One coordinate per non-fixed joint, named after it, in file order (the
  // benchmark's files have revolute and fixed joints only).
  for (const auto& j : c.spec.system().mechanism().joints()) {
    if (j.type() != tether::v1::Joint::FIXED) c.names.push_back(j.name());
  }
  if (c.names.size() != c.q0.size()) Die(c.name + ": state size differs from the coordinates");
  return c;
}

std::vector<Case> AllCases(const std::string& tmp_dir) {
  std::vector<Case> cases;
  cases.push_back(
      MakeCase("arm7", std::string(TETHER_SOURCE_DIR) + "/tests/data/mechanism/arm7.urdf",
               {0.1, -0.5, 0.2, -2.0, 0.3, 1.5, 0.4}, {0.3, -0.2, 0.5, 0.1, -0.4, 0.6, 0.2}));
  for (int n : {5, 10, 20, 30}) {
    const std::string path = tmp_dir + "/chain" + std::to_string(n) + ".urdf";
    std::ofstream(path) << ChainUrdf(n);
    std::vector<double> q0, v0(static_cast<size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) q0.push_back(0.2 * std::sin(i + 1.0));
    cases.push_back(MakeCase("chain/" + std::to_string(n), path, q0, v0));
  }
  return cases;
}

// ---------------------------------------------------------------------------
// The two engines, each reset to a case's initial state and stepped.

std::unique_ptr<tether::Simulation> MakeSim(const Case& c) {
  auto created = tether::Simulation::Create(c.spec);
  if (!created.ok()) Die(c.name + ": Simulation::Create: " + created.status().message());
  return std::move(created).value();
}

void TetherRun(tether::Simulation* sim, const Case& c, long steps, bool cert,
               google::protobuf::RepeatedPtrField<tether::v1::Frame>* frames) {
  frames->Clear();
  tether::Status s = sim->SetState(c.spec.initial());
  if (s.ok()) {
    s = sim->BeginRun({.steps = static_cast<uint64_t>(steps),
                       .until_time = std::nullopt,
                       .every = static_cast<uint64_t>(steps),
                       .emit_start = false,
                       .output_interval = std::nullopt,
                       .certificate = cert});
  }
  if (s.ok()) s = sim->Advance(static_cast<uint64_t>(steps), frames);
  if (!s.ok()) Die(c.name + ": Tether run: " + s.message());
}

struct Mujoco {
  mjModel* m = nullptr;
  mjData* d = nullptr;
  std::vector<int> qadr, vadr;  // per Tether coordinate
  ~Mujoco() {
    if (d) mj_deleteData(d);
    if (m) mj_deleteModel(m);
  }
};

std::unique_ptr<Mujoco> MakeMujoco(const Case& c) {
  auto mj = std::make_unique<Mujoco>();
  std::string error;
  mj->m = tether::mujoco_urdf::Load(c.urdf, c.spec.system().mechanism(), kH, &error);
  if (!mj->m) Die(c.name + ": MuJoCo: " + error);
  if (mj->m->nq != static_cast<int>(c.names.size()) || mj->m->nv != mj->m->nq) {
    Die(c.name + ": MuJoCo's nq/nv differ from Tether's coordinates");
  }
  mj->d = mj_makeData(mj->m);
  for (const std::string& n : c.names) {
    const int id = mj_name2id(mj->m, mjOBJ_JOINT, n.c_str());
    if (id < 0) Die(c.name + ": MuJoCo has no joint " + n);
    mj->qadr.push_back(mj->m->jnt_qposadr[id]);
    mj->vadr.push_back(mj->m->jnt_dofadr[id]);
  }
  return mj;
}

void MujocoRun(Mujoco* mj, const Case& c, long steps) {
  mj_resetData(mj->m, mj->d);
  for (size_t k = 0; k < c.names.size(); ++k) {
    mj->d->qpos[mj->qadr[k]] = c.q0[k];
    mj->d->qvel[mj->vadr[k]] = c.v0[k];
  }
  for (long k = 0; k < steps; ++k) mj_step(mj->m, mj->d);
}

// Timed iterations in this process (mechanism_bench_instructions.sh divides
// the instructions it counts by this, printed at exit).
long g_timed_iterations = 0;

// The timed iterations, separate symbols so that the instruction count can
// collect them apart from the agreement check and the compiles.
[[gnu::noinline]] void TimedTetherIteration(
    tether::Simulation* sim, const Case& c, bool cert,
    google::protobuf::RepeatedPtrField<tether::v1::Frame>* frames) {
  TetherRun(sim, c, kStepsPerIteration, cert, frames);
  ++g_timed_iterations;
}

[[gnu::noinline]] void TimedMujocoIteration(Mujoco* mj, const Case& c) {
  MujocoRun(mj, c, kStepsPerIteration);
  ++g_timed_iterations;
}

// ---------------------------------------------------------------------------
// The agreement check (once, before any timing).

double MaxRelDiff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i]));
    worst = std::isfinite(d) ? std::max(worst, d) : INFINITY;
  }
  return worst;
}

// Whether --benchmark_filter selects any benchmark of this case (only those
// are checked, so a filtered run, e.g. under valgrind, stays short).
bool Selected(const Case& c) {
  std::string filter = benchmark::GetBenchmarkFilter();
  if (filter.empty() || filter == "all") return true;
  const bool negate = filter[0] == '-';
  if (negate) filter = filter.substr(1);
  const std::regex re(filter);
  for (const char* b : {"tether_cert_off", "tether_cert_on", "mujoco", "tether_urdf_import",
                        "tether_compile", "mujoco_load"}) {
    if (std::regex_search(c.name + "/" + b, re) != negate) return true;
  }
  return false;
}

bool CheckAgreement(const std::vector<Case>& cases) {
  bool ok = true;
  google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
  std::fprintf(stderr, "agreement after %ld RK4 steps of h = %g (max |diff| / max(1, |x|)):\n",
               kCheckSteps, kH);
  for (const Case& c : cases) {
    if (!Selected(c)) continue;
    std::vector<double> x[2];
    for (int cert = 0; cert < 2; ++cert) {
      auto sim = MakeSim(c);
      TetherRun(sim.get(), c, kCheckSteps, cert != 0, &frames);
      tether::v1::State st;
      sim->GetState(&st);
      x[cert].assign(st.q().begin(), st.q().end());
      x[cert].insert(x[cert].end(), st.v().begin(), st.v().end());
      if (cert) {
        tether::v1::Certificate certificate;
        sim->GetCertificate(&certificate);
        if (certificate.steps() != static_cast<uint64_t>(kCheckSteps)) {
          std::fprintf(stderr, "  %s: the certificate covers %llu steps, expected %ld\n",
                       c.name.c_str(), static_cast<unsigned long long>(certificate.steps()),
                       kCheckSteps);
          ok = false;
        }
      } else {
        std::fprintf(stderr, "  %-9s nq %2zu, dynamics tape %zu instructions (M(q) %s)\n",
                     c.name.c_str(), c.names.size(), sim->model().dynamics.num_instructions(),
                     sim->model().inertia == tether::Inertia::kKinetic ? "per step" : "constant");
      }
    }
    if (x[0] != x[1]) {
      std::fprintf(stderr, "  %s: the certificate changes the trajectory (%.3g)\n", c.name.c_str(),
                   MaxRelDiff(x[1], x[0]));
      ok = false;
    }
    auto mj = MakeMujoco(c);
    MujocoRun(mj.get(), c, kCheckSteps);
    std::vector<double> y;
    for (int a : mj->qadr) y.push_back(mj->d->qpos[a]);
    for (int a : mj->vadr) y.push_back(mj->d->qvel[a]);
    const double d = MaxRelDiff(y, x[0]);
    const bool good = d <= kTolerance;
    std::fprintf(stderr, "  %-9s Tether against MuJoCo %.3g %s\n", c.name.c_str(), d,
                 good ? "ok" : "MISMATCH");
    ok &= good;
  }
  return ok;
}

// ---------------------------------------------------------------------------
// Where the dynamics tape's instructions come from (--breakdown): the
// compiler's own steps (engine/internal/model/model.cc, DeriveForces),
// repeated on the expanded description, each part compiled into a tape of
// its own: M(q) = d2T/dv2 (upper triangle), the velocity terms
// dT/dq - (d2T/dv dq) v - d2T/dv dt, gravity and springs -dV/dq, and all
// together (the engine's dynamics tape less its constraint rows; shared
// nodes counted once), three ways: "per variable", T differentiated once
// per velocity (the momenta) and per coordinate, each momentum once per
// coordinate times v_j (the compiler before this benchmark); "tangent", the
// velocity terms as one directional derivative of the momenta along
// (q, t) -> (v, 1) (Graph::Tangent); "gradient", also every dT/dq_i and
// dT/dv_i by one reverse accumulation (Graph::Gradient), the compiler now.
// Graph nodes are what the compiler builds to get there.

enum Mode { kPerVariable, kTangent, kGradient };
const char* const kModeNames[] = {"per variable", "tangent", "gradient"};

void PrintBreakdown(const Case& c, Mode mode) {
  using tether::expr::NodeId;
  namespace expr = tether::expr;
  std::vector<tether::v1::Diagnostic> diags;
  const tether::v1::SystemSpec sys = tether::ExpandMechanism(c.spec.system(), &diags);
  const int d = sys.coordinates_size();
  expr::Limits limits;
  limits.max_nodes = int64_t{1} << 40;
  limits.max_derivative_nodes = int64_t{1} << 40;
  limits.max_bytes = int64_t{1} << 40;
  expr::Graph graph(limits);
  std::vector<expr::Definition> defs(static_cast<size_t>(sys.definitions_size()));
  expr::Scope scope;
  scope.time_var = 0;
  for (int i = 0; i < d; ++i) {
    scope.coordinates[sys.coordinates(i)] = 1 + i;
    scope.velocities[sys.coordinates(i)] = 1 + d + i;
  }
  for (const auto& p : sys.parameters()) scope.parameters[p.name()] = p.value();
  scope.definitions = &defs;
  const auto parse = [&](const std::string& text) {
    expr::ParseError error;
    const std::optional<NodeId> n = expr::Parse(text, scope, &graph, &error);
    if (!n) Die(c.name + ": breakdown: " + error.message + " in " + text);
    return *n;
  };
  for (int i = 0; i < sys.definitions_size(); ++i) {
    scope.visible_definitions = i;
    defs[static_cast<size_t>(i)].name = sys.definitions(i).name();
    defs[static_cast<size_t>(i)].index = i;
    defs[static_cast<size_t>(i)].node = parse(sys.definitions(i).expression());
    scope.definition_names[sys.definitions(i).name()] = i;
  }
  scope.visible_definitions = sys.definitions_size();
  const NodeId T = parse(sys.kinetic_energy()), V = parse(sys.potential_energy());
  const size_t parsed = graph.size();
  std::vector<NodeId> M, velocity_terms, potential;
  std::vector<NodeId> along(static_cast<size_t>(1 + 2 * d), -1);  // (t, q) -> (1, v)
  along[0] = graph.Const(1);
  for (int j = 0; j < d; ++j) along[static_cast<size_t>(1 + j)] = graph.Var(1 + d + j);
  std::vector<NodeId> grad;
  if (mode == kGradient) grad = graph.Gradient(T, 1 + 2 * d);
  for (int i = 0; i < d; ++i) {
    const NodeId mom =
        mode == kGradient ? grad[static_cast<size_t>(1 + d + i)] : graph.Diff(T, 1 + d + i);
    for (int j = i; j < d; ++j) M.push_back(graph.Diff(mom, 1 + d + j));
    const NodeId dTdq = mode == kGradient ? grad[static_cast<size_t>(1 + i)] : graph.Diff(T, 1 + i);
    if (mode != kPerVariable) {
      velocity_terms.push_back(graph.Sub(dTdq, graph.Tangent(mom, 0, along)));
    } else {
      NodeId ft = dTdq;
      for (int j = 0; j < d; ++j) {
        ft = graph.Sub(ft, graph.Mul(graph.Diff(mom, 1 + j), graph.Var(1 + d + j)));
      }
      velocity_terms.push_back(graph.Sub(ft, graph.Diff(mom, 0)));
    }
    potential.push_back(graph.Neg(graph.Diff(V, 1 + i)));
  }
  std::vector<NodeId> all = M;
  all.insert(all.end(), velocity_terms.begin(), velocity_terms.end());
  all.insert(all.end(), potential.begin(), potential.end());
  const int vars = 1 + 2 * d;
  std::fprintf(
      stderr,
      "  %-9s %-12s nq %2d  graph nodes: parsed %zu, with derivatives %zu;  tape instructions: "
      "M(q) %zu, velocity terms %zu, -dV/dq %zu, together %zu\n",
      c.name.c_str(), kModeNames[mode], d, parsed, graph.size(),
      tether::Tape::Compile(graph, M, vars).num_instructions(),
      tether::Tape::Compile(graph, velocity_terms, vars).num_instructions(),
      tether::Tape::Compile(graph, potential, vars).num_instructions(),
      tether::Tape::Compile(graph, all, vars).num_instructions());
}

// ---------------------------------------------------------------------------
// Registration.

void Register(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    const Case* cp = &c;
    for (bool cert : {false, true}) {
      benchmark::RegisterBenchmark(
          (c.name + (cert ? "/tether_cert_on" : "/tether_cert_off")).c_str(),
          [cp, cert](benchmark::State& st) {
            auto sim = MakeSim(*cp);
            google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
            for (auto _ : st) {
              TimedTetherIteration(sim.get(), *cp, cert, &frames);
              benchmark::DoNotOptimize(frames.Mutable(0));
            }
            st.SetItemsProcessed(st.iterations() * kStepsPerIteration);
          })
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark((c.name + "/mujoco").c_str(), [cp](benchmark::State& st) {
      auto mj = MakeMujoco(*cp);
      for (auto _ : st) {
        TimedMujocoIteration(mj.get(), *cp);
        benchmark::DoNotOptimize(mj->d->qpos[0]);
        benchmark::ClobberMemory();
      }
      st.SetItemsProcessed(st.iterations() * kStepsPerIteration);
    })->Unit(benchmark::kMicrosecond);
    // What it costs to get a runnable model from the file.
    benchmark::RegisterBenchmark((c.name + "/tether_urdf_import").c_str(), [cp](benchmark::State&
                                                                                    st) {
      for (auto _ : st) {
        tether::urdf::Import imp;
        const tether::Status s = tether::urdf::ImportUrdfFile(cp->urdf, &imp);
        if (!s.ok()) Die(s.message());
        benchmark::DoNotOptimize(imp.spec.ByteSizeLong());
      }
      st.SetItemsProcessed(st.iterations());
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((c.name + "/tether_compile").c_str(), [cp](benchmark::State& st) {
      for (auto _ : st) benchmark::DoNotOptimize(MakeSim(*cp).get());
      st.SetItemsProcessed(st.iterations());
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((c.name + "/mujoco_load").c_str(), [cp](benchmark::State& st) {
      for (auto _ : st) benchmark::DoNotOptimize(MakeMujoco(*cp).get());
      st.SetItemsProcessed(st.iterations());
    })->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const bool breakdown = argc == 2 && std::string(argv[1]) == "--breakdown";
  if (breakdown) argc = 1;
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  char dir_template[] = "/tmp/tether_mechanism_bench.XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) Die("mkdtemp failed");
  static std::vector<Case> cases = AllCases(dir);
  if (breakdown) {
    std::fprintf(stderr, "the dynamics tape by part (no timing):\n");
    for (const Case& c : cases) {
      for (Mode mode : {kPerVariable, kTangent, kGradient}) PrintBreakdown(c, mode);
    }
    for (const Case& c : cases) {
      if (c.name != "arm7") std::remove(c.urdf.c_str());
    }
    std::remove(dir);
    return 0;
  }
  if (!CheckAgreement(cases)) {
    std::fprintf(stderr, "Tether and MuJoCo disagree: not benchmarking unequal work\n");
    return 2;
  }
  Register(cases);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const Case& c : cases) {
    if (c.name != "arm7") std::remove(c.urdf.c_str());
  }
  std::remove(dir);
  std::fprintf(stderr, "timed iterations: %ld\n", g_timed_iterations);
  return 0;
}
