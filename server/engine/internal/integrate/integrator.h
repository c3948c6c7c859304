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
// adaptive, stages, scratch stages, Newton iterates count into (b)).
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
// Adding a method: one line here, its Step function below, and its
// enumerator in proto/tether/v1/simulation.proto. Validation, the method
// list in messages, the stability judgement (ResidualTestUpdate), the
// scratch and the step loop all read the table. (An adaptive method also
// needs its dense output and first-same-as-last handling in Step, which
// are DOPRI5's today.)
#define TETHER_INTEGRATOR_METHODS(X)                                          \
  X(EXPLICIT_EULER, StepExplicitEuler, 1, false, 1, 0, false, false)          \
  X(SEMI_IMPLICIT_EULER, StepSemiImplicitEuler, 1, false, 1, 0, false, false) \
  X(RK4, StepRk4, 4, false, 4, 3, false, false)                               \
  X(DOPRI5, StepDopri5, 5, true, 7, 7, false, false)                          \
  X(SDIRK3, StepSdirk3, 3, false, 3, 3, true, true)

struct MethodDescriptor {
  Method method;
  int order;
  bool adaptive;
  int stages;
  int scratch_stages;
  bool newton_iterates_count_in_judgement_b;
  bool implicit;
};

inline constexpr MethodDescriptor kMethods[] = {
#define TETHER_DESCRIPTOR(M, Fn, order, adaptive, stages, scratch, newton_b, implicit) \
  {v1::IntegratorSpec::M, order, adaptive, stages, scratch, newton_b, implicit},
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
  int rejected = 0;  // DOPRI5 attempts rejected by error control
};

// Update matrix of one step of `method` with step h on the residual test
// system (e, w)' = [[0, 1], [-beta^2, -2 alpha]] (e, w), and its spectral
// radius (|eigenvalue| max; < 1 means strict decay).
struct TestSystemUpdate {
  double R[2][2];
  double spectral_radius;
};
TestSystemUpdate ResidualTestUpdate(Method method, double h, double alpha, double beta);

class Integrator {
 public:
  // n: number of coordinates. spec must have been validated.
  Integrator(const v1::IntegratorSpec& spec, int n);

  Method method() const { return method_; }
  // Heap bytes held (heap_bytes.h).
  int64_t heap_bytes() const;
  const MethodDescriptor& descriptor() const { return *descriptor_; }
  bool adaptive() const { return descriptor_->adaptive; }
  // Fixed-step: the step size. DOPRI5: the next proposed step (0 until the
  // first step chose one).
  double step_size() const { return h_; }
  // SDIRK3: Newton iterations (acceleration evaluations at trial states)
  // taken since the integrator was made.
  uint64_t newton_iterations() const { return newton_iterations_; }

  // What the integrator carries from one step to the next (DOPRI5's
  // proposed step, SDIRK3's Newton count), for snapshots: restoring it
  // makes the next steps those the saved integrator would have taken.
  // Restore checks nothing: Simulation::RestoreState validates first.
  struct Carried {
    double next_step_size = 0;  // adaptive methods only
    uint64_t newton_iterations = 0;
  };
  Carried carried() const { return {adaptive() ? h_ : 0, newton_iterations_}; }
  void Restore(const Carried& c) {
    if (adaptive()) h_ = c.next_step_size;
    newton_iterations_ = c.newton_iterations;
  }

  // One step from (t, q, v), with a0 = a(t, q, v) already evaluated, ending
  // no later than t_stop. Writes the new state into q1, v1 (n each, distinct
  // from q, v). `accel(t, q, v, a)` returns Status. Fixed-step methods take
  // exactly step_size() unless t_stop is closer; DOPRI5 controls the error
  // and, when its accepted step passes t_stop, lands on t_stop with its
  // dense output. N > 0 declares n == N at compile time (the loops unroll).
  template <int N = 0, class Accel>
  Status Step(double t, const double* q, const double* v, const double* a0, double t_stop,
              Accel&& accel, double* q1, double* v1, StepResult* result);
  // Step for a fixed-step method only (!adaptive()): its `accel` calls are
  // all intermediate stages, never at the new state (end_evaluated false).
  template <int N = 0, class Accel>
  Status StepFixedMethod(double t, const double* q, const double* v, const double* a0,
                         double t_stop, Accel&& accel, double* q1, double* v1, StepResult* result);

 private:
  friend TestSystemUpdate ResidualTestUpdate(Method, double, double, double);
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
  void Dopri5Dense(double theta, double h, const double* q, const double* v, const double* q1,
                   const double* v1, double* qo, double* vo) const;

