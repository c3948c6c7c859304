#include "engine/internal/kkt/newton.h"

#include <algorithm>
#include <cmath>

#include "engine/internal/base/heap_bytes.h"

namespace tether {

NewtonSolver::NewtonSolver(const Model& model, bool complex_pair)
    : m_(model),
      complex_pair_(complex_pair),
      ws_(model),
      work_(static_cast<size_t>(model.newton.tape.num_slots())),
      n_(model.nq + model.nc),
      sparse_(model.nq + model.nc > kNewtonDenseMax),
      rhs_(model.nq + model.nc),
      sol_(model.nq + model.nc) {
  const NewtonTape& nt = m_.newton;
  nt.tape.InitWork(work_.data());
  if (complex_pair_) {
    k_re_.resize(nt.k_row.size());
    crhs_.resize(n_);
    csol_.resize(n_);
  }
  if (!sparse_) {
    Kd_.setZero(n_, n_);
    dense_lu_ = Eigen::PartialPivLU<Eigen::MatrixXd>(n_);
    if (complex_pair_) {
      Kc_.setZero(n_, n_);
      dense_clu_ = Eigen::PartialPivLU<ComplexDense>(n_);
    }
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
  if (complex_pair_) {
    klu_real_ = std::make_unique<KluLu>(n_, K_.outerIndexPtr(), K_.innerIndexPtr(), false);
    klu_complex_ = std::make_unique<KluLu>(n_, K_.outerIndexPtr(), K_.innerIndexPtr(), true);
    kc_values_.resize(static_cast<size_t>(K_.nonZeros()));
  } else {
    sparse_lu_.analyzePattern(K_);
  }
}

Status NewtonSolver::LoadPoint(double t, const double* q, const double* v, const double* u) {
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
  return Status::Ok();
}

Status NewtonSolver::EvaluateK(double c1, double c2, const double** out_k) {
  const NewtonTape& nt = m_.newton;
  double* w = work_.data();
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
  *out_k = out;
  return Status::Ok();
}

Status NewtonSolver::FactorReal(const double* out) {
  const NewtonTape& nt = m_.newton;
  const size_t nk = nt.k_row.size();
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
    if (klu_real_) return klu_real_->Factor(values, "Newton matrix");
    sparse_lu_.factorize(K_);
    if (sparse_lu_.info() != Eigen::Success) {
      return Aborted("the Newton matrix of the implicit step is singular (" +
                     sparse_lu_.lastErrorMessage() + ")");
    }
  }
  return Status::Ok();
}

Status NewtonSolver::Prepare(double t, const double* q, const double* v, const double* u, double c1,
                             double c2) {
  Status s = LoadPoint(t, q, v, u);
  if (!s.ok()) return s;
  const double* out = nullptr;
  s = EvaluateK(c1, c2, &out);
  if (!s.ok()) return s;
  return FactorReal(out);
}

Status NewtonSolver::PreparePair(double t, const double* q, const double* v, const double* u,
                                 double c1, double c2, std::complex<double> d1,
                                 std::complex<double> d2) {
  if (!complex_pair_) return Internal("PreparePair on a NewtonSolver without the complex pair");
  Status s = LoadPoint(t, q, v, u);
  if (!s.ok()) return s;
  const NewtonTape& nt = m_.newton;
  const size_t nk = nt.k_row.size();
  // K is affine in (c1, c2): K(d) = K(Re d) + i (K(Re d + Im d) - K(Re d)).
  const double* out = nullptr;
  s = EvaluateK(d1.real(), d2.real(), &out);
  if (!s.ok()) return s;
  std::copy(out, out + nk, k_re_.begin());
  s = EvaluateK(d1.real() + d1.imag(), d2.real() + d2.imag(), &out);
  if (!s.ok()) return s;
  if (!sparse_) {
    Kc_.setZero();
    for (size_t k = 0; k < nk; ++k) {
      Kc_(nt.k_row[k], nt.k_col[k]) = std::complex<double>(k_re_[k], out[k] - k_re_[k]);
    }
    dense_clu_.compute(Kc_);
    const auto& lu = dense_clu_.matrixLU();
    for (int i = 0; i < n_; ++i) {
      if (!(std::abs(lu(i, i)) > 0)) {
        return Aborted("the complex Newton matrix of the implicit step is singular");
      }
    }
  } else {
    for (size_t k = 0; k < nk; ++k) {
      kc_values_[static_cast<size_t>(k_pos_[k])] =
          std::complex<double>(k_re_[k], out[k] - k_re_[k]);
    }
    s = klu_complex_->Factor(kc_values_.data(), "complex Newton matrix");
    if (!s.ok()) return s;
  }
  // The real matrix last: its evaluation leaves the tape's outputs (M and G
  // do not depend on c1, c2) as Solve reads them.
  s = EvaluateK(c1, c2, &out);
  if (!s.ok()) return s;
  return FactorReal(out);
}

template <class Scalar, class Vector>
void NewtonSolver::NewtonRhs(const Scalar* r, Vector* rhs) const {
  const NewtonTape& nt = m_.newton;
  const int d = m_.nq;
  const double* out = nt.tape.Outputs(work_.data());
  const double* Mv = out + nt.k_row.size();
  const double* Gv = Mv + nt.m_row.size();
  rhs->setZero();
  for (size_t k = 0; k < nt.m_row.size(); ++k) (*rhs)[nt.m_row[k]] -= Mv[k] * r[nt.m_col[k]];
  for (size_t k = 0; k < nt.g_row.size(); ++k) (*rhs)[d + nt.g_row[k]] -= Gv[k] * r[nt.g_col[k]];
}

void NewtonSolver::Solve(const double* r, double* z) {
  NewtonRhs(r, &rhs_);
  if (!sparse_) {
    sol_.noalias() = dense_lu_.solve(rhs_);
  } else if (klu_real_) {
    sol_ = rhs_;
    klu_real_->Solve(sol_.data());
  } else {
    sol_ = sparse_lu_.solve(rhs_);
  }
  for (int i = 0; i < m_.nq; ++i) z[i] = sol_[i];
}

void NewtonSolver::SolveComplex(const std::complex<double>* r, std::complex<double>* z) {
  NewtonRhs(r, &crhs_);
  if (!sparse_) {
    csol_.noalias() = dense_clu_.solve(crhs_);
  } else {
    csol_ = crhs_;
    klu_complex_->Solve(csol_.data());
  }
  for (int i = 0; i < m_.nq; ++i) z[i] = csol_[i];
}

int64_t NewtonSolver::heap_bytes() const {
  constexpr int64_t kDouble = sizeof(double), kIndex = sizeof(Eigen::Index);
  constexpr int64_t kComplex = sizeof(std::complex<double>);
  const int64_t n = n_;
  // rhs_, sol_, and the complex pair's crhs_, csol_.
  int64_t bytes = ws_.heap_bytes() + HeapBytesOf(work_, k_pos_, k_re_) + 2 * n * kDouble;
  if (complex_pair_) bytes += 2 * n * kComplex;
  if (!sparse_) {
    bytes += 2 * n * n * kDouble + 2 * n * kIndex;                      // Kd_, dense_lu_
    if (complex_pair_) bytes += 2 * n * n * kComplex + 2 * n * kIndex;  // Kc_, dense_clu_
    return bytes;
  }
  const int64_t nnz = K_.nonZeros();
  // Eigen's SparseLU for a scalar of `scalar` bytes: the orderings and
  // elimination tree, then what its memInit allocates for L and U at the
  // first factorisation (the estimate it gives for lwork = emptyIdxLU with
  // its defaults: fill factor 20, panel size 16, 3 markers), which later
  // factorisations reuse (an expansion beyond it is rare for these Newton
  // matrices and is not counted).
  auto sparse_lu = [&](int64_t scalar) {
    constexpr int64_t kFill = 20, kPanel = 16, kMarkers = 3;
    const int64_t nzumax = std::min(kFill * (nnz + 1) / n, n) * n;
    const int64_t nzlmax = std::max<int64_t>(4, kFill) * (nnz + 1) / 4;
    const int64_t temp = (2 * kPanel + 4 + kMarkers) * n * kIndex + (kPanel + 1) * n * scalar;
    return 8 * n * kIndex + (5 * n + 5) * kIndex + temp + (nzlmax + nzumax) * kIndex +
           2 * nzumax * scalar + n;
  };
  bytes += nnz * (kDouble + 4) + (n + 1) * 4;  // K_
  if (!complex_pair_) return bytes + sparse_lu(kDouble);
  // The pair's KLU factorisations and the complex values.
  return bytes + nnz * kComplex + klu_real_->heap_bytes() + klu_complex_->heap_bytes();
}

}  // namespace tether
