#include "engine/simulation.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/certificate/certificate.h"
#include "engine/internal/integrate/integrator.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/evaluate_kernel.h"
#include "engine/internal/kkt/newton.h"
#include "engine/internal/model/model.h"
#include "engine/internal/simulation/validate.h"

namespace tether {

namespace {

using validation::CheckAndCompile;
using validation::CheckState;
using validation::Error;
using validation::LoadInitialState;

std::string Num(double x) { return FormatNumber(x); }

// "step 12 (from t = 0.011)" for failures inside a step, "step 12 (at t =
// 0.012)" for failures at the state it reached.
std::string StepContext(uint64_t step, double t, const char* where = "at") {
  return "step " + std::to_string(step) + " (" + where + " t = " + FormatNumber(t) + ")";
}

}  // namespace

// The run's persistent state: what a Simulation carries from one step (and
// one Advance call) to the next besides the workspace. Not in the header:
// nothing outside this file reads it.
struct RunState {
  std::vector<double> q, v, a;  // current state and its acceleration
  std::vector<double> q1, v1;   // next state (scratch)
  double t = 0;
  // Fixed-step times are anchor + k h, so they do not drift by summation.
  double anchor_t = 0;
  uint64_t anchor_k = 0;
  uint64_t run_steps = 0;
  uint64_t until_emit = 0;  // steps left before the next every-th frame
  bool start_pending = false;
  std::vector<double> y;  // outputs scratch

  // Frames the last step owes (emitted before the next step, possibly over
  // several Advance calls when max_frames stops one).
  bool end_pending = false;     // the frame at the current state
  bool finish_pending = false;  // the run ended with that step