  Method method_;
  const MethodDescriptor* descriptor_;  // in kMethods
  int n_;
  double h_;
  double rtol_, atol_, max_step_;
  double newton_tol_;    // SDIRK3 (IntegratorSpec.newton_tolerance or 1e-10)
  int newton_max_iter_;  // SDIRK3 (IntegratorSpec.max_newton_iterations or 10)
  uint64_t newton_iterations_ = 0;
  // Stage storage: positions Q, velocities V (the stage's q'), accelerations A.
  std::vector<double> Qs_, Vs_, As_;  // scratch_stages x n each (at least 2 x n)
  std::vector<double> qt_, vt_;       // trial state
  std::vector<double> rn_, zn_;       // SDIRK3: Newton residual and correction
};

// ---------------------------------------------------------------------------
// Implementation.

namespace dopri5 {
// Dormand-Prince 5(4) tableau (Hairer, Norsett & Wanner, vol. I).
inline constexpr double c[7] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1};
inline constexpr double a[7][6] = {
    {0, 0, 0, 0, 0, 0},
    {1.0 / 5, 0, 0, 0, 0, 0},
    {3.0 / 40, 9.0 / 40, 0, 0, 0, 0},
    {44.0 / 45, -56.0 / 15, 32.0 / 9, 0, 0, 0},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0, 0},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656, 0},
    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}};
// e = b - b_hat (error estimate weights).
inline constexpr double e[7] = {71.0 / 57600,      0,          -71.0 / 16695, 71.0 / 1920,
                                -17253.0 / 339200, 22.0 / 525, -1.0 / 40};
// Dense output (Hairer's contd5).
inline constexpr double d[7] = {-12715105075.0 / 11282082432.0,  0,
                                87487479700.0 / 32700410799.0,   -10690763975.0 / 1880347072.0,
                                701980252875.0 / 199316789632.0, -1453857185.0 / 822651844.0,
                                69997945.0 / 29380423.0};
}  // namespace dopri5

template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::StepExplicitEuler(double h, double, const double* q,
                                                              const double* v, const double* a0,
                                                              Accel&&, double* q1, double* v1,
                                                              double*) {
  const int n = N > 0 ? N : n_;
  for (int i = 0; i < n; ++i) {
    q1[i] = q[i] + h * v[i];
    v1[i] = v[i] + h * a0[i];
  }
  return Status::Ok();
}

template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::StepSemiImplicitEuler(double h, double, const double* q,
                                                                  const double* v, const double* a0,
                                                                  Accel&&, double* q1, double* v1,
                                                                  double*) {
  const int n = N > 0 ? N : n_;
  for (int i = 0; i < n; ++i) {
    v1[i] = v[i] + h * a0[i];
    q1[i] = q[i] + h * v1[i];
  }
  return Status::Ok();
}

namespace rk4 {
// The general size's stage arithmetic (N = 0), out of line in integrator.cc,
// which is built with the loop vectorizer (simulation.cc, where the step
// loop is instantiated, is not: its loops are a handful of elements for
// small systems). Elementwise, so the same bits as the scalar loops:
// Q = q + c dq, V = v + c dv.
void Stage(int n, double c, const double* q, const double* v, const double* dq, const double* dv,
           double* __restrict Q, double* __restrict V);
// q1 = q + h6 (v + 2 V2 + 2 V3 + V4), v1 = v + h6 (a0 + 2 A2 + 2 A3 + A4).
void Combine(int n, double h6, const double* q, const double* v, const double* a0, const double* V2,
             const double* V3, const double* V4, const double* A2, const double* A3,
             const double* A4, double* __restrict q1, double* __restrict v1);
}  // namespace rk4

