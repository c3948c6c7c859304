// The sparse range-space KKT solve for large systems with a (structurally)
// diagonal mass matrix: chains, ropes, trusses, grids of point masses.
//
// At compile time (BuildSparseKkt) the structural nonzeros of G are found
// from the expression graph (a derivative that simplified to the constant 0
// is a structural zero), the pattern of W = G M^-1 G^T follows from G's
// pattern (W_ik != 0 iff rows i and k share a coordinate), a fill-reducing
// ordering P of W is computed once (approximate minimum degree, Eigen's
// AMDOrdering; the natural order instead when it fills no more, as for
// chains and ladders), and the symbolic LDL^T of P W P^T (elimination tree, column
// counts of L) is fixed. The tapes then emit only G's nonzeros (and only
// the diagonal of M(q) for a kinetic-energy model).
//
// Each evaluation refactorises numerically only: an up-looking LDL^T
// (T. Davis's LDL algorithm) on the fixed pattern that forms each column of
// W just before it needs it (the diagonal from G's row, the off-diagonal
// entries from a precomputed list of products G_ij G_kj / M_jj), two
// triangular solves.
// O(nnz(G) + nnz(L) + flops(L)) and allocation-free: every buffer is sized
// once in the workspace. The pivot test (dependent constraints), the
// condition estimate max D / min D and the row residuals have the same
// meaning as on the dense path (dynamics.h).
//
// Own code rather than Eigen's SimplicialLDLT: Eigen 3.4's factorize()
// with an ordering builds the permuted matrix in a temporary SparseMatrix
// on every call (an allocation per evaluation), and its pivot test is only
// D == 0; the numeric loop here is the same algorithm on preallocated
// arrays, with the dense path's relative pivot test.
#pragma once

#include "engine/internal/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "engine/simulation.h"

namespace tether {

// The automatic switch: the sparse path when the mass matrix is
// structurally diagonal, there are at least kSparseMinConstraints
// constraints, and the LDL^T factor of the reordered W has at most
// kSparseMaxFill of the dense factor's nc (nc + 1) / 2 entries.
inline constexpr int kSparseMinConstraints = 16;
inline constexpr double kSparseMaxFill = 0.5;

struct SparseKkt {
  bool enabled = false;
  int nc = 0, nq = 0;
  // G by rows (CSR): row i has its nonzeros k in [row_ptr[i], row_ptr[i+1]),
  // coordinates col[k] ascending; the value is tape output off_G + k. Every
  // pass over G runs over these rows (G^T lambda too, scattered: each
  // coordinate then sums over its rows in ascending order).
  std::vector<int> row_ptr, col;
  // Elimination order: position p of P W P^T is constraint order[p]; pos_of
  // is the inverse.
  std::vector<int> order, pos_of;
  // Upper triangle of P W P^T by columns (CSC, diagonal last in each
  // column): column p has rows w_row[w_ptr[p] .. w_ptr[p+1]).
  std::vector<int> w_ptr, w_row;
  // W's values: an off-diagonal entry pos of w_row is the sum of
  // G[a] G[b] / M_jj over products[product_ptr[pos] .. product_ptr[pos+1]),
  // j ascending; a diagonal one (an empty range) is the sum of G[k]^2 / M_jj
  // over its row of G, which runs over the same j in the same order.
  struct Product {
    int a, b, j;
  };
  std::vector<int> product_ptr;
  std::vector<Product> products;
  // Symbolic LDL^T, fixed: L strictly below the diagonal by columns (CSC,
  // rows ascending: l_ptr, l_row), and by rows in the order the up-looking
  // factorisation computes them (row k: entries l_by_row[l_row_ptr[k] ..
  // l_row_ptr[k+1]): column l_by_row_col[r] = i, in topological order of
  // the elimination tree, at position l_by_row[r] of column i).
  std::vector<int> l_ptr, l_row, l_row_ptr, l_by_row, l_by_row_col;
  int l_nnz() const { return l_ptr.empty() ? 0 : l_ptr.back(); }
  // L is bidiagonal: column i < nc - 1 has the one entry L_i+1,i, at
  // position i (a chain's W in its natural order). The factorisation and
  // both triangular solves then run without the index arrays.
  bool bidiagonal = false;
  // Row i's columns are consecutive (col[k] = col[row_ptr[i]] + k -
  // row_ptr[i]: a point mass's coordinates, or two neighbours'): passes over
  // the row then read no col[] (ForEachInRow).
  std::vector<uint8_t> row_consecutive;
  // An off-diagonal entry's products are consecutive in a, b and j (from
  // its first): read from the first alone.
  std::vector<uint8_t> products_consecutive;
  // Every coordinate is in at most two rows of G (a chain, a rope): each
  // sum of G^T lambda, from 0, then has the same bits in either row order.
  bool two_rows_per_coordinate = false;

