// One-step methods for the second-order system q' = v, v' = a(t, q, v).
//
// The methods are written once, as templates over the acceleration function,
// so the same code steps the mechanical model and the linear residual test
// system of the stability check (docs/MATH.md, "Discrete stability").
// Scratch is allocated when the integrator is made, never per step.
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

// The step functions are inlined into Attempt and it into the step loop
// (Simulation::AdvanceSized), as the single switch they replaced was.
#define TETHER_INTEGRATOR_INLINE inline __attribute__((always_inline))

namespace tether {

using Method = v1::IntegratorSpec::Method;

// The integration methods, listed once: X(METHOD, Step function, order,
// adaptive, stages, scratch stages, Newton iterates count into (b),
// implicit, stage order, estimate order, first same as last).
//   METHOD      the v1::IntegratorSpec::Method enumerator (its name, from
//               protobuf, is the method's name in every message).
//   Step fn     Integrator's member template doing one attempt of that
//               method (signature of Integrator::StepExplicitEuler).
//   order       classical order of accuracy.
//   adaptive    the step size is chosen by error control (the attempt
//               writes an error norm; Integrator::Step retries) rather
//               than given by IntegratorSpec.step_size.
//   stages      acceleration evaluations per attempt, a0 included.
//   scratch     stage vectors (of n doubles each, for Q, V and A) the
//               attempt keeps in Integrator's scratch.
//   newton_b    whether the KKT solves at an implicit method's Newton
//               iterates count into certificate judgement (b); see
//               CountsIntoJudgementB, the one place that decides.
//   implicit    each stage solves an equation by Newton iterations (the
//               accel then offers the Newton seam, see StepSdirk3); stages
//               then counts the evaluations without iterations.
//   stage_order the order of the stages' own values; an implicit method
//               whose stage order is below its order loses order when h
//               times the gains is large (the certificate warns:
//               docs/MATH.md section 10.3).
//   estimate    adaptive methods: the power of h in the local error
//               estimate (the controller's exponent is 1/estimate); 0 for
//               fixed-step methods.
//   fsal        adaptive methods: the attempt's last acceleration call is
//               at the new state (first same as last), so Step reports it
//               evaluated there; otherwise the step loop evaluates it.
//   post        post-stabilized: the stages evaluate a without the
//               Baumgarte feedback, and the step loop moves the step's end
//               onto the residual law's map Phi(h) of its start
//               (ResidualLawMap; docs/MATH.md section 7.3).
// Adding a method: one line here, its Step function below, and its
// enumerator in proto/tether/v1/simulation.proto. Validation, the method
// list in messages, the stability judgement (ResidualTestUpdate), the
// scratch and the step loop all read the table. An adaptive method also
// gives its dense output in DenseOutput; an implicit one declares a Newton
// failure (newton_failed_) for Step to retry with a smaller step.
#define TETHER_INTEGRATOR_METHODS(X)                                                              \
  X(EXPLICIT_EULER, StepExplicitEuler, 1, false, 1, 0, false, false, 1, 0, false, false)          \
  X(SEMI_IMPLICIT_EULER, StepSemiImplicitEuler, 1, false, 1, 0, false, false, 1, 0, false, false) \
  X(RK4, StepRk4, 4, false, 4, 3, false, false, 1, 0, false, false)                               \
  X(DOPRI5, StepDopri5, 5, true, 7, 7, false, false, 1, 5, true, false)                           \
  X(SDIRK3, StepSdirk3, 3, false, 3, 3, true, true, 1, 0, false, false)                           \
  X(RADAU_IIA, StepRadauIIA, 5, true, 3, 3, true, true, 3, 4, false, false)                       \
  X(RK4_POST_STABILIZED, StepRk4PostStabilized, 4, false, 5, 4, false, false, 1, 0, false, true)

struct MethodDescriptor {
  Method method;
  int order;
  bool adaptive;
  int stages;
  int scratch_stages;
  bool newton_iterates_count_in_judgement_b;
  bool implicit;
  int stage_order;
  int estimate_order;
  bool fsal;
  bool post_stabilized;
};

inline constexpr MethodDescriptor kMethods[] = {
#define TETHER_DESCRIPTOR(M, Fn, order, adaptive, stages, scratch, newton_b, implicit, \
                          stage_order, estimate, fsal, post)                           \
  {v1::IntegratorSpec::M, order,    adaptive, stages, scratch, newton_b, implicit,     \
   stage_order,           estimate, fsal,     post},
    TETHER_INTEGRATOR_METHODS(TETHER_DESCRIPTOR)
#undef TETHER_DESCRIPTOR
};

