// Ensembles: many instances of one description, each run alone to a common
// end time (docs/ENSEMBLES.md). An instance is the description with some
// values replaced (v1::EnsembleValue: a parameter, an initial coordinate
// `x`, an initial velocity `der(x)`, or an input), given explicitly, as a
// grid (sweeps) or as seeded random draws (v1::EnsembleSpec).
//
// Determinism: an instance's result is computed by exactly the calls a
// plain run of that instance makes (Simulation::Create or FromModel on the
// same compiled model, SetInput, BeginRun, Advance), on a simulation of its
// own, so it is bit-identical to that run and does not depend on which
// other instances run, in which order, on how many threads, or on how its
// steps are chunked. Random values depend only on (seed, instance index,
// distribution index).
//
// Threading: an EnsembleRunner is immutable after Create except for its
// model cache (behind a mutex); any number of threads may call Start and
// Run at once. An EnsembleInstanceRun is single-threaded.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/compile_options.h"
#include "engine/lane_kernel.h"
#include "engine/simulation.h"
#include "engine/status.h"
#include "tether/v1/ensemble.pb.h"
#include "tether/v1/simulation.pb.h"

namespace tether {

struct EnsembleLimits {
  // Most instances an ensemble may have (the default of tether-server's
  // --ensemble-max-instances and the CLI's offline limit).
  uint64_t max_instances = 100'000;
  // Most instances x steps (each instance's steps estimated from the step
  // size and the span; adaptive methods count their initial step size).
  // 0: no limit.
  uint64_t max_instance_steps = 0;
  // Most bytes one instance's result may take serialized
  // (EnsembleRunner::result_wire_bound: its values, final state and
  // frames); a larger bound is an error before anything runs (the server:
  // its message limit, which every result must fit). 0: no limit.
  uint64_t max_result_bytes = 0;
  // Most compilations an ensemble may make (each instance's parameters are
  // folded into its compiled model: a set not in the model cache is
  // compiled, on the thread running the instance, at up to a compile's
  // time and memory). Create bounds them before anything runs
  // (EnsembleRunner::max_compilations); a larger bound is
  // RESOURCE_EXHAUSTED. 0: no limit.
  uint64_t max_compilations = 0;
};

// Most values an instance may carry: an explicit instance's values plus
// the sweeps plus the random draws (each result repeats them).
inline constexpr int kMaxEnsembleValuesPerInstance = 4096;
// An instance's error message is cut to this many bytes (UTF-8 whole), so
// that its result has a size bound.
inline constexpr std::size_t kMaxEnsembleErrorBytes = 1024;

struct EnsembleOptions {
  // Absolute end time of every instance.
  double until_time = 0;
  // Record each instance's certificate (EnsembleCertificateSummary).
  bool certificate = true;
  // Frames of each instance at t0 + k * output_interval and its last step
  // (EnsembleInstanceResult.frames), as RunOptions.output_interval with
  // every = 0 and emit_start; none when absent. At most
  // kMaxFramesPerInstance frames.
  std::optional<double> output_interval;
  // Held while an instance's model is compiled (null: none): the server
  // lets one ensemble compilation run at a time, so that their memory is
  // one compile's, which it reserves beside the compile lane's.
  std::mutex* compile_gate = nullptr;
  static constexpr uint64_t kMaxFramesPerInstance = 1'000'000;
  // Compiled models of other parameter sets kept (least recently used
  // dropped first): parameters are folded into the compiled expressions,
  // so each distinct set costs a compilation, once while it stays cached.
  uint32_t model_cache_entries = 8;
  // Run instances eight at a time on the lane path where it applies (RK4,
  // a dense model of a lane size, no certificate, no frames:
  // docs/ENSEMBLES.md, "Lanes"); the results are the same bits either way.
  // false: every instance on the scalar engine.
  bool lanes = true;
  // Tests and benchmarks: the lane kernel to run (LaneKernel), by default
  // the best this CPU and OS support; the results are the same bits with
  // any of them.
  LaneKernel lane_kernel = LaneKernel::kAuto;
  // Tests and benchmarks: whether the lane tape runs as machine code
  // (LaneNativeTape; by default where that pays); the results are the
  // same bits either way.
  LaneNativeTape lane_native_tape = LaneNativeTape::kAuto;
  // The lane path's transcendental functions vectorised (xsimd's) instead
  // of the C library's once per lane (RunEnsembleRequest.functions FAST;
  // docs/ENSEMBLES.md, "Bits"): faster, within the bound stated there of a
  // plain Run, and still independent of batch, lane, position, kernel and
  // chunking. It applies wherever the lane path does, whatever the number
  // of steps; every instance on lanes, one alone in a group too. Instances
  // it did not compute (other calls, a failing lane's, re-run on the
  // scalar engine) have Run's bits; each result says which
  // (EnsembleInstanceResult.fast_functions).
  bool fast_functions = false;
};

class EnsembleGroupRun;
namespace internal {
struct LaneGroup;
class LanePrograms;
}  // namespace internal

// One instance in progress: its own Simulation, advanced in chunks.
class EnsembleInstanceRun {
 public:
  ~EnsembleInstanceRun();
  EnsembleInstanceRun(const EnsembleInstanceRun&) = delete;
  EnsembleInstanceRun& operator=(const EnsembleInstanceRun&) = delete;

