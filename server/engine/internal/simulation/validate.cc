#include "engine/internal/simulation/validate.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/certificate/certificate.h"
#include "engine/internal/expr/parser.h"
#include "engine/internal/integrate/integrator.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/evaluate_kernel.h"
#include "engine/internal/kkt/newton.h"
#include "engine/internal/mechanism/tree.h"
#include "engine/internal/model/model.h"
#include "engine/mechanism.h"

namespace tether {
namespace validation {

std::string Num(double x) { return FormatNumber(x); }

void Error(std::vector<v1::Diagnostic>* d, std::string field, std::string message) {
  AddDiagnostic(d, v1::Diagnostic::ERROR, std::move(field), std::move(message));
}
void Warning(std::vector<v1::Diagnostic>* d, std::string field, std::string message) {
  AddDiagnostic(d, v1::Diagnostic::WARNING, std::move(field), std::move(message));
}

void CheckState(const v1::State& state, int nq, const std::string& field,
                std::vector<v1::Diagnostic>* d) {
  if (!std::isfinite(state.t())) {
    Error(d, field + ".t", "expected a finite time, found " + Num(state.t()));
  }
  if (state.q_size() != nq) {
    Error(d, field + ".q",
          "expected " + std::to_string(nq) + " coordinates (one per system.coordinates), found " +
              std::to_string(state.q_size()));
  } else {
    for (int i = 0; i < nq; ++i) {
      if (!std::isfinite(state.q(i))) {
        Error(d, field + ".q[" + std::to_string(i) + "]",
              "expected a finite number, found " + Num(state.q(i)));
      }
    }
  }
  if (state.v_size() != 0 && state.v_size() != nq) {
    Error(d, field + ".v",
          "expected " + std::to_string(nq) + " velocities (or none for a start at rest), found " +
              std::to_string(state.v_size()));
  } else {
    for (int i = 0; i < state.v_size(); ++i) {
      if (!std::isfinite(state.v(i))) {
        Error(d, field + ".v[" + std::to_string(i) + "]",
              "expected a finite number, found " + Num(state.v(i)));
      }
    }
  }
}

void CheckIntegrator(const v1::IntegratorSpec& in, std::vector<v1::Diagnostic>* d) {
  const Method m = in.method();
  const MethodDescriptor* method = FindMethod(m);
  if (!method) {
    Error(d, "integrator.method",
          "expected one of " + MethodList() + ", found " +
              (v1::IntegratorSpec::Method_IsValid(m) ? std::string("METHOD_UNSPECIFIED (not set)")
                                                     : std::to_string(static_cast<int>(m))));
    return;
  }
  auto nonneg = [&](double x, const char* name, const char* unit) {
    if (!std::isfinite(x) || x < 0) {
      Error(d, std::string("integrator.") + name,
            std::string("expected a finite value >= 0") + unit + ", found " + Num(x));
    }
  };
  if (method->implicit) {
    // RADAU_IIA's tolerance is a fraction of the error control's (radau_iia.h).
    const bool radau = m == v1::IntegratorSpec::RADAU_IIA;
    const char* default_tol =
        radau ? " (0 = max(10 eps / rtol, min(0.03, sqrt(rtol))))" : " (0 = 1e-10)";
    nonneg(in.newton_tolerance(), "newton_tolerance", default_tol);
    if (in.newton_tolerance() > 0 && in.newton_tolerance() < 1e-14) {
      Error(d, "integrator.newton_tolerance",
            "newton_tolerance = " + Num(in.newton_tolerance()) +
                " is below what double precision resolves; expected >= 1e-14" + default_tol);
    }
    if (radau && std::isfinite(in.newton_tolerance()) && in.newton_tolerance() >= 1) {
      Error(d, "integrator.newton_tolerance",
            "expected a value below 1 for RADAU_IIA (a fraction of the error tolerance rtol, "
            "atol; 0 = max(10 eps / rtol, min(0.03, sqrt(rtol)))), found " +
                Num(in.newton_tolerance()));
    }
    if (in.max_newton_iterations() > 100) {
      Error(d, "integrator.max_newton_iterations",
            "expected at most 100 Newton iterations per stage (0 = 10), found " +
                std::to_string(in.max_newton_iterations()));
    }
  }
  if (!method->adaptive) {
    if (!std::isfinite(in.step_size()) || in.step_size() <= 0) {
      Error(d, "integrator.step_size",
            std::string("expected a finite step > 0 (s) for ") + MethodName(m) + ", found " +
                Num(in.step_size()));
    }
  } else {
    nonneg(in.step_size(), "step_size", " (s; 0 = automatic)");
    nonneg(in.rtol(), "rtol", " (0 = 1e-6)");
    nonneg(in.atol(), "atol", " (0 = 1e-9)");
    nonneg(in.max_step(), "max_step", " (s; 0 = unlimited)");
    if (in.rtol() > 0 && in.rtol() < 1e-14) {
      Error(d, "integrator.rtol",
            "rtol = " + Num(in.rtol()) +
                " is below what double precision resolves; expected >= 1e-14");
    }
  }
}

void CheckCertificateOptions(const v1::CertificateOptions& c, std::vector<v1::Diagnostic>* d) {
  if (!v1::CertificateOptions::Mode_IsValid(c.mode())) {
    Error(d, "certificate.mode",
          "expected MODE_UNSPECIFIED, SAMPLED or ENCLOSED, found the number " +
              std::to_string(c.mode()));
  }
  if (c.samples_per_step() > 64) {
    Error(d, "certificate.samples_per_step",
          "expected at most 64 samples per step, found " + std::to_string(c.samples_per_step()));
  }
  if (!std::isfinite(c.consistency_tolerance()) || c.consistency_tolerance() < 0) {
    Error(d, "certificate.consistency_tolerance",
          "expected a finite value >= 0, found " + Num(c.consistency_tolerance()));
  }
  if (!std::isfinite(c.kkt_tolerance()) || c.kkt_tolerance() < 0) {
    Error(d, "certificate.kkt_tolerance",
          "expected a finite value >= 0, found " + Num(c.kkt_tolerance()));
  }
}

// Largest h for which `method` is stable on the test system with these
// gains (bisection on the spectral radius), or 0 when none was found.
double LargestStableStep(Method method, double alpha, double beta, double h_unstable) {
  double lo = 0, hi = h_unstable;
  for (int k = 0; k < 60; ++k) {
    double mid = 0.5 * (lo + hi);
    if (ResidualTestUpdate(method, mid, alpha, beta).spectral_radius < 1 - 1e-12)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// ---- Validate: the stages of CheckAndCompile -------------------------------

bool HasError(const std::vector<v1::Diagnostic>& diags) {
  for (const auto& d : diags) {
    if (d.severity() == v1::Diagnostic::ERROR) return true;
  }
  return false;
}

// The state a spec starts from (v empty: at rest), nq coordinates.
void LoadInitialState(const v1::State& initial, int nq, std::vector<double>* q,
                      std::vector<double>* v) {
  q->assign(initial.q().begin(), initial.q().end());
  v->assign(static_cast<size_t>(nq), 0.0);
  for (int i = 0; i < initial.v_size(); ++i) (*v)[static_cast<size_t>(i)] = initial.v(i);
}

// Validate: everything that needs no evaluation (the compiler's
// diagnostics come from CompileModel).
void ValidateSpec(const v1::SimulationSpec& spec, std::vector<v1::Diagnostic>* diags) {
  CheckState(spec.initial(), spec.system().coordinates_size(), "initial", diags);
  CheckIntegrator(spec.integrator(), diags);
  // A fixed-step method's grid must resolve its step where it starts
  // (GridResolves; the step loop checks every step after).
  const MethodDescriptor* method = FindMethod(spec.integrator().method());
  const double t0 = spec.initial().t(), h = spec.integrator().step_size();
  if (method && !method->adaptive && std::isfinite(t0) && std::isfinite(h) && h > 0 &&
      !GridResolves(t0, h)) {
    Error(diags, "initial.t", GridResolutionProblem(t0, h));
  }
  // An adaptive method's max_step must leave room for its first step (at
  // 1e-300 every run failed "step size underflow").
  if (method && method->adaptive && std::isfinite(t0) &&
      std::isfinite(spec.integrator().max_step())) {
    const std::string at_zero = AdaptiveStepProblem(0, spec.integrator().max_step());
    if (!at_zero.empty()) {
      Error(diags, "integrator.max_step", at_zero);
    } else if (std::string p = AdaptiveStepProblem(t0, spec.integrator().max_step()); !p.empty()) {
      Error(diags, "initial.t", p);
    }
  }
  CheckCertificateOptions(spec.certificate(), diags);
}

// Evaluate initial: the KKT solve at the initial state into ws and
// report.initial. False (with an ERROR diagnostic) when it fails.
bool EvaluateInitial(const Model& model, double t, const std::vector<double>& q,
                     const std::vector<double>& v, Workspace* ws, v1::ValidationReport* report,
                     std::vector<v1::Diagnostic>* diags) {
  Status s = SolveKkt(model, ws, t, q.data(), v.data());
  if (!s.ok()) {
    // The cause may be the constraints or the kinetic energy, not the state.
    const std::string field = s.violations().empty() ? "initial" : s.violations()[0].field;
    Error(diags, field, "evaluation at the initial state failed: " + s.message());
    return false;
  }
  v1::Frame* f = report->mutable_initial();
  f->set_t(t);
  for (double x : q) f->add_q(x);
  for (double x : v) f->add_v(x);
  for (double x : ws->a) f->add_a(x);
  for (double x : ws->lambda) f->add_lambda(x);
  auto* r = f->mutable_residuals();
  for (double x : ws->e) r->add_position(x);
  for (double x : ws->e_dot) r->add_velocity(x);
  r->set_dynamics(ws->dynamics_residual);
  r->set_constraint(ws->constraint_residual);
  std::vector<double> y(static_cast<size_t>(model.ny));
  EvaluateOutputs(model, ws, t, q.data(), v.data(), y.data());
  for (double x : y) f->add_outputs(x);
  return true;
}

// Judgement (a), initial consistency, on the evaluation in ws.
void JudgeInitialConsistency(const v1::CertificateOptions& options, const Workspace& ws,
                             v1::ValidationReport* report, std::vector<v1::Diagnostic>* diags) {
  const double tol = ConsistencyTolerance(options);
  double e0 = 0, w0 = 0;
  for (double x : ws.e) e0 = std::max(e0, std::fabs(x));
  for (double x : ws.e_dot) w0 = std::max(w0, std::fabs(x));
  report->set_initial_position_residual(e0);
  report->set_initial_velocity_residual(w0);
  report->set_initial_consistent(e0 <= tol && w0 <= tol);
  if (!report->initial_consistent()) {
    Warning(diags, "initial",
            "the initial state is not consistent: |g|_inf = " + Num(e0) +
                ", |Gv + g_t|_inf = " + Num(w0) + " (tolerance " + Num(tol) +
                "); the feedback pulls the residual back over time but does not make this "
                "state consistent");
  }
}

// A non-diagonal M's conditioning at the initial state, on the Cholesky
// factor of the evaluation in ws (a constant M's, or M(q0)'s): cond_1(M) =
// |M|_1 |M^-1|_1, each by Hager's estimate (evaluate_kernel.h) through the
// factor, O(nq^2) a product or solve. The accelerations are computed from
// M, so a relative error up to about cond(M) u can reach them however
// small the backward error judgement (b) measures: a warning when that is
// above 1e-6 (cond(M) above about 9e9). A diagonal M (constant, or a
// kinetic energy's on the sparse path) is solved exactly by components and
// has no such loss. At the initial state only: M(q) along the run is not
// followed.
void JudgeMassConditioning(const Model& model, const Workspace& ws,
                           std::vector<v1::Diagnostic>* diags) {
  if (model.inertia == Inertia::kDiagonal || model.nq < 2) return;
  const int d = model.nq;
  // The sparse path takes a kinetic energy's M(q) only when it is diagonal
  // (sparse_analysis.h), and keeps no dense factor.
  const std::vector<double>& factor = model.inertia == Inertia::kDense ? model.mass_chol : ws.L;
  if (factor.size() != static_cast<size_t>(d) * static_cast<size_t>(d)) return;
  const double* L = factor.data();
  const auto at = [&](int i, int k) { return L[static_cast<size_t>(i) * d + k]; };
  std::vector<double> x(static_cast<size_t>(d)), y(x), z(x), t(x);
  const auto times_m = [&](double* v) {  // v <- L (L^T v)
    for (int i = 0; i < d; ++i) {
      double s = 0;
      for (int k = i; k < d; ++k) s += at(k, i) * v[k];
      t[static_cast<size_t>(i)] = s;
    }
    for (int i = 0; i < d; ++i) {
      double s = 0;
      for (int k = 0; k <= i; ++k) s += at(i, k) * t[static_cast<size_t>(k)];
      v[i] = s;
    }
  };
  const auto solve_m = [&](double* v) {  // v <- L^-T (L^-1 v)
    for (int i = 0; i < d; ++i) {
      double s = v[i];
      for (int k = 0; k < i; ++k) s -= at(i, k) * v[k];
      v[i] = s / at(i, i);
    }
    for (int i = d - 1; i >= 0; --i) {
      double s = v[i];
      for (int k = i + 1; k < d; ++k) s -= at(k, i) * v[k];
      v[i] = s / at(i, i);
    }
  };
  int column = -1;
  const double norm =
      internal::InverseNormEstimateWith(times_m, d, x.data(), y.data(), z.data(), &column);
  const double inverse_norm =
      internal::InverseNormEstimateWith(solve_m, d, x.data(), y.data(), z.data(), &column);
  const double cond = norm * inverse_norm;
  constexpr double u = std::numeric_limits<double>::epsilon() / 2;
  if (cond * u <= 1e-6) return;
  const auto two_digits = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", x);
    return std::string(buf);
  };
  const bool kinetic = model.inertia == Inertia::kKinetic;
  const std::string where = column >= 0
                                ? " (M^-1 is largest in the column of coordinate '" +
                                      model.coordinate_names[static_cast<size_t>(column)] + "')"
                                : std::string();
  Warning(diags, kinetic ? "system.kinetic_energy" : "system.mass_matrix",
          std::string(kinetic ? "the mass matrix M(q) = d2T/dv2 at the initial state"
                              : "the mass matrix") +
              " is ill-conditioned: cond_1(M) is about " + two_digits(cond) + where +
              ", so the accelerations may carry relative errors up to about " +
              two_digits(cond * u) +
              " that the backward error (judgement (b)) does not show; expected cond_1(M) below "
              "about 1e10 (a tiny inertia beside a large one, such as a body of inertia I "
              "carried at a distance c with mass m, gives about m c^2 / I)");
}

// Judgement (c), stability of the step for the gains, on the residual test
// system.
void JudgeStepStability(const v1::IntegratorSpec& integrator, const Model& model,
                        v1::ValidationReport* report, std::vector<v1::Diagnostic>* diags) {
  const Method method = integrator.method();
  double h = integrator.step_size();
  if (FindMethod(method)->adaptive && integrator.max_step() > 0) {
    h = std::max(h, integrator.max_step());
  }
  if (model.nc == 0) {
    report->set_step_stable(true);
    report->set_stability_margin(1);
  } else if (h > 0) {
    double radius = 0;
    for (int i = 0; i < model.nc; ++i) {
      const double al = model.alpha[static_cast<size_t>(i)],
                   be = model.beta[static_cast<size_t>(i)];
      const double rho = ResidualTestUpdate(method, h, al, be).spectral_radius;
      // h * gains can overflow the test system (rho NaN): not stable, and
      // std::max would drop the NaN.
      radius = std::isfinite(rho) ? std::max(radius, rho) : HUGE_VAL;
      // With alpha = 0 or beta = 0 the continuous test system does not decay
      // strictly (beta = 0: an eigenvalue 0; alpha = 0: a pure oscillation),
      // so a method may or may not damp it (RK4 does for alpha = 0 at small
      // h); the gain warning already says why, so this one is skipped.
      if (!(rho < 1 - 1e-12) && al > 0 && be > 0) {
        const double h_ok = LargestStableStep(method, al, be, h);
        Warning(diags, "integrator.step_size",
                MethodName(method) + " with h = " + Num(h) +
                    " is not stable for the gains of constraint '" +
                    model.constraint_names[static_cast<size_t>(i)] + "' (alpha = " + Num(al) +
                    ", beta = " + Num(be) + "): " +
                    (std::isfinite(rho) ? "spectral radius " + Num(rho) + " >= 1"
                                        : std::string("the spectral radius is not a finite number "
                                                      "(h times the gains overflows)")) +
                    " on the residual test system" +
                    (h_ok > 0 ? "; expected h < " + Num(h_ok) : std::string()) +
                    ", or RK4_POST_STABILIZED, stable at any h for these gains and as "
                    "accurate as at mild ones (a diagnostic of the feedback scale, not a proof "
                    "for the nonlinear system)");
      }
    }
    report->set_stability_margin(1 - radius);
    report->set_step_stable(radius < 1 - 1e-12);
  } else {
    Warning(
        diags, "integrator",
        MethodName(method) +
            " chooses its own steps: stability for the gains is assessed on "
            "the steps actually taken, in the run's certificate (set max_step to check it here)");
  }
}

// Validate -> compile -> evaluate initial -> judge consistency and step
// stability. Fills the report (diagnostics in that order) and returns the
// model when there are no errors. When the compilation stopped (a compile
// limit, a cancel) sets `*stopped` and returns nullptr with the report
// unfilled.
std::shared_ptr<const Model> CheckAndCompileExpanded(const v1::SimulationSpec& spec,
                                                     const CompileOptions& options,
                                                     v1::ValidationReport* report, Status* stopped,
                                                     std::vector<v1::Diagnostic> diags);

std::shared_ptr<const Model> CheckAndCompile(const v1::SimulationSpec& spec,
                                             const CompileOptions& options,
                                             v1::ValidationReport* report, Status* stopped) {
  std::vector<v1::Diagnostic> diags;
  // A mechanism compiles to the expression form first (engine/mechanism.h);
  // everything below sees that form.
  v1::SimulationSpec expanded;
  if (spec.system().has_mechanism()) {
    expanded = spec;
    *expanded.mutable_system() = ExpandMechanism(spec.system(), &diags);
    // Names that become expression names as they are: a one-coordinate
    // joint's (its coordinate) and a loop closure's (its constraint). The
    // mechanism layer is below the expression language and cannot tell a
    // reserved one; found here, the error names the element the user wrote
    // (and tether urdf's its line), not the expanded system.coordinates[k].
    const v1::Mechanism& mech = spec.system().mechanism();
    const auto reserved = [&](const std::string& name, const std::string& field) {
      if (!expr::IsReservedName(name)) return;
      Error(&diags, field,
            QuoteForMessage(name) +
                " is reserved in expressions (t, pi, der and function names), and this name "
                "becomes one; choose another name");
    };
    for (int j = 0; j < mech.joints_size(); ++j) {
      if (mechanism::JointCoordinates(mech.joints(j).type()) == 1)  // named after the joint
        reserved(mech.joints(j).name(), "system.mechanism.joints[" + std::to_string(j) + "].name");
    }
    for (int k = 0; k < mech.loop_closures_size(); ++k) {
      reserved(mech.loop_closures(k).name(),
               "system.mechanism.loop_closures[" + std::to_string(k) + "].name");
    }
    if (HasError(diags)) {
      for (auto& d : diags) *report->add_diagnostics() = std::move(d);
      report->set_valid(false);
      return nullptr;
    }
  }
  return CheckAndCompileExpanded(spec.system().has_mechanism() ? expanded : spec, options, report,
                                 stopped, std::move(diags));
}

std::shared_ptr<const Model> CheckAndCompileExpanded(const v1::SimulationSpec& spec,
                                                     const CompileOptions& options,
                                                     v1::ValidationReport* report, Status* stopped,
                                                     std::vector<v1::Diagnostic> diags) {
  const MethodDescriptor* method = FindMethod(spec.integrator().method());
  std::shared_ptr<const Model> model =
      CompileModel(spec.system(), options, &diags, stopped, method && method->implicit);
  if (!stopped->ok()) return nullptr;
  ValidateSpec(spec, &diags);
  if (model && CertificateMode(spec.certificate()) == v1::CertificateOptions::ENCLOSED &&
      static_cast<int64_t>(model->defect_program.nodes.size()) >
          options.limits.max_enclosed_nodes) {
    // Each ENCLOSED session holds Taylor series per node of g (about 650
    // bytes: compile_options.h): bounded so that hostile constraints cannot
    // multiply a compile's memory by the number of sessions.
    Error(&diags, "certificate.mode",
          "ENCLOSED evaluates the constraints as Taylor series, about 650 bytes per expression "
          "node per session: at most " +
              std::to_string(options.limits.max_enclosed_nodes) + " nodes, found " +
              std::to_string(model->defect_program.nodes.size()) + "; use SAMPLED");
  }
  if (model && !HasError(diags)) {
    Workspace ws(*model);
    std::vector<double> q, v;
    LoadInitialState(spec.initial(), model->nq, &q, &v);
    if (EvaluateInitial(*model, spec.initial().t(), q, v, &ws, report, &diags)) {
      JudgeInitialConsistency(spec.certificate(), ws, report, &diags);
      JudgeMassConditioning(*model, ws, &diags);
      JudgeStepStability(spec.integrator(), *model, report, &diags);
    }
  }
  const bool has_error = HasError(diags);
  for (auto& d : diags) *report->add_diagnostics() = std::move(d);
  report->set_valid(!has_error);
  return has_error ? nullptr : model;
}

}  // namespace validation

using validation::CheckAndCompile;

Status Validate(const v1::SimulationSpec& spec, const CompileOptions& options,
                v1::ValidationReport* report) {
  Status stopped;
  CheckAndCompile(spec, options, report, &stopped);
  return stopped;
}

v1::ValidationReport Validate(const v1::SimulationSpec& spec) {
  v1::ValidationReport report;
  Status s = Validate(spec, CompileOptions{}, &report);
  if (!s.ok()) {
    // Never fails: the limit becomes the report's one error.
    report.Clear();
    v1::Diagnostic* d = report.add_diagnostics();
    d->set_severity(v1::Diagnostic::ERROR);
    d->set_field(s.violations().empty() ? "system" : s.violations()[0].field);
    d->set_message(s.violations().empty() ? s.message() : s.violations()[0].description);
    report.set_valid(false);
  }
  return report;
}

Status ErrorsToStatus(const v1::ValidationReport& report) {
  std::vector<FieldViolation> violations;
  std::string message;
  for (const auto& d : report.diagnostics()) {
    if (d.severity() != v1::Diagnostic::ERROR) continue;
    violations.push_back({d.field(), d.message()});
    if (!message.empty()) message += "; ";
    message += d.field() + ": " + d.message();
  }
  if (violations.empty()) return Status::Ok();
  return InvalidArgument(std::move(message), std::move(violations));
}

}  // namespace tether
