#include "engine/internal/kkt/newton.h"

#include <algorithm>
#include <cmath>

#include "engine/internal/base/heap_bytes.h"

namespace tether {

NewtonSolver::NewtonSolver(const Model& model)
    : m_(model),
      ws_(model),
      work_(static_cast<size_t>(model.newton.tape.num_slots())),
      n_(model.nq + model.nc),
      sparse_(model.nq + model.nc > kNewtonDenseMax),
      rhs_(model.nq + model.nc),
      sol_(model.nq + model.nc) {
  const NewtonTape& nt = m_.newton;
  nt.tape.InitWork(work_.data());
  if (!sparse_) {
    Kd_.setZero(n_, n_);
    dense_lu_ = Eigen::PartialPivLU<Eigen::MatrixXd>(n_);
    return;
  }
  // The pattern, with each tape output's position in the value array.
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(nt.k_row.size());
  for (size_t k = 0; k < nt.k_row.size(); ++k) {
    triplets.emplace_back(nt.k_row[k], nt.k_col[k], 1.0);
  }
  K_.resize(n_, n_);
  K_.setFromTriplets(triplets.begin(), triplets.end());
  K_.makeCompressed();
  k_pos_.resize(nt.k_row.size());
  for (size_t k = 0; k < nt.k_row.size(); ++k) {
    const int col = nt.k_col[k];
    const int* begin = K_.innerIndexPtr() + K_.outerIndexPtr()[col];
    const int* end = K_.innerIndexPtr() + K_.outerIndexPtr()[col + 1];
    k_pos_[k] = static_cast<int>(std::lower_bound(begin, end, nt.k_row[k]) - K_.innerIndexPtr());
  }
  sparse_lu_.analyzePattern(K_);
}

Status NewtonSolver::Prepare(double t, const double* q, const double* v, const double* u, double c1,
                             double c2) {
  const NewtonTape& nt = m_.newton;
  const int d = m_.nq, nc = m_.nc;
  std::copy(u, u + m_.nu, ws_.u.begin());
  Status s = SolveKkt(m_, &ws_, t, q, v);
  if (!s.ok()) return s;
  double* w = work_.data();
  w[m_.var_t()] = t;
  for (int i = 0; i < d; ++i) {
    w[m_.var_q(i)] = q[i];
    w[m_.var_v(i)] = v[i];
    w[nt.var_a + i] = ws_.a[static_cast<size_t>(i)];
  }
  for (int k = 0; k < m_.nu; ++k) w[m_.var_u(k)] = u[k];
  for (int k = 0; k < nc; ++k) w[nt.var_lambda + k] = ws_.lambda[static_cast<size_t>(k)];
  w[nt.var_c1] = c1;
  w[nt.var_c2] = c2;
  nt.tape.Eval(w);
  const double* out = nt.tape.Outputs(w);
  const size_t nk = nt.k_row.size();
  for (size_t k = 0; k < nk; ++k) {
    if (!std::isfinite(out[k])) {
      return Aborted("the Newton matrix of the implicit step has a non-finite entry (row " +
                     std::to_string(nt.k_row[k]) + ", column " + std::to_string(nt.k_col[k]) + ")");
    }
  }
  if (!sparse_) {
    Kd_.setZero();
    for (size_t k = 0; k < nk; ++k) Kd_(nt.k_row[k], nt.k_col[k]) = out[k];
    dense_lu_.compute(Kd_);
    // PartialPivLU does not report singularity: a zero pivot gives inf.
    const auto& lu = dense_lu_.matrixLU();
    for (int i = 0; i < n_; ++i) {
      if (!(std::fabs(lu(i, i)) > 0)) {
        return Aborted("the Newton matrix of the implicit step is singular");
      }
    }
  } else {
    double* values = K_.valuePtr();
    for (size_t k = 0; k < nk; ++k) values[k_pos_[k]] = out[k];
    sparse_lu_.factorize(K_);
    if (sparse_lu_.info() != Eigen::Success) {
      return Aborted("the Newton matrix of the implicit step is singular (" +
                     sparse_lu_.lastErrorMessage() + ")");
    }
  }
  return Status::Ok();
}

void NewtonSolver::Solve(const double* r, double* z) {
  const NewtonTape& nt = m_.newton;
  const int d = m_.nq;
  const double* out = nt.tape.Outputs(work_.data());
  const double* Mv = out + nt.k_row.size();
  const double* Gv = Mv + nt.m_row.size();
  rhs_.setZero();
  for (size_t k = 0; k < nt.m_row.size(); ++k) rhs_[nt.m_row[k]] -= Mv[k] * r[nt.m_col[k]];
  for (size_t k = 0; k < nt.g_row.size(); ++k) rhs_[d + nt.g_row[k]] -= Gv[k] * r[nt.g_col[k]];
  if (!sparse_) {
    sol_.noalias() = dense_lu_.solve(rhs_);
  } else {
    sol_ = sparse_lu_.solve(rhs_);
  }
  for (int i = 0; i < d; ++i) z[i] = sol_[i];
}

int64_t NewtonSolver::heap_bytes() const {
  constexpr int64_t kDouble = sizeof(double), kIndex = sizeof(Eigen::Index);
  const int64_t n = n_;
  int64_t bytes = ws_.heap_bytes() + HeapBytesOf(work_, k_pos_) + 2 * n * kDouble;  // rhs_, sol_
  if (!sparse_) return bytes + 2 * n * n * kDouble + 2 * n * kIndex;  // Kd_, dense_lu_
  const int64_t nnz = K_.nonZeros();
  bytes += nnz * (kDouble + 4) + (n + 1) * 4;  // K_
  // Eigen's SparseLU: the orderings and elimination tree, then what its
  // memInit allocates for L and U at the first factorisation (the estimate
  // it gives for lwork = emptyIdxLU with its defaults: fill factor 20,
  // panel size 16, 3 markers), which later factorisations reuse (an
  // expansion beyond it is rare for these Newton matrices and is not
  // counted).
  constexpr int64_t kFill = 20, kPanel = 16, kMarkers = 3;
  const int64_t nzumax = std::min(kFill * (nnz + 1) / n, n) * n;
  const int64_t nzlmax = std::max<int64_t>(4, kFill) * (nnz + 1) / 4;
  const int64_t temp = (2 * kPanel + 4 + kMarkers) * n * kIndex + (kPanel + 1) * n * kDouble;
  bytes += 8 * n * kIndex + (5 * n + 5) * kIndex + temp + (nzlmax + nzumax) * kIndex +
           2 * nzumax * kDouble + n;
  return bytes;
}

}  // namespace tether
