#include "engine/internal/model/sparse_analysis.h"

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "engine/internal/base/heap_bytes.h"

namespace tether {

namespace {

// The analysis's meter: bytes its arrays hold (counted before each large
// allocation, never freed, so an upper bound of the peak) and work done
// (polled every kAnalysisPollWork units).
class Meter {
 public:
  explicit Meter(const AnalysisBudget& budget) : budget_(budget) {}
  // False (and the analysis ends) when `count` more elements of `size`
  // bytes would pass the budget.
  bool Take(int64_t count, int64_t size) {
    if (count > 0 && size > 0 && count > (budget_.max_bytes - bytes_) / size) {
      bytes_ = budget_.max_bytes;
      needed_ = std::max(needed_, bytes_ + 1);
      over_ = true;
      return false;
    }
    bytes_ += count * size;
    needed_ = std::max(needed_, bytes_);
    return true;
  }
  // Counts `units` of work; false once the poll says stop.
  bool Work(int64_t units) {
    work_ += units;
    if (work_ < kAnalysisPollWork) return !stopped_;
    work_ = 0;
    if (!stopped_ && budget_.stop && budget_.stop()) stopped_ = true;
    return !stopped_;
  }
  bool over() const { return over_; }
  bool stopped() const { return stopped_; }
  int64_t needed() const { return needed_; }