template <int N, class Accel>
TETHER_INTEGRATOR_INLINE Status Integrator::StepRk4(double h, double t, const double* q,
                                                    const double* v, const double* a0,
                                                    Accel&& accel, double* q1, double* v1,
                                                    double*) {
  const int n = N > 0 ? N : n_;
  double* Q = Qs_.data();
  double* V = Vs_.data();
  double* A = As_.data();
  // Stage 2.
  if constexpr (N == 0) {
    rk4::Stage(n, 0.5 * h, q, v, v, a0, Q, V);
  } else {
    for (int i = 0; i < n; ++i) {
      Q[i] = q[i] + 0.5 * h * v[i];
      V[i] = v[i] + 0.5 * h * a0[i];
    }
  }
  Status s = accel(t + 0.5 * h, Q, V, A);
  if (!s.ok()) return s;
  // Stage 3.
  double* Q3 = Q + n;
  double* V3 = V + n;
  double* A3 = A + n;
  if constexpr (N == 0) {
    rk4::Stage(n, 0.5 * h, q, v, V, A, Q3, V3);
  } else {
    for (int i = 0; i < n; ++i) {
      Q3[i] = q[i] + 0.5 * h * V[i];
      V3[i] = v[i] + 0.5 * h * A[i];
    }
  }
  s = accel(t + 0.5 * h, Q3, V3, A3);
  if (!s.ok()) return s;
  // Stage 4.
  double* Q4 = Q + 2 * n;
  double* V4 = V + 2 * n;
  double* A4 = A + 2 * n;
  if constexpr (N == 0) {
    rk4::Stage(n, h, q, v, V3, A3, Q4, V4);
  } else {
    for (int i = 0; i < n; ++i) {
      Q4[i] = q[i] + h * V3[i];
      V4[i] = v[i] + h * A3[i];
    }
  }
  s = accel(t + h, Q4, V4, A4);
  if (!s.ok()) return s;
  const double h6 = h / 6;
  if constexpr (N == 0) {
    rk4::Combine(n, h6, q, v, a0, V, V3, V4, A, A3, A4, q1, v1);
  } else {
    for (int i = 0; i < n; ++i) {
      q1[i] = q[i] + h6 * (v[i] + 2 * V[i] + 2 * V3[i] + V4[i]);
      v1[i] = v[i] + h6 * (a0[i] + 2 * A[i] + 2 * A3[i] + A4[i]);
    }
  }
  return Status::Ok();
}

namespace sdirk3 {
// The Newton matrix is evaluated afresh after an iteration whose correction
// is more than this fraction of the previous one (measured with
// bench/stiff_bench.cc: 0.1 against 0.05 and 0.2, a matrix a step, and a
// matrix every iteration).
inline constexpr double kNewtonRefreshRate = 0.1;
// Alexander's L-stable, stiffly accurate 3-stage SDIRK of order 3 (Hairer &
// Wanner, vol. II, table IV.6.5): gamma is the root in (1/6, 1/2) of
// x^3 - 3 x^2 + 3/2 x - 1/6; the last row of a is the weights b, so the new
// state is the last stage.
inline constexpr double gamma = 0.43586652150845899942;
inline constexpr double c[3] = {gamma, (1 + gamma) / 2, 1};
inline constexpr double a[3][3] = {
    {gamma, 0, 0},
    {(1 - gamma) / 2, gamma, 0},
    {-(6 * gamma * gamma - 16 * gamma + 1) / 4, (6 * gamma * gamma - 20 * gamma + 5) / 4, gamma}};
}  // namespace sdirk3

