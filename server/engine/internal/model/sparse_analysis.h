// The sparse KKT path's symbolic analysis, done once when a model is
// compiled, for large systems with a (structurally) diagonal mass matrix:
// chains, ropes, trusses, grids of point masses. Its numeric half, run at
// every evaluation, is kkt/sparse_ldlt.h.
//
// BuildSparseKkt finds the structural nonzeros of G from the expression
// graph (a derivative that simplified to the constant 0 is a structural
// zero); the pattern of W = G M^-1 G^T follows from G's pattern (W_ik != 0
// iff rows i and k share a coordinate); a fill-reducing ordering P of W is
// computed once (approximate minimum degree, Eigen's AMDOrdering; the
// natural order instead when it fills no more, as for chains and ladders),
// and the symbolic LDL^T of P W P^T (elimination tree, column counts of L)
// is fixed. The tapes then emit only G's nonzeros (and only the diagonal of
// M(q) for a kinetic-energy model).
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "engine/compile_options.h"

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

}  // namespace tether