// The descriptor of `method`, or nullptr for METHOD_UNSPECIFIED and values
// outside the list.
constexpr const MethodDescriptor* FindMethod(Method method) {
  for (const MethodDescriptor& d : kMethods) {
    if (d.method == method) return &d;
  }
  return nullptr;
}

// The protobuf name of the method ("RK4"; "" for a value outside the enum).
const std::string& MethodName(Method method);
// Classical order of the method (kMethods; 0 when it is not listed).
int MethodOrder(Method method);
// "EXPLICIT_EULER, SEMI_IMPLICIT_EULER, RK4, DOPRI5": for messages.
const std::string& MethodList();

// Whether a fixed-step method's grid resolves its step h at time t: 8 ulps
// of t (StepFixedMethod's rounding of the times) at most h / 16. Beyond, the
// grid's times anchor + k h are not within a fraction of a step of where
// they should be and a stop time's step count goes wrong (at t = 1e13
// doubles are 0.002 apart: steps of 1e-3 from there reached 98 steps for
// 100); for h = 1e-3, |t| up to 3.5e10 resolve (Unix times in seconds do).
inline bool GridResolves(double t, double h) {
  return 8 * std::numeric_limits<double>::epsilon() * std::fabs(t) <= h / 16;
}
// What is wrong when !GridResolves(t, h), for messages.
std::string GridResolutionProblem(double t, double h);

// The smallest step an adaptive method takes at time t (16 ulps of
// max(1, |t|)): below it the step is rounding, and the step control
// reports an underflow.
inline double AdaptiveMinStep(double t) {
  return 16 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::fabs(t));
}

// Why an adaptive method cannot step from time t within max_step (0:
// unlimited), or "": its first step is at least 64 AdaptiveMinStep(t)
// (Integrator::InitialStep), so a max_step below that (1e-300), or a t so
// large that it is (t = 1e13 with max_step 1e-3), leaves no step to take.
std::string AdaptiveStepProblem(double t, double max_step);
// The part of a step size underflow's message that says when the time
// itself is the cause (doubles near t too far apart for the steps the
// tolerances need), or "" near t = 0.
std::string AdaptiveTimeResolutionNote(double t, double h_min);

// Why an integrator asks for an evaluation of a(t, q, v).
enum class EvaluationKind {
  kStage,          // a stage of the step (all explicit methods)
  kNewtonIterate,  // an implicit method's trial state while it iterates
  kJacobianProbe,  // a finite-difference probe of AccelerationJacobian
};

// Whether the KKT row residuals of such an evaluation count into
// certificate judgement (b) (EvaluationStats: the maxima over the window's
// evaluations). The one place this is decided: stages always count (they
// are the solves the trajectory is built from); Newton iterates count when
// the method's descriptor says so; finite-difference probes never do (they
// are off the trajectory, at perturbed states).
constexpr bool CountsIntoJudgementB(const MethodDescriptor& method, EvaluationKind kind) {
  switch (kind) {
    case EvaluationKind::kStage: return true;
    case EvaluationKind::kNewtonIterate: return method.newton_iterates_count_in_judgement_b;
    case EvaluationKind::kJacobianProbe: return false;
  }
  return true;
}