// SDIRK3: our own fixed-step implicit Runge-Kutta rather than SUNDIALS
// (CVODE's BDF or IDA). Chosen by reading, not by a measurement: the engine
// promises fixed steps taken exactly (t_anchor + k h), one-step methods whose
// update on the residual test system is a fixed 2 x 2 matrix (judgement
// (c)), and the same bits for the same description; CVODE and IDA choose
// their own steps and orders (a multistep history the test-system update and
// the certificate's per-step interpolant do not describe), need dense output
// for every frame, and their Newton policy (convergence-rate heuristics,
// Jacobian reuse across steps) is theirs. A fixed-step SDIRK keeps all three
// contracts (NewtonSolver, newton.h, factorises its Newton matrix).
//
// Stage i: with v^ = v + h sum_{j<i} a_ij A_j and q^ = q + h sum_{j<i} a_ij V_j
// + h gamma v^, the stage is V_i = v^ + c1 A_i, Q_i = q^ + c2 A_i (c1 = h gamma,
// c2 = c1^2), and A_i solves A_i = a(t + c_i h, Q_i, V_i). Simplified Newton:
// the first guess is the previous stage's A (a0 for the first). The matrix
// is K at the stage's first guess, kept while the iteration contracts (each
// correction at most kNewtonRefreshRate times the one before) and evaluated
// afresh at the current guess when it does not: one K for the whole step
// converged too slowly under stiff gains, as the constraint directions turn
// within a step (10 iterations short of 1e-10 for the circle at alpha =
// beta = 1000, h = 0.01). Fixed policy:
// an iteration evaluates a at the current guess and applies the correction
// z; it stops when the velocity change c1 |z|_inf is at most newton_tol_
// times max(1, |v^|_inf, c1 |A|_inf) (the size of the terms V_i sums), and
// fails after newton_max_iter_ iterations or on a non-finite correction. The
// `accel` offers the seam
//   Status PrepareNewton(double t, const double* q, const double* v, double c1, double c2)
//   Status SolveNewton(const double* r, double* z)  // z = -(I - c1 da/dv - c2 da/dq)^-1 r
// (an accel without it cannot run SDIRK3: Internal error).
template <int N, class Accel>
Status Integrator::StepSdirk3(double h, double t, const double* q, const double* v,
                              const double* a0, Accel&& accel, double* q1, double* v1, double*) {
  if constexpr (!requires(double* p) {
                  accel.PrepareNewton(t, q, v, h, h);
                  accel.SolveNewton(q, p);
                }) {
    return Internal("SDIRK3 called without the Newton seam");
  } else {
    using namespace sdirk3;
    const int n = N > 0 ? N : n_;
    const double c1 = h * gamma, c2 = c1 * c1;
    Status s;
    double* r = rn_.data();
    double* z = zn_.data();
    for (int st = 0; st < 3; ++st) {
      double* Q = Qs_.data() + st * n;
      double* V = Vs_.data() + st * n;
      double* A = As_.data() + st * n;
      // v^ into V, q^ into Q (the known parts of the stage).
      double vhat_max = 1;
      for (int i = 0; i < n; ++i) {
        double dv = 0, dq = 0;
        for (int j = 0; j < st; ++j) {
          dv += a[st][j] * As_[static_cast<size_t>(j * n + i)];
          dq += a[st][j] * Vs_[static_cast<size_t>(j * n + i)];
        }
        V[i] = v[i] + h * dv;
        Q[i] = q[i] + h * dq + c1 * V[i];
        A[i] = st == 0 ? a0[i] : As_[static_cast<size_t>((st - 1) * n + i)];
        vhat_max = std::max(vhat_max, std::fabs(V[i]));
      }
      double* Qt = qt_.data();
      double* Vt = vt_.data();
      bool converged = false;
      double correction = 0, scale = 0, previous = 0;
      for (int it = 0; it < newton_max_iter_; ++it) {
        for (int i = 0; i < n; ++i) {
          Vt[i] = V[i] + c1 * A[i];
          Qt[i] = Q[i] + c2 * A[i];
        }
        // The Newton matrix: at the stage's first guess, and again at the
        // current guess when the last iteration contracted by less than
        // kNewtonRefreshRate.
        if (it == 0 || (it > 1 && correction > kNewtonRefreshRate * previous)) {
          s = accel.PrepareNewton(t + c[st] * h, Qt, Vt, c1, c2);
          if (!s.ok()) return s;
        }
        previous = correction;
        ++newton_iterations_;
        s = accel(t + c[st] * h, Qt, Vt, r);
        if (!s.ok()) return s;
        for (int i = 0; i < n; ++i) r[i] = A[i] - r[i];
        s = accel.SolveNewton(r, z);
        if (!s.ok()) return s;
        correction = 0;
        scale = vhat_max;
        for (int i = 0; i < n; ++i) {
          A[i] += z[i];
          correction = std::max(correction, c1 * std::fabs(z[i]));
          scale = std::max(scale, c1 * std::fabs(A[i]));
        }
        if (!std::isfinite(correction)) break;
        if (correction <= newton_tol_ * scale) {
          converged = true;
          break;
        }
      }
      if (!converged) {
        return Status(
            StatusCode::kAborted,
            "SDIRK3 Newton iteration " +
                std::string(std::isfinite(correction) ? "did not converge"
                                                      : "diverged (non-finite correction)") +
                " at stage " + std::to_string(st + 1) + " of 3 within " +
                std::to_string(newton_max_iter_) + " iterations (last velocity correction " +
                FormatNumber(correction) + ", tolerance " + FormatNumber(newton_tol_ * scale) +
                ", step h = " + FormatNumber(h) +
                "); expected a smaller step_size, or a larger newton_tolerance or "
                "max_newton_iterations");
      }
      // The stage itself (its V and Q replace v^, q^).
      for (int i = 0; i < n; ++i) {
        V[i] += c1 * A[i];
        Q[i] += c2 * A[i];
      }
    }
    // Stiffly accurate: the new state is the last stage.
    const double* Q3 = Qs_.data() + 2 * n;
    const double* V3 = Vs_.data() + 2 * n;
    for (int i = 0; i < n; ++i) {
      q1[i] = Q3[i];
      v1[i] = V3[i];
    }
    return Status::Ok();
  }
}

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