  // Takes at most max_steps steps; true once the instance is finished
  // (reached the end time, or failed). Chunking never changes the numbers.
  bool Advance(uint64_t max_steps);
  bool done() const { return done_; }
  // Steps taken so far by this instance (once done, its result's steps,
  // until TakeResult).
  uint64_t steps() const;
  // Forwards to Simulation::SetInterrupt (a step interrupted leaves the
  // instance unfinished: Advance returns false and the caller stops).
  void SetInterrupt(std::function<bool()> interrupted);
  bool interrupted() const { return interrupted_; }
  // The result (valid once done()).
  const v1::EnsembleInstanceResult& result() const { return result_; }
  v1::EnsembleInstanceResult TakeResult() { return std::move(result_); }

 private:
  friend class EnsembleRunner;
  friend class EnsembleGroupRun;
  EnsembleInstanceRun() = default;
  void Fail(const Status& status);
  void Finish();
  // Finish with the final state a lane group computed for this instance
  // (what Finish reads from the simulation, which did not step).
  void FinishFromLanes(double t, const double* q, const double* v, uint64_t steps,
                       bool fast_functions);
  // The certificate summary of `c` into the result.
  void SetCertificateSummary(const v1::Certificate& c);

  std::unique_ptr<Simulation> sim_;
  v1::EnsembleInstanceResult result_;
  bool certificate_ = true;
  bool frames_ = false;
  bool done_ = false;
  bool interrupted_ = false;
};

class EnsembleRunner {
 public:
  // Compiles `spec` (the template) and checks `ensemble` and `options`
  // against it: INVALID_ARGUMENT with the field path under `field` (e.g.
  // "ensemble.sweeps[1].name: no parameter, coordinate, der(coordinate)
  // or input named 'k'") for an unknown name, a count of 0, a product of
  // counts over limits.max_instances (overflow included), a non-finite
  // value, a negative sigma, b <= a for a uniform draw, random_count 0 with
  // draws; `until_time` not after the initial time. RESOURCE_EXHAUSTED when
  // instances x steps exceed limits.max_instance_steps. A bad template is
  // INVALID_ARGUMENT as for Simulation::Create.
  static StatusOr<std::unique_ptr<EnsembleRunner>> Create(const v1::SimulationSpec& spec,
                                                          const v1::EnsembleSpec& ensemble,
                                                          const EnsembleOptions& options,
                                                          const EnsembleLimits& limits = {},
                                                          const CompileOptions& compile = {},
                                                          std::string_view field = "ensemble");
  ~EnsembleRunner();