// The seam through which a method asks for da/dq and da/dv (n x n each,
// row-major: dadq[i * n + j] = d a_i / d q_j) at (t, q, v), where
// a = a(t, q, v) was already evaluated. An `accel` that offers
//   Status Jacobian(double t, const double* q, const double* v, const double* a,
//                   double* dadq, double* dadv)
// supplies them itself (an analytic Jacobian); any other callable gets
// forward differences of accel (2 n calls; `work` holds 3 n doubles), with
// the step sqrt(eps) * max(1, |x_j|). Costs no allocation.
template <class Accel>
Status AccelerationJacobian(Accel&& accel, int n, double t, const double* q, const double* v,
                            const double* a, double* dadq, double* dadv, double* work) {
  if constexpr (requires { accel.Jacobian(t, q, v, a, dadq, dadv); }) {
    return accel.Jacobian(t, q, v, a, dadq, dadv);
  } else {
    double* qp = work;
    double* vp = work + n;
    double* ap = work + 2 * n;
    std::copy(q, q + n, qp);
    std::copy(v, v + n, vp);
    const double root_eps = std::sqrt(std::numeric_limits<double>::epsilon());
    for (int pass = 0; pass < 2; ++pass) {
      double* x = pass == 0 ? qp : vp;
      double* J = pass == 0 ? dadq : dadv;
      for (int j = 0; j < n; ++j) {
        const double x0 = x[j];
        const double dx = root_eps * std::max(1.0, std::fabs(x0));
        x[j] = x0 + dx;
        const double step = x[j] - x0;  // the increment actually represented
        Status s = accel(t, qp, vp, ap);
        x[j] = x0;
        if (!s.ok()) return s;
        for (int i = 0; i < n; ++i) J[i * n + j] = (ap[i] - a[i]) / step;
      }
    }
    return Status::Ok();
  }
}

struct StepResult {
  double h = 0;                // step actually taken (t1 - t0)
  bool end_evaluated = false;  // the last acceleration call was at (t1, q1, v1)
  bool landed = false;         // the step ends exactly at t_stop
  // A fixed-step method's full step h whose end is t_stop up to the
  // rounding of the times: it ends the run at t_stop, and the fixed-step
  // grid goes on (see StepFixedMethod).
  bool grid_stop = false;
  int rejected = 0;  // adaptive methods: attempts rejected by error control
  // RADAU_IIA: attempts whose Newton iteration failed (each halved h).
  int newton_retries = 0;
  // Adaptive methods: the accepted attempt's own local error estimate (the
  // one its error control judged; DOPRI5's embedded difference, RADAU_IIA's
  // filtered estimate): the largest |e_i| over the position coordinates, in
  // their units, and its coordinate (-1 for fixed-step methods), and the
  // scaled norm the control compared with 1. For a step that landed on
  // t_stop by the dense output, the estimate is the full attempt's (of
  // length h before landing).
  double error_estimate = 0;
  int error_coordinate = -1;
  double error_norm = 0;
};

// Update matrix of one step of `method` with step h on the residual test
// system (e, w)' = [[0, 1], [-beta^2, -2 alpha]] (e, w), and its spectral
// radius (|eigenvalue| max; < 1 means strict decay).
struct TestSystemUpdate {
  double R[2][2];
  double spectral_radius;
};
TestSystemUpdate ResidualTestUpdate(Method method, double h, double alpha, double beta);
// R of one step of the method's own step function on the test system
// (ResidualTestUpdate's, spectral_radius not set).
TestSystemUpdate ResidualTestUpdateOfStep(Method method, double h, double alpha, double beta);

// The residual law's exact map over a time h: (e, e') at t to (e, e') at
// t + h for e'' + 2 alpha e' + beta^2 e = 0 (docs/MATH.md section 6),
// phi = exp(h [[0, 1], [-beta^2, -2 alpha]]) row-major, for alpha, beta >= 0
// and h >= 0. Accurate to rounding relative to its largest entry, without
// overflow for any gains (each damping case in a form without cancellation
// or an exponential that can overflow). A post-stabilized method's step
// ends on it (docs/MATH.md section 7.3).
void ResidualLawMap(double alpha, double beta, double h, double phi[2][2]);

class Integrator {
 public:
  // n: number of coordinates. spec must have been validated.
  Integrator(const v1::IntegratorSpec& spec, int n);

  Method method() const { return method_; }
  // Heap bytes held (heap_bytes.h).
  int64_t heap_bytes() const;
  const MethodDescriptor& descriptor() const { return *descriptor_; }
  bool adaptive() const { return descriptor_->adaptive; }
  // Fixed-step: the step size. Adaptive: the next proposed step (0 until
  // the first step chose one).
  double step_size() const { return h_; }
  // Implicit methods: Newton iterations (acceleration evaluations at trial
  // states) taken since the integrator was made.
  uint64_t newton_iterations() const { return newton_iterations_; }

