// Ensemble steps per second against the single-instance engine, in the same
// run (docs/benchmarks.md "Ensembles"), on
//   circle   the circle pendulum (examples/circle_pendulum.json), RK4 h = 1e-3,
//            instances: a sweep of the initial tangential velocity der(y);
//   double   the double pendulum in angle form
//            (examples/double_pendulum_definitions.json), instances: a sweep
//            of the initial angle th1;
//   chain3   a 6-coordinate model: a planar triple pendulum of unit point
//            masses on unit rods in Cartesian coordinates (x1..y3, three
//            rod constraints, kChain3 below), starting horizontal at rest,
//            instances: a sweep of the initial vertical velocity der(y3).
// Every instance runs 1000 steps (t in [0, 1]), certificate off and on.
//   BM_Single:   one Simulation, SetState + BeginRun(until 1) + Advance, per
//                iteration (the engine's own loop; what a session's Run does);
//   BM_Ensemble: RunEnsemble of 64 instances per iteration (a simulation
//                made per instance, as the service does) on the calling
//                thread; lanes:0 every instance on the scalar engine,
//                lanes:1 eight at a time on the lane path where it applies
//                (certificate off; docs/ENSEMBLES.md "Lanes") with the best
//                kernel for the CPU and OS (AVX-512F where they have it),
//                lanes:2 the same with the SSE2 baseline kernel, lanes:5
//                with the AVX2 kernel; lanes:3, 4, 6 the same three with
//                fast functions; lanes:7 and 8 the AVX2 kernel with exact
//                and fast functions and its tape interpreted instead of
//                run as machine code (EnsembleOptions::lane_native_tape);
//                the lane path's share is the lane_share counter (of which
//                native_share ran the tape as machine code), the kernel
//                that ran the label;
//   BM_EnsembleWorkers: the same on 1 or 2 worker threads, timed by the
//                wall clock (the others by this thread's CPU time: a
//                machine shared with other work gives each process a part
//                of a core, which CPU time does not count).
//   BM_EnsembleChunked: 64 instances of 2000 steps (t in [0, 2]) a
//                iteration, certificate off, on the lane path (best
//                kernel), group by group (EnsembleRunner::StartGroup), each
//                group advanced in chunks of `chunk` lane steps as the
//                server advances it (32: fewer than the quantum budget
//                gives a group on these models, at most 256 lane steps or
//                2048 instance steps a chunk, sized to about 250 us: a
//                pessimistic case; 1024: a whole quantum, 8192 instance
//                steps) or in one call (chunk 0,
//                EnsembleRunner::RunGroup); exact functions, and fast
//                (fast:1). The chunks' cost is the ratio to chunk 0.
//   BM_MujocoDouble: MuJoCo (libmujoco-dev) stepping one mjData per instance
//                of the same double pendulum (two hinges, unit point masses
//                on unit massless rods, gravity 9.81, its RK4 at h = 1e-3,
//                contacts off; its joint angles are relative where Tether's
//                th2 is absolute, the same motion), 64 instances with th1
//                swept as above, 1000 mj_step each, on the calling thread.
// items_per_second is steps per second; Ensemble/Single (CPU time) is the
// ensemble's cost per step relative to the engine's, per core;
// EnsembleWorkers 2 / 1 the scaling, meaningful only on an idle machine.
#include <benchmark/benchmark.h>
#include <mujoco/mujoco.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/ensemble.h"
#include "engine/internal/simulation/ensemble_lanes.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"

namespace {

constexpr int kInstances = 64;
constexpr double kUntil = 1.0;  // 1000 steps of h = 1e-3

// 6 coordinates, 3 constraints (a triple pendulum, Cartesian).
constexpr const char* kChain3 = R"json({"system":{"coordinates":["x1","y1","x2","y2","x3","y3"],
 "parameters":[{"name":"l","value":1},{"name":"grav","value":9.81}],
 "masses":{"values":[1,1,1,1,1,1]},"potentialEnergy":"grav*(y1 + y2 + y3)",
 "constraints":[{"name":"rod1","expression":"(x1^2 + y1^2 - l^2)/2"},
  {"name":"rod2","expression":"((x2 - x1)^2 + (y2 - y1)^2 - l^2)/2"},
  {"name":"rod3","expression":"((x3 - x2)^2 + (y3 - y2)^2 - l^2)/2"}],
 "baumgarte":{"alpha":10,"beta":10}},
 "initial":{"q":[1,0,2,0,3,0],"v":[0,0,0,0,0,0]},
 "integrator":{"method":"RK4","stepSize":0.001}})json";