  // The output grid t0 + k dt (RunOptions::output_interval).
  bool grid = false;
  bool grid_pending = false;  // grid times in (tp, t] not yet looked at
  double grid_t0 = 0, grid_dt = 0;
  uint64_t grid_k = 0;                // index of the next grid time
  std::vector<double> qp, vp, ap;     // the state before the last step
  double tp = 0;                      // and its time
  std::vector<double> qh, vh, ddph;   // interpolant at a grid time
  std::unique_ptr<Workspace> out_ws;  // evaluations at grid times
  double GridTime(uint64_t k) const { return grid_t0 + static_cast<double>(k) * grid_dt; }
  // Heap bytes held, out_ws's included when made.
  int64_t heap_bytes() const {
    int64_t bytes = HeapBytesOf(q, v, a, q1, v1, y, qp, vp, ap, qh, vh, ddph);
    if (out_ws) {
      bytes += static_cast<int64_t>(sizeof(Workspace)) + kAllocationOverhead + out_ws->heap_bytes();
    }
    return bytes;
  }
};

Simulation::MemoryUse Simulation::memory_use() const {
  constexpr int64_t kBlock = kAllocationOverhead;
  const int64_t nq = model_->nq;
  MemoryUse use;
  use.model = model_->heap_bytes() + kBlock;  // make_shared's control block
  int64_t own = static_cast<int64_t>(sizeof(Simulation)) + kBlock + MessageHeapBytes(spec_) -
                static_cast<int64_t>(sizeof(spec_));
  own += static_cast<int64_t>(sizeof(Workspace)) + kBlock + ws_->heap_bytes();
  own += static_cast<int64_t>(sizeof(Integrator)) + kBlock + integrator_->heap_bytes();
  own += static_cast<int64_t>(sizeof(CertificateRecorder)) + kBlock + recorder_->heap_bytes();
  if (newton_) own += static_cast<int64_t>(sizeof(NewtonSolver)) + kBlock + newton_->heap_bytes();
  own += static_cast<int64_t>(sizeof(RunState)) + kBlock + state_->heap_bytes();
  // A run with an output grid makes a second workspace (the shape of ws_)
  // and six state vectors the first time (BeginRun).
  if (!state_->out_ws) {
    own += static_cast<int64_t>(sizeof(Workspace)) + kBlock + ws_->heap_bytes() +
           6 * (nq * static_cast<int64_t>(sizeof(double)) + kBlock);
  }
  use.own = own;
  return use;
}

Simulation::Simulation() = default;
Simulation::~Simulation() = default;

StatusOr<std::unique_ptr<Simulation>> Simulation::Create(const v1::SimulationSpec& spec,
                                                         std::vector<v1::Diagnostic>* warnings,
                                                         const CompileOptions& options) {
  v1::ValidationReport report;
  Status stopped;
  std::shared_ptr<const Model> model = CheckAndCompile(spec, options, &report, &stopped);
  if (!stopped.ok()) return stopped;
  if (!model) {
    Status s = ErrorsToStatus(report);
    if (s.ok()) return Internal("compilation failed without a diagnostic");
    return s;
  }
  if (warnings) {
    for (const auto& d : report.diagnostics()) {
      if (d.severity() == v1::Diagnostic::WARNING) warnings->push_back(d);
    }
  }
  auto sim = FromModel(spec, std::move(model));
  if (!sim) return Internal("the implicit method's Newton matrix was not built");
  return sim;
}

std::unique_ptr<Simulation> Simulation::FromModel(const v1::SimulationSpec& spec,
                                                  std::shared_ptr<const Model> model) {
  std::unique_ptr<Simulation> sim(new Simulation());
  sim->spec_ = spec;
  sim->model_ = model;
  sim->ws_ = std::make_unique<Workspace>(*model);
  sim->integrator_ = std::make_unique<Integrator>(spec.integrator(), model->nq);
  if (sim->integrator_->descriptor().implicit) {
    if (!model->newton.enabled) return nullptr;
    sim->newton_ = std::make_unique<NewtonSolver>(*model);
  }
  sim->recorder_ =
      std::make_unique<CertificateRecorder>(*model, spec.certificate(), spec.integrator().method());
  sim->state_ = std::make_unique<RunState>();
  RunState& c = *sim->state_;
  const size_t nq = static_cast<size_t>(model->nq);
  LoadInitialState(spec.initial(), model->nq, &c.q, &c.v);
  c.a.assign(nq, 0.0);
  c.q1.assign(nq, 0.0);
  c.v1.assign(nq, 0.0);
  c.y.assign(static_cast<size_t>(model->ny), 0.0);
  c.t = c.anchor_t = spec.initial().t();
  sim->advance_ = &Simulation::AdvanceSized<0, 0>;
#define TETHER_SELECT(D, C) \
  if (model->nq == D && model->nc == C) sim->advance_ = &Simulation::AdvanceSized<D, C>;
  TETHER_FIXED_SIZES(TETHER_SELECT)
#undef TETHER_SELECT
  return sim;
}

const std::vector<std::string>& Simulation::coordinate_names() const {
  return model_->coordinate_names;
}
const std::vector<std::string>& Simulation::constraint_names() const {
  return model_->constraint_names;
}
const std::vector<std::string>& Simulation::input_names() const { return model_->input_names; }
const std::vector<std::string>& Simulation::output_names() const { return model_->output_names; }

double Simulation::time() const { return state_->t; }

double Simulation::grid_time() const {
  const RunState& c = *state_;
  if (integrator_->adaptive()) return c.t;
  return c.anchor_t + static_cast<double>(c.anchor_k) * integrator_->step_size();
}

void Simulation::GetState(v1::State* state) const {
  state->Clear();
  state->set_t(state_->t);
  for (double x : state_->q) state->add_q(x);
  for (double x : state_->v) state->add_v(x);
}

Status Simulation::SetState(const v1::State& state, std::string_view field) {
  std::vector<v1::Diagnostic> diags;
  CheckState(state, model_->nq, std::string(field), &diags);
  if (!diags.empty()) {
    v1::ValidationReport report;
    for (auto& d : diags) *report.add_diagnostics() = d;
    return ErrorsToStatus(report);
  }
  RunState& c = *state_;
  c.q.assign(state.q().begin(), state.q().end());
  std::fill(c.v.begin(), c.v.end(), 0.0);
  for (int i = 0; i < state.v_size(); ++i) c.v[static_cast<size_t>(i)] = state.v(i);
  c.t = c.anchor_t = state.t();
  c.anchor_k = 0;
  run_active_ = false;
  return Status::Ok();
}

void Simulation::SaveState(v1::SimulationState* out) const {
  const RunState& c = *state_;
  out->Clear();
  GetState(out->mutable_state());
  out->set_step(step_);
  out->mutable_inputs()->Add(ws_->u.begin(), ws_->u.end());
  out->set_time_anchor(c.anchor_t);
  out->set_anchor_steps(c.anchor_k);
  const Integrator::Carried carried = integrator_->carried();
  out->set_next_step_size(carried.next_step_size);
  out->set_newton_iterations(carried.newton_iterations);
}

Status Simulation::RestoreState(const v1::SimulationState& in, std::string_view field) {
  const std::string f(field);
  std::vector<v1::Diagnostic> diags;
  CheckState(in.state(), model_->nq, f + ".state", &diags);
  if (in.inputs_size() != model_->nu) {
    Error(&diags, f + ".inputs",
          "expected " + std::to_string(model_->nu) +
              " input values (one per system.inputs), found " + std::to_string(in.inputs_size()));
  } else {
    for (int k = 0; k < in.inputs_size(); ++k) {
      if (!std::isfinite(in.inputs(k))) {
        Error(&diags, f + ".inputs[" + std::to_string(k) + "]",
              "expected a finite value for input '" + model_->input_names[static_cast<size_t>(k)] +
                  "', found " + Num(in.inputs(k)));
      }
    }
  }
  if (in.step() > kMaxStep) {
    Error(&diags, f + ".step",
          "expected a step count of at most 2^62 = " + std::to_string(kMaxStep) + ", found " +
              std::to_string(in.step()));
  }
  if (in.anchor_steps() > kMaxStep) {
    Error(&diags, f + ".anchor_steps",
          "expected a step count of at most 2^62 = " + std::to_string(kMaxStep) + ", found " +
              std::to_string(in.anchor_steps()));
  }
  if (!std::isfinite(in.time_anchor())) {
    Error(&diags, f + ".time_anchor", "expected a finite time, found " + Num(in.time_anchor()));
  }
  if (!std::isfinite(in.next_step_size()) || in.next_step_size() < 0) {
    Error(
        &diags, f + ".next_step_size",
        "expected a finite step size >= 0 (0: not chosen yet), found " + Num(in.next_step_size()));
  } else if (!integrator_->adaptive() && in.next_step_size() != 0) {
    Error(&diags, f + ".next_step_size",
          std::string("expected 0 for the fixed-step method ") +
              MethodName(spec_.integrator().method()) + ", found " + Num(in.next_step_size()));
  }
  if (!diags.empty()) {
    v1::ValidationReport report;
    for (auto& d : diags) *report.add_diagnostics() = d;
    return ErrorsToStatus(report);
  }
  RunState& c = *state_;
  c.q.assign(in.state().q().begin(), in.state().q().end());
  std::fill(c.v.begin(), c.v.end(), 0.0);
  for (int i = 0; i < in.state().v_size(); ++i) c.v[static_cast<size_t>(i)] = in.state().v(i);
  c.t = in.state().t();
  c.anchor_t = in.time_anchor();
  c.anchor_k = in.anchor_steps();
  step_ = in.step();
  ws_->u.assign(in.inputs().begin(), in.inputs().end());
  integrator_->Restore({in.next_step_size(), in.newton_iterations()});
  run_active_ = false;
  recorder_active_ = false;
  return Status::Ok();
}

Status Simulation::SetInput(std::string_view name, double value) {
  for (int k = 0; k < model_->nu; ++k) {
    if (model_->input_names[static_cast<size_t>(k)] == name) {
      if (!std::isfinite(value)) {
        return InvalidArgument(
            "input " + QuoteForMessage(name) + ": expected a finite value, found " + Num(value),
            {{"inputs[" + std::string(name) + "]", "expected a finite value"}});
      }
      ws_->u[static_cast<size_t>(k)] = value;
      return Status::Ok();
    }
  }
  std::string valid;
  for (const auto& n : model_->input_names) valid += (valid.empty() ? "" : ", ") + n;
  std::string message = "unknown input " + QuoteForMessage(name) + "; valid inputs: " +
                        (valid.empty() ? std::string("(this system has none)") : valid);
  return InvalidArgument(message, {{"inputs[" + EscapeForMessage(name) + "]", message}});
}

Status Simulation::EvaluateHere() {
  RunState& c = *state_;
  Status s = SolveKkt(*model_, ws_.get(), c.t, c.q.data(), c.v.data());
  if (!s.ok()) return Aborted(StepContext(step_, c.t) + ": " + s.message());
  c.a = ws_->a;
  return Status::Ok();
}

void FrameToProto(const FrameView& view, v1::Frame* f) {
  f->set_step(view.step);
  f->set_t(view.t);
  f->mutable_q()->Add(view.q.begin(), view.q.end());
  f->mutable_v()->Add(view.v.begin(), view.v.end());
  f->mutable_a()->Add(view.a.begin(), view.a.end());
  f->mutable_lambda()->Add(view.lambda.begin(), view.lambda.end());
  auto* r = f->mutable_residuals();
  r->mutable_position()->Add(view.position.begin(), view.position.end());
  r->mutable_velocity()->Add(view.velocity.begin(), view.velocity.end());
  r->set_dynamics(view.dynamics);
  r->set_constraint(view.constraint);
  f->mutable_outputs()->Add(view.outputs.begin(), view.outputs.end());
}

FrameView Simulation::CurrentFrame() {
  RunState& c = *state_;
  const Workspace& ws = *ws_;
  if (model_->ny) EvaluateOutputs(*model_, ws_.get(), c.t, c.q.data(), c.v.data(), c.y.data());
  FrameView f;
  f.step = step_;
  f.t = c.t;
  f.q = c.q;
  f.v = c.v;
  f.a = ws.a;
  f.lambda = ws.lambda;
  f.position = ws.e;
  f.velocity = ws.e_dot;
  f.dynamics = ws.dynamics_residual;
  f.constraint = ws.constraint_residual;
  f.outputs = c.y;
  return f;
}

Status Simulation::Evaluate(v1::Frame* frame) {
  Status s = EvaluateHere();
  if (!s.ok()) return s;
  frame->Clear();
  FrameToProto(CurrentFrame(), frame);
  return Status::Ok();
}

Status Simulation::BeginRun(const RunOptions& options) {
  RunState& c = *state_;
  run_active_ = false;
  recorder_active_ = false;
  ws_->in_certificate_window = false;
  if (options.every == 0 && !options.output_interval) {
    return InvalidArgument(
        "every: expected >= 1, found 0 (0 is allowed only with an "
        "output_interval)",
        {{"every", "expected >= 1 (0 only with an output_interval)"}});
  }
  if (options.output_interval) {
    std::string m = OutputIntervalProblem(c.t, options.until_time, *options.output_interval);
    if (!m.empty()) return InvalidArgument("output_interval: " + m, {{"output_interval", m}});
  }
  if (options.until_time) {
    const double u = *options.until_time;
    if (!std::isfinite(u) || !(u > c.t)) {
      std::string m =
          "expected a finite time later than the current time " + Num(c.t) + ", found " + Num(u);
      return InvalidArgument("until_time: " + m, {{"until_time", m}});
    }
  } else if (options.steps == 0) {
    return InvalidArgument("steps: expected steps > 0 or an until_time, found neither",
                           {{"steps", "expected steps > 0 or an until_time"}});
  }
  // Inputs or the state may have changed since the last evaluation.
  Status s = EvaluateHere();
  if (!s.ok()) return s;
  run_ = options;
  run_active_ = true;
  c.run_steps = 0;
  c.until_emit = options.every;
  c.start_pending = options.emit_start;
  c.end_pending = c.finish_pending = c.grid_pending = false;
  c.grid = options.output_interval.has_value();
  if (c.grid) {
    c.grid_t0 = c.t;
    c.grid_dt = *options.output_interval;
    c.grid_k = 1;  // k = 0 is the start
    if (!c.out_ws) {
      const size_t nq = static_cast<size_t>(model_->nq);
      c.out_ws = std::make_unique<Workspace>(*model_);
      c.qp.assign(nq, 0.0);
      c.vp.assign(nq, 0.0);
      c.ap.assign(nq, 0.0);
      c.qh.assign(nq, 0.0);
      c.vh.assign(nq, 0.0);
      c.ddph.assign(nq, 0.0);
    }
  }
  // The description's certificate.disabled turns it off for every run of
  // it (offline, Run, CoSimulate, the FMU), as RunOptions::certificate does
  // for one run.
  if (options.certificate && !spec_.certificate().disabled()) {
    recorder_->Begin(*model_, ws_.get(), c.t, c.q.data(), c.v.data());
    recorder_active_ = true;
  }
  return Status::Ok();
}

Status Simulation::EmitPending(FrameSink* sink, uint64_t* emitted, uint64_t max_frames) {
  RunState& c = *state_;
  const Model& m = *model_;
  // Grid times inside the last step (tp, t): frames of its interpolant.
  while (c.grid_pending && *emitted < max_frames) {
    const double tg = c.GridTime(c.grid_k);
    if (tg >= c.t) {
      // At the step's time the grid frame is the step's own frame.
      if (tg == c.t) {
        c.end_pending = true;
        ++c.grid_k;
      }
      c.grid_pending = false;
      break;
    }
    ++c.grid_k;
    if (!(tg > c.tp)) continue;  // not after the last frame (cannot happen for k >= 1)
    const double h = c.t - c.tp;
    QuinticHermite(m.nq, h, (tg - c.tp) / h, c.qp.data(), c.vp.data(), c.ap.data(), c.q.data(),
                   c.v.data(), c.a.data(), c.qh.data(), c.vh.data(), c.ddph.data());
    Workspace& w = *c.out_ws;
    w.u = ws_->u;
    if (Status s = SolveKkt(m, &w, tg, c.qh.data(), c.vh.data()); !s.ok()) {
      run_active_ = false;
      return Aborted("output frame at t = " + Num(tg) + " (inside " + StepContext(step_, c.t) +
                     "): " + s.message());
    }
    if (m.ny) EvaluateOutputs(m, &w, tg, c.qh.data(), c.vh.data(), c.y.data());
    FrameView f;
    f.step = step_ - 1;
    f.t = tg;
    f.q = c.qh;
    f.v = c.vh;
    f.a = w.a;
    f.lambda = w.lambda;
    f.position = w.e;
    f.velocity = w.e_dot;
    f.dynamics = w.dynamics_residual;
    f.constraint = w.constraint_residual;
    f.outputs = c.y;
    sink->Add(f);
    ++*emitted;
  }
  if (c.grid_pending) return Status::Ok();
  if (c.end_pending && *emitted < max_frames) {
    sink->Add(CurrentFrame());
    ++*emitted;
    c.end_pending = false;
  }
  if (!c.end_pending && c.finish_pending) {
    c.finish_pending = false;
    run_active_ = false;
  }
  return Status::Ok();
}

std::string OutputIntervalProblem(double t0, std::optional<double> until_time, double dt) {
  if (!std::isfinite(dt) || !(dt > 0)) {
    return "expected a finite interval > 0 (s), found " + Num(dt);
  }
  if (!(t0 + dt > t0)) {
    return "expected an interval that advances the time " + Num(t0) +
           " in double precision (> about 1e-16 times it), found " + Num(dt);
  }
  if (until_time && std::isfinite(*until_time) && (*until_time - t0) / dt > 0x1p53) {
    return "expected at most 2^53 output times up to until_time " + Num(*until_time) +
           ", found an interval of " + Num(dt) + " s";
  }
  return "";
}

bool Simulation::RunFinished() const {
  const RunState& c = *state_;
  if (run_.steps && c.run_steps >= run_.steps) return true;
  if (run_.until_time && c.t >= *run_.until_time) return true;
  return false;
}

namespace {
// Appends each frame to a repeated field of v1::Frame messages.
class RepeatedFrameSink final : public FrameSink {
 public:
  explicit RepeatedFrameSink(google::protobuf::RepeatedPtrField<v1::Frame>* frames)
      : frames_(frames) {}
  void Add(const FrameView& frame) override { FrameToProto(frame, frames_->Add()); }