  // What the integrator carries from one step to the next (an adaptive
  // method's proposed step, the Newton count), for snapshots: restoring it
  // makes the next steps those the saved integrator would have taken.
  // Restore checks nothing: Simulation::RestoreState validates first.
  struct Carried {
    double next_step_size = 0;  // adaptive methods only
    uint64_t newton_iterations = 0;
  };
  Carried carried() const { return {adaptive() ? h_ : 0, newton_iterations_}; }
  void Restore(const Carried& c) {
    if (adaptive()) {
      h_ = c.next_step_size;
      proposal_unverified_ = h_ > 0;
    }
    newton_iterations_ = c.newton_iterations;
  }

  // One step from (t, q, v), with a0 = a(t, q, v) already evaluated, ending
  // no later than t_stop. Writes the new state into q1, v1 (n each, distinct
  // from q, v). `accel(t, q, v, a)` returns Status. Fixed-step methods take
  // exactly step_size() unless t_stop is closer; an adaptive method
  // controls the error (and retries a failed Newton iteration with half the
  // step) and shortens a step that would pass t_stop to end on it (only
  // when less than its smallest step remains does it land on t_stop with
  // its dense output). N > 0 declares n == N at compile time (the loops
  // unroll).
  template <int N = 0, class Accel>
  Status Step(double t, const double* q, const double* v, const double* a0, double t_stop,
              Accel&& accel, double* q1, double* v1, StepResult* result);
  // Step for a fixed-step method only (!adaptive()): its `accel` calls are
  // all intermediate stages, never at the new state (end_evaluated false).
  template <int N = 0, class Accel>
  Status StepFixedMethod(double t, const double* q, const double* v, const double* a0,
                         double t_stop, Accel&& accel, double* q1, double* v1, StepResult* result);

  // Step doubling for a fixed-step method (CertificateOptions.
  // step_doubling_estimate): allocates its scratch (5 n doubles) once.
  void EnableStepDoubling();
  bool step_doubling() const { return !qd_.empty(); }
  // The local error of the step of h just taken from (t, q, v) (a0 = a
  // there) to q1: two attempts of h/2 (and the acceleration between them)
  // reach q2, and the error is (q1 - q2) 2^p / (2^p - 1), p the method's
  // order (the leading term of q1's error when the error is C h^(p+1)).
  // Writes its largest |.| over the coordinates and that coordinate. The
  // Newton iterations it takes are not counted (newton_iterations() is the
  // trajectory's). Uses the stage scratch: call it after the step, before
  // anything reads the stages.
  template <int N = 0, class Accel>
  Status DoublingEstimate(double h, double t, const double* q, const double* v, const double* a0,
                          const double* q1, Accel&& accel, double* estimate, int* coordinate);

 private:
  friend TestSystemUpdate ResidualTestUpdateOfStep(Method, double, double, double);
  // One attempt of the method with step h: the new state into q1, v1 and,
  // for an adaptive method, the error norm into *err (scaled by the
  // tolerances; <= 1 accepts; fixed-step methods ignore err, which may be
  // null). Dispatches on method_ through TETHER_INTEGRATOR_METHODS. Every
  // step function has this signature.
  template <int N, class Accel>
  Status Attempt(double h, double t, const double* q, const double* v, const double* a0,
                 Accel&& accel, double* q1, double* v1, double* err);
#define TETHER_DECLARE_STEP(M, Fn, ...)                                                            \
  template <int N, class Accel>                                                                    \
  Status Fn(double h, double t, const double* q, const double* v, const double* a0, Accel&& accel, \
            double* q1, double* v1, double* err);
  TETHER_INTEGRATOR_METHODS(TETHER_DECLARE_STEP)
#undef TETHER_DECLARE_STEP
  template <class Accel>
  Status InitialStep(double t, const double* q, const double* v, const double* a0, Accel&& accel,
                     double* h);
  // When a step with a restored proposal (proposal_unverified_) would
  // fail: h_ becomes the starting step at (t, q, v); once.
  template <class Accel>
  Status DropUnverifiedProposal(double t, const double* q, const double* v, const double* a0,
                                Accel&& accel);
  // The adaptive method's dense output at t + theta h of the attempt just
  // made (its stages in the scratch; q1, v1 its end): into qo, vo.
  void DenseOutput(double theta, double h, const double* q, const double* v, const double* q1,
                   const double* v1, double* qo, double* vo) const;
  void Dopri5Dense(double theta, double h, const double* q, const double* v, const double* q1,
                   const double* v1, double* qo, double* vo) const;
  void RadauDense(double theta, const double* q, const double* v, double* qo, double* vo) const;