// The double pendulum of examples/double_pendulum_definitions.json for
// MuJoCo: hinges about y, point masses (tiny inertia) 1 below each joint.
constexpr const char* kMujocoDouble = R"(<mujoco>
  <option timestep="0.001" integrator="RK4" gravity="0 0 -9.81"><flag contact="disable"/></option>
  <worldbody>
    <body name="link1">
      <joint name="th1" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -1" mass="1" diaginertia="1e-9 1e-9 1e-9"/>
      <body name="link2" pos="0 0 -1">
        <joint name="th2" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 -1" mass="1" diaginertia="1e-9 1e-9 1e-9"/>
      </body>
    </body>
  </worldbody>
</mujoco>)";

std::string Example(const char* name) { return std::string(TETHER_SOURCE_DIR "/examples/") + name; }

tether::v1::SimulationSpec Load(const char* file, bool certificate) {
  tether::v1::SimulationSpec spec;
  tether::Status s = file == nullptr ? tether::ParseSpecJson(kChain3, &spec)
                                     : tether::LoadSpecFile(Example(file), &spec);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
  spec.mutable_certificate()->set_disabled(!certificate);
  return spec;
}

// nullptr: kChain3.
const char* File(int model) {
  if (model == 2) return nullptr;
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
  sweep->set_name(model == 0 ? "der(y)" : model == 1 ? "th1" : "der(y3)");
  sweep->set_start(model == 1 ? 0.5 : -0.5);
  sweep->set_stop(model == 1 ? 1.5 : 0.5);
  sweep->set_count(kInstances);
  tether::EnsembleOptions options;
  options.until_time = kUntil;
  options.certificate = state.range(1) != 0;
  const int64_t lanes = state.range(2);
  options.lanes = lanes != 0;
  options.lane_kernel = lanes == 2 || lanes == 4 ? tether::LaneKernel::kBaseline
                        : lanes >= 5             ? tether::LaneKernel::kAvx2
                                                 : tether::LaneKernel::kAuto;
  options.fast_functions = lanes == 3 || lanes == 4 || lanes == 6 || lanes == 8;
  options.lane_native_tape =
      lanes < 7 ? tether::LaneNativeTape::kAuto : tether::LaneNativeTape::kNever;
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
  const uint64_t instances = static_cast<uint64_t>(state.iterations()) * kInstances;
  if (options.lanes) {
    state.SetLabel(
        tether::internal::LaneKernelName(tether::internal::ResolveLaneKernel(options.lane_kernel)));
  }
  state.counters["lane_share"] =
      static_cast<double>((*runner)->lane_instances()) / static_cast<double>(instances);
  state.counters["native_share"] =
      static_cast<double>((*runner)->lane_native_instances()) / static_cast<double>(instances);
}

void BM_Ensemble(benchmark::State& state) { EnsembleSteps(state, 1); }
void BM_EnsembleWorkers(benchmark::State& state) {
  EnsembleSteps(state, static_cast<int>(state.range(3)));
}