// Not forced inline: the adaptive path calls it through Attempt's switch,
// as it called Dopri5Attempt before, and the fixed-step loop stays small.
template <int N, class Accel>
Status Integrator::StepDopri5(double h, double t, const double* q, const double* v,
                              const double* a0, Accel&& accel, double* q1, double* v1,
                              double* err) {
  using namespace dopri5;
  const int n = N > 0 ? N : n_;
  double* Q = Qs_.data();
  double* V = Vs_.data();
  double* A = As_.data();
  for (int i = 0; i < n; ++i) {
    Q[i] = q[i];
    V[i] = v[i];
    A[i] = a0[i];
  }
  for (int s = 1; s < 7; ++s) {
    double* Qs = Q + s * n;
    double* Vs = V + s * n;
    for (int i = 0; i < n; ++i) {
      double dq = 0, dv = 0;
      for (int j = 0; j < s; ++j) {
        dq += a[s][j] * V[j * n + i];
        dv += a[s][j] * A[j * n + i];
      }
      Qs[i] = q[i] + h * dq;
      Vs[i] = v[i] + h * dv;
    }
    Status st = accel(t + c[s] * h, Qs, Vs, A + s * n);
    if (!st.ok()) return st;
  }
  // Stage 7 is at the 5th-order solution (FSAL).
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    q1[i] = Q[6 * n + i];
    v1[i] = V[6 * n + i];
    double eq = 0, ev = 0;
    for (int j = 0; j < 7; ++j) {
      eq += e[j] * V[j * n + i];
      ev += e[j] * A[j * n + i];
    }
    eq *= h;
    ev *= h;
    const double sq = atol_ + rtol_ * std::max(std::fabs(q[i]), std::fabs(q1[i]));
    const double sv = atol_ + rtol_ * std::max(std::fabs(v[i]), std::fabs(v1[i]));
    sum += (eq / sq) * (eq / sq) + (ev / sv) * (ev / sv);
  }
  *err = std::sqrt(sum / (2.0 * n));
  return Status::Ok();
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
  double h = std::min(100 * h0, h1);
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
Status Integrator::Step(double t, const double* q, const double* v, const double* a0, double t_stop,
                        Accel&& accel, double* q1, double* v1, StepResult* result) {
  if (!adaptive()) return StepFixedMethod<N>(t, q, v, a0, t_stop, accel, q1, v1, result);
  *result = StepResult{};
  const double remaining = t_stop - t;
  if (h_ <= 0) {
    Status s = InitialStep(t, q, v, a0, accel, &h_);
    if (!s.ok()) return s;
  }
  constexpr int kMaxRejections = 60;
  for (int attempt = 0;; ++attempt) {
    double h = h_;
    if (max_step_ > 0) h = std::min(h, max_step_);
    const double h_min = 16 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::fabs(t));
    if (h < h_min || attempt >= kMaxRejections) {
      return Status(StatusCode::kAborted, "DOPRI5 step size underflow (h = " + FormatNumber(h) +
                                              " after " + std::to_string(attempt) +
                                              " rejected attempts): the tolerances cannot be "
                                              "met; the solution may be blowing up");
    }
    double err = 0;
    Status s = Attempt<N>(h, t, q, v, a0, accel, q1, v1, &err);
    if (!s.ok()) return s;
    if (!std::isfinite(err)) err = 1e10;
    const double fac = std::clamp(0.9 * std::pow(std::max(err, 1e-10), -0.2), 0.2, 10.0);
    if (err <= 1.0) {
      h_ = h * fac;
      result->rejected = attempt;
      if (h > remaining * (1 + 1e-12) || remaining <= h * 1e-9) {
        // Passed t_stop: the dense output gives the state at t_stop.
        const double theta = std::clamp(remaining / h, 0.0, 1.0);
        std::copy(q1, q1 + n_, qt_.begin());
        std::copy(v1, v1 + n_, vt_.begin());
        Dopri5Dense(theta, h, q, v, qt_.data(), vt_.data(), q1, v1);
        result->h = remaining;
        result->end_evaluated = false;
        result->landed = true;
      } else {
        result->h = h;
        result->end_evaluated = true;
      }
      return Status::Ok();
    }
    h_ = h * std::min(1.0, fac);
  }
}

}  // namespace tether