  uint64_t size() const { return size_; }
  uint64_t seed() const { return ensemble_.seed(); }
  // Steps an instance takes (estimated as for max_instance_steps).
  uint64_t steps_per_instance() const { return steps_per_instance_; }
  // The values instance `index` sets, in the order explicit, sweeps, random.
  std::vector<v1::EnsembleValue> Values(uint64_t index) const;
  // The description of instance `index` alone (parameters and initial state
  // replaced; inputs are set on the simulation, listed in *inputs).
  v1::SimulationSpec InstanceSpec(uint64_t index,
                                  std::vector<v1::EnsembleValue>* inputs = nullptr) const;

  // Starts instance `index` (< size()). Never fails: an instance that
  // cannot start (its parameters do not compile) is done at once with its
  // error in the result.
  std::unique_ptr<EnsembleInstanceRun> Start(uint64_t index) const;
  // Start and Advance to the end.
  v1::EnsembleInstanceResult Run(uint64_t index) const;
  // Instances a group holds (StartGroup, RunGroup): 8 (the lane path's
  // width, base/lanes.h's kLaneWidth) when the lane path applies to this
  // ensemble, else 1. The lane path applies whatever the number of steps:
  // a group is advanced in chunks (EnsembleGroupRun::Advance).
  static constexpr int kLaneGroupSize = 8;
  int group_size() const { return lanes_ ? kLaneGroupSize : 1; }
  // Whether the lane path runs with fast functions in this ensemble
  // (EnsembleOptions::fast_functions, where it applies): then every
  // instance goes through a group, even one alone, and groups must not be
  // turned off for speed (the bits would change).
  bool fast_functions() const { return fast_functions_; }
  // Starts instances [first, first + count), count <= group_size(), as a
  // group: the eligible ones together on the lane path, the others (and
  // any whose lane met a failure or a value to diagnose) then alone on the
  // scalar engine. Never fails (an instance that cannot start is done at
  // once with its error, as Start's).
  std::unique_ptr<EnsembleGroupRun> StartGroup(uint64_t first, int count) const;
  // StartGroup and Advance to the end, into results[0, count). Each result
  // is the one Run(index) gives, bit for bit.
  void RunGroup(uint64_t first, int count, v1::EnsembleInstanceResult* results) const;

  // Heap bytes one running instance holds (its simulation's own part), the
  // template's compiled model, and a result's serialized size bound.
  int64_t instance_bytes() const { return instance_bytes_; }
  int64_t model_bytes() const { return model_bytes_; }
  // Bounds on one instance's result, whatever its values and outcome:
  // its serialized bytes and the heap bytes its message holds (protobuf's
  // objects, MessageHeapBytes), frames included (Create computes them from
  // the largest frame this model makes and the most frames an instance
  // emits).
  int64_t result_wire_bound() const { return result_wire_bound_; }
  int64_t result_heap_bound() const { return result_heap_bound_; }
  // Models held at most: the template's, and with parameters varied the
  // cache's (EnsembleOptions::model_cache_entries).
  uint32_t max_models() const {
    return 1 + (varies_parameters_ ? options_.model_cache_entries : 0);
  }
  // An upper bound on the compilations the instances make, whatever the
  // lanes: 0 when no value names a parameter; else the distinct parameter
  // sets when the model cache holds them all, else one per instance (the
  // cache may drop a set before it comes back). Two lanes may compile one
  // set at once: at most lanes - 1 more.
  uint64_t max_compilations() const { return max_compilations_; }
  // Compilations made for instances so far (for benchmarks and tests).
  uint64_t compilations() const;
  // Instances whose result the lane path gave so far (for benchmarks and
  // tests; the others ran on the scalar engine).
  uint64_t lane_instances() const { return lane_instances_.load(); }
  // Of those, the instances whose group ran its tape as machine code
  // (EnsembleOptions::lane_native_tape).
  uint64_t lane_native_instances() const { return lane_native_instances_.load(); }
  // Lane programs (the tape as a lane kernel runs it, translated or not)
  // made so far for the template's model: its groups share one a kernel.
  int lane_programs() const;

