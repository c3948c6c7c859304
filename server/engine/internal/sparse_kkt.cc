#include "engine/internal/sparse_kkt.h"

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace tether {

namespace {

// Entries of the LDL^T factor of W (pattern `entries`, both triangles)
// permuted so that position p is row order[p]: the column counts of the
// elimination tree (T. Davis's LDL symbolic).
int64_t FactorEntries(int nc, const std::vector<std::pair<int, int>>& entries,
                      const std::vector<int>& order) {
  std::vector<int> pos_of(static_cast<size_t>(nc));
  for (int p = 0; p < nc; ++p) pos_of[static_cast<size_t>(order[static_cast<size_t>(p)])] = p;
  std::vector<std::vector<int>> above(static_cast<size_t>(nc));  // column k: rows i < k
  for (const auto& [a, b] : entries) {
    const int pa = pos_of[static_cast<size_t>(a)], pb = pos_of[static_cast<size_t>(b)];
    if (pa < pb) above[static_cast<size_t>(pb)].push_back(pa);
  }
  std::vector<int> parent(static_cast<size_t>(nc), -1), flag(static_cast<size_t>(nc));
  int64_t count = 0;
  for (int k = 0; k < nc; ++k) {
    flag[static_cast<size_t>(k)] = k;
    for (int i : above[static_cast<size_t>(k)]) {
      for (; flag[static_cast<size_t>(i)] != k; i = parent[static_cast<size_t>(i)]) {
        if (parent[static_cast<size_t>(i)] == -1) parent[static_cast<size_t>(i)] = k;
        ++count;
        flag[static_cast<size_t>(i)] = k;
      }
    }
  }
  return count;
}

}  // namespace

void BuildSparseKkt(int nc, int nq, const std::vector<char>& g_nonzero, bool mass_diagonal,
                    KktPath path, SparseKkt* s) {
  *s = SparseKkt{};
  // The fixed-size kernels (nq <= 4, dynamics.h) are dense.
  if (path == KktPath::kDense || !mass_diagonal || nc == 0 || nq <= 4) return;
  if (path == KktPath::kAuto && nc < kSparseMinConstraints) return;
  s->nc = nc;
  s->nq = nq;
  // G by rows, and by columns (the nonzero indices of each coordinate).
  s->row_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  std::vector<std::vector<int>> by_col(static_cast<size_t>(nq));
  for (int i = 0; i < nc; ++i) {
    for (int j = 0; j < nq; ++j) {
      if (!g_nonzero[static_cast<size_t>(i) * static_cast<size_t>(nq) + static_cast<size_t>(j)])
        continue;
      by_col[static_cast<size_t>(j)].push_back(static_cast<int>(s->col.size()));
      s->col.push_back(j);
    }
    s->row_ptr[static_cast<size_t>(i) + 1] = static_cast<int>(s->col.size());
  }
  std::vector<int> row_of(s->col.size());
  for (int i = 0; i < nc; ++i) {
    for (int k = s->row_ptr[static_cast<size_t>(i)]; k < s->row_ptr[static_cast<size_t>(i) + 1];
         ++k)
      row_of[static_cast<size_t>(k)] = i;
  }
  // W's pattern (both triangles and the diagonal, for the ordering).
  std::vector<std::pair<int, int>> entries;
  for (int i = 0; i < nc; ++i) entries.push_back({i, i});
  for (const auto& nz : by_col) {
    for (size_t x = 0; x < nz.size(); ++x) {
      for (size_t y = x + 1; y < nz.size(); ++y) {
        const int a = row_of[static_cast<size_t>(nz[x])], b = row_of[static_cast<size_t>(nz[y])];
        entries.push_back({a, b});
        entries.push_back({b, a});
      }
    }
  }
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  {
    std::vector<Eigen::Triplet<double, int>> trip;
    trip.reserve(entries.size());
    for (const auto& [a, b] : entries) trip.emplace_back(a, b, 1.0);
    Eigen::SparseMatrix<double, Eigen::ColMajor, int> W(nc, nc);
    W.setFromTriplets(trip.begin(), trip.end());
    Eigen::AMDOrdering<int> amd;
    Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> perm;
    amd(W, perm);
    // Eigen's ordering result maps new positions to old indices (its
    // SimplicialCholesky factorises A twisted by the inverse).
    s->order.assign(perm.indices().data(), perm.indices().data() + nc);
  }
  // The given order when it fills no more than AMD's (a chain's or a
  // ladder's natural order is already banded): sequential access, no
  // permutation of the right-hand side.
  {
    std::vector<int> natural(static_cast<size_t>(nc));
    for (int i = 0; i < nc; ++i) natural[static_cast<size_t>(i)] = i;
    if (FactorEntries(nc, entries, natural) <= FactorEntries(nc, entries, s->order))
      s->order = std::move(natural);
  }
  s->pos_of.assign(static_cast<size_t>(nc), -1);
  for (int p = 0; p < nc; ++p) s->pos_of[static_cast<size_t>(s->order[static_cast<size_t>(p)])] = p;
  // Upper triangle of P W P^T by columns, rows ascending (diagonal last).
  std::vector<std::vector<int>> cols(static_cast<size_t>(nc));
  for (const auto& [a, b] : entries) {
    const int pa = s->pos_of[static_cast<size_t>(a)], pb = s->pos_of[static_cast<size_t>(b)];
    if (pa <= pb) cols[static_cast<size_t>(pb)].push_back(pa);
  }
  s->w_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  for (int p = 0; p < nc; ++p) {
    auto& c = cols[static_cast<size_t>(p)];
    std::sort(c.begin(), c.end());
    s->w_row.insert(s->w_row.end(), c.begin(), c.end());
    s->w_ptr[static_cast<size_t>(p) + 1] = static_cast<int>(s->w_row.size());
  }
  auto position = [&](int a, int b) {
    int pa = s->pos_of[static_cast<size_t>(a)], pb = s->pos_of[static_cast<size_t>(b)];
    if (pa > pb) std::swap(pa, pb);
    const auto begin = s->w_row.begin() + s->w_ptr[static_cast<size_t>(pb)];
    const auto end = s->w_row.begin() + s->w_ptr[static_cast<size_t>(pb) + 1];
    return static_cast<int>(std::lower_bound(begin, end, pa) - s->w_row.begin());
  };
  // The off-diagonal entries' products (a diagonal entry is a sum over its
  // row of G, formed from the row itself).
  std::vector<std::pair<int, SparseKkt::Product>> products;  // (pos, product)
  for (int j = 0; j < nq; ++j) {
    const auto& nz = by_col[static_cast<size_t>(j)];
    for (size_t x = 0; x < nz.size(); ++x) {
      for (size_t y = x + 1; y < nz.size(); ++y) {
        const int a = nz[x], b = nz[y];
        products.push_back(
            {position(row_of[static_cast<size_t>(a)], row_of[static_cast<size_t>(b)]), {a, b, j}});
      }
    }
  }
  std::stable_sort(products.begin(), products.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  s->product_ptr.assign(s->w_row.size() + 1, 0);
  for (const auto& [pos, prod] : products) {
    ++s->product_ptr[static_cast<size_t>(pos) + 1];
    s->products.push_back(prod);
  }
  for (size_t k = 0; k < s->w_row.size(); ++k) s->product_ptr[k + 1] += s->product_ptr[k];
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
  for (const auto& nz : by_col) s->two_rows_per_coordinate &= nz.size() <= 2;
  s->row_consecutive.assign(static_cast<size_t>(nc), 0);
  for (int i = 0; i < nc; ++i) {
    const int k0 = s->row_ptr[static_cast<size_t>(i)], k1 = s->row_ptr[static_cast<size_t>(i) + 1];
    bool consecutive = true;
    for (int k = k0 + 1; k < k1 && consecutive; ++k)
      consecutive = s->col[static_cast<size_t>(k)] == s->col[static_cast<size_t>(k0)] + (k - k0);
    s->row_consecutive[static_cast<size_t>(i)] = consecutive;
  }
  // Symbolic LDL^T: the elimination tree, and row k's pattern as the
  // reach of column k's entries in it (T. Davis's LDL), in the order the
  // numeric factorisation visits it.
  std::vector<int> parent(static_cast<size_t>(nc), -1), flag(static_cast<size_t>(nc)),
      lnz(static_cast<size_t>(nc), 0), stack(static_cast<size_t>(nc));
  std::vector<std::vector<int>> row_cols(static_cast<size_t>(nc));
  for (int k = 0; k < nc; ++k) {
    flag[static_cast<size_t>(k)] = k;
    std::vector<int>& rc = row_cols[static_cast<size_t>(k)];
    std::vector<int> topo;  // filled from the back, as LDL's Pattern
    for (int p = s->w_ptr[static_cast<size_t>(k)]; p < s->w_ptr[static_cast<size_t>(k) + 1]; ++p) {
      int i = s->w_row[static_cast<size_t>(p)];
      if (i >= k) continue;
      size_t len = 0;
      for (; flag[static_cast<size_t>(i)] != k; i = parent[static_cast<size_t>(i)]) {
        if (parent[static_cast<size_t>(i)] == -1) parent[static_cast<size_t>(i)] = k;
        stack[len++] = i;
        flag[static_cast<size_t>(i)] = k;
      }
      // This path goes before everything found so far.
      rc.insert(rc.begin(), stack.begin(), stack.begin() + static_cast<long>(len));
    }
    for (int i : rc) ++lnz[static_cast<size_t>(i)];
  }
  s->l_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  for (int k = 0; k < nc; ++k)
    s->l_ptr[static_cast<size_t>(k) + 1] =
        s->l_ptr[static_cast<size_t>(k)] + lnz[static_cast<size_t>(k)];
  s->l_row.assign(static_cast<size_t>(s->l_nnz()), 0);
  s->l_row_ptr.assign(static_cast<size_t>(nc) + 1, 0);
  std::vector<int> fill(s->l_ptr.begin(), s->l_ptr.end() - 1);
  for (int k = 0; k < nc; ++k) {
    for (int i : row_cols[static_cast<size_t>(k)]) {
      const int p = fill[static_cast<size_t>(i)]++;
      s->l_row[static_cast<size_t>(p)] = k;
      s->l_by_row.push_back(p);
      s->l_by_row_col.push_back(i);
    }
    s->l_row_ptr[static_cast<size_t>(k) + 1] = static_cast<int>(s->l_by_row.size());
  }
  const double dense_factor = 0.5 * nc * (nc + 1.0);
  if (path == KktPath::kAuto && s->l_nnz() + nc > kSparseMaxFill * dense_factor) {
    *s = SparseKkt{};
    return;
  }
  // L bidiagonal: row k >= 1 has the one entry L_k,k-1 (W tridiagonal in
  // elimination order: a chain of constraints, each sharing coordinates
  // with its neighbours only).
  s->bidiagonal = s->l_nnz() == nc - 1;
  for (int k = 0; k + 1 < nc && s->bidiagonal; ++k) {
    s->bidiagonal =
        s->l_ptr[static_cast<size_t>(k) + 1] == k + 1 && s->l_row[static_cast<size_t>(k)] == k + 1;
  }
  s->enabled = true;
}

void SparseKktScratch::Resize(const SparseKkt& s) {
  const size_t nc = static_cast<size_t>(s.nc);
  w.assign(s.w_row.size(), 0);
  lx.assign(static_cast<size_t>(s.l_nnz()), 0);
  d_inv.assign(nc, 0);
  y.assign(nc, 0);
  x.assign(nc, 0);
  minv.assign(static_cast<size_t>(s.nq), 0);
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

}  // namespace tether