 private:
  const AnalysisBudget& budget_;
  int64_t bytes_ = 0, needed_ = 0, work_ = 0;
  bool over_ = false, stopped_ = false;
};

// The off-diagonal pattern of W = G G^T (both triangles) by rows: row i
// lists the rows k != i sharing a coordinate with it, ascending. One mark
// per row, so memory is nnz(W) and work the sum over i of the rows of G's
// columns in row i (a row already full stops early). Returns false when the
// meter stops it.
bool WPattern(int nc, const std::vector<int>& row_ptr, const std::vector<int>& col,
              const std::vector<int>& col_ptr, const std::vector<int>& col_row, Meter* meter,
              std::vector<int>* w_ptr, std::vector<int>* w_col) {
  w_ptr->assign(static_cast<size_t>(nc) + 1, 0);
  std::vector<int> mark(static_cast<size_t>(nc), -1);
  for (int i = 0; i < nc; ++i) {
    const size_t begin = w_col->size();
    int64_t found = 0, work = 0;
    for (int k = row_ptr[static_cast<size_t>(i)];
         k < row_ptr[static_cast<size_t>(i) + 1] && found < nc - 1; ++k) {
      const int j = col[static_cast<size_t>(k)];
      for (int r = col_ptr[static_cast<size_t>(j)]; r < col_ptr[static_cast<size_t>(j) + 1]; ++r) {
        const int other = col_row[static_cast<size_t>(r)];
        if (other == i || mark[static_cast<size_t>(other)] == i) continue;
        mark[static_cast<size_t>(other)] = i;
        ++found;
      }
      work += col_ptr[static_cast<size_t>(j) + 1] - col_ptr[static_cast<size_t>(j)];
    }
    if (!meter->Take(found, sizeof(int)) || !meter->Work(work + nc / 64 + 1)) return false;
    // The marks of row i, ascending (a scan of the marks when the row is
    // dense enough, else a sort of what was found).
    if (found * 8 > nc) {
      for (int k = 0; k < nc; ++k)
        if (mark[static_cast<size_t>(k)] == i) w_col->push_back(k);
    } else {
      for (int k = row_ptr[static_cast<size_t>(i)]; k < row_ptr[static_cast<size_t>(i) + 1]; ++k) {
        const int j = col[static_cast<size_t>(k)];
        for (int r = col_ptr[static_cast<size_t>(j)]; r < col_ptr[static_cast<size_t>(j) + 1];
             ++r) {
          const int other = col_row[static_cast<size_t>(r)];
          if (mark[static_cast<size_t>(other)] != i) continue;
          mark[static_cast<size_t>(other)] = -2 - i;  // listed
          w_col->push_back(other);
        }
      }
      std::sort(w_col->begin() + static_cast<long>(begin), w_col->end());
      for (size_t p = begin; p < w_col->size(); ++p)
        mark[static_cast<size_t>((*w_col)[p])] = i;  // listed: stays marked
    }
    (*w_ptr)[static_cast<size_t>(i) + 1] = static_cast<int>(w_col->size());
  }
  return true;
}

// Entries of the LDL^T factor of W (off-diagonal pattern by rows, both
// triangles) permuted so that position p is row order[p]: the column counts
// of the elimination tree (T. Davis's LDL symbolic). -1 when the meter
// stopped it.
int64_t FactorEntries(int nc, const std::vector<int>& w_ptr, const std::vector<int>& w_col,
                      const std::vector<int>& order, Meter* meter) {
  std::vector<int> pos_of(static_cast<size_t>(nc));
  for (int p = 0; p < nc; ++p) pos_of[static_cast<size_t>(order[static_cast<size_t>(p)])] = p;
  // Column pb of P W P^T: rows pa < pb, as CSC (a counting pass, then a fill).
  std::vector<int> above_ptr(static_cast<size_t>(nc) + 1, 0), above;
  for (int a = 0; a < nc; ++a) {
    const int pa = pos_of[static_cast<size_t>(a)];
    for (int p = w_ptr[static_cast<size_t>(a)]; p < w_ptr[static_cast<size_t>(a) + 1]; ++p) {
      const int pb = pos_of[static_cast<size_t>(w_col[static_cast<size_t>(p)])];
      if (pa < pb) ++above_ptr[static_cast<size_t>(pb) + 1];
    }
  }
  for (int k = 0; k < nc; ++k)
    above_ptr[static_cast<size_t>(k) + 1] += above_ptr[static_cast<size_t>(k)];
  if (!meter->Take(above_ptr.back(), sizeof(int))) return -1;
  above.resize(static_cast<size_t>(above_ptr.back()));
  {
    std::vector<int> next(above_ptr.begin(), above_ptr.end() - 1);
    for (int a = 0; a < nc; ++a) {
      const int pa = pos_of[static_cast<size_t>(a)];
      for (int p = w_ptr[static_cast<size_t>(a)]; p < w_ptr[static_cast<size_t>(a) + 1]; ++p) {
        const int pb = pos_of[static_cast<size_t>(w_col[static_cast<size_t>(p)])];
        if (pa < pb) above[static_cast<size_t>(next[static_cast<size_t>(pb)]++)] = pa;
      }
    }
  }
  std::vector<int> parent(static_cast<size_t>(nc), -1), flag(static_cast<size_t>(nc));
  int64_t count = 0;
  for (int k = 0; k < nc; ++k) {
    flag[static_cast<size_t>(k)] = k;
    const int64_t before = count;
    for (int q = above_ptr[static_cast<size_t>(k)]; q < above_ptr[static_cast<size_t>(k) + 1];
         ++q) {
      for (int i = above[static_cast<size_t>(q)]; flag[static_cast<size_t>(i)] != k;
           i = parent[static_cast<size_t>(i)]) {
        if (parent[static_cast<size_t>(i)] == -1) parent[static_cast<size_t>(i)] = k;
        ++count;
        flag[static_cast<size_t>(i)] = k;
      }
    }
    if (!meter->Work(count - before + above_ptr[static_cast<size_t>(k) + 1] -
                     above_ptr[static_cast<size_t>(k)] + 1))
      return -1;
  }
  return count;
}

// G's pattern by columns (CSC), beside its rows in SparseKkt (row_ptr,
// col): column j's entries are col_ptr[j] .. col_ptr[j + 1] - 1, each with
// its nonzero index k in k_of and its row in row_of_col.
struct GColumns {
  std::vector<int> col_ptr, k_of, row_of_col;
};

// G by rows (CSR, into s->row_ptr and s->col), and by columns (CSC, *g).
// False when the meter refuses it.
bool GByRowsAndColumns(int nc, int nq, const std::vector<char>& g_nonzero, Meter* meter,
                       SparseKkt* s, GColumns* g) {
  int64_t nnz = 0;
  for (char c : g_nonzero) nnz += c != 0;
  if (!meter->Take(nnz, 4 * sizeof(int)) ||
      !meter->Work(static_cast<int64_t>(g_nonzero.size()) / 16))
    return false;
  s->row_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  s->col.reserve(static_cast<size_t>(nnz));
  std::vector<int>& col_ptr = g->col_ptr;
  col_ptr.assign(static_cast<size_t>(nq) + 1, 0);
  for (int i = 0; i < nc; ++i) {
    for (int j = 0; j < nq; ++j) {
      if (!g_nonzero[static_cast<size_t>(i) * static_cast<size_t>(nq) + static_cast<size_t>(j)])
        continue;
      s->col.push_back(j);
      ++col_ptr[static_cast<size_t>(j) + 1];
    }
    s->row_ptr[static_cast<size_t>(i) + 1] = static_cast<int>(s->col.size());
  }
  for (int j = 0; j < nq; ++j)
    col_ptr[static_cast<size_t>(j) + 1] += col_ptr[static_cast<size_t>(j)];
  g->k_of.assign(static_cast<size_t>(nnz), 0);
  g->row_of_col.assign(static_cast<size_t>(nnz), 0);
  std::vector<int> next(col_ptr.begin(), col_ptr.end() - 1);
  for (int i = 0; i < nc; ++i) {
    for (int k = s->row_ptr[static_cast<size_t>(i)]; k < s->row_ptr[static_cast<size_t>(i) + 1];
         ++k) {
      const int q = next[static_cast<size_t>(s->col[static_cast<size_t>(k)])]++;
      g->k_of[static_cast<size_t>(q)] = k;
      g->row_of_col[static_cast<size_t>(q)] = i;
    }
  }
  return true;
}

// The number of products that form W's off-diagonal entries: a pair of
// rows per coordinate both rows use.
int64_t NumProducts(int nq, const std::vector<int>& col_ptr) {
  int64_t num_products = 0;
  for (int j = 0; j < nq; ++j) {
    const int64_t c = col_ptr[static_cast<size_t>(j) + 1] - col_ptr[static_cast<size_t>(j)];
    num_products += c * (c - 1) / 2;
  }
  return num_products;
}

// A fill-reducing ordering (Eigen's AMD on W's pattern, diagonal
// included) in *order: position p is row (*order)[p]. False when the meter
// refuses it.
bool AmdOrder(int nc, const std::vector<int>& w_ptr, const std::vector<int>& w_col, Meter* meter,
              std::vector<int>* order) {
  const int64_t w_nnz = static_cast<int64_t>(w_col.size()) + nc;
  // Triplets, the matrix and its transposed temporary, AMD's workspace.
  if (!meter->Take(w_nnz, 16 + 12 + 12 + 12) || !meter->Work(w_nnz * 8)) return false;
  std::vector<Eigen::Triplet<double, int>> trip;
  trip.reserve(static_cast<size_t>(w_nnz));
  for (int a = 0; a < nc; ++a) {
    trip.emplace_back(a, a, 1.0);
    for (int p = w_ptr[static_cast<size_t>(a)]; p < w_ptr[static_cast<size_t>(a) + 1]; ++p)
      trip.emplace_back(a, w_col[static_cast<size_t>(p)], 1.0);
  }
  Eigen::SparseMatrix<double, Eigen::ColMajor, int> W(nc, nc);
  W.setFromTriplets(trip.begin(), trip.end());
  std::vector<Eigen::Triplet<double, int>>().swap(trip);
  Eigen::AMDOrdering<int> amd;
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> perm;
  amd(W, perm);
  // Eigen's ordering result maps new positions to old indices (its
  // SimplicialCholesky factorises A twisted by the inverse).
  order->assign(perm.indices().data(), perm.indices().data() + nc);
  return true;
}

// The given order when it fills no more than AMD's (a chain's or a
// ladder's natural order is already banded): sequential access, no
// permutation of the right-hand side. It replaces *order (AMD's) then;
// *fill: L's strictly lower entries under the order kept. False when the
// meter stops it.
bool NaturalOrderIfNoMoreFill(int nc, const std::vector<int>& w_ptr, const std::vector<int>& w_col,
                              Meter* meter, std::vector<int>* order, int64_t* fill) {
  std::vector<int> natural(static_cast<size_t>(nc));
  for (int i = 0; i < nc; ++i) natural[static_cast<size_t>(i)] = i;
  const int64_t fill_natural = FactorEntries(nc, w_ptr, w_col, natural, meter);
  if (fill_natural < 0) return false;
  const int64_t fill_amd = FactorEntries(nc, w_ptr, w_col, *order, meter);
  if (fill_amd < 0) return false;
  if (fill_natural <= fill_amd) *order = std::move(natural);
  *fill = std::min(fill_natural, fill_amd);
  return true;
}

// s->pos_of from s->order, and the upper triangle of P W P^T by columns
// (s->w_ptr, s->w_row), rows ascending (diagonal last). False when the
// meter refuses it.
bool PermutedUpperW(int nc, const std::vector<int>& w_ptr, const std::vector<int>& w_col,
                    Meter* meter, SparseKkt* s) {
  s->pos_of.assign(static_cast<size_t>(nc), -1);
  for (int p = 0; p < nc; ++p) s->pos_of[static_cast<size_t>(s->order[static_cast<size_t>(p)])] = p;
  const int64_t w_upper = static_cast<int64_t>(w_col.size()) / 2 + nc;
  if (!meter->Take(w_upper, sizeof(int)) || !meter->Work(w_upper)) return false;
  s->w_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  for (int a = 0; a < nc; ++a) {
    const int pa = s->pos_of[static_cast<size_t>(a)];
    ++s->w_ptr[static_cast<size_t>(pa) + 1];  // the diagonal
    for (int p = w_ptr[static_cast<size_t>(a)]; p < w_ptr[static_cast<size_t>(a) + 1]; ++p) {
      const int pb = s->pos_of[static_cast<size_t>(w_col[static_cast<size_t>(p)])];
      if (pa < pb) ++s->w_ptr[static_cast<size_t>(pb) + 1];
    }
  }
  for (int p = 0; p < nc; ++p)
    s->w_ptr[static_cast<size_t>(p) + 1] += s->w_ptr[static_cast<size_t>(p)];
  s->w_row.assign(static_cast<size_t>(s->w_ptr.back()), 0);
  std::vector<int> next(s->w_ptr.begin(), s->w_ptr.end() - 1);
  for (int a = 0; a < nc; ++a) {
    const int pa = s->pos_of[static_cast<size_t>(a)];
    for (int p = w_ptr[static_cast<size_t>(a)]; p < w_ptr[static_cast<size_t>(a) + 1]; ++p) {
      const int pb = s->pos_of[static_cast<size_t>(w_col[static_cast<size_t>(p)])];
      if (pa < pb) s->w_row[static_cast<size_t>(next[static_cast<size_t>(pb)]++)] = pa;
    }
  }
  for (int p = 0; p < nc; ++p) {
    const auto begin = s->w_row.begin() + s->w_ptr[static_cast<size_t>(p)];
    const auto end = s->w_row.begin() + s->w_ptr[static_cast<size_t>(p) + 1] - 1;
    std::sort(begin, end);
    *end = p;  // the diagonal, last
  }
  return true;
}

// s->product_ptr and s->products: the off-diagonal entries' products (a
// diagonal entry is a sum over its row of G, formed from the row itself),
// grouped by entry in the order coordinate j, then the pair's rows
// ascending: a counting pass, then a fill (the same order a stable sort of
// the (entry, product) list gives). False when the meter stops it.
bool ProductsByEntry(int nq, int64_t num_products, const GColumns& g, Meter* meter, SparseKkt* s) {
  auto position = [&](int a, int b) {
    int pa = s->pos_of[static_cast<size_t>(a)], pb = s->pos_of[static_cast<size_t>(b)];
    if (pa > pb) std::swap(pa, pb);
    const auto begin = s->w_row.begin() + s->w_ptr[static_cast<size_t>(pb)];
    const auto end = s->w_row.begin() + s->w_ptr[static_cast<size_t>(pb) + 1];
    return static_cast<int>(std::lower_bound(begin, end, pa) - s->w_row.begin());
  };
  if (!meter->Take(num_products, sizeof(SparseKkt::Product)) ||
      !meter->Take(static_cast<int64_t>(s->w_row.size()) + 1, 2 * sizeof(int)))
    return false;
  auto for_each_pair = [&](auto&& f) {
    for (int j = 0; j < nq; ++j) {
      const int r0 = g.col_ptr[static_cast<size_t>(j)], r1 = g.col_ptr[static_cast<size_t>(j) + 1];
      for (int x = r0; x < r1; ++x) {
        for (int y = x + 1; y < r1; ++y) {
          f(position(g.row_of_col[static_cast<size_t>(x)], g.row_of_col[static_cast<size_t>(y)]),
            SparseKkt::Product{g.k_of[static_cast<size_t>(x)], g.k_of[static_cast<size_t>(y)], j});
        }
      }
      if (!meter->Work(static_cast<int64_t>(r1 - r0) * (r1 - r0) / 2 + 1)) return false;
    }
    return true;
  };
  s->product_ptr.assign(s->w_row.size() + 1, 0);
  if (!for_each_pair([&](int pos, const SparseKkt::Product&) {
        ++s->product_ptr[static_cast<size_t>(pos) + 1];
      }))
    return false;
  for (size_t k = 0; k < s->w_row.size(); ++k) s->product_ptr[k + 1] += s->product_ptr[k];
  s->products.resize(static_cast<size_t>(num_products));
  std::vector<int> next(s->product_ptr.begin(), s->product_ptr.end() - 1);
  return for_each_pair([&](int pos, const SparseKkt::Product& prod) {
    s->products[static_cast<size_t>(next[static_cast<size_t>(pos)]++)] = prod;
  });
}

// s->products_consecutive, s->two_rows_per_coordinate and
// s->row_consecutive: the flags that let the kernels stride.
void ConsecutiveFlags(int nc, int nq, const std::vector<int>& col_ptr, SparseKkt* s) {
  s->products_consecutive.assign(s->w_row.size(), 0);
  for (size_t pos = 0; pos < s->w_row.size(); ++pos) {
    const int r0 = s->product_ptr[pos], r1 = s->product_ptr[pos + 1];
    bool consecutive = r1 > r0;
    for (int r = r0 + 1; r < r1 && consecutive; ++r) {
      const SparseKkt::Product& first = s->products[static_cast<size_t>(r0)];
      const SparseKkt::Product& p = s->products[static_cast<size_t>(r)];
      const int t = r - r0;
      consecutive = p.a == first.a + t && p.b == first.b + t && p.j == first.j + t;
    }
    s->products_consecutive[pos] = consecutive;
  }
  s->two_rows_per_coordinate = true;
  for (int j = 0; j < nq; ++j)
    s->two_rows_per_coordinate &=
        col_ptr[static_cast<size_t>(j) + 1] - col_ptr[static_cast<size_t>(j)] <= 2;
  s->row_consecutive.assign(static_cast<size_t>(nc), 0);
  for (int i = 0; i < nc; ++i) {
    const int k0 = s->row_ptr[static_cast<size_t>(i)], k1 = s->row_ptr[static_cast<size_t>(i) + 1];
    bool consecutive = true;
    for (int k = k0 + 1; k < k1 && consecutive; ++k)
      consecutive = s->col[static_cast<size_t>(k)] == s->col[static_cast<size_t>(k0)] + (k - k0);
    s->row_consecutive[static_cast<size_t>(i)] = consecutive;
  }
}

// L's rows from the upper triangle of W (s->w_ptr, s->w_row): row k's
// columns are cols[ptr[k]] .. cols[ptr[k + 1] - 1]; lnz[i] counts column
// i's entries.
struct LRows {
  std::vector<int> ptr, cols, lnz;
};

// Symbolic LDL^T, rows: the elimination tree, and row k's pattern as the
// reach of column k's entries in it (T. Davis's LDL), in the order the
// numeric factorisation visits it: each path found goes before
// everything found so far (LDL's Pattern, filled from the top). False when
// the meter stops it.
bool LRowPatterns(int nc, const SparseKkt& s, Meter* meter, LRows* rows) {
  std::vector<int> parent(static_cast<size_t>(nc), -1), flag(static_cast<size_t>(nc)),
      stack(static_cast<size_t>(nc)), pattern(static_cast<size_t>(nc));
  rows->lnz.assign(static_cast<size_t>(nc), 0);
  rows->ptr.assign(static_cast<size_t>(nc) + 1, 0);
  for (int k = 0; k < nc; ++k) {
    flag[static_cast<size_t>(k)] = k;
    size_t top = static_cast<size_t>(nc);
    for (int p = s.w_ptr[static_cast<size_t>(k)]; p < s.w_ptr[static_cast<size_t>(k) + 1]; ++p) {
      int i = s.w_row[static_cast<size_t>(p)];
      if (i >= k) continue;
      size_t len = 0;
      for (; flag[static_cast<size_t>(i)] != k; i = parent[static_cast<size_t>(i)]) {
        if (parent[static_cast<size_t>(i)] == -1) parent[static_cast<size_t>(i)] = k;
        stack[len++] = i;
        flag[static_cast<size_t>(i)] = k;
      }
      while (len > 0) pattern[--top] = stack[--len];
    }
    const size_t count = static_cast<size_t>(nc) - top;
    if (!meter->Take(static_cast<int64_t>(count), 3 * sizeof(int)) ||
        !meter->Work(static_cast<int64_t>(count) + s.w_ptr[static_cast<size_t>(k) + 1] -
                     s.w_ptr[static_cast<size_t>(k)]))
      return false;
    rows->cols.insert(rows->cols.end(), pattern.begin() + static_cast<long>(top), pattern.end());
    rows->ptr[static_cast<size_t>(k) + 1] = static_cast<int>(rows->cols.size());
    for (size_t q = top; q < static_cast<size_t>(nc); ++q)
      ++rows->lnz[static_cast<size_t>(pattern[q])];
  }
  return true;
}

// Symbolic LDL^T, structure: L by columns (s->l_ptr, s->l_row) and by rows
// (s->l_row_ptr, s->l_by_row: each entry's place in l_row, s->l_by_row_col:
// its column), from its rows.
void LStructure(int nc, const LRows& rows, SparseKkt* s) {
  s->l_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  for (int k = 0; k < nc; ++k)
    s->l_ptr[static_cast<size_t>(k) + 1] =
        s->l_ptr[static_cast<size_t>(k)] + rows.lnz[static_cast<size_t>(k)];
  s->l_row.assign(static_cast<size_t>(s->l_nnz()), 0);
  s->l_row_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  s->l_by_row.reserve(rows.cols.size());
  s->l_by_row_col.reserve(rows.cols.size());
  std::vector<int> fill(s->l_ptr.begin(), s->l_ptr.end() - 1);
  for (int k = 0; k < nc; ++k) {
    for (int q = rows.ptr[static_cast<size_t>(k)]; q < rows.ptr[static_cast<size_t>(k) + 1]; ++q) {
      const int i = rows.cols[static_cast<size_t>(q)];
      const int p = fill[static_cast<size_t>(i)]++;
      s->l_row[static_cast<size_t>(p)] = k;
      s->l_by_row.push_back(p);
      s->l_by_row_col.push_back(i);
    }
    s->l_row_ptr[static_cast<size_t>(k) + 1] = static_cast<int>(s->l_by_row.size());
  }
}

// L bidiagonal: row k >= 1 has the one entry L_k,k-1 (W tridiagonal in
// elimination order: a chain of constraints, each sharing coordinates
// with its neighbours only).
bool Bidiagonal(int nc, const SparseKkt& s) {
  bool bidiagonal = s.l_nnz() == nc - 1;
  for (int k = 0; k + 1 < nc && bidiagonal; ++k) {
    bidiagonal =
        s.l_ptr[static_cast<size_t>(k) + 1] == k + 1 && s.l_row[static_cast<size_t>(k)] == k + 1;
  }
  return bidiagonal;
}

Analysis Stop(const Meter& meter, int64_t* bytes_needed, SparseKkt* s) {
  *s = SparseKkt{};
  if (bytes_needed) *bytes_needed = meter.needed();
  return meter.stopped() ? Analysis::kStopped : Analysis::kOverBudget;
}

}  // namespace

Analysis BuildSparseKkt(int nc, int nq, const std::vector<char>& g_nonzero, bool mass_diagonal,
                        KktPath path, const AnalysisBudget& budget, SparseKkt* s,
                        int64_t* bytes_needed) {
  *s = SparseKkt{};
  if (bytes_needed) *bytes_needed = 0;
  // The fixed-size kernels (nq <= 4, dynamics.h) are dense.
  if (path == KktPath::kDense || !mass_diagonal || nc == 0 || nq <= 4) return Analysis::kDone;
  if (path == KktPath::kAuto && nc < kSparseMinConstraints) return Analysis::kDone;
  Meter meter(budget);
  // Over the budget: the dense path on purpose when the choice is ours
  // (sparse_analysis.h), else the forced path cannot be had.
  auto over = [&] {
    if (meter.stopped() || path == KktPath::kSparse) return Stop(meter, bytes_needed, s);
    const int64_t needed = meter.needed();
    *s = SparseKkt{};
    if (bytes_needed) *bytes_needed = needed;
    return Analysis::kDone;
  };
  s->nc = nc;
  s->nq = nq;
  // G by rows (CSR), and by columns (CSC: col_ptr, the nonzero index k of
  // each entry in k_of, its row in row_of_col).
  GColumns g;
  if (!GByRowsAndColumns(nc, nq, g_nonzero, &meter, s, &g)) return over();
  // The products that form W's off-diagonal entries, counted before
  // anything proportional to them is made.
  const int64_t num_products = NumProducts(nq, g.col_ptr);
  // W's off-diagonal pattern; with the automatic choice, a W whose strict
  // lower triangle alone passes the fill limit is dense (L's pattern
  // contains it under any ordering, so the test below would fail too).
  std::vector<int> w_ptr, w_col;
  if (!WPattern(nc, s->row_ptr, s->col, g.col_ptr, g.row_of_col, &meter, &w_ptr, &w_col))
    return over();
  const double dense_factor = 0.5 * nc * (nc + 1.0);
  if (path == KktPath::kAuto &&
      static_cast<double>(w_col.size()) / 2 + nc > kSparseMaxFill * dense_factor) {
    *s = SparseKkt{};
    return Analysis::kDone;
  }
  // The ordering: AMD's, or the given one when it fills no more.
  int64_t fill = 0;
  if (!AmdOrder(nc, w_ptr, w_col, &meter, &s->order) ||
      !NaturalOrderIfNoMoreFill(nc, w_ptr, w_col, &meter, &s->order, &fill))
    return over();
  // The fill test, before anything proportional to L or the products is
  // made.
  if (path == KktPath::kAuto && fill + nc > kSparseMaxFill * dense_factor) {
    *s = SparseKkt{};
    return Analysis::kDone;
  }
  if (!PermutedUpperW(nc, w_ptr, w_col, &meter, s)) return over();
  std::vector<int>().swap(w_ptr);
  std::vector<int>().swap(w_col);
  if (!ProductsByEntry(nq, num_products, g, &meter, s)) return over();
  ConsecutiveFlags(nc, nq, g.col_ptr, s);
  LRows rows;
  if (!LRowPatterns(nc, *s, &meter, &rows)) return over();
  LStructure(nc, rows, s);
  s->bidiagonal = Bidiagonal(nc, *s);
  if (bytes_needed) *bytes_needed = meter.needed();
  s->enabled = true;
  return Analysis::kDone;
}

int64_t SparseKkt::heap_bytes() const {
  return HeapBytesOf(row_ptr, col, order, pos_of, w_ptr, w_row, product_ptr, products, l_ptr, l_row,
                     l_row_ptr, l_by_row, l_by_row_col, row_consecutive, products_consecutive);
}

}  // namespace tether
