// The step loop of Simulation::Advance (step -> check finite -> evaluate at
// the new state -> record -> commit -> emit), one instance per fixed size
// (TETHER_FIXED_SIZES) and one for any size. Apart from simulation.cc
// because it is the engine's hot path: what it inlines is measured
// (bench/), and the rest of the simulation's calls need not be read with it.
#include <cmath>
#include <complex>
#include <limits>

#include "engine/internal/certificate/certificate.h"
#include "engine/internal/integrate/integrator.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/evaluate_kernel.h"
#include "engine/internal/kkt/newton.h"
#include "engine/internal/model/model.h"
#include "engine/internal/simulation/run_state.h"
#include "engine/simulation.h"

namespace tether {

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
// An implicit method's accel: a stage evaluation with the Newton seams
// (StepSdirk3, StepRadauIIA) of the simulation's NewtonSolver, at the
// current inputs. The stages see inputs that vary inside a step (a ramp,
// a source) as every evaluation does (LoadVars); the Newton matrix is
// prepared with the inputs at its own time t, so that a description whose
// expression is the ramp written out gives the same bits.
template <class Stage>
struct NewtonAccel {
  Stage& stage;
  NewtonSolver* solver;
  const double* u;
  const Model* model = nullptr;
  const Workspace* ws = nullptr;
  double* u_at = nullptr;  // nu doubles of scratch (RunState::u_newton)
  TETHER_INLINE Status operator()(double t, const double* q, const double* v, double* a) {
    return stage(t, q, v, a);
  }
  const double* InputsAt(double t) {
    if (!ws->u_ramp || model->nu == 0) return u;
    std::copy(u, u + model->nu, u_at);
    internal::LoadRampedInputs(*model, *ws, t, u_at);
    return u_at;
  }
  Status PrepareNewton(double t, const double* q, const double* v, double c1, double c2) {
    return solver->Prepare(t, q, v, InputsAt(t), c1, c2);
  }
  Status SolveNewton(const double* r, double* z) {
    solver->Solve(r, z);
    return Status::Ok();
  }
  Status PrepareNewtonPair(double t, const double* q, const double* v, double c1, double c2,
                           std::complex<double> d1, std::complex<double> d2) {
    return solver->PreparePair(t, q, v, InputsAt(t), c1, c2, d1, d2);
  }
  Status SolveNewtonComplex(const std::complex<double>* r, std::complex<double>* z) {
    solver->SolveComplex(r, z);
    return Status::Ok();
  }
};
template <class Stage>
NewtonAccel(Stage&, NewtonSolver*, const double*, const Model*, const Workspace*, double*)
    -> NewtonAccel<Stage>;

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
    return Aborted(StepContext(step, c.t, "from") + ": the time t became non-finite (" +
                   FormatNumber(t1) + "); the step size is too large for this time range");
  }
  for (int i = 0; i < nq; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (!std::isfinite(c.q1[k]) || !std::isfinite(c.v1[k])) [[unlikely]] {
      const bool pos = !std::isfinite(c.q1[k]);
      return Aborted(StepContext(step, t1) + ": " + (pos ? "coordinate '" : "velocity of '") +
                     m.coordinate_names[k] + "' became non-finite (" +
                     FormatNumber(pos ? c.q1[k] : c.v1[k]) + ")");
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

// Called every step (RunFinished) or every emitted frame (CurrentFrame):
// here, in the step loop's translation unit, so that they inline into it.
bool Simulation::RunFinished() const {
  const RunState& c = *state_;
  if (run_.steps && c.run_steps >= run_.steps) return true;
  if (run_.until_time && c.t >= *run_.until_time) return true;
  return false;
}

FrameView Simulation::CurrentFrame() {
  RunState& c = *state_;
  const Workspace& ws = *ws_;
  if (model_->ny) EvaluateOutputs(*model_, ws_.get(), c.t, c.q.data(), c.v.data(), c.y.data());
  return ViewOf(step_, c.t, c.q, c.v, ws, c.y);
}

// step -> check finite -> evaluate at the new state -> record -> commit ->
// emit, for at most max_steps steps. Its stages are the named functions
// above, forced inline; what remains (about 160 lines) is the loop that
// calls them, per method, kept in one body so it compiles as one loop.
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
  // RK4_POST_STABILIZED with constraints (RunState::post).
  const bool post = c.post != nullptr;
  // An implicit method's stage evaluations are its Newton iterates.
  const bool implicit = integrator_->descriptor().implicit;
  const bool stage_statistics =
      recorder_active_ &&
      CountsIntoJudgementB(integrator_->descriptor(),
                           implicit ? EvaluationKind::kNewtonIterate : EvaluationKind::kStage);
  // Step: one step of the integrator from the current state into q1, v1.
  // An implicit method's stages never publish (RADAU_IIA's last Newton
  // evaluation is not at the converged state: not first-same-as-last).
  auto take_step = [&](StepResult* result) TETHER_INLINE_LAMBDA {
    if (implicit) [[unlikely]] {
      const double* u = ws->u.data();
      if (stage_statistics) {
        return integrator_->Step<D>(
            c.t, c.q.data(), c.v.data(), c.a.data(), t_stop,
            NewtonAccel{stage_stats, newton_.get(), u, &m, ws, c.u_newton.data()}, c.q1.data(),
            c.v1.data(), result);
      }
      return integrator_->Step<D>(
          c.t, c.q.data(), c.v.data(), c.a.data(), t_stop,
          NewtonAccel{stage_lean, newton_.get(), u, &m, ws, c.u_newton.data()}, c.q1.data(),
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
    if (!adaptive && !GridResolves(c.t, integrator_->step_size())) [[unlikely]] {
      return fail(Aborted(StepContext(next_step, c.t, "from") + ": " +
                          GridResolutionProblem(c.t, integrator_->step_size())));
    }
    StepResult result;
    const Integrator::Carried carried = integrator_->carried();
    // A post-stabilized method's stages evaluate without the feedback.
    ws->feedback_off = post;
    Status stepped = take_step(&result);
    ws->feedback_off = false;
    if (!stepped.ok()) {
      if (interrupted) return abandon(next_step, carried);
      return fail(Aborted(StepContext(next_step, c.t, "from") + ": " + stepped.message()));
    }
    const double t1 = NewTime(c, result, t_stop, adaptive);
    if (Status s = CheckFinite<D>(m, c, next_step, t1); !s.ok()) return fail(std::move(s));
    // Step doubling (CertificateOptions.step_doubling_estimate, fixed-step
    // methods): before the new state's evaluation, which ws must hold
    // after the step. Its evaluations record nothing; a failure of its
    // half steps is no estimate (infinite), not the run's failure.
    double doubling_estimate = 0;
    int doubling_coordinate = -1;
    if (recorder_active_ && integrator_->step_doubling()) [[unlikely]] {
      // A post-stabilized method's half steps as its step: without the
      // feedback, against the step's end before its correction below.
      ws->feedback_off = post;
      Status s;
      if (implicit) {
        s = integrator_->DoublingEstimate<D>(
            result.h, c.t, c.q.data(), c.v.data(), c.a.data(), c.q1.data(),
            NewtonAccel{stage_lean, newton_.get(), ws->u.data(), &m, ws, c.u_newton.data()},
            &doubling_estimate, &doubling_coordinate);
      } else {
        s = integrator_->DoublingEstimate<D>(result.h, c.t, c.q.data(), c.v.data(), c.a.data(),
                                             c.q1.data(), stage_lean, &doubling_estimate,
                                             &doubling_coordinate);
      }
      ws->feedback_off = false;
      if (interrupted) return abandon(next_step, carried);
      if (!s.ok()) {
        doubling_estimate = std::numeric_limits<double>::infinity();
        doubling_coordinate = 0;
      }
    }
    // Post-stabilization: the step's end onto the residual law's map of its
    // start (docs/MATH.md section 7.3), before the evaluation there.
    if (post) {
      c.post->Targets(m, ws, c.t, c.q.data(), c.v.data(), result.h);
      if (Status s = c.post->Apply(m, ws, t1, c.q1.data(), c.v1.data()); !s.ok()) {
        if (interrupted) return abandon(next_step, carried);
        return fail(Aborted(StepContext(next_step, c.t, "from") + ": " + s.message()));
      }
    }
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
                                  c.q1.data(), c.v1.data(), ws_->a.data(), c.out_ws.get());
      recorder_->RecordMethodEstimate(c.t, result.error_estimate, result.error_coordinate,
                                      result.error_norm);
      recorder_->RecordMethodEstimate(c.t, doubling_estimate, doubling_coordinate, 0);
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

Simulation::AdvanceFn Simulation::AdvanceFor(int nq, int nc) {
#define TETHER_SELECT(D, C) \
  if (nq == D && nc == C) return &Simulation::AdvanceSized<D, C>;
  TETHER_FIXED_SIZES(TETHER_SELECT)
#undef TETHER_SELECT
  return &Simulation::AdvanceSized<0, 0>;
}

}  // namespace tether
