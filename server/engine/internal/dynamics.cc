#include "engine/internal/dynamics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/internal/evaluate_kernel.h"

namespace tether {

namespace internal {

bool AllFinite(const Model& m, const Workspace& ws) {
  const int n = m.dynamics.num_outputs();
  for (int k = 0; k < n; ++k) {
    if (!std::isfinite(ws.dyn_out[k])) return false;
  }
  return true;
}

Status NonFinite(const std::string& what) { return Aborted(what + " is not finite"); }

// Names the first non-finite tape output.
Status DescribeNonFinite(const Model& m, const Workspace& ws) {
  const double* out = ws.dyn_out;
  const int d = m.nq, nc = m.nc;
  auto bad = [](double x) { return !std::isfinite(x); };
  for (int i = 0; i < nc; ++i) {
    if (bad(out[m.off_g + i])) return NonFinite("constraint '" + m.constraint_names[i] + "' g");
    for (int j = 0; j < d; ++j) {
      if (bad(out[m.off_G + i * d + j])) {
        return NonFinite("constraint Jacobian dg/dq entry (" + m.constraint_names[i] + ", " +
                         m.coordinate_names[j] + ")");
      }
    }
    if (bad(out[m.off_gt + i]))
      return NonFinite("dg/dt of constraint '" + m.constraint_names[i] + "'");
    if (bad(out[m.off_H + i]))
      return NonFinite("H (curvature term) of constraint '" + m.constraint_names[i] + "'");
  }
  for (int i = 0; i < d; ++i) {
    if (bad(out[m.off_F + i]))
      return NonFinite("force F on coordinate '" + m.coordinate_names[i] + "'");
  }
  if (m.inertia == Inertia::kKinetic) {
    for (int i = 0; i < d * d; ++i) {
      if (bad(out[m.off_M + i])) {
        return NonFinite("mass matrix M(q) entry (" + m.coordinate_names[i / d] + ", " +
                         m.coordinate_names[i % d] + ")");
      }
    }
  }
  return NonFinite("an input or state value");
}

Status DependentConstraints(const Model& m, Workspace* ws, int row, double t) {
  // Row `row` of Y (= L^-1 G^T) is (nearly) in the span of the rows before
  // it: find the combination to name the constraints involved.
  const int nc = m.nc;
  std::string names = "'" + m.constraint_names[static_cast<size_t>(row)] + "'";
  if (row > 0) {
    // c solves W[0:row, 0:row] c = W[0:row, row], with the first `row`
    // rows of the LDL^T factor already valid in ws->W (ws->W_inv_diag).
    // W[0:row,row] is the upper triangle, untouched by the factorisation.
    std::vector<double> c(static_cast<size_t>(row));
    for (int k = 0; k < row; ++k)
      c[static_cast<size_t>(k)] = ws->W[static_cast<size_t>(k * nc + row)];
    LdltSolve(ws->W.data(), ws->W_inv_diag.data(), row, nc, c.data());
    double cmax = 0;
    for (double x : c) cmax = std::max(cmax, std::fabs(x));
    for (int k = 0; k < row; ++k) {
      if (std::fabs(c[static_cast<size_t>(k)]) > 1e-6 * cmax) {
        names += ", '" + m.constraint_names[static_cast<size_t>(k)] + "'";
      }
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", t);
  std::string message = "constraints " + names + " are dependent (or nearly so) at t = " + buf +
                        ": W = G M^-1 G^T is singular or ill-conditioned; expected constraint "
                        "gradients of full row rank";
  return Aborted(message, {{"system.constraints", message}});
}

}  // namespace internal

Workspace::Workspace(const Model& m)
    : u(m.input_defaults),
      dyn_work(static_cast<size_t>(m.dynamics.num_slots())),
      con_work(static_cast<size_t>(m.constraints.num_slots())),
      out_work(static_cast<size_t>(m.outputs.num_slots())),
      a(static_cast<size_t>(m.nq)),
      lambda(static_cast<size_t>(m.nc)),
      e(static_cast<size_t>(m.nc)),
      e_dot(static_cast<size_t>(m.nc)),
      constraint_magnitude(static_cast<size_t>(m.nc)),
      L(m.inertia == Inertia::kKinetic ? static_cast<size_t>(m.nq * m.nq) : 0),
      L_inv_diag(m.inertia == Inertia::kKinetic ? static_cast<size_t>(m.nq) : 0),
      Minv_F(static_cast<size_t>(m.nq)),
      Y(static_cast<size_t>(m.nc * m.nq)),
      W(static_cast<size_t>(m.nc * m.nc)),
      W_inv_diag(static_cast<size_t>(m.nc)),
      rhs(static_cast<size_t>(m.nc)),
      tmp(static_cast<size_t>(m.nq)),
      r1(static_cast<size_t>(m.nq)),
      kkt_scratch(static_cast<size_t>(m.nq)),
      cond_x(static_cast<size_t>(m.nc)),
      cond_y(static_cast<size_t>(m.nc)),
      cond_z(static_cast<size_t>(m.nc)) {
  cond_involved.assign(static_cast<size_t>(m.nc), 0);
  m.dynamics.InitWork(dyn_work.data());
  m.constraints.InitWork(con_work.data());
  m.outputs.InitWork(out_work.data());
  dyn_out = m.dynamics.Outputs(dyn_work.data());
  con_out = m.constraints.Outputs(con_work.data());
}

using internal::EvaluateImpl;

template <int D, int C>
Status SolveKktSized(const Model& m, Workspace* ws, double t, const double* q, const double* v) {
  return EvaluateImpl<D, C>(m, ws, t, q, v, nullptr);
}
#define TETHER_INSTANTIATE(D, C)                                                       \
  template Status SolveKktSized<D, C>(const Model&, Workspace*, double, const double*, \
                                      const double*);
TETHER_FIXED_SIZES(TETHER_INSTANTIATE)
TETHER_INSTANTIATE(0, 0)
#undef TETHER_INSTANTIATE

namespace internal {
template <Record kRecord>
Status EvaluateGeneralStage(const Model& m, Workspace* ws, double t, const double* q,
                            const double* v, double* a_out) {
  return EvaluateImpl<0, 0, kRecord>(m, ws, t, q, v, a_out);
}
template Status EvaluateGeneralStage<Record::kNothing>(const Model&, Workspace*, double,
                                                       const double*, const double*, double*);
template Status EvaluateGeneralStage<Record::kStatistics>(const Model&, Workspace*, double,
                                                          const double*, const double*, double*);
}  // namespace internal

Status SolveKkt(const Model& m, Workspace* ws, double t, const double* q, const double* v) {
  // Small systems get unrolled instances; everything else the general one.
#define TETHER_CASE(D, C) \
  if (m.nq == D && m.nc == C) return SolveKktSized<D, C>(m, ws, t, q, v);
  TETHER_FIXED_SIZES(TETHER_CASE)
#undef TETHER_CASE
  return SolveKktSized<0, 0>(m, ws, t, q, v);
}

void EvaluateConstraints(const Model& m, Workspace* ws, double t, const double* q,
                         const double* v) {
  internal::LoadVars(m, m.nq, *ws, t, q, v, ws->con_work.data());
  m.constraints.Eval(ws->con_work.data());
}

void EvaluateOutputs(const Model& m, Workspace* ws, double t, const double* q, const double* v,
                     double* y) {
  internal::LoadVars(m, m.nq, *ws, t, q, v, ws->out_work.data());
  m.outputs.Eval(ws->out_work.data(), y);
}

}  // namespace tether