  // Heap bytes held (heap_bytes.h).
  int64_t heap_bytes() const;
};

// f(k, j) for the nonzeros k of row i of G (column j), in order: rows of
// 2, 3, 4 or 6 nonzeros unrolled, consecutive columns without reading col.
template <class F>
TETHER_INLINE void ForEachInRow(const int* row_ptr, const int* col, const uint8_t* consecutive,
                                int i, F&& f);

// The sum from 0 of G[a] G[b] minv[j] over products r in [r0, r1), in
// order; `consecutive`: a, b and j are consecutive from products[r0].
TETHER_INLINE double SumOfProducts(const SparseKkt::Product* products, int r0, int r1,
                                   bool consecutive, const double* G, const double* minv);

// What the sparse analysis may spend: the bytes its arrays may hold at once
// (the compilation's memory budget left after its expression graph), and a
// poll called every kAnalysisPollWork units of work (cancel, deadline,
// shutdown: the compilation's watch). Its memory is linear in the nonzeros
// of G, W and L and its work is O(sum over coordinates of (rows in it)^2
// + nnz(L) + flops of the symbolic factorisation), all polled.
struct AnalysisBudget {
  int64_t max_bytes = std::numeric_limits<int64_t>::max();
  std::function<bool()> stop;  // true stops the analysis; may be empty
};
inline constexpr int64_t kAnalysisPollWork = 1 << 16;

// How BuildSparseKkt ended.
enum class Analysis : uint8_t {
  kDone,        // the path is decided (s->enabled says which)
  kOverBudget,  // the sparse path was forced (KktPath::kSparse) and needs
                // more than budget.max_bytes (*bytes_needed)
  kStopped,     // budget.stop returned true
};

// Decides the path and, for the sparse one, fills *s. g_nonzero is the
// structural pattern of G (nc x nq, row-major); mass_diagonal says whether
// M is (structurally) diagonal. With KktPath::kSparse the sparse path is
// taken whenever the mass matrix allows it. With KktPath::kAuto a pattern
// whose sparse structures would not fit in the budget takes the dense path
// on purpose: its memory depends on nc and nq alone (W, G and their
// factors, a few MB at the coordinate limit), where the sparse one's grows
// with the products that form W (12 bytes each, sum over coordinates j of
// c_j (c_j - 1) / 2 for c_j the rows using j). *bytes_needed, when given,
// receives the bytes the sparse structures need, as far as they were
// counted (for a message).
Analysis BuildSparseKkt(int nc, int nq, const std::vector<char>& g_nonzero, bool mass_diagonal,
                        KktPath path, const AnalysisBudget& budget, SparseKkt* s,
                        int64_t* bytes_needed = nullptr);

// Per-simulation numeric scratch of the sparse solve (Workspace::sparse).
struct SparseKktScratch {
  std::vector<double> w;      // values of P W P^T's upper triangle (nnz(W))
  std::vector<double> lx;     // L's values (nnz(L))
  std::vector<double> d_inv;  // 1 / D (nc)
  std::vector<double> y;      // dense row accumulator (nc)
  std::vector<double> x;      // right-hand side, then solution, in elimination order (nc)
  std::vector<double> minv;   // 1 / M_jj at this evaluation (nq)
  // M^-1 F (Workspace::Minv_F) is computed once, when the workspace is made:
  // F is constant (every force a tape constant) and so is M.
  bool minv_f_fixed = false;
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
