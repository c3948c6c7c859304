#include "engine/internal/kkt/dynamics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/internal/base/ball.h"
#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/kkt/evaluate_kernel.h"

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
  const SparseKkt& sp = m.sparse;
  for (int i = 0; i < nc; ++i) {
    if (bad(out[m.off_g + i])) return NonFinite("constraint '" + m.constraint_names[i] + "' g");
    for (int j = 0; j < d; ++j) {
      int k = i * d + j;  // the entry's tape output (sparse: its nonzero, or none)
      if (sp.enabled) {
        const auto begin = sp.col.begin() + sp.row_ptr[static_cast<size_t>(i)];
        const auto end = sp.col.begin() + sp.row_ptr[static_cast<size_t>(i) + 1];
        const auto it = std::lower_bound(begin, end, j);
        if (it == end || *it != j) continue;
        k = static_cast<int>(it - sp.col.begin());
      }
      if (bad(out[m.off_G + k])) {
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
    for (int i = 0; i < (sp.enabled ? d : d * d); ++i) {
      const int r = sp.enabled ? i : i / d, c = sp.enabled ? i : i % d;
      if (bad(out[m.off_M + i])) {
        return NonFinite("mass matrix M(q) entry (" + m.coordinate_names[r] + ", " +
                         m.coordinate_names[c] + ")");
      }
    }
  }
  return NonFinite("an input or state value");
}

Status DependentConstraints(const Model& m, Workspace* ws, int row, double t) {
  // Row `row` of Y (= L^-1 G^T) is (nearly) in the span of the rows before
  // it: find the combination to name the constraints involved.
  const int nc = m.nc;
  std::string names;
  if (m.sparse.enabled) {
    // `row` is a position in the elimination order.
    for (int i : SparseDependentSet(m.sparse, &ws->sparse, row))
      names += (names.empty() ? "'" : ", '") + m.constraint_names[static_cast<size_t>(i)] + "'";
  } else {
    names = "'" + m.constraint_names[static_cast<size_t>(row)] + "'";
  }
  if (row > 0 && !m.sparse.enabled) {
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
      constraint_row_residual(static_cast<size_t>(m.nc)),
      zero_gains(static_cast<size_t>(m.nc), 0.0),
      L(m.inertia == Inertia::kKinetic && !m.sparse.enabled ? static_cast<size_t>(m.nq * m.nq) : 0),
      L_inv_diag(m.inertia == Inertia::kKinetic && !m.sparse.enabled ? static_cast<size_t>(m.nq)
                                                                     : 0),
      Minv_F(static_cast<size_t>(m.nq)),
      Y(m.sparse.enabled ? 0 : static_cast<size_t>(m.nc * m.nq)),
      W(m.sparse.enabled ? 0 : static_cast<size_t>(m.nc * m.nc)),
      W_inv_diag(m.sparse.enabled ? 0 : static_cast<size_t>(m.nc)),
      rhs(static_cast<size_t>(m.nc)),
      tmp(static_cast<size_t>(m.nq)),
      r1(static_cast<size_t>(m.nq)),
      kkt_scratch(static_cast<size_t>((m.inertia == Inertia::kDiagonal ? 1 : 2) * m.nq)),
      cond_x(static_cast<size_t>(m.nc)),
      cond_y(static_cast<size_t>(m.nc)),
      cond_z(static_cast<size_t>(m.nc)) {
  cond_involved.assign(static_cast<size_t>(m.nc), 0);
  m.dynamics.InitWork(dyn_work.data());
  m.constraints.InitWork(con_work.data());
  m.outputs.InitWork(out_work.data());
  dyn_out = m.dynamics.Outputs(dyn_work.data());
  con_out = m.constraints.Outputs(con_work.data());
  if (m.sparse.enabled) {
    sparse.Resize(m.sparse);
    // A constant F and M: M^-1 F once (the bits EvaluateSparse computes).
    bool fixed = m.inertia == Inertia::kDiagonal;
    for (int j = 0; j < m.nq && fixed; ++j) fixed = m.dynamics.OutputIsConstant(m.off_F + j);
    for (double mi : m.mass_inv) sparse.minv_subnormal |= mi < std::numeric_limits<double>::min();
    if (fixed) {
      for (int j = 0; j < m.nq; ++j)
        Minv_F[static_cast<size_t>(j)] = dyn_out[m.off_F + j] * m.mass_inv[static_cast<size_t>(j)];
      sparse.minv_f_fixed = true;
    }
  }
}

using internal::EvaluateImpl;

namespace internal {

// The sparse path (model/sparse_analysis.h, kkt/sparse_ldlt.h): the dense kernel's steps and
// results (EvaluateImpl), with G as its nonzeros and M diagonal.
// One long function on purpose (about 250 lines): it is the hot kernel of
// large systems, its phases share a dozen scratch pointers and the
// compiler vectorizes across them; split, the pieces would pass those
// pointers through calls it cannot see through.
template <Record kRecord>
Status EvaluateSparse(const Model& m, Workspace* ws, double t, const double* q, const double* v,
                      double* a_out) {
  const SparseKkt& sp = m.sparse;
  SparseKktScratch& sc = ws->sparse;
  const int d = m.nq, nc = m.nc;
  ws->constraint_rows_current = false;
  double* work = ws->dyn_work.data();
  // LoadVars with block copies (large systems only take this path; for a
  // handful of coordinates memcpy's wide loads of values just stored
  // defeat store-to-load forwarding).
  work[0] = t;
  std::memcpy(work + 1, q, sizeof(double) * static_cast<size_t>(d));
  std::memcpy(work + 1 + d, v, sizeof(double) * static_cast<size_t>(d));
  if (m.nu) {
    std::memcpy(work + 1 + 2 * d, ws->u.data(), sizeof(double) * static_cast<size_t>(m.nu));
    if (ws->u_ramp) internal::LoadRampedInputs(m, *ws, t, work + 1 + 2 * d);
  }
  m.dynamics.Eval(work);
  const double* out = ws->dyn_out;
  const Model::TapeBlocks blocks = m.Blocks(out);
  const double* g = blocks.g;
  const double* G = blocks.G;
  const double* gt = blocks.gt;
  const double* H = blocks.H;
  const double* F = blocks.F;
  const double* two_alpha = ws->feedback_off ? ws->zero_gains.data() : m.two_alpha.data();
  const double* beta_sq = ws->feedback_off ? ws->zero_gains.data() : m.beta_sq.data();
  const int* row_ptr = sp.row_ptr.data();
  const int* col = sp.col.data();
  const uint8_t* consecutive = sp.row_consecutive.data();

  // M^-1 (diagonal: constant, or M(q)'s diagonal).
  const double* minv = m.mass_inv.data();
  const double* Mdiag = m.mass_diag.data();
  if (m.inertia == Inertia::kKinetic) {
    Mdiag = blocks.M;
    double* mi = sc.minv.data();
    sc.minv_subnormal = false;
    for (int j = 0; j < d; ++j) {
      if (!(Mdiag[j] > 0) || !std::isfinite(Mdiag[j])) {
        if (!AllFinite(m, *ws)) return DescribeNonFinite(m, *ws);
        std::string message =
            "the mass matrix M(q) = d2T/dv2 is not positive definite (pivot at "
            "coordinate '" +
            m.coordinate_names[static_cast<size_t>(j)] +
            "'); expected a kinetic energy that is positive for every velocity";
        return Aborted(message, {{"system.kinetic_energy", message}});
      }
      mi[j] = 1.0 / Mdiag[j];
      sc.minv_subnormal |= mi[j] < std::numeric_limits<double>::min();
    }
    minv = mi;
  }
  double* b = ws->Minv_F.data();
  double* a = ws->a.data();
  double* gtl = ws->tmp.data();
  double* lambda = ws->lambda.data();
  double* e_dot = ws->e_dot.data();
  // The right-hand side, then lambda, in elimination order.
  double* x = sc.x.data();
  const int* pos_of = sp.pos_of.data();
  // Every result (a, lambda, g, e') is added into `sum`, whose product with
  // 0 is 0 only when all are finite: one branch at the end (as on the dense
  // path); the order of the terms only decides whether an overflow of
  // finite terms takes the slow path, which then finds nothing.
  double sum = 0;
  if (!sc.minv_f_fixed) {
    for (int j = 0; j < d; ++j) b[j] = F[j] * minv[j];
  }
  // W = G M^-1 G^T on its pattern, formed, factorised and solved in
  // elimination order. Row i of G gives, in one pass as the factorisation
  // reaches it, e'_i, the right-hand side (G M^-1 F + H + 2 alpha e' +
  // beta^2 e)_i and W_ii.
  const int* order = sp.order.data();
  auto form_row = [&](int p) TETHER_INLINE_LAMBDA {
    const int i = order[p];
    double s = gt[i], r = 0, w = 0;
    ForEachInRow(row_ptr, col, consecutive, i, [&](int k, int j) TETHER_INLINE_LAMBDA {
      const double Gk = G[k];
      s += Gk * v[j];
      r += Gk * b[j];
      w += Gk * Gk * minv[j];
    });
    e_dot[i] = s;
    x[p] = r + H[i] + two_alpha[i] * s + beta_sq[i] * g[i];
    sum += g[i] + s;
    return w;
  };
  double lo, hi;
  const int bad = SparseLdlt(sp, &sc, G, minv, m.dependence_tolerance, &lo, &hi, x, form_row);
  const double* w = sc.w.data();
  if (bad >= 0) {
    if (!AllFinite(m, *ws)) return DescribeNonFinite(m, *ws);
    return DependentConstraints(m, ws, bad, t);
  }
  // A bidiagonal factor's back-substitution scatters each lambda into G^T
  // lambda as it is found (below), when every coordinate's sum has at most
  // two terms and so the same bits in any row order.
  const bool backward = kRecord != Record::kNothing && ws->in_certificate_window;
  // Inside a window too: |G^T||lambda| (judgement (b)'s operands) has at
  // most two terms a coordinate as well, so the same bits in any order.
  const bool fused = sp.bidiagonal && sp.two_rows_per_coordinate;
  if (!fused) SparseLdltBackSolve(sp, sc, x);

  // cond_1(W) as on the dense path (evaluate_kernel.h): only inside a
  // certificate window at accepted states, here on P W P^T, whose norm and
  // inverse norm are W's. |W|_1 from the upper triangle's column sums (each
  // off-diagonal entry counts in its row's column too); |W^-1|_1 by Hager's
  // estimate, O(nnz(W) + nnz(L)) per solve, 5 to 6 solves, or, for a
  // bidiagonal factor (W tridiagonal), exactly with one solve
  // (TridiagonalInverseNorm).
  double w_condition = nc == 1 ? 1.0 : hi / lo;
  int w_column = -1;  // in elimination order
  const bool estimate = kRecord == Record::kEverything && nc > 1 && ws->in_certificate_window;
  double* cx = ws->cond_x.data();
  double* cy = ws->cond_y.data();
  double* cz = ws->cond_z.data();
  if (estimate) {
    const int* wp = sp.w_ptr.data();
    const int* wi = sp.w_row.data();
    for (int k = 0; k < nc; ++k) cx[k] = 0;
    for (int k = 0; k < nc; ++k) {
      for (int p = wp[k]; p < wp[k + 1]; ++p) {
        const double aw = std::fabs(w[p]);
        cx[k] += aw;
        if (wi[p] != k) cx[wi[p]] += aw;
      }
    }
    double w_norm1 = 0;
    for (int k = 0; k < nc; ++k) w_norm1 = std::max(w_norm1, cx[k]);
    auto solve = [&](double* v) {
      SparseLdltForwardSolve(sp, sc, v);
      SparseLdltBackSolve(sp, sc, v);
    };
    const double inverse_norm = sp.bidiagonal
                                    ? TridiagonalInverseNorm(solve, sc.lx.data(), nc, cy, &w_column)
                                    : InverseNormEstimateWith(solve, nc, cx, cy, cz, &w_column);
    w_condition = w_norm1 * inverse_norm;
  }

  // Judgement (b)'s operand magnitudes and backward error only inside a
  // certificate window: outside, nothing reads them (ws->stats is reset and
  // constraint_magnitude read by the window's recorder), and the rows give
  // the frames' absolute residuals only, as KktRowResiduals' `backward`.

  // lambda in constraint order, and a = M^-1 (F - G^T lambda) with G^T
  // lambda scattered from G's rows: each coordinate's sum runs over its rows
  // in ascending order, from 0, as a gather over G's columns would. For the
  // backward error, |G^T||lambda| the same way into A.
  double* A = ws->kkt_scratch.data();
  std::fill(gtl, gtl + d, 0.0);
  if (backward) std::fill(A, A + d, 0.0);
  if (fused) {
    // SparseLdltBackSolve's bidiagonal loop, x <- L^-T D^-1 x, and row
    // order[j]'s lambda scattered as soon as it is found. (The finiteness
    // sum then takes lambda in the opposite order: that only decides
    // whether an overflow of finite terms takes the slow path.)
    const double* Lx = sc.lx.data();
    const double* Dinv = sc.d_inv.data();
    auto scatter = [&](int j, double xj) TETHER_INLINE_LAMBDA {
      x[j] = xj;
      const int i = order[j];
      lambda[i] = xj;
      sum += xj;
      const int k0 = row_ptr[i];
      if (consecutive[i] && row_ptr[i + 1] - k0 == 4 && col[k0] % 2 == 0) {
        // A planar chain's row (two points' x and y), two columns at a time
        // in the lanes of a V2: each element's product and sum are the
        // scalar ones. Even first columns only, so that each pair is the
        // one a neighbouring row stored (a load that spans two stores
        // would wait for both).
        using ball::V2;
        const int c0 = col[k0];
        const V2 x2 = ball::Splat2(xj), ax2 = ball::Splat2(std::fabs(xj));
        for (int t = 0; t < 4; t += 2) {
          const V2 Gt = ball::Load2(G + k0 + t);
          ball::Store2(gtl + c0 + t, ball::Load2(gtl + c0 + t) + Gt * x2);
          if (backward) {
            ball::Store2(A + c0 + t, ball::Load2(A + c0 + t) + ball::Abs2(Gt) * ax2);
          }
        }
      } else if (backward) {
        const double axj = std::fabs(xj);
        ForEachInRow(row_ptr, col, consecutive, i, [&](int k, int c) TETHER_INLINE_LAMBDA {
          gtl[c] += G[k] * xj;
          A[c] += std::fabs(G[k]) * axj;
        });
      } else {
        ForEachInRow(row_ptr, col, consecutive, i,
                     [&](int k, int c) TETHER_INLINE_LAMBDA { gtl[c] += G[k] * xj; });
      }
    };
    double x_next = x[nc - 1] * Dinv[nc - 1];
    scatter(nc - 1, x_next);
    for (int j = nc - 2; j >= 0; --j) {
      double xj = x[j] * Dinv[j];
      xj -= Lx[j] * x_next;
      x_next = xj;
      scatter(j, xj);
    }
  }
  for (int i = 0; i < nc && !fused; ++i) {
    const double li = x[pos_of[i]];
    lambda[i] = li;
    sum += li;
    if (backward) {
      for (int k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
        gtl[col[k]] += G[k] * li;
        A[col[k]] += std::fabs(G[k]) * std::fabs(li);
      }
    } else {
      ForEachInRow(row_ptr, col, consecutive, i,
                   [&](int k, int j) TETHER_INLINE_LAMBDA { gtl[j] += G[k] * li; });
    }
  }
  {
    // The finiteness sum over a in four partial sums (two V2s): its order
    // only decides whether finite terms that overflow take the slow path
    // (above), and one serial sum over nq terms is a chain of nq
    // dependent additions on every evaluation. a itself elementwise.
    using ball::V2;
    V2 s0 = ball::Splat2(0), s1 = ball::Splat2(0);
    int j = 0;
    for (; j + 4 <= d; j += 4) {
      const V2 a0 = (ball::Load2(F + j) - ball::Load2(gtl + j)) * ball::Load2(minv + j);
      const V2 a1 = (ball::Load2(F + j + 2) - ball::Load2(gtl + j + 2)) * ball::Load2(minv + j + 2);
      ball::Store2(a + j, a0);
      ball::Store2(a + j + 2, a1);
      s0 += a0;
      s1 += a1;
    }
    for (; j < d; ++j) {
      a[j] = (F[j] - gtl[j]) * minv[j];
      sum += a[j];
    }
    const V2 s = s0 + s1;
    sum += s[0] + s[1];
  }

  // The evaluation at a new state no frame shows (Workspace::publish): a,
  // lambda and e' only, unless something is not finite (then the checks
  // below run as for any evaluation).
  const bool unpublished = kRecord == Record::kEverything && !ws->publish &&
                           !ws->in_certificate_window && sum * 0.0 == 0;
  // Row residuals and judgement (b)'s componentwise backward error, with the
  // operand magnitudes and gamma_n of the dense path's KktRowResiduals
  // (evaluate_kernel.h, the definition), n the dense row length, over G's
  // nonzeros.
  double r1 = 0, r2 = 0;
  KktRows rows;
  if (kRecord != Record::kNothing && !unpublished) {
    const double gam1 = Gamma(d + nc + 1), gam2 = Gamma(d + nc + 3);
    const double factor_weight = Gamma(3 * nc) / gam2;
    // From the window's maxima so far, as KktRowResiduals' floors: a row
    // divides only when it may raise them, which after a window's first
    // evaluations is almost never (two divisions a row otherwise).
    if (backward) {
      rows.ratio = ws->stats.max_backward_error;
      rows.relative = ws->stats.max_relative_residual;
    }
    auto consider = [&](double r, double mag, double gam, int row) {
      if (r > rows.ratio * gam * mag) [[unlikely]] {
        rows.ratio = r / (gam * mag);
        rows.row = row;
      }
      if (r > rows.relative * mag) [[unlikely]]
        rows.relative = r / mag;
    };
    // |L||D||L^T||lambda| in elimination order into cy (the condition
    // estimate is done with it); x still holds lambda in that order.
    if (backward) SparseFactorMagnitudes(sp, sc, x, cy);
    double* con_mag = kRecord == Record::kEverything ? ws->constraint_magnitude.data() : nullptr;
    double* con_res = ws->constraint_row_residual.data();
    if (backward) {
      // The dynamics rows pass judgement (b) a priori (docs/MATH.md section
      // 9, "The dynamics rows of a diagonal M"): a = (F - G^T lambda) M^-1
      // was computed just above from the same G^T lambda, which leaves each
      // row's residual within gamma_{k+7} of its operands (k <= nc: the
      // column's nonzeros), omega <= (k + 7) / (d + nc + 1): below 1 from
      // nc = 7 (the automatic switch takes this path from 16), at most 8/3
      // in any case (d >= nc), far below c.
      // Their residuals are still taken (r1, max_kkt_residual), their
      // magnitudes and omega are not, unless some a_j (or some 1/M_jj) is
      // subnormal: the argument assumes no underflow there, and then they
      // are judged as computed, from the |G^T||lambda| kept in row_mag. A
      // is turned into (|F| + |G^T||lambda|) M^-1, the constraint rows'
      // operands. Each constraint row's residual and magnitude are kept in
      // sc.row_r / sc.row_mag and tested once against the window's maxima
      // so far; only when some row may raise them, `consider` runs over the
      // kept rows in row order, as it would have row by row. A row that
      // does not pass the test against the starting maxima cannot pass it
      // against larger ones (rounded products are monotone), so the maxima
      // and the worst row are those of the row-by-row loop. The test is one
      // comparison, r > t2 * mag for t2 the smaller floor: rounded products
      // are monotone in t too, so it is r > t_ratio * mag or r > t_rel * mag.
      // (With the larger floor it would be "and": a row raising only the
      // smaller maximum would be missed.)
      double* row_r = sc.row_r.data();
      double* row_mag = sc.row_mag.data();
      const double t2 = std::min(rows.ratio * gam2, rows.relative);
      constexpr double kMinNormal = std::numeric_limits<double>::min();
      using ball::V2;
      const V2 zero = ball::Splat2(0), min_normal = ball::Splat2(kMinNormal);
      // r1, and the largest subnormal |a_j| (0: none; a NaN a_j is found by
      // the finiteness check below).
      V2 r1v = zero, subnormal_v = zero;
      int j = 0;
      for (; j + 2 <= d; j += 2) {
        const V2 aj = ball::Load2(a + j);
        const V2 Fj = ball::Load2(F + j), gabs = ball::Load2(A + j);
        const V2 r = ball::Abs2(ball::Load2(Mdiag + j) * aj + ball::Load2(gtl + j) - Fj);
        r1v = r1v < r ? r : r1v;
        ball::Store2(row_mag + j, gabs);
        ball::Store2(A + j, (ball::Abs2(Fj) + gabs) * ball::Load2(minv + j));
        const V2 abs_a = ball::Abs2(aj);
        const V2 sub = abs_a < min_normal ? abs_a : zero;
        subnormal_v = subnormal_v < sub ? sub : subnormal_v;
      }
      r1 = std::max(r1v[0], r1v[1]);
      double subnormal = std::max(subnormal_v[0], subnormal_v[1]);
      for (; j < d; ++j) {
        r1 = std::max(r1, std::fabs(Mdiag[j] * a[j] + gtl[j] - F[j]));
        const double gabs = A[j];
        row_mag[j] = gabs;
        A[j] = (std::fabs(F[j]) + gabs) * minv[j];
        if (std::fabs(a[j]) < kMinNormal) subnormal = std::max(subnormal, std::fabs(a[j]));
      }
      bool raise = false;
      auto constraint_row = [&](int i) TETHER_INLINE_LAMBDA {
        double Ga = 0, mag = 0;
        ForEachInRow(row_ptr, col, consecutive, i, [&](int k, int jj) TETHER_INLINE_LAMBDA {
          Ga += G[k] * a[jj];
          mag += std::fabs(G[k]) * A[jj];
        });
        const double fb1 = two_alpha[i] * e_dot[i], fb2 = beta_sq[i] * g[i];
        const double signed_r = Ga + H[i] + fb1 + fb2;
        const double r = std::fabs(signed_r);
        r2 = std::max(r2, r);
        mag += std::fabs(H[i]) + std::fabs(fb1) + std::fabs(fb2) + factor_weight * cy[pos_of[i]];
        if (con_mag) {
          con_mag[i] = mag;
          con_res[i] = signed_r;
        }
        row_r[d + i] = r;
        row_mag[d + i] = mag;
        raise |= r > t2 * mag;
      };
      // A planar chain's rows two at a time, in the lanes of V2s: each
      // lane does constraint_row's operations in its order (the same bits;
      // r2 a maximum, in any order the same).
      V2 r2v = zero;
      typedef long long I2 __attribute__((vector_size(16)));
      I2 raise_v = {0, 0};
      const V2 t2v = ball::Splat2(t2), fw = ball::Splat2(factor_weight);
      int i = 0;
      while (i + 1 < nc) {
        V2 gp[4], av[4], Av[4];
        int c0, c1;
        if (!RowPair4(row_ptr, col, consecutive, i, G, gp, &c0, &c1)) {
          constraint_row(i++);
          continue;
        }
        Gather4(a, c0, c1, av);
        Gather4(A, c0, c1, Av);
        V2 Ga = zero, mag = zero;
        for (int t = 0; t < 4; ++t) {
          Ga += gp[t] * av[t];
          mag += ball::Abs2(gp[t]) * Av[t];
        }
        const V2 Hi = ball::Load2(H + i);
        const V2 fb1 = ball::Load2(two_alpha + i) * ball::Load2(e_dot + i);
        const V2 fb2 = ball::Load2(beta_sq + i) * ball::Load2(g + i);
        const V2 signed_r = Ga + Hi + fb1 + fb2;
        const V2 r = ball::Abs2(signed_r);
        r2v = r2v < r ? r : r2v;
        const V2 cyv = {cy[pos_of[i]], cy[pos_of[i + 1]]};
        mag += ball::Abs2(Hi) + ball::Abs2(fb1) + ball::Abs2(fb2) + fw * cyv;
        if (con_mag) {
          ball::Store2(con_mag + i, mag);
          ball::Store2(con_res + i, signed_r);
        }
        ball::Store2(row_r + d + i, r);
        ball::Store2(row_mag + d + i, mag);
        raise_v |= r > t2v * mag;
        i += 2;
      }
      if (i < nc) constraint_row(i);
      r2 = std::max(r2, std::max(r2v[0], r2v[1]));
      raise |= (raise_v[0] | raise_v[1]) != 0;
      if (subnormal > 0 || sc.minv_subnormal) [[unlikely]] {
        for (int k = 0; k < d; ++k) {
          const double Ma = Mdiag[k] * a[k];
          consider(std::fabs(Ma + gtl[k] - F[k]), std::fabs(Ma) + row_mag[k] + std::fabs(F[k]),
                   gam1, k);
        }
      }
      if (raise) [[unlikely]] {
        for (int k = d; k < d + nc; ++k) consider(row_r[k], row_mag[k], gam2, k);
      }
    } else {
      for (int j = 0; j < d; ++j) {
        const double Ma = Mdiag[j] * a[j];
        r1 = std::max(r1, std::fabs(Ma + gtl[j] - F[j]));
      }
      for (int i = 0; i < nc; ++i) {
        double Ga = 0;
        ForEachInRow(row_ptr, col, consecutive, i,
                     [&](int k, int jj) TETHER_INLINE_LAMBDA { Ga += G[k] * a[jj]; });
        const double fb1 = two_alpha[i] * e_dot[i], fb2 = beta_sq[i] * g[i];
        r2 = std::max(r2, std::fabs(Ga + H[i] + fb1 + fb2));
      }
    }
  }
  {
    if (sum * 0.0 != 0) [[unlikely]] {
      Status why = DiagnoseNonFiniteSolve(m, *ws, d, nc, q, v, a, lambda, e_dot, r1, r2);
      if (!why.ok()) return why;
    }
  }
  if (a_out) std::copy(a, a + d, a_out);
  if (kRecord == Record::kNothing || unpublished) return Status::Ok();
  if constexpr (kRecord == Record::kEverything) {
    std::copy(g, g + nc, ws->e.begin());
    ws->dynamics_residual = r1;
    ws->constraint_residual = r2;
    ws->constraint_rows_current = backward;
  }
  EvaluationStats& st = ws->stats;
  st.AddRows(t, r1, r2, rows.relative, rows.ratio, rows.row);
  if (estimate || nc <= 1) {
    // W^-1 e_j in the factor's (AMD) order: constraint i at pos_of[i].
    AddCondition(
        &st, ws->cond_involved.data(), nc, t, w_condition, w_column, cx,
        [&](double* x) {
          SparseLdltForwardSolve(sp, sc, x);
          SparseLdltBackSolve(sp, sc, x);
        },
        [&](int i) { return pos_of[i]; });
  }
  ++st.evaluations;
  return Status::Ok();
}

}  // namespace internal

template <int D, int C>
Status SolveKktSized(const Model& m, Workspace* ws, double t, const double* q, const double* v) {
  if constexpr (D == 0) {
    if (m.sparse.enabled)
      return internal::EvaluateSparse<internal::Record::kEverything>(m, ws, t, q, v, nullptr);
  }
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
  if (m.sparse.enabled) return EvaluateSparse<kRecord>(m, ws, t, q, v, a_out);
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

int64_t Workspace::heap_bytes() const {
  return HeapBytesOf(u, dyn_work, con_work, out_work, a, lambda, e, e_dot, constraint_magnitude,
                     constraint_row_residual, zero_gains, cond_involved, L, L_inv_diag, Minv_F, Y,
                     W, W_inv_diag, rhs, tmp, r1, kkt_scratch, cond_x, cond_y, cond_z) +
         sparse.heap_bytes();
}

}  // namespace tether