 private:
  google::protobuf::RepeatedPtrField<v1::Frame>* frames_;
};
}  // namespace

Status Simulation::Advance(uint64_t max_steps,
                           google::protobuf::RepeatedPtrField<v1::Frame>* frames,
                           uint64_t max_frames) {
  RepeatedFrameSink sink(frames);
  return Advance(max_steps, &sink, max_frames);
}

Status Simulation::Advance(uint64_t max_steps, FrameSink* sink, uint64_t max_frames) {
  if (!run_active_) {
    return FailedPrecondition("no run in progress: call BeginRun first");
  }
  if (max_frames == 0) return Status::Ok();
  return (this->*advance_)(max_steps, sink, max_frames);
}

namespace {
// An integrator stage's evaluation: fixed sizes inline the kernel, the
// general size calls its out-of-line (vectorized) instance.
template <int D, int C, internal::Record R>
TETHER_INLINE Status EvaluateStage(const Model& m, Workspace* ws, double t, const double* q,
                                   const double* v, double* a) {
  if constexpr (D > 0) {
    return internal::EvaluateImpl<D, C, R>(m, ws, t, q, v, a);
  } else {
    return internal::EvaluateGeneralStage<R>(m, ws, t, q, v, a);
  }
}
}  // namespace

namespace {
// An implicit method's accel: a stage evaluation with the Newton seam
// (StepSdirk3) of the simulation's NewtonSolver, at the current inputs.
template <class Stage>
struct NewtonAccel {
  Stage& stage;
  NewtonSolver* solver;
  const double* u;
  TETHER_INLINE Status operator()(double t, const double* q, const double* v, double* a) {
    return stage(t, q, v, a);
  }
  Status PrepareNewton(double t, const double* q, const double* v, double c1, double c2) {
    return solver->Prepare(t, q, v, u, c1, c2);
  }
  Status SolveNewton(const double* r, double* z) {
    solver->Solve(r, z);
    return Status::Ok();
  }
};
template <class Stage>
NewtonAccel(Stage&, NewtonSolver*, const double*) -> NewtonAccel<Stage>;

// ---- Step: the stages of Simulation::AdvanceSized ---------------------------
// Each is forced inline so the loop compiles as one function, as it did
// when written as one.

// Time of the state a step reached: the stop time when it landed there,
// t + h for an adaptive method, else anchor + k h (no drift by summation).
TETHER_INLINE double NewTime(const RunState& c, const StepResult& result, double t_stop,
                             bool adaptive) {
  // A grid step ending at t_stop up to rounding (StepResult::grid_stop)
  // also ends exactly at t_stop, but keeps the grid (Commit).
  if (result.landed || result.grid_stop) return t_stop;
  if (adaptive) return c.t + result.h;
  return c.anchor_t + static_cast<double>(c.anchor_k + 1) * result.h;
}

// Check finite: the new time and state (ABORTED naming the step, the time
// and the coordinate).
template <int D>
TETHER_INLINE Status CheckFinite(const Model& m, const RunState& c, uint64_t step, double t1) {
  const int nq = D > 0 ? D : m.nq;
  if (!std::isfinite(t1)) [[unlikely]] {
    return Aborted(StepContext(step, c.t, "from") + ": the time t became non-finite (" + Num(t1) +
                   "); the step size is too large for this time range");
  }
  for (int i = 0; i < nq; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (!std::isfinite(c.q1[k]) || !std::isfinite(c.v1[k])) [[unlikely]] {
      const bool pos = !std::isfinite(c.q1[k]);
      return Aborted(StepContext(step, t1) + ": " + (pos ? "coordinate '" : "velocity of '") +
                     m.coordinate_names[k] + "' became non-finite (" +
                     Num(pos ? c.q1[k] : c.v1[k]) + ")");
    }
  }
  return Status::Ok();
}

// Commit: the new state (whose evaluation ws holds) becomes the current one.
template <int D>
TETHER_INLINE void Commit(const Model& m, const Workspace& ws, const StepResult& result, double t1,
                          RunState* c) {
  const int nq = D > 0 ? D : m.nq;
  std::swap(c->q, c->q1);
  std::swap(c->v, c->v1);
  std::copy(ws.a.data(), ws.a.data() + nq, c->a.data());
  if (result.landed) {
    c->anchor_t = t1;
    c->anchor_k = 0;
  } else {
    ++c->anchor_k;
  }
  c->t = t1;
  ++c->run_steps;
}
}  // namespace

// step -> check finite -> evaluate at the new state -> record -> commit ->
// emit, for at most max_steps steps.
template <int D, int C>
Status Simulation::AdvanceSized(uint64_t max_steps, FrameSink* sink, uint64_t max_frames) {
  RunState& c = *state_;
  const Model& m = *model_;
  const int nq = D > 0 ? D : m.nq;
  Workspace* ws = ws_.get();
  uint64_t emitted = 0;
  if (c.start_pending) {
    sink->Add(CurrentFrame());
    c.start_pending = false;
    ++emitted;
  }
  // What the last step still owes (max_frames stopped the last call; only
  // with an output grid can a step owe more than one frame).
  if (c.grid) {
    if (Status s = EmitPending(sink, &emitted, max_frames); !s.ok()) return s;
  }
  const double t_stop =
      run_.until_time ? *run_.until_time : std::numeric_limits<double>::infinity();
  // The full evaluation (published into ws: frames, the certificate).
  // Fixed sizes inline the kernel; the general size calls it.
  // SetInterrupt's poll, before each evaluation of a general-size step.
  bool interrupted = false;
  auto interrupt = [&]() TETHER_INLINE_LAMBDA {
    if constexpr (D > 0) return false;
    if (interrupted_ && !interrupted) interrupted = interrupted_();
    return interrupted;
  };
  auto evaluate = [&](double t, const double* q, const double* v, double* a) {
    if constexpr (D > 0) {
      return internal::EvaluateImpl<D, C>(m, ws, t, q, v, a);
    } else {
      if (interrupt()) return Status(StatusCode::kCancelled, "interrupted");
      Status s = SolveKktSized<0, 0>(m, ws, t, q, v);
      if (s.ok() && a) std::copy(ws->a.data(), ws->a.data() + nq, a);
      return s;
    }
  };
  // An adaptive method's last stage is at the new state (FSAL), so all its
  // stages publish.
  auto accel = [&](double t, const double* q, const double* v, double* a) {
    return evaluate(t, q, v, a);
  };
  // A fixed-step method's stages are never at the new state (the full
  // evaluation there follows the step), so they publish nothing; they feed
  // judgement (b) inside a certificate window (CountsIntoJudgementB), and
  // otherwise nothing reads their residuals or maxima.
  auto stage_stats = [&](double t, const double* q, const double* v, double* a) {
    if (interrupt()) return Status(StatusCode::kCancelled, "interrupted");
    return EvaluateStage<D, C, internal::Record::kStatistics>(m, ws, t, q, v, a);
  };
  auto stage_lean = [&](double t, const double* q, const double* v, double* a) {
    if (interrupt()) return Status(StatusCode::kCancelled, "interrupted");
    return EvaluateStage<D, C, internal::Record::kNothing>(m, ws, t, q, v, a);
  };
  const bool adaptive = integrator_->adaptive();
  // An implicit method's stage evaluations are its Newton iterates.
  const bool implicit = integrator_->descriptor().implicit;
  const bool stage_statistics =
      recorder_active_ &&
      CountsIntoJudgementB(integrator_->descriptor(),
                           implicit ? EvaluationKind::kNewtonIterate : EvaluationKind::kStage);
  // Step: one step of the integrator from the current state into q1, v1.
  auto take_step = [&](StepResult* result) TETHER_INLINE_LAMBDA {
    if (implicit) [[unlikely]] {
      const double* u = ws->u.data();
      if (stage_statistics) {
        return integrator_->StepFixedMethod<D>(c.t, c.q.data(), c.v.data(), c.a.data(), t_stop,
                                               NewtonAccel{stage_stats, newton_.get(), u},
                                               c.q1.data(), c.v1.data(), result);
      }
      return integrator_->StepFixedMethod<D>(c.t, c.q.data(), c.v.data(), c.a.data(), t_stop,
                                             NewtonAccel{stage_lean, newton_.get(), u}, c.q1.data(),
                                             c.v1.data(), result);
    }
    if (adaptive) {
      return integrator_->Step<D>(c.t, c.q.data(), c.v.data(), c.a.data(), t_stop, accel,
                                  c.q1.data(), c.v1.data(), result);
    } else if (stage_statistics) {
      return integrator_->StepFixedMethod<D>(c.t, c.q.data(), c.v.data(), c.a.data(), t_stop,
                                             stage_stats, c.q1.data(), c.v1.data(), result);
    } else {
      return integrator_->StepFixedMethod<D>(c.t, c.q.data(), c.v.data(), c.a.data(), t_stop,
                                             stage_lean, c.q1.data(), c.v1.data(), result);
    }
  };
  // A failure ends the run; the state stays at the last completed step.
  auto fail = [&](Status s) {
    run_active_ = false;
    return s;
  };
  // An interrupted step: nothing of it is kept (SetInterrupt).
  auto abandon = [&](uint64_t next_step, const Integrator::Carried& carried) {
    integrator_->Restore(carried);
    return fail(Status(StatusCode::kCancelled, StepContext(next_step, c.t, "from") +
                                                   ": interrupted; the state stays at step " +
                                                   std::to_string(step_)));
  };
  for (uint64_t k = 0; k < max_steps && run_active_ && emitted < max_frames; ++k) {
    if (step_ >= kMaxStep || c.anchor_k >= kMaxStep) [[unlikely]] {
      return fail(ResourceExhausted(
          "step " + std::to_string(step_) + ": the step counter is at its limit 2^62 = " +
              std::to_string(kMaxStep) + "; no further step is taken",
          {"STEP_LIMIT", "step", "the step counter is at its limit 2^62"}));
    }
    const uint64_t next_step = step_ + 1;
    StepResult result;
    const Integrator::Carried carried = integrator_->carried();
    if (Status s = take_step(&result); !s.ok()) {
      if (interrupted) return abandon(next_step, carried);
      return fail(Aborted(StepContext(next_step, c.t, "from") + ": " + s.message()));
    }
    const double t1 = NewTime(c, result, t_stop, adaptive);
    if (Status s = CheckFinite<D>(m, c, next_step, t1); !s.ok()) return fail(std::move(s));
    if (!result.end_evaluated) {
      if constexpr (D == 0) {
        // Publish the new state's residuals only when a frame or the
        // certificate will read them: an output grid, the window's
        // recorder, or this step's frame (every-th or the run's last, as
        // RunFinished will find after Commit).
        ws->publish = c.grid || recorder_active_ || (run_.every != 0 && c.until_emit == 1) ||
                      (run_.steps && c.run_steps + 1 >= run_.steps) ||
                      (run_.until_time && t1 >= *run_.until_time);
      }
      Status s = evaluate(t1, c.q1.data(), c.v1.data(), nullptr);
      if constexpr (D == 0) ws->publish = true;
      if (interrupted) return abandon(next_step, carried);
      if (!s.ok()) return fail(Aborted(StepContext(next_step, t1) + ": " + s.message()));
    }
    // Record: the step into the certificate window.
    if (recorder_active_) {
      recorder_->RecordStep<D, C>(m, ws, c.t, c.q.data(), c.v.data(), c.a.data(), t1, result.h,
                                  c.q1.data(), c.v1.data(), ws_->a.data());
    }
    if (c.grid) {
      // The step's start, for the interpolant at grid times inside it.
      std::copy(c.q.begin(), c.q.end(), c.qp.begin());
      std::copy(c.v.begin(), c.v.end(), c.vp.begin());
      std::copy(c.a.begin(), c.a.end(), c.ap.begin());
      c.tp = c.t;
    }
    Commit<D>(m, *ws, result, t1, &c);
    step_ = next_step;
    // Emit: the grid times up to the new time, every every-th step and the
    // run's last, in time order.
    const bool finished = RunFinished();
    const bool every_th = run_.every != 0 && --c.until_emit == 0;
    if (every_th) c.until_emit = run_.every;
    if (!c.grid) {
      if (finished || every_th) {
        sink->Add(CurrentFrame());
        ++emitted;
      }
      if (finished) run_active_ = false;
      continue;
    }
    c.end_pending = finished || every_th;
    c.finish_pending = finished;
    c.grid_pending = true;
    if (Status s = EmitPending(sink, &emitted, max_frames); !s.ok()) return s;
  }
  return Status::Ok();
}

void Simulation::GetCertificate(v1::Certificate* certificate) const {
  if (!recorder_active_) {
    certificate->Clear();
    return;
  }
  recorder_->Fill(*model_, *ws_, certificate);
}

}  // namespace tether
