#include "engine/internal/kkt/sparse_ldlt.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/internal/base/ball.h"
#include "engine/internal/base/heap_bytes.h"

namespace tether {

void SparseKktScratch::Resize(const SparseKkt& s) {
  const size_t nc = static_cast<size_t>(s.nc);
  w.assign(s.w_row.size(), 0);
  lx.assign(static_cast<size_t>(s.l_nnz()), 0);
  d_inv.assign(nc, 0);
  y.assign(nc, 0);
  x.assign(nc, 0);
  minv.assign(static_cast<size_t>(s.nq), 0);
  row_r.assign(static_cast<size_t>(s.nq) + nc, 0);
  row_mag.assign(static_cast<size_t>(s.nq) + nc, 0);
}

void SparseLdltForwardSolve(const SparseKkt& s, const SparseKktScratch& sc, double* x) {
  const int n = s.nc;
  const int* Lp = s.l_ptr.data();
  const int* Li = s.l_row.data();
  const double* Lx = sc.lx.data();
  if (s.bidiagonal) {
    // As below, x[j - 1] kept in a register.
    double x_prev = x[0];
    for (int j = 1; j < n; ++j) {
      x_prev = x[j] - Lx[j - 1] * x_prev;
      x[j] = x_prev;
    }
    return;
  }
  for (int j = 0; j < n; ++j) {
    const double xj = x[j];
    for (int p = Lp[j]; p < Lp[j + 1]; ++p) x[Li[p]] -= Lx[p] * xj;
  }
}

void SparseLdltBackSolve(const SparseKkt& s, const SparseKktScratch& sc, double* x) {
  const int n = s.nc;
  const int* Lp = s.l_ptr.data();
  const int* Li = s.l_row.data();
  const double* Lx = sc.lx.data();
  const double* Dinv = sc.d_inv.data();
  if (s.bidiagonal) {
    // As below, x[j + 1] kept in a register.
    double x_next = 0;
    for (int j = n - 1; j >= 0; --j) {
      double xj = x[j] * Dinv[j];
      if (j + 1 < n) xj -= Lx[j] * x_next;
      x[j] = xj;
      x_next = xj;
    }
    return;
  }
  for (int j = n - 1; j >= 0; --j) {
    double xj = x[j] * Dinv[j];
    for (int p = Lp[j]; p < Lp[j + 1]; ++p) xj -= Lx[p] * x[Li[p]];
    x[j] = xj;
  }
}

void SparseFactorMagnitudes(const SparseKkt& s, const SparseKktScratch& sc, const double* x,
                            double* f) {
  const int n = s.nc;
  const int* Lp = s.l_ptr.data();
  const int* Li = s.l_row.data();
  const double* Lx = sc.lx.data();
  const double* Dinv = sc.d_inv.data();
  if (s.bidiagonal) {
    // The loops below with column j's one entry Lx[j] at row j + 1 (the
    // same operations in the same order), without the pattern's indices;
    // the first loop two rows at a time in the lanes of a V2 (ball.h: each
    // lane's sum and division are the scalar ones), which halves the
    // divisions' issue cost, the loop's bound (they are independent).
    using ball::V2;
    int k = 0;
    for (; k + 2 < n; k += 2) {
      const V2 v = ball::Abs2(ball::Load2(x + k)) +
                   ball::Abs2(ball::Load2(Lx + k)) * ball::Abs2(ball::Load2(x + k + 1));
      ball::Store2(f + k, v / ball::Abs2(ball::Load2(Dinv + k)));
    }
    for (; k < n; ++k) {
      double v = std::fabs(x[k]);
      if (k + 1 < n) v += std::fabs(Lx[k]) * std::fabs(x[k + 1]);
      f[k] = v / std::fabs(Dinv[k]);
    }
    for (int j = n - 2; j >= 0; --j) f[j + 1] += std::fabs(Lx[j]) * f[j];
    return;
  }
  for (int j = 0; j < n; ++j) {  // f = |D| |L^T| |x|: column j of L is row j of L^T
    double v = std::fabs(x[j]);
    for (int p = Lp[j]; p < Lp[j + 1]; ++p) v += std::fabs(Lx[p]) * std::fabs(x[Li[p]]);
    f[j] = v / std::fabs(Dinv[j]);
  }
  // f <- |L| f by columns from the last: f[j] receives from columns k < j
  // only, which come after it, so it still holds its own value when read.
  for (int j = n - 1; j >= 0; --j) {
    const double fj = f[j];
    for (int p = Lp[j]; p < Lp[j + 1]; ++p) f[Li[p]] += std::fabs(Lx[p]) * fj;
  }
}

std::vector<int> SparseDependentSet(const SparseKkt& s, SparseKktScratch* sc, int bad) {
  std::vector<int> set = {s.order[static_cast<size_t>(bad)]};
  if (bad == 0) return set;
  // c solves (P W P^T)[0:bad, 0:bad] c = (P W P^T)[0:bad, bad] with the
  // columns of L factorised so far (rows below `bad` only).
  std::vector<double> c(static_cast<size_t>(bad), 0.0);
  for (int p = s.w_ptr[static_cast<size_t>(bad)]; p < s.w_ptr[static_cast<size_t>(bad) + 1]; ++p) {
    const int i = s.w_row[static_cast<size_t>(p)];
    if (i < bad) c[static_cast<size_t>(i)] = sc->w[static_cast<size_t>(p)];
  }
  // Column j's entries in rows below `bad` are final.
  auto in_block = [&](int j, auto&& f) {
    for (int p = s.l_ptr[static_cast<size_t>(j)]; p < s.l_ptr[static_cast<size_t>(j) + 1]; ++p) {
      const int i = s.l_row[static_cast<size_t>(p)];
      if (i < bad) f(i, sc->lx[static_cast<size_t>(p)]);
    }
  };
  for (int j = 0; j < bad; ++j) {
    const double cj = c[static_cast<size_t>(j)];
    in_block(j, [&](int i, double l) { c[static_cast<size_t>(i)] -= l * cj; });
  }
  for (int j = 0; j < bad; ++j) c[static_cast<size_t>(j)] *= sc->d_inv[static_cast<size_t>(j)];
  for (int j = bad - 1; j >= 0; --j) {
    double cj = c[static_cast<size_t>(j)];
    in_block(j, [&](int i, double l) { cj -= l * c[static_cast<size_t>(i)]; });
    c[static_cast<size_t>(j)] = cj;
  }
  double cmax = 0;
  for (double x : c) cmax = std::max(cmax, std::fabs(x));
  for (int p = 0; p < bad; ++p) {
    if (std::fabs(c[static_cast<size_t>(p)]) > 1e-6 * cmax)
      set.push_back(s.order[static_cast<size_t>(p)]);
  }
  std::sort(set.begin() + 1, set.end());
  return set;
}

int64_t SparseKktScratch::heap_bytes() const {
  return HeapBytesOf(w, lx, d_inv, y, x, minv, row_r, row_mag);
}

}  // namespace tether
