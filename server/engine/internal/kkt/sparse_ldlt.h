// The sparse range-space KKT solve's numeric half (its symbolic analysis,
// done once at compile time, is model/sparse_analysis.h). Each evaluation
// refactorises numerically only: an up-looking LDL^T (T. Davis's LDL
// algorithm) on the fixed pattern that forms each column of W just before
// it needs it (the diagonal from G's row, the off-diagonal entries from a
// precomputed list of products G_ij G_kj / M_jj), two triangular solves.
// O(nnz(G) + nnz(L) + flops(L)) and allocation-free: every buffer is sized
// once in the workspace. The pivot test (dependent constraints), the
// condition estimate max D / min D and the row residuals have the same
// meaning as on the dense path (kkt/dynamics.h).
//
// Own code rather than Eigen's SimplicialLDLT: Eigen 3.4's factorize()
// with an ordering builds the permuted matrix in a temporary SparseMatrix
// on every call (an allocation per evaluation), and its pivot test is only
// D == 0; the numeric loop here is the same algorithm on preallocated
// arrays, with the dense path's relative pivot test.
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "engine/internal/base/ball.h"
#include "engine/internal/model/sparse_analysis.h"

namespace tether {

// f(k, j) for the nonzeros k of row i of G (column j), in order: rows of
// 2, 3, 4 or 6 nonzeros unrolled, consecutive columns without reading col.
template <class F>
TETHER_INLINE void ForEachInRow(const int* row_ptr, const int* col, const uint8_t* consecutive,
                                int i, F&& f);

// Rows i and i + 1 of G as the two lanes of V2s, when both have four
// nonzeros in consecutive columns (a planar chain's links: two points' x
// and y): g[t] = {G_(i, t), G_(i+1, t)}, t = 0..3, and the rows' first
// columns c0, c1. A sum over a row from 0 in t order, lane by lane, is
// ForEachInRow's (the same bits). False for any other pair of rows.
TETHER_INLINE bool RowPair4(const int* row_ptr, const int* col, const uint8_t* consecutive, int i,
                            const double* G, ball::V2* g, int* c0, int* c1);
// x at two rows' four consecutive columns in lanes: out[t] = {x[c0 + t],
// x[c1 + t]}.
TETHER_INLINE void Gather4(const double* x, int c0, int c1, ball::V2* out);

// The sum from 0 of G[a] G[b] minv[j] over products r in [r0, r1), in
// order; `consecutive`: a, b and j are consecutive from products[r0].
TETHER_INLINE double SumOfProducts(const SparseKkt::Product* products, int r0, int r1,
                                   bool consecutive, const double* G, const double* minv);

// Per-simulation numeric scratch of the sparse solve (Workspace::sparse).
struct SparseKktScratch {
  std::vector<double> w;      // values of P W P^T's upper triangle (nnz(W))
  std::vector<double> lx;     // L's values (nnz(L))
  std::vector<double> d_inv;  // 1 / D (nc)
  std::vector<double> y;      // dense row accumulator (nc)
  std::vector<double> x;      // right-hand side, then solution, in elimination order (nc)
  std::vector<double> minv;   // 1 / M_jj at this evaluation (nq)
  // Judgement (b)'s row residuals and operand magnitudes inside a
  // certificate window (nq + nc: dynamics rows, then constraint rows).
  std::vector<double> row_r, row_mag;
  // M^-1 F (Workspace::Minv_F) is computed once, when the workspace is made:
  // F is constant (every force a tape constant) and so is M.
  bool minv_f_fixed = false;
  // Some 1 / M_jj is below the smallest normal number (M_jj above 2^1022):
  // judgement (b) then computes the dynamics rows instead of bounding them
  // a priori (EvaluateSparse). Set once for constant masses, per
  // evaluation for M(q).
  bool minv_subnormal = false;
  void Resize(const SparseKkt& s);
  int64_t heap_bytes() const;
};

// Numeric LDL^T of P W P^T on the fixed pattern, W = G M^-1 G^T formed
// into scratch->w column by column as the factorisation reaches it: that
// work is independent of the pivots' dependency chain (a division per row)
// and fills its latency. No searches, no marks. Also x <- L^-1 x (the
// forward half of a solve, with each row of L as it is computed).
//
// G: G's nonzeros (tape outputs); minv = diag(M^-1). form_row(k) is called
// before row k is factorised: it stores x[k], the right-hand side at
// position k, and returns W's diagonal entry there, the sum over j
// ascending of G_ij G_ij / M_jj along row i = order[k] of G (the caller's
// one pass over that row forms both, and whatever else it needs from it);
// an off-diagonal entry is the sum of its `products`, in their order.
//
// Returns the first position p whose pivot D_p is not above tol |W_pp|
// (or not positive), or -1; scratch->w then holds columns 0..p (all of W
// when -1), *d_min, *d_max the range of the pivots factorised.
template <class FormRow>
TETHER_INLINE int SparseLdlt(const SparseKkt& s, SparseKktScratch* scratch, const double* G,
                             const double* minv, double tol, double* d_min, double* d_max,
                             double* x, FormRow&& form_row);

// x <- L^-1 x on a completed factor (SparseLdlt's forward half, for a
// right-hand side other than the one it was given: the condition estimate).
void SparseLdltForwardSolve(const SparseKkt& s, const SparseKktScratch& scratch, double* x);

// x <- L^-T D^-1 x: with SparseLdlt's forward half, x <- (P W P^T)^-1 x.
void SparseLdltBackSolve(const SparseKkt& s, const SparseKktScratch& scratch, double* x);

// f = |L| |D| |L^T| |x| on a completed factor, x and f in elimination
// order: FactorMagnitudes (evaluate_kernel.h) for P W P^T. O(nnz(L)).
void SparseFactorMagnitudes(const SparseKkt& s, const SparseKktScratch& scratch, const double* x,
                            double* f);

// For a pivot failing at position `bad`: the constraints (original
// indices) whose columns combine into column `bad` (the solve of the
// leading block against it, on the partial factor), `bad`'s own first.
std::vector<int> SparseDependentSet(const SparseKkt& s, SparseKktScratch* scratch, int bad);

// Implementation.

namespace sparse_kkt_internal {
template <int... t, class F>
TETHER_INLINE void Consecutive(std::integer_sequence<int, t...>, int k0, int j0, F& f) {
  (f(k0 + t, j0 + t), ...);
}
template <int... t, class F>
TETHER_INLINE void Indexed(std::integer_sequence<int, t...>, int k0, const int* col, F& f) {
  (f(k0 + t, col[k0 + t]), ...);
}
template <int n, class F>
TETHER_INLINE bool Unrolled(int k0, int len, const int* col, bool consecutive, F& f) {
  if (len != n) return false;
  if (consecutive) {
    Consecutive(std::make_integer_sequence<int, n>{}, k0, col[k0], f);
  } else {
    Indexed(std::make_integer_sequence<int, n>{}, k0, col, f);
  }
  return true;
}
}  // namespace sparse_kkt_internal

template <class F>
TETHER_INLINE void ForEachInRow(const int* row_ptr, const int* col, const uint8_t* consecutive,
                                int i, F&& f) {
  using namespace sparse_kkt_internal;
  const int k0 = row_ptr[i], len = row_ptr[i + 1] - k0;
  const bool c = consecutive[i];
  if (Unrolled<4>(k0, len, col, c, f) || Unrolled<2>(k0, len, col, c, f) ||
      Unrolled<6>(k0, len, col, c, f) || Unrolled<3>(k0, len, col, c, f))
    return;
  for (int k = k0; k < k0 + len; ++k) f(k, col[k]);
}

TETHER_INLINE bool RowPair4(const int* row_ptr, const int* col, const uint8_t* consecutive, int i,
                            const double* G, ball::V2* g, int* c0, int* c1) {
  const int k0 = row_ptr[i];
  if (!consecutive[i] || !consecutive[i + 1] || row_ptr[i + 1] - k0 != 4 ||
      row_ptr[i + 2] - k0 != 8) {
    return false;
  }
  *c0 = col[k0];
  *c1 = col[k0 + 4];
  Gather4(G, k0, k0 + 4, g);
  return true;
}

TETHER_INLINE void Gather4(const double* x, int c0, int c1, ball::V2* out) {
  for (int t = 0; t < 4; t += 2) {
    const ball::V2 a = ball::Load2(x + c0 + t), b = ball::Load2(x + c1 + t);
    out[t] = __builtin_shufflevector(a, b, 0, 2);
    out[t + 1] = __builtin_shufflevector(a, b, 1, 3);
  }
}

TETHER_INLINE double SumOfProducts(const SparseKkt::Product* prod, int r0, int r1, bool consecutive,
                                   const double* G, const double* minv) {
  double w = 0;
  if (consecutive) {
    const int a = prod[r0].a, b = prod[r0].b, j = prod[r0].j;
    switch (r1 - r0) {
      case 1: return w + G[a] * G[b] * minv[j];
      case 2: w += G[a] * G[b] * minv[j]; return w + G[a + 1] * G[b + 1] * minv[j + 1];
      case 3:
        w += G[a] * G[b] * minv[j];
        w += G[a + 1] * G[b + 1] * minv[j + 1];
        return w + G[a + 2] * G[b + 2] * minv[j + 2];
      default:
        for (int t = 0; t < r1 - r0; ++t) w += G[a + t] * G[b + t] * minv[j + t];
        return w;
    }
  }
  for (int r = r0; r < r1; ++r) w += G[prod[r].a] * G[prod[r].b] * minv[prod[r].j];
  return w;
}

template <class FormRow>
TETHER_INLINE int SparseLdlt(const SparseKkt& s, SparseKktScratch* sc, const double* G,
                             const double* minv, double tol, double* d_min, double* d_max,
                             double* x, FormRow&& form_row) {
  const int n = s.nc;
  const int* Ap = s.w_ptr.data();
  const int* Ai = s.w_row.data();
  const int* pp = s.product_ptr.data();
  const SparseKkt::Product* prod = s.products.data();
  double* Ax = sc->w.data();
  const int* Lp = s.l_ptr.data();
  const int* Li = s.l_row.data();
  const int* Rp = s.l_row_ptr.data();
  const int* Rpos = s.l_by_row.data();
  const int* Rcol = s.l_by_row_col.data();
  double* Lx = sc->lx.data();
  double* Dinv = sc->d_inv.data();
  double* Y = sc->y.data();
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  // W's entries as the factorisation reaches their column: the diagonal one
  // at position k from form_row(k), an off-diagonal one at p of w_row from
  // its products.
  auto diagonal = [&](int k) TETHER_INLINE_LAMBDA {
    const double w = form_row(k);
    Ax[Ap[k + 1] - 1] = w;  // last in its column
    return w;
  };
  const uint8_t* pc = s.products_consecutive.data();
  auto off_diagonal = [&](int p) TETHER_INLINE_LAMBDA {
    const double w = SumOfProducts(prod, pp[p], pp[p + 1], pc[p], G, minv);
    Ax[p] = w;
    return w;
  };
  // Row k's pivot D_k = dk: the test, then D_k^-1 into Dinv[k] and *inv.
  auto pivot = [&](int k, double dk, double original, double* inv) TETHER_INLINE_LAMBDA {
    if (!(dk > tol * std::fabs(original)) || !(dk > 0)) return false;
    *inv = 1.0 / dk;
    Dinv[k] = *inv;
    lo = std::min(lo, dk);
    hi = std::max(hi, dk);
    return true;
  };
  int bad = -1;
  if (s.bidiagonal) {
    // The general loop below for rows of one entry, L_k,k-1 at position
    // k - 1: the same operations, with the previous row's D^-1 and x in
    // registers rather than stored and reloaded on the pivot chain.
    double d_inv = 0, x_prev = 0;
    for (int k = 0; k < n; ++k) {
      const double original = diagonal(k);
      double dk = original, xk = x[k];
      if (k > 0) {
        const double yi = off_diagonal(Ap[k]);
        const double l_ki = yi * d_inv;
        dk -= l_ki * yi;
        xk -= l_ki * x_prev;
        Lx[k - 1] = l_ki;
      }
      x[k] = xk;
      x_prev = xk;
      if (!pivot(k, dk, original, &d_inv)) {
        bad = k;
        break;
      }
    }
  } else {
    for (int k = 0; k < n; ++k) {
      // Row k of L by the up-looking triangular solve L[0:k,0:k] D l =
      // W[0:k,k]: Y holds W[0:k,k] on row k's pattern (zero elsewhere),
      // consumed in topological order.
      for (int p = Ap[k]; p < Ap[k + 1] - 1; ++p) Y[Ai[p]] = off_diagonal(p);
      const double original = diagonal(k);
      double dk = original, xk = x[k];
      for (int r = Rp[k]; r < Rp[k + 1]; ++r) {
        const int i = Rcol[r], pk = Rpos[r];  // L_ki lives at pk in column i
        const double yi = Y[i];
        Y[i] = 0;
        // Column i's entries above row k are final.
        for (int p = Lp[i]; p < pk; ++p) Y[Li[p]] -= Lx[p] * yi;
        const double l_ki = yi * Dinv[i];
        dk -= l_ki * yi;
        xk -= l_ki * x[i];
        Lx[pk] = l_ki;
      }
      x[k] = xk;
      double d_inv;
      if (!pivot(k, dk, original, &d_inv)) {
        bad = k;
        break;
      }
    }
  }
  *d_min = lo;
  *d_max = hi;
  return bad;
}

}  // namespace tether