  Method method_;
  const MethodDescriptor* descriptor_;  // in kMethods
  int n_;
  double h_;
  double rtol_, atol_, max_step_;
  // A restored proposal (Restore) no step has been accepted with yet: a
  // step that would fail with it starts over from the starting step
  // (Step), so a proposal from elsewhere (1e300 in a crafted export) does
  // not fail the session, and one the method made itself steps as it would
  // have.
  bool proposal_unverified_ = false;
  // SDIRK3: IntegratorSpec.newton_tolerance or 1e-10; RADAU_IIA: it or
  // RADAU5's max(10 eps / rtol, min(0.03, sqrt(rtol))) (radau_iia.h).
  double newton_tol_;
  int newton_max_iter_;  // implicit (IntegratorSpec.max_newton_iterations or 10)
  uint64_t newton_iterations_ = 0;
  bool newton_failed_ = false;  // the last attempt's Newton iteration failed
  // RADAU_IIA: the last attempt's first Newton rate d1 / d0 (0 when the
  // attempt took fewer than two iterations), for Step's step-size limit
  // (radau_iia.h, kNewtonRateTarget).
  double newton_first_rate_ = 0;
  // The step-size factor that newton_first_rate_ allows (radau_iia.h;
  // infinite when no rate was measured).
  double NewtonRateFactor() const;
  // RADAU_IIA: filter the error estimate a second time when it rejects
  // (RADAU5's rule on the first attempt of a run and after a rejection;
  // set by Step for the attempt).
  bool refilter_ = false;
  // The last attempt's error estimate (StepResult::error_estimate and
  // error_coordinate), written by the adaptive step functions.
  double estimate_max_ = 0;
  int estimate_coordinate_ = -1;
  // Stage storage: positions Q, velocities V (the stage's q'), accelerations A.
  std::vector<double> Qs_, Vs_, As_;  // scratch_stages x n each (at least 2 x n)
  std::vector<double> qt_, vt_;       // trial state
  // Implicit methods: Newton residual and correction (SDIRK3: n each;
  // RADAU_IIA: 6 n and 3 n, and cn_ 2 n complex).
  std::vector<double> rn_, zn_;
  std::vector<std::complex<double>> cn_;
  // Step doubling (EnableStepDoubling): the half step's q, v, a, and the
  // second half step's q, v (n each); empty when off.
  std::vector<double> qd_;
};

// ---------------------------------------------------------------------------
// Implementation: the table's machinery here, each method's step function
// in a header of its own (one header per method over the table), included
// at the end.

template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::Attempt(double h, double t, const double* q,
                                                    const double* v, const double* a0,
                                                    Accel&& accel, double* q1, double* v1,
                                                    double* err) {
  switch (method_) {
#define TETHER_ATTEMPT_CASE(M, Fn, ...) \
  case v1::IntegratorSpec::M: return Fn<N>(h, t, q, v, a0, accel, q1, v1, err);
    TETHER_INTEGRATOR_METHODS(TETHER_ATTEMPT_CASE)
#undef TETHER_ATTEMPT_CASE
    default:
      return Internal("no step function for integration method " +
                      std::to_string(static_cast<int>(method_)));
  }
}