 private:
  friend class EnsembleGroupRun;
  EnsembleRunner() = default;
  // The compiled model for `spec`: the template's when the parameters are
  // the template's, else a cached one of the same parameters (compared as
  // bits; a linear search, the cache being small), else compiled and
  // cached, dropping the least recently used beyond model_cache_entries.
  StatusOr<std::shared_ptr<const Model>> ModelFor(const v1::SimulationSpec& spec) const;
  // Computes result_wire_bound_ and result_heap_bound_ (Create, once the
  // sizes are checked); INVALID_ARGUMENT naming output_interval (or
  // `field`, the ensemble) when the wire bound passes
  // limits.max_result_bytes.
  Status BoundResults(const std::string& field, const EnsembleLimits& limits);
  // InstanceSpec from `base`: spec_, or spec_lean_.
  v1::SimulationSpec MakeInstanceSpec(uint64_t index, std::vector<v1::EnsembleValue>* inputs,
                                      const v1::SimulationSpec& base) const;

  v1::SimulationSpec spec_;
  // spec_ without its system, the description an instance's simulation
  // keeps when no parameter varies (Start): it reads the integrator, the
  // certificate options and the initial state; the system is model_'s.
  v1::SimulationSpec spec_lean_;
  v1::EnsembleSpec ensemble_;
  EnsembleOptions options_;
  CompileOptions compile_;
  std::shared_ptr<const Model> model_;
  uint64_t size_ = 0;
  uint64_t steps_per_instance_ = 0;
  int64_t instance_bytes_ = 0;
  int64_t model_bytes_ = 0;
  uint64_t max_compilations_ = 0;
  int64_t result_wire_bound_ = 0;
  int64_t result_heap_bound_ = 0;
  bool varies_parameters_ = false;  // some value names a parameter
  bool lanes_ = false;              // the lane path applies (StartGroup)
  bool fast_functions_ = false;     // ... with vectorised functions

  struct CachedModel {
    std::vector<double> parameters;
    std::shared_ptr<const Model> model;
  };
  mutable std::mutex cache_mu_;
  mutable std::list<CachedModel> cache_;  // most recently used first; guarded by cache_mu_
  mutable uint64_t compilations_ = 0;     // guarded by cache_mu_
  mutable std::atomic<uint64_t> lane_instances_{0};
  mutable std::atomic<uint64_t> lane_native_instances_{0};
  // The template model's lane programs, shared by its groups (null without
  // lanes; thread-safe itself). Other models' groups make their own.
  std::unique_ptr<internal::LanePrograms> lane_programs_;
};

// A group of instances in progress (EnsembleRunner::StartGroup), advanced
// in chunks as EnsembleInstanceRun is, so that the server can take a
// quantum's worth of steps and carry the rest to a later quantum: first
// the lane groups (internal::LaneGroup, AdvanceLaneGroup: one for the
// instances on the first instance's model; with fast functions then one
// per other model), then, one after another, the instances the lanes did
// not finish on the scalar engine (not taken, or whose lane failed: each
// then fails as a plain Run does, with its step, time and cause). Chunking
// never changes a bit: each result is the one EnsembleRunner::Run gives
// (with fast functions, the one an unchunked group gives), whatever the
// chunk sizes.
//
// Memory: while in progress the group holds its instances' simulations
// (count x EnsembleRunner::instance_bytes(), started together, each
// released as its instance finishes) and, during its lane stage, the lane
// block (LaneGroup: the tape's work buffer for eight and the eight
// states). Threading: single-threaded; the runner must outlive it.
class EnsembleGroupRun {
 public:
  ~EnsembleGroupRun();
  EnsembleGroupRun(const EnsembleGroupRun&) = delete;
  EnsembleGroupRun& operator=(const EnsembleGroupRun&) = delete;

