// The engine's public entry points: validate a SimulationSpec, evaluate it
// at a state, and step a simulation while recording frames and the residual
// certificate. Nothing here knows about gRPC; proto messages are used only
// as plain data (tether/v1/simulation.proto).
//
// Threading: a Model is immutable and may be shared by any number of
// Simulations on any threads. A Simulation is single-threaded (one caller at
// a time); its results do not depend on the thread or on other work.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/message.h>
#include <google/protobuf/repeated_ptr_field.h>

#include "engine/compile_options.h"
#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether {

struct Model;
struct Workspace;
struct RunState;
class Integrator;
class CertificateRecorder;
class NewtonSolver;

// Compiles the spec and evaluates it at the initial state. Never fails:
// problems are ERROR diagnostics (report.valid() == false), cautions
// (alpha = 0, beta = 0, inconsistent start, step unstable for the gains)
// are WARNING diagnostics. A compilation that exceeds the default
// CompileLimits is an ERROR diagnostic naming the expression and the limit.
v1::ValidationReport Validate(const v1::SimulationSpec& spec);

// The same within `options`: returns RESOURCE_EXHAUSTED (naming the
// expression being compiled, the limit and its value) when a limit is
// exceeded and CANCELLED when options.cancelled said so, leaving `report`
// unspecified; otherwise Ok with the report filled as above.
Status Validate(const v1::SimulationSpec& spec, const CompileOptions& options,
                v1::ValidationReport* report);

// Turns the ERROR diagnostics of a report into an INVALID_ARGUMENT status
// with one field violation each (Ok when there are none).
Status ErrorsToStatus(const v1::ValidationReport& report);

// How far a run goes and what it emits.
struct RunOptions {
  // Stop after this many steps (0 = no step limit).
  uint64_t steps = 0;
  // Stop at this absolute time (must be later than the current time). The
  // last step of a fixed-step method is shortened to land on it exactly.
  std::optional<double> until_time;
  // Emit frames at run steps 0 (if emit_start), every, 2*every, ... and at
  // the run's last step. 0 (allowed only with output_interval): no
  // per-step frames besides the last.
  uint64_t every = 1;
  bool emit_start = true;
  // Also emit frames at t0 + k * output_interval (k >= 1, t0 the time at
  // BeginRun, each time computed so, never accumulated) up to the run's last
  // step, in time order with the per-step frames (a time that is both is
  // one frame). Inside a step: q, v from the step's quintic Hermite
  // interpolant, a, lambda, residuals and outputs from an evaluation at
  // (t, q, v) in a separate workspace (it counts into no certificate),
  // step = the steps completed before t. Must be finite, > 0 and resolve
  // at t0 (t0 + output_interval > t0).
  std::optional<double> output_interval;
  // Record the certificate of the run's window (never when the
  // description's certificate.disabled is set).
  bool certificate = true;
};

// One emitted frame, viewing the simulation's buffers: valid only during
// the FrameSink::Add call that receives it. The fields are those of
// v1::Frame (FrameToProto copies them into one).
struct FrameView {
  uint64_t step = 0;
  double t = 0;
  std::span<const double> q, v, a, lambda;
  std::span<const double> position, velocity;  // residuals e, e'
  double dynamics = 0, constraint = 0;         // KKT row residuals
  std::span<const double> outputs;
};

void FrameToProto(const FrameView& view, v1::Frame* frame);

// The tolerance of the initial-consistency judgement for `options`
// (CertificateOptions.consistency_tolerance, its default when unset): a
// start is consistent when |g|_inf and |Gv + g_t|_inf are at most this.
// For callers that act on the judgement (the FMU's start projection).
double InitialConsistencyTolerance(const v1::CertificateOptions& options);

// What is wrong with an output_interval for a run from time t0 (stopping
// at until_time when given): "" when it is finite, > 0, advances t0 in
// double precision and gives at most 2^53 output times up to until_time;
// else the description ("expected ..., found ..."). BeginRun's check, for
// clients that check before starting a run.
std::string OutputIntervalProblem(double t0, std::optional<double> until_time,
                                  double output_interval);