template <class Accel>
Status Integrator::InitialStep(double t, const double* q, const double* v, const double* a0,
                               Accel&& accel, double* h_out) {
  // Hairer's starting step: balance the size of the state and its derivative.
  const int n = n_;
  double d0 = 0, d1 = 0;
  for (int i = 0; i < n; ++i) {
    const double sq = atol_ + rtol_ * std::fabs(q[i]);
    const double sv = atol_ + rtol_ * std::fabs(v[i]);
    d0 += (q[i] / sq) * (q[i] / sq) + (v[i] / sv) * (v[i] / sv);
    d1 += (v[i] / sq) * (v[i] / sq) + (a0[i] / sv) * (a0[i] / sv);
  }
  d0 = std::sqrt(d0 / (2.0 * n));
  d1 = std::sqrt(d1 / (2.0 * n));
  double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  // Far from t = 0 the heuristic's 1e-6 (a body at rest) is below the
  // smallest step Step takes there, or rounds away (from t = 1e9 DOPRI5
  // stopped at once with a step size underflow, a model at rest included):
  // at least 64 smallest steps, which the error control can still reduce.
  // Near t = 0 (|t| < 1e5 for the 1e-6) this changes nothing.
  const double floor = 64 * AdaptiveMinStep(t);
  h0 = std::max(h0, floor);
  if (max_step_ > 0) h0 = std::min(h0, max_step_);
  for (int i = 0; i < n; ++i) {
    qt_[i] = q[i] + h0 * v[i];
    vt_[i] = v[i] + h0 * a0[i];
  }
  double* a1 = As_.data() + n;
  Status s = accel(t + h0, qt_.data(), vt_.data(), a1);
  if (!s.ok()) return s;
  double d2 = 0;
  for (int i = 0; i < n; ++i) {
    const double sq = atol_ + rtol_ * std::fabs(q[i]);
    const double sv = atol_ + rtol_ * std::fabs(v[i]);
    const double dq = (vt_[i] - v[i]) / sq, dv = (a1[i] - a0[i]) / sv;
    d2 += dq * dq + dv * dv;
  }
  d2 = std::sqrt(d2 / (2.0 * n)) / h0;
  const double dm = std::max(d1, d2);
  const double h1 = dm <= 1e-15 ? std::max(1e-6, h0 * 1e-3) : std::pow(0.01 / dm, 1.0 / 5);
  double h = std::max(std::min(100 * h0, h1), floor);
  if (max_step_ > 0) h = std::min(h, max_step_);
  *h_out = h;
  return Status::Ok();
}

template <int N, class Accel>
Status Integrator::StepFixedMethod(double t, const double* q, const double* v, const double* a0,
                                   double t_stop, Accel&& accel, double* q1, double* v1,
                                   StepResult* result) {
  *result = StepResult{};
  if (adaptive()) return Internal("StepFixedMethod on an adaptive method");
  // Land on t_stop when it is within (a hair over) one step. When what
  // remains is h itself up to the rounding of the times (t_stop = t' + K h
  // computed by a caller, t' on the grid), the step is the grid's own step
  // of exactly h and the grid goes on (grid_stop); the run still ends at
  // exactly t_stop. So communication steps of K h (CoSimulate, an FMU's
  // doStep) integrate the very steps of a run's K steps, bit for bit,
  // instead of a step of h +- an ulp that restarts the grid; only the time
  // reported differs from the grid's, by those ulps. The tolerance is 8
  // ulps of the times, far below any step a caller could mean.
  const double remaining = t_stop - t;
  // Only a step within two of t_stop (never with t_stop infinite) can be
  // the last one.
  if (remaining <= 2 * h_) {
    const double rounding =
        8 * std::numeric_limits<double>::epsilon() * std::max(std::fabs(t), std::fabs(t_stop));
    if (std::fabs(remaining - h_) <= rounding) {
      result->h = h_;
      result->grid_stop = true;
      return Attempt<N>(h_, t, q, v, a0, accel, q1, v1, nullptr);
    }
  }
  const bool last = remaining <= h_ * (1 + 1e-9);
  const double h = last ? remaining : h_;
  result->h = h;
  result->landed = last;
  return Attempt<N>(h, t, q, v, a0, accel, q1, v1, nullptr);
}

template <int N, class Accel>
Status Integrator::DoublingEstimate(double h, double t, const double* q, const double* v,
                                    const double* a0, const double* q1, Accel&& accel,
                                    double* estimate, int* coordinate) {
  const int n = N > 0 ? N : n_;
  *estimate = std::numeric_limits<double>::infinity();
  *coordinate = 0;
  if (adaptive() || qd_.empty()) return Internal("DoublingEstimate without step doubling");
  double* qm = qd_.data();
  double* vm = qm + n;
  double* am = vm + n;
  double* q2 = am + n;
  double* v2 = q2 + n;
  const uint64_t iterations = newton_iterations_;
  const double half = h / 2;
  Status s = Attempt<N>(half, t, q, v, a0, accel, qm, vm, nullptr);
  if (s.ok()) s = accel(t + half, qm, vm, am);
  if (s.ok()) s = Attempt<N>(h - half, t + half, qm, vm, am, accel, q2, v2, nullptr);
  newton_iterations_ = iterations;
  if (!s.ok()) return s;
  const double p2 = std::ldexp(1.0, descriptor_->order);
  const double factor = p2 / (p2 - 1);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const double e = factor * std::fabs(q1[i] - q2[i]);
    // A NaN is no estimate: it becomes infinite.
    if (!(e <= worst)) {
      worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
      *coordinate = i;
    }
  }
  *estimate = worst;
  return Status::Ok();
}