  // Takes at most max_steps steps of what runs now: a step of the lane
  // group (one step of each of its instances), or a step of the instance
  // running alone. True once every instance is done; false when more is
  // left, or when a step was interrupted (interrupted(): the caller stops).
  bool Advance(uint64_t max_steps);
  bool done() const { return done_; }
  // Instance steps one step of Advance computes now: kLaneGroupSize on the
  // lanes (all eight lanes are computed, used or not), 1 for an instance
  // alone. For the server's accounting: Advance(n) costs n x step_cost().
  uint64_t step_cost() const;
  // Instance steps computed so far (each chunk's steps x its step_cost).
  uint64_t work() const { return work_; }
  // The instances alone are interrupted as EnsembleInstanceRun is (within
  // an evaluation); a lane chunk is not, the caller keeps chunks short.
  void SetInterrupt(std::function<bool()> interrupted);
  bool interrupted() const { return interrupted_; }
  uint64_t first() const { return first_; }
  int count() const { return count_; }
  // The results of instances [first, first + count) into results[0,
  // count) (valid once done()).
  void TakeResults(v1::EnsembleInstanceResult* results);

 private:
  friend class EnsembleRunner;
  static constexpr int kWidth = EnsembleRunner::kLaneGroupSize;
  EnsembleGroupRun();
  // After a stage ends: the next lane group, else the next instance alone,
  // else done.
  void Next();
  // Forms the next lane group from the instances waiting for one (the
  // rule of the class comment); false when none is formed.
  bool FormLaneGroup();
  // The lane group's ok lanes finish their instances; the others wait to
  // run alone.
  void FinishLaneGroup();

  const EnsembleRunner* runner_ = nullptr;
  uint64_t first_ = 0;
  int count_ = 0;
  std::unique_ptr<EnsembleInstanceRun> runs_[kWidth];
  // Per instance: -1 waiting for a lane group, else not (on one, done by
  // one, or never for lanes).
  int lane_of_[kWidth];
  std::unique_ptr<internal::LaneGroup> group_;  // the lane group in progress
  int in_group_[kWidth] = {};                   // lane l's instance
  int group_lanes_ = 0;                         // lanes of group_ in use
  bool forming_ = false;                        // another lane group may be formed
  int alone_ = 0;                               // the next instance to run alone
  uint64_t work_ = 0;
  std::function<bool()> interrupt_;
  bool interrupted_ = false;
  bool done_ = false;
};

// Reductions over instances per output time (v1::EnsembleReduction): fed
// the results in index order, it accumulates each grid frame's q, v and
// outputs by Welford's update (so the bits depend only on the results and
// their order) and drops the frames from the result. Grid times are
// t0 + k * output_interval, computed so (never accumulated), as the engine
// emits them; a frame at another time (a last step between grid times) is
// not reduced.
class EnsembleReducer {
 public:
  // For a runner with an output_interval (else every Add is a no-op).
  // `coordinates` and `outputs` name the columns.
  EnsembleReducer(const v1::SimulationSpec& spec, const EnsembleOptions& options);
  // Heap bytes the accumulators hold (times x columns x 5 doubles).
  int64_t heap_bytes() const;
  // heap_bytes() of a reducer for `spec` and `options`, without making it
  // (the accumulators may be far larger than a caller allows).
  static int64_t HeapBytesFor(const v1::SimulationSpec& spec, const EnsembleOptions& options);
  void Add(v1::EnsembleInstanceResult* result);
  void Fill(v1::EnsembleReduction* reduction) const;

 private:
  // The output times and the columns (q, v of each coordinate, outputs).
  struct Shape {
    std::size_t times = 0, columns = 0;
  };
  static Shape ShapeFor(const v1::SimulationSpec& spec, const EnsembleOptions& options);
  static int64_t BytesOf(const Shape& shape);

  double t0_ = 0, dt_ = 0;
  std::size_t times_ = 0, columns_ = 0;
  std::vector<std::string> names_;
  std::vector<uint64_t> count_;
  std::vector<double> mean_, m2_, min_, max_;  // times_ x columns_
};

// Runs every instance on `workers` threads (>= 1) and hands the results to
// `emit` in index order on the calling thread. Each result is the one
// EnsembleRunner::Run gives, whatever `workers`.
void RunEnsemble(const EnsembleRunner& runner, int workers,
                 const std::function<void(v1::EnsembleInstanceResult&&)>& emit);

// The JSON line of one result (protobuf JSON mapping, one line, no spaces),
// shared by the CLI offline and remote so both give the same bytes.
std::string EnsembleResultToJson(const v1::EnsembleInstanceResult& result);

}  // namespace tether