// What is wrong with an until_time u > t for a fixed-step method of step h
// that has taken `steps` steps: "" when h reaches it within the step
// counter's 2^62 steps; else the description ("expected ..., found ...").
// BeginRun's check (it refuses such a run before any step), for clients
// that check before starting runs (an ensemble's instances).
std::string FixedStepUntilProblem(double t, double u, double h, uint64_t steps);

// Receives the frames a run emits, in order.
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void Add(const FrameView& frame) = 0;
};

// The heap bytes a protobuf message holds: SpaceUsedLong, which counts
// the bytes asked for, plus a third for the allocator's overhead on its
// many small blocks (strings, sub-messages; measured on descriptions and
// states in tests/memory_use_test.cc).
inline int64_t MessageHeapBytes(const google::protobuf::Message& message) {
  const int64_t used = static_cast<int64_t>(message.SpaceUsedLong());
  return used + used / 3;
}

class Simulation {
 public:
  // Compiles `spec` and returns a simulation positioned at spec.initial. On
  // bad input returns INVALID_ARGUMENT listing every problem with its field
  // path. `warnings`, when given, receives the WARNING diagnostics (an
  // optional out-parameter rather than a field of the result: most callers
  // ignore them, and those that keep them move them into a response).
  // RESOURCE_EXHAUSTED or CANCELLED as for Validate when compiling exceeds
  // options.limits or is cancelled.
  static StatusOr<std::unique_ptr<Simulation>> Create(
      const v1::SimulationSpec& spec, std::vector<v1::Diagnostic>* warnings = nullptr,
      const CompileOptions& options = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  const Model& model() const { return *model_; }
  const v1::SimulationSpec& spec() const { return spec_; }

  // Names, in the order of the description.
  const std::vector<std::string>& coordinate_names() const;
  const std::vector<std::string>& constraint_names() const;
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;

  // Current state (the last completed step).
  double time() const;
  // The time fixed-step methods count their steps from: anchor + k h, the
  // step grid's own value of time() (equal to it up to an ulp or two; for
  // DOPRI5, time() itself). A caller advancing by communication steps
  // (CoSimulate, an FMU's doStep) asks for until_time = grid_time() + H:
  // with H a multiple of h the steps are then a run's own steps, bit for
  // bit (Integrator::StepFixedMethod), however many communication steps
  // follow; time() + H would drift from the grid by an ulp a step.
  double grid_time() const;
  uint64_t step() const { return step_; }
  // The step counter's limit (2^62): RestoreState refuses a step or
  // anchor_steps above it (a hand-made export), and a run stops with
  // RESOURCE_EXHAUSTED naming "step" before a step would pass it, so the
  // counter and every sum of steps never wrap.
  static constexpr uint64_t kMaxStep = uint64_t{1} << 62;
  void GetState(v1::State* state) const;
  // Replaces the current state (lengths and finiteness are checked; the
  // field paths in errors start with `field`).
  Status SetState(const v1::State& state, std::string_view field = "state");

  // Everything carried between runs besides the description
  // (v1::SimulationState): the state, the step counter, the inputs' values,
  // the fixed-step time base and the integrator's carried state. A run in
  // progress is not part of it (between runs it is complete).
  void SaveState(v1::SimulationState* state) const;
  // Restores a SaveState result (of a simulation of the same description,
  // or one whose coordinates and inputs have the same lengths): the next
  // run gives the bits the saved simulation's next run gave. Ends any run
  // in progress. INVALID_ARGUMENT naming the field under `field` (e.g.
  // "state.state.q", "state.inputs[1]") and what was expected for wrong
  // lengths, non-finite or out-of-range values; the simulation is then
  // unchanged.
  Status RestoreState(const v1::SimulationState& state, std::string_view field = "state");

  // A new simulation of an already compiled model (no compilation) at
  // spec.initial, as Create would give for `spec` (which must be the spec
  // `model` was compiled from). For snapshots that keep an earlier
  // version of a session's description. The second moves `spec` in
  // instead of copying it (the ensemble's instances, one spec a run).
  static std::unique_ptr<Simulation> FromModel(const v1::SimulationSpec& spec,
                                               std::shared_ptr<const Model> model);
  static std::unique_ptr<Simulation> FromModel(v1::SimulationSpec&& spec,
                                               std::shared_ptr<const Model> model);
  const std::shared_ptr<const Model>& shared_model() const { return model_; }

  // The heap bytes a simulation holds, the unit of the server's memory
  // budget (docs/ARCHITECTURE.md, "Memory"): `model`, the compiled model,
  // which the simulations of one description version share (a session's
  // snapshots), and `own`, the rest: the workspace, integrator, certificate
  // recorder, implicit method's Newton solver, run state and the copy of
  // the description. `own` counts each part at the largest a run makes it
  // (an output grid's second workspace and the first sparse LU
  // factorisation included, made yet or not), so neither figure changes as
  // the simulation runs. tests/memory_use_test.cc holds them to what the
  // allocator reports. `code` is not heap: the pages of the model's tapes'
  // machine code (engine/internal/expr/native_tape.h), shared like `model`.
  struct MemoryUse {
    int64_t model = 0;
    int64_t own = 0;
    int64_t code = 0;
    int64_t total() const { return model + own + code; }
  };
  // The first call measures a recorder that no run has made yet by making
  // one and freeing it (for ENCLOSED about 650 bytes a node of the
  // constraints' expressions, compile_options.h); later calls make nothing
  // (the size is kept).
  MemoryUse memory_use() const;
  // `model` and `code` alone (`own` 0), for what keeps a compiled model
  // without a simulation of it (a session's snapshots): measures nothing.
  static MemoryUse ModelMemoryUse(const Model& model);

  // Sets an input by name, held from the next step on. INVALID_ARGUMENT
  // naming the input and listing the valid names when unknown, or when the
  // value is not finite.
  Status SetInput(std::string_view name, double value);

  // Interpolates the inputs linearly from now on: an evaluation at time t
  // (every stage of every step, the certificate's samples, output-grid
  // frames) sees u_k + rates_k (t - t_c), t_c = time() now, u_k the value
  // SetInput set (an FMU's fmi2SetRealInputDerivatives: the master's input
  // ramp over a communication step). The sum is formed as written, so a
  // description whose expression is `u + r*(t - t_c)` gives the same bits.
  // Empty `rates` holds the inputs again (as does SetState, RestoreState:
  // rates are no part of SimulationState). One finite rate per input, else
  // INVALID_ARGUMENT naming "input_rates[k]". Every certificate takes them:
  // constraints read no input (validation refuses one), and the ENCLOSED
  // certificate encloses the constraints' defect along the interpolant of
  // the computed states (docs/MATH.md section 10), which no input enters. An
  // implicit method's stages see the ramp as every evaluation does, and its
  // Newton matrix is prepared with the inputs at its own time.
  Status SetInputRates(std::span<const double> rates);

  // Takes the inputs from a caller's function at every evaluation (an FMI
  // 3.0 FMU's intermediate update, where the master sets the inputs at the
  // engine's own times): an evaluation at time t (every stage of every
  // step, the certificate's samples, output-grid frames) calls
  // (*source)(t, u), u holding the nu inputs as set, and sees what it leaves
  // there. Replaces any rates; null holds the inputs again (as do SetState
  // and RestoreState). Not owned: it must outlive its use. Called on the
  // thread that calls Advance, inside the step: it may call SetInput but
  // not this simulation's Advance, Evaluate or state functions. Every
  // certificate takes it, as SetInputRates.
  using InputSource = std::function<void(double t, double* u)>;
  Status SetInputSource(const InputSource* source);

  // One evaluation at the current state (no step is taken): t, q, v, a,
  // lambda, residuals and outputs. ABORTED when the evaluation fails
  // (dependent constraints, non-finite values).
  Status Evaluate(v1::Frame* frame);

  // Whether a run from the current state can stop at `until` (BeginRun's
  // check of until_time): finite and later than the current time and, for a
  // fixed-step method, within the step counter's 2^62 steps. INVALID_ARGUMENT
  // naming "until_time" otherwise (an FMU checks its communication step
  // with it before any backend steps).
  Status CheckUntilTime(double until) const;

  // Starts a run from the current state. INVALID_ARGUMENT for bad options
  // (field names "steps", "until_time", "every", "output_interval"). Any
  // unfinished run is
  // discarded.
  Status BeginRun(const RunOptions& options);

  // Takes at most `max_steps` steps of the current run, appending the frames
  // it emits, and stops early once it has appended `max_frames` frames.
  // Returns Ok (see run_done()) or ABORTED with a message naming the step,
  // the time and the quantity; frames computed before the failure are
  // appended, and the state stays at the last completed step.
  Status Advance(uint64_t max_steps, google::protobuf::RepeatedPtrField<v1::Frame>* frames,
                 uint64_t max_frames = UINT64_MAX);
  // The same, handing each frame to `sink` (e.g. an encoder writing the
  // wire format directly) instead of building v1::Frame messages.
  Status Advance(uint64_t max_steps, FrameSink* sink, uint64_t max_frames = UINT64_MAX);

  // Polled before each evaluation of a step of a model of general size (a
  // fixed-size model's step takes microseconds): once it returns true, the
  // step in progress is abandoned, the state, the step counter and the
  // integrator's carried state stay at the last completed step (as if the
  // run had been asked to stop there), the run ends, and Advance returns
  // CANCELLED naming the step. A step is then cancellable within one
  // evaluation (a dense factorisation of M and W), however long the step.
  // Called on the thread that calls Advance; empty: never interrupted.
  void SetInterrupt(std::function<bool()> interrupted) { interrupted_ = std::move(interrupted); }

  bool run_active() const { return run_active_; }
  bool run_done() const { return !run_active_; }

  // Certificate of the current (or just finished/failed) run window.
  // Leaves `certificate` cleared when the run recorded none.
  void GetCertificate(v1::Certificate* certificate) const;

 private:
  Simulation();
  // FromModel's rest, once spec_ holds the description.
  static std::unique_ptr<Simulation> FromModelSpec(std::unique_ptr<Simulation> sim,
                                                   std::shared_ptr<const Model> model);
  // The certificate's recorder for this model and description (made by the
  // first run that records; memory_use counts one made or not).
  std::unique_ptr<CertificateRecorder> MakeRecorder() const;
  // Evaluates at the current state (ABORTED with step and time on failure).
  Status EvaluateHere();
  // The frame at the current state (evaluates the outputs).
  FrameView CurrentFrame();
  bool RunFinished() const;
  // Emits the frames the last step owes (output-grid frames inside it, its
  // own frame), at most up to max_frames in all, and ends the run when it
  // finished and nothing is owed.
  Status EmitPending(FrameSink* sink, uint64_t* emitted, uint64_t max_frames);
  // Advance for nq == D, nc == C (dynamics.h, TETHER_FIXED_SIZES), or any
  // size when D == 0 (advance.cc); AdvanceFor picks one for a model's sizes.
  template <int D, int C>
  Status AdvanceSized(uint64_t max_steps, FrameSink* sink, uint64_t max_frames);
  using AdvanceFn = Status (Simulation::*)(uint64_t, FrameSink*, uint64_t);
  static AdvanceFn AdvanceFor(int nq, int nc);
  AdvanceFn advance_ = nullptr;

  v1::SimulationSpec spec_;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<Integrator> integrator_;
  std::unique_ptr<CertificateRecorder> recorder_;  // made by the first run that records
  // memory_use's measure of a recorder not made yet (-1: not measured).
  // Atomic: memory_use is const and may be called from several threads;
  // two that measure at once store the same value.
  mutable std::atomic<int64_t> unmade_recorder_bytes_{-1};
  std::unique_ptr<NewtonSolver> newton_;  // implicit methods only (newton.h)
  std::unique_ptr<RunState> state_;       // state, time and run bookkeeping

  uint64_t step_ = 0;
  bool run_active_ = false;
  RunOptions run_;
  bool recorder_active_ = false;
  std::function<bool()> interrupted_;
};

}  // namespace tether
