#include "engine/sensitivity.h"

#include <Eigen/Dense>

#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/model/model.h"

namespace tether {

Status EvaluateKktJacobian(const Simulation& sim, double t, std::span<const double> q,
                           std::span<const double> v, std::span<const double> u, KktJacobian* out) {
  const Model& m = sim.model();
  const SensitivityTape& st = m.sensitivity;
  if (!st.enabled) {
    return Status(StatusCode::kFailedPrecondition,
                  "the model was compiled without its sensitivity tape "
                  "(CompileOptions::sensitivity)");
  }
  const int d = m.nq, nc = m.nc, nz = st.nz;
  if (static_cast<int>(q.size()) != d || static_cast<int>(v.size()) != d ||
      static_cast<int>(u.size()) != m.nu) {
    return Status(StatusCode::kInvalidArgument, "EvaluateKktJacobian: wrong sizes");
  }
  // a and lambda at the point: the step loop's own solve.
  Workspace ws(m);
  ws.u.assign(u.begin(), u.end());
  if (Status s = SolveKkt(m, &ws, t, q.data(), v.data()); !s.ok()) return s;
  // The tape at [t, q, v, u, a, lambda].
  std::vector<double> work(static_cast<size_t>(st.tape.num_slots()));
  st.tape.InitWork(work.data());
  work[static_cast<size_t>(m.var_t())] = t;
  for (int i = 0; i < d; ++i) {
    work[static_cast<size_t>(m.var_q(i))] = q[static_cast<size_t>(i)];
    work[static_cast<size_t>(m.var_v(i))] = v[static_cast<size_t>(i)];
    work[static_cast<size_t>(st.var_a + i)] = ws.a[static_cast<size_t>(i)];
  }
  for (int k = 0; k < m.nu; ++k) work[static_cast<size_t>(m.var_u(k))] = u[static_cast<size_t>(k)];
  for (int k = 0; k < nc; ++k)
    work[static_cast<size_t>(st.var_lambda + k)] = ws.lambda[static_cast<size_t>(k)];
  st.tape.Eval(work.data());
  const double* o = st.tape.Outputs(work.data());
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const Matrix> dphi(o + st.off_dphi, d, nz);
  const Eigen::Map<const Matrix> dpsi(o + st.off_dpsi, nc, nz);
  const Eigen::Map<const Matrix> M(o + st.off_M, d, d);
  const Eigen::Map<const Matrix> G(o + st.off_G, nc, d);
  const Eigen::Map<const Matrix> dy(o + st.off_dy, m.ny, nz);
  // The time partials as one more right-hand-side column after z's.
  Matrix rhs_phi(d, nz + 1), rhs_psi(nc, nz + 1);
  rhs_phi.leftCols(nz) = dphi;
  rhs_psi.leftCols(nz) = dpsi;
  for (int i = 0; i < d; ++i) rhs_phi(i, nz) = o[st.off_dphi_dt + i];
  for (int k = 0; k < nc; ++k) rhs_psi(k, nz) = o[st.off_dpsi_dt + k];

  // M da + G^T dlambda = dPhi, G da = dPsi, by the range space.
  const Eigen::LLT<Matrix> llt(M);
  if (llt.info() != Eigen::Success)
    return Status(StatusCode::kAborted, "the mass matrix is not positive definite here");
  Matrix da(d, nz + 1), dl(nc, nz + 1);
  if (nc == 0) {
    da = llt.solve(rhs_phi);
  } else {
    const Matrix Minv_Gt = llt.solve(Matrix(G.transpose()));
    const Matrix W = G * Minv_Gt;
    const Eigen::LDLT<Matrix> ldlt(W);
    if (ldlt.info() != Eigen::Success || !ldlt.isPositive())
      return Status(StatusCode::kAborted, "the constraints are dependent here");
    const Matrix Minv_dphi = llt.solve(rhs_phi);
    dl = ldlt.solve(G * Minv_dphi - rhs_psi);
    da = Minv_dphi - Minv_Gt * dl;
  }
  out->nq = d;
  out->nc = nc;
  out->nu = m.nu;
  out->ny = m.ny;
  out->nz = nz;
  // Row-major (nq x nz) etc.: the z columns, then the time column apart.
  const Matrix da_z = da.leftCols(nz), dl_z = dl.leftCols(nz);
  out->da.assign(da_z.data(), da_z.data() + da_z.size());
  out->dlambda.assign(dl_z.data(), dl_z.data() + static_cast<ptrdiff_t>(nc) * nz);
  out->dy.assign(dy.data(), dy.data() + dy.size());
  out->da_dt.resize(static_cast<size_t>(d));
  out->dlambda_dt.resize(static_cast<size_t>(nc));
  out->dy_dt.resize(static_cast<size_t>(m.ny));
  for (int i = 0; i < d; ++i) out->da_dt[static_cast<size_t>(i)] = da(i, nz);
  for (int k = 0; k < nc; ++k) out->dlambda_dt[static_cast<size_t>(k)] = dl(k, nz);
  for (int k = 0; k < m.ny; ++k) out->dy_dt[static_cast<size_t>(k)] = o[st.off_dy_dt + k];
  out->a = ws.a;
  out->lambda = ws.lambda;
  return Status();
}

}  // namespace tether