template <int N, class Accel>
Status Integrator::Step(double t, const double* q, const double* v, const double* a0, double t_stop,
                        Accel&& accel, double* q1, double* v1, StepResult* result) {
  if (!adaptive()) return StepFixedMethod<N>(t, q, v, a0, t_stop, accel, q1, v1, result);
  *result = StepResult{};
  const double remaining = t_stop - t;
  if (h_ <= 0) {
    Status s = InitialStep(t, q, v, a0, accel, &h_);
    if (!s.ok()) return s;
  }
  // Error control for every adaptive method: accept when the scaled error
  // norm is <= 1, and propose h (0.9 err^(-1/estimate), within [0.2, 10],
  // not growing after a rejection). An implicit method's failed Newton
  // iteration (newton_failed_) halves h (or less, NewtonRateFactor) and
  // retries, at most kMaxNewtonRetries times a step; RADAU_IIA's next step
  // is also limited by its Newton iteration's first rate. An evaluation
  // that fails at one of the attempt's trial states (kAborted: a value
  // that is not finite, such as a square root of a negative number beyond
  // the step's reach, or an M or W that is not positive definite there)
  // rejects the attempt, retried at a quarter of h (CVODE's cut after a
  // recoverable right-hand-side failure), the next step not growing
  // either; the start state's own evaluation was made before. Such
  // attempts count as rejections, and their evaluations left nothing in
  // the certificate (a failing evaluation returns before it records).
  constexpr int kMaxRejections = 60;
  constexpr int kMaxNewtonRetries = 10;
  constexpr double kEvaluationFailureCut = 0.25;
  const double exponent = -1.0 / descriptor_->estimate_order;
  int newton_retries = 0;
  int evaluation_failures = 0;
  std::string newton_failure;
  std::string last_failure;  // the last Newton or evaluation failure
  // The integrator's first attempt (newton_iterations_ is carried by
  // snapshots, so a restored integrator decides as the saved one would).
  const bool first = newton_iterations_ == 0;
  for (int attempt = 0;; ++attempt) {
    double h = h_;
    if (max_step_ > 0) h = std::min(h, max_step_);
    const double h_min = AdaptiveMinStep(t);
    // A step that would pass t_stop is shortened to end on it. Taken whole
    // and interpolated back, a step many times longer than what remains
    // (the proposal grows up to tenfold a step where the error is small, as
    // on a body at rest or a polynomial motion) gave the state at t_stop
    // from its dense output at a small theta, by cancellation between
    // terms of the long step's size: a mass pushed by 1 + 3t, advanced in
    // ten communication steps of 0.1 by RADAU_IIA, ended at x = 0.5625
    // instead of 0.5. Only what remains below the smallest step (a few ulps
    // of t) is still reached by interpolation.
    const bool shortened = h >= remaining && remaining >= h_min;
    if (shortened) h = remaining;
    // The step the clock takes: the caller's t + h is rounded, so the step
    // integrated is made that same difference, (t + h) - t (exact for
    // h <= |t|, Sterbenz). Otherwise the integrated time drifted from the
    // clock by up to half an ulp of t a step: from t = 1e12 (ulps of
    // 1.2e-4) a pendulum's two seconds in DOPRI5's steps of about 0.01 ended
    // 5e-4 away in x from the same two seconds from t = 0. At t = 0 and on a
    // shortened step (it ends on t_stop) nothing changes.
    if (!shortened && std::isfinite(t + h)) h = (t + h) - t;
    if (h < h_min || attempt >= kMaxRejections) {
      if (proposal_unverified_) {
        // A restored proposal the method cannot step with (a crafted
        // 1e300, or 1000 for RADAU_IIA's Newton iteration): the step starts
        // over from the starting step, as a fresh start would. Only here,
        // where the step would fail: a proposal the method made itself
        // steps as the saved integrator would have, rejections included.
        if (Status f = DropUnverifiedProposal(t, q, v, a0, accel); !f.ok()) return f;
        attempt = -1;
        newton_retries = evaluation_failures = 0;
        continue;
      }
      return Status(StatusCode::kAborted,
                    MethodName(method_) + " step size underflow (h = " + FormatNumber(h) +
                        " after " + std::to_string(attempt) +
                        " rejected attempts): the tolerances cannot be met; the solution may be "
                        "blowing up" +
                        AdaptiveTimeResolutionNote(t, h_min) +
                        (last_failure.empty() ? std::string() : "; last: " + last_failure));
    }
    double err = 0;
    // After an error rejection (attempts beyond the Newton retries).
    refilter_ = first || attempt > newton_retries;
    Status s = Attempt<N>(h, t, q, v, a0, accel, q1, v1, &err);
    if (!s.ok()) {
      if (!newton_failed_) {
        if (s.code() != StatusCode::kAborted) return s;
        last_failure = s.message() + " (at a trial state of a step of h = " + FormatNumber(h) +
                       " from t = " + FormatNumber(t) + ")";
        ++evaluation_failures;
        h_ = h * kEvaluationFailureCut;
        continue;
      }
      newton_failure = s.message();
      last_failure = newton_failure;
      if (++newton_retries > kMaxNewtonRetries) {
        if (proposal_unverified_) {  // as above
          if (Status f = DropUnverifiedProposal(t, q, v, a0, accel); !f.ok()) return f;
          attempt = -1;
          newton_retries = evaluation_failures = 0;
          continue;
        }
        return Status(StatusCode::kAborted,
                      newton_failure + " at t = " + FormatNumber(t) + " with h = " +
                          FormatNumber(h) + ", after " + std::to_string(kMaxNewtonRetries) +
                          " halvings (or larger cuts) of the step; expected a larger "
                          "max_newton_iterations or "
                          "newton_tolerance, or gains the model's forces can follow");
      }
      // Halved, or cut further when the first rate predicts more.
      h_ = h * std::clamp(NewtonRateFactor(), 0.2, 0.5);
      continue;
    }
    if (!std::isfinite(err)) err = 1e10;
    double fac = std::clamp(0.9 * std::pow(std::max(err, 1e-10), exponent), 0.2, 10.0);
    if (err <= 1.0) {
      proposal_unverified_ = false;
      // An implicit method's next step is also what its Newton iteration
      // is predicted to converge at (radau_iia.h, kNewtonRateTarget).
      fac = std::max(0.2, std::min(fac, NewtonRateFactor()));
      const double proposal = h_;
      h_ = h * (newton_retries > 0 || evaluation_failures > 0 ? std::min(1.0, fac) : fac);
      // A step shortened to land does not shrink the next one: the step
      // proposed before it stands when larger.
      if (shortened && newton_retries == 0) h_ = std::max(h_, proposal);
      result->rejected = attempt - newton_retries;
      result->newton_retries = newton_retries;
      result->error_estimate = estimate_max_;
      result->error_coordinate = estimate_coordinate_;
      result->error_norm = err;
      if (shortened) {
        // On t_stop; the time reported is t_stop itself (landed), and the
        // end is evaluated there, not at t + h, which may differ by an ulp.
        result->h = remaining;
        result->end_evaluated = false;
        result->landed = true;
      } else if (h > remaining * (1 + 1e-12) || remaining <= h * 1e-9) {
        // Passed t_stop: the dense output gives the state at t_stop.
        const double theta = std::clamp(remaining / h, 0.0, 1.0);
        std::copy(q1, q1 + n_, qt_.begin());
        std::copy(v1, v1 + n_, vt_.begin());
        DenseOutput(theta, h, q, v, qt_.data(), vt_.data(), q1, v1);
        result->h = remaining;
        result->end_evaluated = false;
        result->landed = true;
      } else {
        result->h = h;
        result->end_evaluated = descriptor_->fsal;
      }
      return Status::Ok();
    }
    h_ = h * std::min(1.0, fac);
  }
}

template <class Accel>
Status Integrator::DropUnverifiedProposal(double t, const double* q, const double* v,
                                          const double* a0, Accel&& accel) {
  proposal_unverified_ = false;
  return InitialStep(t, q, v, a0, accel, &h_);
}

}  // namespace tether

#include "engine/internal/integrate/dopri5.h"
#include "engine/internal/integrate/euler.h"
#include "engine/internal/integrate/radau_iia.h"
#include "engine/internal/integrate/rk4.h"
#include "engine/internal/integrate/sdirk3.h"
