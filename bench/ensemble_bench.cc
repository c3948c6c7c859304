// Ensemble steps per second against the single-instance engine, in the same
// run (docs/benchmarks.md "Ensembles"), on
//   circle   the circle pendulum (examples/circle_pendulum.json), RK4 h = 1e-3,
//            instances: a sweep of the initial tangential velocity der(y);
//   double   the double pendulum in angle form
//            (examples/double_pendulum_definitions.json), instances: a sweep
//            of the initial angle th1.
// Every instance runs 1000 steps (t in [0, 1]), certificate off and on.
//   BM_Single:   one Simulation, SetState + BeginRun(until 1) + Advance, per
//                iteration (the engine's own loop; what a session's Run does);
//   BM_Ensemble: RunEnsemble of 64 instances per iteration (a simulation
//                made per instance, as the service does) on the calling
//                thread;
//   BM_EnsembleWorkers: the same on 1 or 2 worker threads, timed by the
//                wall clock (the others by this thread's CPU time: a
//                machine shared with other work gives each process a part
//                of a core, which CPU time does not count).
// items_per_second is steps per second; Ensemble/Single (CPU time) is the
// ensemble's cost per step relative to the engine's, per core;
// EnsembleWorkers 2 / 1 the scaling, meaningful only on an idle machine.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "engine/ensemble.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"

namespace {

constexpr int kInstances = 64;
constexpr double kUntil = 1.0;  // 1000 steps of h = 1e-3

std::string Example(const char* name) { return std::string(TETHER_SOURCE_DIR "/examples/") + name; }

tether::v1::SimulationSpec Load(const char* file, bool certificate) {
  tether::v1::SimulationSpec spec;
  tether::Status s = tether::LoadSpecFile(Example(file), &spec);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
  spec.mutable_certificate()->set_disabled(!certificate);
  return spec;
}

const char* File(int model) {
  return model == 0 ? "circle_pendulum.json" : "double_pendulum_definitions.json";
}

void BM_Single(benchmark::State& state) {
  const auto spec = Load(File(static_cast<int>(state.range(0))), state.range(1) != 0);
  auto sim = tether::Simulation::Create(spec);
  if (!sim.ok()) std::abort();
  tether::v1::State initial = spec.initial();
  tether::RunOptions options;
  options.until_time = kUntil;
  options.every = 1000000;
  options.emit_start = false;
  google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
  uint64_t steps = 0;
  for (auto _ : state) {
    if (!(*sim)->SetState(initial).ok() || !(*sim)->BeginRun(options).ok()) std::abort();
    const uint64_t before = (*sim)->step();
    if (!(*sim)->Advance(UINT64_MAX, &frames).ok()) std::abort();
    steps += (*sim)->step() - before;
    frames.Clear();
  }
  state.SetItemsProcessed(static_cast<int64_t>(steps));
}

void EnsembleSteps(benchmark::State& state, int workers) {
  const int model = static_cast<int>(state.range(0));
  const auto spec = Load(File(model), state.range(1) != 0);
  tether::v1::EnsembleSpec ensemble;
  auto* sweep = ensemble.add_sweeps();
  sweep->set_name(model == 0 ? "der(y)" : "th1");
  sweep->set_start(model == 0 ? -0.5 : 0.5);
  sweep->set_stop(model == 0 ? 0.5 : 1.5);
  sweep->set_count(kInstances);
  tether::EnsembleOptions options;
  options.until_time = kUntil;
  options.certificate = state.range(1) != 0;
  auto runner = tether::EnsembleRunner::Create(spec, ensemble, options);
  if (!runner.ok()) std::abort();
  uint64_t steps = 0;
  for (auto _ : state) {
    tether::RunEnsemble(**runner, workers, [&](tether::v1::EnsembleInstanceResult&& r) {
      if (!r.ok()) std::abort();
      steps += r.steps();
    });
  }
  state.SetItemsProcessed(static_cast<int64_t>(steps));
}

void BM_Ensemble(benchmark::State& state) { EnsembleSteps(state, 0); }
void BM_EnsembleWorkers(benchmark::State& state) {
  EnsembleSteps(state, static_cast<int>(state.range(2)));
}

// range(0): 0 circle, 1 double; range(1): certificate; range(2): workers.
BENCHMARK(BM_Single)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"model", "cert"});
BENCHMARK(BM_Ensemble)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"model", "cert"});
BENCHMARK(BM_EnsembleWorkers)
    ->ArgsProduct({{0, 1}, {0}, {1, 2}})
    ->ArgNames({"model", "cert", "workers"})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
