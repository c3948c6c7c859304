#include "engine/simulation.h"

#include <algorithm>
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
#include "engine/internal/simulation/run_state.h"
#include "engine/internal/simulation/validate.h"

namespace tether {

double InitialConsistencyTolerance(const v1::CertificateOptions& options) {
  return ConsistencyTolerance(options);
}

namespace {

using validation::CheckAndCompile;
using validation::CheckState;
using validation::Error;
using validation::LoadInitialState;

std::string Num(double x) { return FormatNumber(x); }

}  // namespace

Simulation::MemoryUse Simulation::ModelMemoryUse(const Model& model) {
  MemoryUse use;
  use.model = model.heap_bytes() + kAllocationOverhead;  // make_shared's control block
  use.code = model.code_bytes();
  return use;
}

Simulation::MemoryUse Simulation::memory_use() const {
  constexpr int64_t kBlock = kAllocationOverhead;
  const int64_t nq = model_->nq;
  MemoryUse use;
  const MemoryUse shared = ModelMemoryUse(*model_);
  use.model = shared.model;
  use.code = shared.code;
  int64_t own = static_cast<int64_t>(sizeof(Simulation)) + kBlock + MessageHeapBytes(spec_) -
                static_cast<int64_t>(sizeof(spec_));
  own += static_cast<int64_t>(sizeof(Workspace)) + kBlock + ws_->heap_bytes();
  own += static_cast<int64_t>(sizeof(Integrator)) + kBlock + integrator_->heap_bytes();
  // The certificate's recorder, made by the first run that records (as
  // the second workspace below): counted made or not. One not made is
  // measured once: each measure allocates what a run would (an ENCLOSED
  // recorder's Taylor programs), so a session's snapshots, charged through
  // here, would otherwise each allocate and free it uncounted.
  int64_t recorder_bytes;
  if (recorder_) {
    recorder_bytes = recorder_->heap_bytes();
  } else {
    recorder_bytes = unmade_recorder_bytes_.load(std::memory_order_relaxed);
    if (recorder_bytes < 0) {
      recorder_bytes = MakeRecorder()->heap_bytes();
      unmade_recorder_bytes_.store(recorder_bytes, std::memory_order_relaxed);
    }
  }
  own += static_cast<int64_t>(sizeof(CertificateRecorder)) + kBlock + recorder_bytes;
  if (newton_) own += static_cast<int64_t>(sizeof(NewtonSolver)) + kBlock + newton_->heap_bytes();
  own += static_cast<int64_t>(sizeof(RunState)) + kBlock + state_->heap_bytes();
  // A run with an output grid or a certificate makes a second workspace
  // (the shape of ws_), and one with a grid six state vectors, the first
  // time (BeginRun).
  if (!state_->out_ws) own += static_cast<int64_t>(sizeof(Workspace)) + kBlock + ws_->heap_bytes();
  if (state_->qp.empty()) own += 6 * (nq * static_cast<int64_t>(sizeof(double)) + kBlock);
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
  return FromModelSpec(std::move(sim), std::move(model));
}

std::unique_ptr<Simulation> Simulation::FromModel(v1::SimulationSpec&& spec,
                                                  std::shared_ptr<const Model> model) {
  std::unique_ptr<Simulation> sim(new Simulation());
  sim->spec_ = std::move(spec);
  return FromModelSpec(std::move(sim), std::move(model));
}

std::unique_ptr<Simulation> Simulation::FromModelSpec(std::unique_ptr<Simulation> sim,
                                                      std::shared_ptr<const Model> model) {
  const v1::SimulationSpec& spec = sim->spec_;
  sim->model_ = model;
  sim->ws_ = std::make_unique<Workspace>(*model);
  sim->integrator_ = std::make_unique<Integrator>(spec.integrator(), model->nq);
  if (spec.certificate().step_doubling_estimate()) sim->integrator_->EnableStepDoubling();
  if (sim->integrator_->descriptor().implicit) {
    if (!model->newton.enabled) return nullptr;
    // RADAU_IIA's Newton iteration also solves a complex system (newton.h).
    sim->newton_ = std::make_unique<NewtonSolver>(
        *model, spec.integrator().method() == v1::IntegratorSpec::RADAU_IIA);
  }
  sim->state_ = std::make_unique<RunState>();
  RunState& c = *sim->state_;
  const size_t nq = static_cast<size_t>(model->nq);
  LoadInitialState(spec.initial(), model->nq, &c.q, &c.v);
  c.a.assign(nq, 0.0);
  c.q1.assign(nq, 0.0);
  c.v1.assign(nq, 0.0);
  c.y.assign(static_cast<size_t>(model->ny), 0.0);
  c.u_newton.assign(static_cast<size_t>(model->nu), 0.0);
  c.t = c.anchor_t = spec.initial().t();
  if (sim->integrator_->descriptor().post_stabilized && model->nc > 0) {
    c.post = std::make_unique<PostStabilizer>(*model);
  }
  sim->advance_ = AdvanceFor(model->nq, model->nc);
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
  if (diags.empty() && !integrator_->adaptive() &&
      !GridResolves(state.t(), integrator_->step_size())) {
    Error(&diags, std::string(field) + ".t",
          GridResolutionProblem(state.t(), integrator_->step_size()));
  }
  if (diags.empty() && integrator_->adaptive()) {
    if (std::string p = AdaptiveStepProblem(state.t(), spec_.integrator().max_step()); !p.empty())
      Error(&diags, std::string(field) + ".t", p);
  }
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
  ws_->u_rate.clear();
  ws_->u_source = nullptr;
  ws_->u_ramp = false;
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
  } else if (!integrator_->adaptive() && in.anchor_steps() <= kMaxStep &&
             std::isfinite(in.state().t())) {
    // A fixed-step method's next times are time_anchor + k h: the state's t
    // must be on that grid, to the rounding a grid stop leaves (8 ulps of
    // the times, StepFixedMethod) and the grid must resolve h there.
    const double h = integrator_->step_size(), t = in.state().t();
    const double grid = in.time_anchor() + static_cast<double>(in.anchor_steps()) * h;
    const double rounding = 16 * std::numeric_limits<double>::epsilon() *
                            std::max({std::fabs(t), std::fabs(grid), std::fabs(in.time_anchor())});
    if (!(std::fabs(t - grid) <= rounding)) {
      Error(&diags, f + ".time_anchor",
            "expected time_anchor + anchor_steps * h = state.t (the fixed-step grid the state "
            "is on, h = " +
                Num(h) + "), found " + Num(in.time_anchor()) + " + " +
                std::to_string(in.anchor_steps()) + " * h = " + Num(grid) +
                " against t = " + Num(t));
    } else if (!GridResolves(t, h)) {
      Error(&diags, f + ".state.t", GridResolutionProblem(t, h));
    }
  }
  if (!std::isfinite(in.next_step_size()) || in.next_step_size() < 0) {
    Error(
        &diags, f + ".next_step_size",
        "expected a finite step size >= 0 (0: not chosen yet), found " + Num(in.next_step_size()));
  } else if (!integrator_->adaptive() && in.next_step_size() != 0) {
    Error(&diags, f + ".next_step_size",
          std::string("expected 0 for the fixed-step method ") +
              MethodName(spec_.integrator().method()) + ", found " + Num(in.next_step_size()));
  } else if (integrator_->adaptive() && in.next_step_size() != 0) {
    // The step the method proposed: not far below its smallest step at t
    // (a restored 1e-300 failed the session; a proposal may fall to a fifth
    // of the smallest before the next step says so). Above max_step it is
    // cut to max_step when used.
    const double t = in.state().t(), least = AdaptiveMinStep(t) / 8;
    if (in.next_step_size() < least) {
      Error(&diags, f + ".next_step_size",
            "expected 0 (not chosen yet) or a step the method can take from t = " + Num(t) +
                ", at least " + Num(least) + " (2 ulps of max(1, |t|)), found " +
                Num(in.next_step_size()));
    }
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
  ws_->u_rate.clear();
  ws_->u_source = nullptr;
  ws_->u_ramp = false;
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

Status Simulation::SetInputRates(std::span<const double> rates) {
  if (rates.empty()) {
    ws_->u_rate.clear();
    ws_->u_ramp = ws_->u_source != nullptr;
    return Status::Ok();
  }
  if (static_cast<int>(rates.size()) != model_->nu) {
    return InvalidArgument("input_rates: expected " + std::to_string(model_->nu) +
                               " rates (one per input), found " + std::to_string(rates.size()),
                           {{"input_rates", "expected one rate per input"}});
  }
  for (size_t k = 0; k < rates.size(); ++k) {
    if (!std::isfinite(rates[k])) {
      const std::string f = "input_rates[" + std::to_string(k) + "]";
      return InvalidArgument(f + ": expected a finite value, found " + Num(rates[k]),
                             {{f, "expected a finite value"}});
    }
  }
  ws_->u_rate.assign(rates.begin(), rates.end());
  ws_->u_anchor = state_->t;
  ws_->u_source = nullptr;
  ws_->u_ramp = true;
  return Status::Ok();
}

Status Simulation::SetInputSource(const InputSource* source) {
  if (source == nullptr) {
    ws_->u_source = nullptr;
    ws_->u_ramp = !ws_->u_rate.empty();
    return Status::Ok();
  }
  ws_->u_rate.clear();
  ws_->u_source = source;
  ws_->u_ramp = true;
  return Status::Ok();
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

Status Simulation::Evaluate(v1::Frame* frame) {
  Status s = EvaluateHere();
  if (!s.ok()) return s;
  frame->Clear();
  FrameToProto(CurrentFrame(), frame);
  return Status::Ok();
}

std::unique_ptr<CertificateRecorder> Simulation::MakeRecorder() const {
  return std::make_unique<CertificateRecorder>(*model_, spec_.certificate(),
                                               spec_.integrator().method());
}

Status Simulation::CheckUntilTime(double u) const {
  const RunState& c = *state_;
  if (!std::isfinite(u) || !(u > c.t)) {
    // u == t: far from t = 0 a small step rounds away (DOPRI5 from 1e17).
    std::string m = "expected a finite time later than the current time " + Num(c.t) + ", found " +
                    Num(u) + (u == c.t ? " (a step that rounds away at that time)" : "");
    return InvalidArgument("until_time: " + m, {{"until_time", m}});
  }
  // A fixed-step run knows its step count: beyond the step counter's 2^62
  // it would end ABORTED after ages (an FMU's doStep of 1e300 s at h = 1e-3
  // never returned), so it is refused before any step.
  if (!integrator_->adaptive()) {
    std::string m = FixedStepUntilProblem(c.t, u, integrator_->step_size(), step_);
    if (!m.empty()) return InvalidArgument("until_time: " + m, {{"until_time", m}});
  }
  return Status::Ok();
}

std::string FixedStepUntilProblem(double t, double u, double h, uint64_t steps_taken) {
  constexpr uint64_t kMax = Simulation::kMaxStep;
  const double steps = (u - t) / h;
  if (steps <= static_cast<double>(kMax - std::min(steps_taken, kMax))) return "";
  return "expected a time the fixed step h = " + Num(h) +
         " reaches within the step counter's 2^62 steps, found " + Num(u) + " from t = " + Num(t) +
         " (" + Num(steps) + " steps)";
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
    // Without an until_time the bound of 2^53 output times holds per step
    // of a fixed-step method (or of max_step): a grid of 1e-300 s in a run
    // of `steps` emitted frames without end inside the first step.
    const double longest =
        integrator_->adaptive() ? spec_.integrator().max_step() : integrator_->step_size();
    if (m.empty() && longest > 0 && longest / *options.output_interval > 0x1p53) {
      m = "expected at most 2^53 output times in a step of " + Num(longest) +
          " s, found an interval of " + Num(*options.output_interval) + " s";
    }
    if (!m.empty()) return InvalidArgument("output_interval: " + m, {{"output_interval", m}});
  }
  if (options.until_time) {
    if (Status s = CheckUntilTime(*options.until_time); !s.ok()) return s;
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
    if (!c.out_ws) c.out_ws = std::make_unique<Workspace>(*model_);
    if (c.qp.empty()) {
      const size_t nq = static_cast<size_t>(model_->nq);
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
    // The second workspace also serves the local error estimate's
    // evaluations (certificate.h, RecordStep).
    if (!c.out_ws) c.out_ws = std::make_unique<Workspace>(*model_);
    // Made by the first run that records: a simulation whose runs never
    // do (an ensemble's instances without the certificate) never pays for it.
    if (!recorder_) recorder_ = MakeRecorder();
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
    w.u_rate = ws_->u_rate;
    w.u_anchor = ws_->u_anchor;
    w.u_source = ws_->u_source;
    w.u_ramp = ws_->u_ramp;
    if (Status s = SolveKkt(m, &w, tg, c.qh.data(), c.vh.data()); !s.ok()) {
      run_active_ = false;
      return Aborted("output frame at t = " + Num(tg) + " (inside " + StepContext(step_, c.t) +
                     "): " + s.message());
    }
    if (m.ny) EvaluateOutputs(m, &w, tg, c.qh.data(), c.vh.data(), c.y.data());
    sink->Add(ViewOf(step_ - 1, tg, c.qh, c.vh, w, c.y));
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

void Simulation::GetCertificate(v1::Certificate* certificate) const {
  if (!recorder_active_) {
    certificate->Clear();
    return;
  }
  recorder_->Fill(*model_, *ws_, certificate);
}

}  // namespace tether