void BM_EnsembleChunked(benchmark::State& state) {
  const int model = static_cast<int>(state.range(0));
  const auto spec = Load(File(model), false);
  tether::v1::EnsembleSpec ensemble;
  auto* sweep = ensemble.add_sweeps();
  sweep->set_name(model == 0 ? "der(y)" : model == 1 ? "th1" : "der(y3)");
  sweep->set_start(model == 1 ? 0.5 : -0.5);
  sweep->set_stop(model == 1 ? 1.5 : 0.5);
  sweep->set_count(kInstances);
  tether::EnsembleOptions options;
  options.until_time = 2 * kUntil;
  options.certificate = false;
  options.fast_functions = state.range(2) != 0;
  auto runner = tether::EnsembleRunner::Create(spec, ensemble, options);
  if (!runner.ok() || (*runner)->group_size() != 8) std::abort();
  const uint64_t chunk = state.range(1) == 0 ? UINT64_MAX : static_cast<uint64_t>(state.range(1));
  std::vector<tether::v1::EnsembleInstanceResult> results(8);
  uint64_t steps = 0;
  for (auto _ : state) {
    for (uint64_t first = 0; first < kInstances; first += 8) {
      auto group = (*runner)->StartGroup(first, 8);
      while (!group->Advance(chunk)) {
      }
      group->TakeResults(results.data());
      for (const auto& r : results) {
        if (!r.ok()) std::abort();
        steps += r.steps();
      }
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(steps));
  state.counters["lane_share"] =
      static_cast<double>((*runner)->lane_instances()) /
      static_cast<double>(static_cast<uint64_t>(state.iterations()) * kInstances);
}

void BM_MujocoDouble(benchmark::State& state) {
  // Debian 12's MuJoCo (2.2) loads models from files only.
  char path[] = "/tmp/tether_ensemble_bench_XXXXXX.xml";
  const int fd = mkstemps(path, 4);
  if (fd < 0 || write(fd, kMujocoDouble, std::strlen(kMujocoDouble)) < 0) std::abort();
  close(fd);
  char error[1000] = "";
  mjModel* m = mj_loadXML(path, nullptr, error, sizeof error);
  std::remove(path);
  if (m == nullptr) {
    std::fprintf(stderr, "MuJoCo: %s\n", error);
    std::abort();
  }
  std::vector<mjData*> data(kInstances);
  for (auto& d : data) d = mj_makeData(m);
  const long steps_each = static_cast<long>(kUntil / m->opt.timestep + 0.5);
  uint64_t steps = 0;
  for (auto _ : state) {
    for (int i = 0; i < kInstances; ++i) {
      mjData* d = data[i];
      mj_resetData(m, d);
      d->qpos[0] = 0.5 + i * (1.0 / (kInstances - 1));  // th1 as BM_Ensemble's sweep
      d->qpos[1] = -0.5;  // relative: Tether's th2 = 0.5 absolute, less th1 ~ 1
      for (long k = 0; k < steps_each; ++k) mj_step(m, d);
      steps += steps_each;
    }
    benchmark::DoNotOptimize(data[0]->qpos[0]);
  }
  state.SetItemsProcessed(static_cast<int64_t>(steps));
  for (auto* d : data) mj_deleteData(d);
  mj_deleteModel(m);
}

// range(0): 0 circle, 1 double, 2 chain3; range(1): certificate; range(2):
// lanes (0 scalar, 1 best kernel, 2 baseline kernel, 5 AVX2 kernel; 3, 4,
// 6 the same with fast functions; 7, 8 AVX2 exact and fast, the tape
// interpreted); range(3): workers.
BENCHMARK(BM_Single)->ArgsProduct({{0, 1, 2}, {0, 1}})->ArgNames({"model", "cert"});
BENCHMARK(BM_Ensemble)
    ->ArgsProduct({{0, 1, 2}, {0, 1}, {0, 1, 2}})
    ->ArgNames({"model", "cert", "lanes"});
BENCHMARK(BM_Ensemble)
    ->ArgsProduct({{0, 1, 2}, {0}, {3, 4, 5, 6, 7, 8}})
    ->ArgNames({"model", "cert", "lanes"});
BENCHMARK(BM_EnsembleChunked)
    ->ArgsProduct({{0, 1}, {0, 32, 1024}, {0, 1}})
    ->ArgNames({"model", "chunk", "fast"});
BENCHMARK(BM_MujocoDouble);
BENCHMARK(BM_EnsembleWorkers)
    ->ArgsProduct({{0, 1}, {0}, {1}, {1, 2}})
    ->ArgNames({"model", "cert", "lanes", "workers"})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
