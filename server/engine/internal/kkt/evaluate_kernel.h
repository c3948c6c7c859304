// The evaluation kernel behind SolveKkt (dynamics.h), in a header so that a
// caller stepping a fixed-size model (Simulation::AdvanceSized) can inline
// it into the integrator's stages and keep the state in registers. Internal
// to the engine: include dynamics.h instead.
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "engine/internal/kkt/dynamics.h"

namespace tether {
namespace internal {

// The inputs at time t of a run whose inputs ramp (Workspace::u_rate not
// empty): u_k + u_rate_k (t - u_anchor), three operations in this order,
// so that a description whose expression is `u + r*(t - t0)` evaluates to
// the same bits (the build contracts no multiply-add: -ffp-contract=off).
// With a source (Workspace::u_source), what it writes over the slots
// (which hold the inputs as set).
inline void LoadRampedInputs(const Model& m, const Workspace& ws, double t, double* u_slots) {
  if (ws.u_source != nullptr) {
    (*ws.u_source)(t, u_slots);
    return;
  }
  for (int k = 0; k < m.nu; ++k) {
    const size_t i = static_cast<size_t>(k);
    u_slots[k] = ws.u[i] + ws.u_rate[i] * (t - ws.u_anchor);
  }
}

// Writes t and u into a tape's work buffer ([t, q, v, u] first), for a
// caller that wrote q and v in place (at work + 1 and work + 1 + d).
TETHER_INLINE void LoadTimeAndInputs(const Model& m, int d, const Workspace& ws, double t,
                                     double* work) {
  work[0] = t;
  if (m.nu) {
    std::memcpy(work + 1 + 2 * d, ws.u.data(), sizeof(double) * static_cast<size_t>(m.nu));
    if (ws.u_ramp) LoadRampedInputs(m, ws, t, work + 1 + 2 * d);
  }
}

// Writes [t, q, v, u] into the first slots of a tape's work buffer.
TETHER_INLINE void LoadVars(const Model& m, int d, const Workspace& ws, double t, const double* q,
                            const double* v, double* work) {
  for (int i = 0; i < d; ++i) work[1 + i] = q[i];
  for (int i = 0; i < d; ++i) work[1 + d + i] = v[i];
  LoadTimeAndInputs(m, d, ws, t, work);
}

// x <- L^-1 x for lower-triangular row-major L (n x n); inv = 1 / diag(L).
TETHER_INLINE void ForwardSubst(const double* L, const double* inv, int n, double* x) {
  for (int i = 0; i < n; ++i) {
    double s = x[i];
    const double* row = L + i * n;
    for (int k = 0; k < i; ++k) s -= row[k] * x[k];
    x[i] = s * inv[i];
  }
}

// x <- L^-T x.
TETHER_INLINE void BackSubst(const double* L, const double* inv, int n, double* x) {
  for (int i = n - 1; i >= 0; --i) {
    double s = x[i];
    for (int k = i + 1; k < n; ++k) s -= L[k * n + i] * x[k];
    x[i] = s * inv[i];
  }
}

// In-place Cholesky of the lower triangle of row-major A (n x n); inv
// receives 1 / L_ii. Returns the first row whose squared pivot is not
// positive (or whose diagonal entry is not finite), or -1.
TETHER_INLINE int Cholesky(double* A, double* inv, int n) {
  for (int j = 0; j < n; ++j) {
    double* rj = A + j * n;
    const double original = rj[j];
    double s = original;
    for (int k = 0; k < j; ++k) s -= rj[k] * rj[k];
    if (!(s > 0) || !std::isfinite(original)) return j;
    const double piv = std::sqrt(s);
    const double r_piv = 1.0 / piv;
    rj[j] = piv;
    inv[j] = r_piv;
    for (int i = j + 1; i < n; ++i) {
      double* ri = A + i * n;
      double r = ri[j];
      for (int k = 0; k < j; ++k) r -= ri[k] * rj[k];
      ri[j] = r * r_piv;
    }
  }
  return -1;
}

// In-place LDL^T of the lower triangle of row-major A (n x n): unit L below
// the diagonal, D on it, inv = 1 / D. No square roots, so the chain from W
// to lambda is one division per row. Returns the first row whose pivot D_j
// is not above `tol` times its original diagonal entry, or -1; d_min/d_max
// receive the pivot range (D_j is the square of the Cholesky pivot).
TETHER_INLINE int Ldlt(double* A, double* inv, int n, double tol, double* d_min, double* d_max) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (int j = 0; j < n; ++j) {
    double* rj = A + j * n;
    const double original = rj[j];
    double s = original;
    for (int k = 0; k < j; ++k) s -= rj[k] * rj[k] * A[k * n + k];
    if (!(s > tol * std::fabs(original)) || !(s > 0)) {
      *d_min = lo;
      *d_max = hi;
      return j;
    }
    const double r_piv = 1.0 / s;
    rj[j] = s;
    inv[j] = r_piv;
    lo = std::min(lo, s);
    hi = std::max(hi, s);
    for (int i = j + 1; i < n; ++i) {
      double* ri = A + i * n;
      double r = ri[j];
      for (int k = 0; k < j; ++k) r -= ri[k] * rj[k] * A[k * n + k];
      ri[j] = r * r_piv;
    }
  }
  *d_min = lo;
  *d_max = hi;
  return -1;
}

// x <- A^-1 x with the LDL^T factor of Ldlt (leading n x n block of a
// matrix with row stride `stride`).
TETHER_INLINE void LdltSolve(const double* A, const double* inv, int n, int stride, double* x) {
  for (int i = 0; i < n; ++i) {
    double s = x[i];
    const double* row = A + i * stride;
    for (int k = 0; k < i; ++k) s -= row[k] * x[k];
    x[i] = s;
  }
  for (int i = 0; i < n; ++i) x[i] *= inv[i];
  for (int i = n - 1; i >= 0; --i) {
    double s = x[i];
    for (int k = i + 1; k < n; ++k) s -= A[k * stride + i] * x[k];
    x[i] = s;
  }
}

// f = |L| |D| |L^T| |x| for the factor L D L^T of LdltSolve (L strictly
// below A's diagonal, row-major with stride n; inv = 1 / D): the scale of
// the rounding that the factorisation and both triangular solves leave in
// the residual of W x = rhs, (W + dW) x = rhs with |dW| <= gamma_{3n}
// |L||D||L^T| (Higham, ASNA 2nd ed., Thm 9.4 with U = D L^T). Judgement
// (b)'s floor for a constraint row whose own operands are small while its
// neighbours' are not (docs/MATH.md section 9). O(n^2), certificate
// windows only.
TETHER_INLINE void FactorMagnitudes(const double* A, const double* inv, int n, const double* x,
                                    double* f) {
  for (int j = 0; j < n; ++j) {  // f = |D| |L^T| |x|
    double s = std::fabs(x[j]);
    for (int k = j + 1; k < n; ++k) s += std::fabs(A[k * n + j]) * std::fabs(x[k]);
    f[j] = s / std::fabs(inv[j]);
  }
  for (int i = n - 1; i >= 0; --i) {  // f <- |L| f, in place from the last row
    double s = f[i];
    for (int k = 0; k < i; ++k) s += std::fabs(A[i * n + k]) * f[k];
    f[i] = s;
  }
}

// x <- M^-1 x with the mass factor: diagonal (1/M_ii), or Cholesky L, Linv.
TETHER_INLINE void SolveMass(Inertia inertia, const double* minv, const double* L,
                             const double* Linv, int d, double* x) {
  if (inertia == Inertia::kDiagonal) {
    for (int i = 0; i < d; ++i) x[i] *= minv[i];
  } else {
    ForwardSubst(L, Linv, d, x);
    BackSubst(L, Linv, d, x);
  }
}

// x <- L^-1 x (half a mass solve); diagonal: 1/sqrt(M_ii).
TETHER_INLINE void HalfSolveMass(Inertia inertia, const double* minv_sqrt, const double* L,
                                 const double* Linv, int d, double* x) {
  if (inertia == Inertia::kDiagonal) {
    for (int i = 0; i < d; ++i) x[i] *= minv_sqrt[i];
  } else {
    ForwardSubst(L, Linv, d, x);
  }
}

// y <- M x (M diagonal M_ii, or dense row-major).
TETHER_INLINE void MultiplyMass(Inertia inertia, const double* M, int d, const double* x,
                                double* y) {
  if (inertia == Inertia::kDiagonal) {
    for (int i = 0; i < d; ++i) y[i] = M[i] * x[i];
    return;
  }
  for (int i = 0; i < d; ++i) {
    double s = 0;
    for (int j = 0; j < d; ++j) s += M[i * d + j] * x[j];
    y[i] = s;
  }
}

// Judgement (b), the componentwise backward error of the KKT rows
// (docs/MATH.md section 9). A row's residual is compared with the rounding
// that computing it can leave: gamma_n = n u / (1 - n u), n the row length,
// times the sum of the magnitudes of the operands that produce it
// (Oettli-Prager). Dynamics row j, r = (M a)_j + (G^T lambda)_j - F_j:
//   |M||a| + |G^T||lambda| + |F|,       n = nq + nc + 1.
// Constraint row i, r = (G a)_i + H_i + 2 alpha_i e'_i + beta_i^2 e_i, with
// a = M^-1 (F - G^T lambda) counted as the operands it is made of:
//   sum_j |G_ij| A_j + |H_i| + |2 alpha_i e'_i| + |beta_i^2 e_i|,
//   A = |M^-1| (|F| + |G^T||lambda|) (diagonal M), |M^-1 F| + |M^-1 G^T lambda|
//   (dense M: the two solved parts), n = nq + nc + 3.
// The solve passes when every row's ratio |r| / (gamma_n * magnitude) is at
// most kKktBackwardErrorTolerance; all-zero operands with a zero residual give
// 0, with a non-zero residual infinity.
inline constexpr double kKktBackwardErrorTolerance = 16;

TETHER_INLINE double Gamma(int n) {
  constexpr double u = std::numeric_limits<double>::epsilon() / 2;
  return n * u / (1 - n * u);
}

struct KktRows {
  double r1 = 0, r2 = 0;  // max |dynamics row|, max |constraint row| (absolute)
  double ratio = 0;       // max |r_i| / (gamma_{n_i} magnitude_i)
  double relative = 0;    // max |r_i| / magnitude_i
  int row = -1;           // the row of `ratio`: j < nq dynamics, nq + i constraint i
};

// The rows at (a, lambda): Ma, gtl = G^T lambda and (dense M) b = M^-1 F
// are given; A is scratch (nq). Mmul is M (diagonal entries or dense).
// con_mag (nc, or null) receives each constraint row's operand magnitude.
// factor_mag (nc; read only when `backward`) is FactorMagnitudes of the
// factor that gave lambda: a constraint row's scale adds gamma_{3 nc} /
// gamma_{n} of it to the row's own operands (docs/MATH.md section 9).
// mass_factor (a non-diagonal M only) is M's Cholesky factor L (the lower
// triangle of a row-major nq x nq array) that gave a: a dynamics row's scale
// adds gamma_{3 nq + 1} / gamma_{n} of (|L||L^T||a|)_j, the rounding the
// Cholesky solve leaves there (Higham, Thm 10.4); mass_scratch (nq) holds
// |L^T||a|.
// ratio_floor, relative_floor: the window's maxima so far; a row divides
// (ratio, relative) only when it may raise them, so that a window's
// evaluations divide only while its maxima grow (the result stays below
// the floors, and the caller's maxima unchanged, otherwise).
// backward = false: only r1 and r2 (outside a certificate window nothing
// reads the rest).
template <int D, int C>
TETHER_INLINE KktRows KktRowResiduals(
    int d, int nc, Inertia inertia, const double* Mmul, const double* minv, const double* F,
    const double* G, const double* H, const double* g, const double* e_dot, const double* two_alpha,
    const double* beta_sq, const double* a, const double* lambda, const double* b, const double* Ma,
    const double* gtl, double* A, double* con_mag, const double* factor_mag,
    const double* mass_factor, double* mass_scratch, double ratio_floor = 0,
    double relative_floor = 0, bool backward = true) {
  if constexpr (D > 0) {
    d = D;
    nc = C;
  }
  KktRows k;
  k.ratio = ratio_floor;
  k.relative = relative_floor;
  auto consider = [&](double r, double mag, double gam, int row) TETHER_INLINE_LAMBDA {
    // One division only when a maximum grows; mag == 0 with r > 0 gives inf.
    if (r > k.ratio * gam * mag) [[unlikely]] {
      k.ratio = r / (gam * mag);
      k.row = row;
    }
    if (r > k.relative * mag) [[unlikely]]
      k.relative = r / mag;
  };
  if (!backward) {
    // Only the absolute residuals (the frames' Residuals), as before.
    for (int j = 0; j < d; ++j) k.r1 = std::max(k.r1, std::fabs(Ma[j] + gtl[j] - F[j]));
    for (int i = 0; i < nc; ++i) {
      const double* Gi = G + i * d;
      double Ga = 0;
      for (int j = 0; j < d; ++j) Ga += Gi[j] * a[j];
      const double fb1 = two_alpha[i] * e_dot[i], fb2 = beta_sq[i] * g[i];
      k.r2 = std::max(k.r2, std::fabs(Ga + H[i] + fb1 + fb2));
    }
    return k;
  }
  const double gam1 = Gamma(d + nc + 1), gam2 = Gamma(d + nc + 3);
  const double factor_weight = Gamma(3 * nc) / gam2;
  const double mass_weight = Gamma(3 * d + 1) / gam1;
  if (inertia != Inertia::kDiagonal) {
    // |L^T||a|: column k of L below the diagonal against |a|.
    for (int k = 0; k < d; ++k) {
      double s = 0;
      for (int l = k; l < d; ++l) s += std::fabs(mass_factor[l * d + k]) * std::fabs(a[l]);
      mass_scratch[k] = s;
    }
  }
  // |G^T||lambda| row by row into A (contiguous in G), then A in place.
  for (int j = 0; j < d; ++j) A[j] = 0;
  for (int i = 0; i < nc; ++i) {
    const double* Gi = G + i * d;
    const double li = std::fabs(lambda[i]);
    for (int j = 0; j < d; ++j) A[j] += std::fabs(Gi[j]) * li;
  }
  for (int j = 0; j < d; ++j) {
    const double gabs = A[j];
    double mabs;
    if (inertia == Inertia::kDiagonal) {
      mabs = std::fabs(Mmul[j] * a[j]);
      A[j] = (std::fabs(F[j]) + gabs) * minv[j];
    } else {
      mabs = 0;
      for (int l = 0; l < d; ++l) mabs += std::fabs(Mmul[j * d + l] * a[l]);
      // The Cholesky solve's rounding, (|L||L^T||a|)_j: where M_jl = 0 but
      // L_j1 L_l1 != 0, |M||a| misses what the solve leaves in the row (a
      // body's rotation row at rest, its translation loaded: omega 4.7e8).
      double f = 0;
      for (int k = 0; k <= j; ++k) f += std::fabs(mass_factor[j * d + k]) * mass_scratch[k];
      mabs += mass_weight * f;
      A[j] = std::fabs(b[j]) + std::fabs(b[j] - a[j]);
    }
    const double r = std::fabs(Ma[j] + gtl[j] - F[j]);
    k.r1 = std::max(k.r1, r);
    consider(r, mabs + gabs + std::fabs(F[j]), gam1, j);
  }
  for (int i = 0; i < nc; ++i) {
    const double* Gi = G + i * d;
    double Ga = 0, mag = 0;
    for (int j = 0; j < d; ++j) {
      Ga += Gi[j] * a[j];
      mag += std::fabs(Gi[j]) * A[j];
    }
    const double fb1 = two_alpha[i] * e_dot[i], fb2 = beta_sq[i] * g[i];
    const double r = std::fabs(Ga + H[i] + fb1 + fb2);
    k.r2 = std::max(k.r2, r);
    mag += std::fabs(H[i]) + std::fabs(fb1) + std::fabs(fb2) + factor_weight * factor_mag[i];
    if (con_mag) con_mag[i] = mag;
    consider(r, mag, gam2, d + i);
  }
  return k;
}

// cond_1(W) = |W|_1 |W^-1|_1 with |W^-1|_1 estimated from the LDL^T factor
// (Hager 1984, Higham 1988: LAPACK's dlacon/dpocon iteration, at most 5
// solves plus Higham's alternating-sign check; W symmetric, so W^-T = W^-1).
// The estimate never exceeds |W^-1|_1 and is usually within a factor 3 of
// it. x, y, z: scratch (n); *column receives the j of the column W^-1 e_j
// that gave the estimate (or the iteration's last choice).
// `solve(v)` overwrites v with W^-1 v (any factorisation: the dense LDL^T
// below, or the sparse one of sparse_ldlt.h on P W P^T, whose inverse has the
// same 1-norm).
template <class Solve>
TETHER_INLINE double InverseNormEstimateWith(Solve solve, int n, double* x, double* y, double* z,
                                             int* column) {
  auto norm1 = [&](const double* v) TETHER_INLINE_LAMBDA {
    double s = 0;
    for (int i = 0; i < n; ++i) s += std::fabs(v[i]);
    return s;
  };
  auto argmax = [&](const double* v) TETHER_INLINE_LAMBDA {
    int j = 0;
    for (int i = 1; i < n; ++i)
      if (std::fabs(v[i]) > std::fabs(v[j])) j = i;
    return j;
  };
  for (int i = 0; i < n; ++i) y[i] = 1.0 / n;
  solve(y);
  double est = norm1(y);
  *column = -1;
  if (n == 1) {
    *column = 0;
    return est;
  }
  for (int i = 0; i < n; ++i) x[i] = y[i] >= 0 ? 1 : -1;  // sign(y)
  for (int i = 0; i < n; ++i) z[i] = x[i];
  solve(z);
  int j = argmax(z);
  for (int iter = 2; iter <= 5; ++iter) {
    for (int i = 0; i < n; ++i) y[i] = i == j ? 1 : 0;
    solve(y);
    const double old = est;
    const double now = norm1(y);
    if (now > est) {
      est = now;
      *column = j;
    }
    bool same_signs = true;
    for (int i = 0; i < n; ++i) same_signs &= (y[i] >= 0 ? 1 : -1) == x[i];
    if (same_signs || now <= old) break;
    for (int i = 0; i < n; ++i) x[i] = y[i] >= 0 ? 1 : -1;
    for (int i = 0; i < n; ++i) z[i] = x[i];
    solve(z);
    const int last = j;
    j = argmax(z);
    if (std::fabs(z[last]) == std::fabs(z[j])) break;
  }
  if (*column < 0) *column = j;  // the column the iteration pointed at last
  // Higham's safeguard against the iteration's blind spots.
  for (int i = 0; i < n; ++i) y[i] = (i % 2 ? -1 : 1) * (1 + static_cast<double>(i) / (n - 1));
  solve(y);
  const double alt = 2 * norm1(y) / (3.0 * n);
  if (alt > est) est = alt;
  return est;
}

// |W^-1|_1 exactly, for W = L D L^T tridiagonal and positive definite (L
// unit lower bidiagonal, L_k+1,k = l[k]; D > 0), with one solve (Higham
// 1986). With s_0 = 1 and s_k+1 = -s_k sign(W_k+1,k), where sign(W_k+1,k) =
// sign(l[k]) as D_k > 0, S = diag(s) makes S W S positive definite with
// off-diagonal entries -|W_k+1,k| <= 0: a Stieltjes matrix, whose inverse
// is entrywise >= 0. So |W^-1| = S W^-1 S, its row sums are S W^-1 s, and
// |W^-1|_1 = |W^-1|_inf = max_i |(W^-1 s)_i|, attained in column (= row,
// W symmetric) argmax_i. A zero l[k] splits W into blocks whose inverses do
// not meet, so either sign serves there. x: scratch (n) that receives
// W^-1 s; *column receives the argmax. A non-finite solve gives infinity.
// `solve(v)` overwrites v with W^-1 v (as InverseNormEstimateWith's).
template <class Solve>
TETHER_INLINE double TridiagonalInverseNorm(Solve solve, const double* l, int n, double* x,
                                            int* column) {
  double s = 1;
  x[0] = s;
  for (int k = 1; k < n; ++k) {
    if (l[k - 1] > 0) s = -s;
    x[k] = s;
  }
  solve(x);
  double norm = 0;
  *column = 0;
  for (int i = 0; i < n; ++i) {
    const double a = std::fabs(x[i]);
    if (!(a <= norm)) {
      norm = std::isnan(a) ? std::numeric_limits<double>::infinity() : a;
      *column = i;
      if (std::isnan(a)) break;
    }
  }
  return norm;
}

TETHER_INLINE double InverseNormEstimate(const double* F, const double* inv, int n, double* x,
                                         double* y, double* z, int* column) {
  return InverseNormEstimateWith(
      [&](double* v) TETHER_INLINE_LAMBDA { LdltSolve(F, inv, n, n, v); }, n, x, y, z, column);
}

// Slow paths (dynamics.cc): naming what went wrong.
bool AllFinite(const Model& m, const Workspace& ws);
Status NonFinite(const std::string& what);
Status DescribeNonFinite(const Model& m, const Workspace& ws);
Status DependentConstraints(const Model& m, Workspace* ws, int row, double t);

// After a solve whose results summed to a non-finite value: names the first
// non-finite tape output, acceleration, multiplier, velocity residual, state
// value or row residual, in that order; OK when all are finite (a sum that
// overflowed from finite terms). Shared by the dense and sparse kernels;
// inline (it is a cold path) so that the fixed-size kernels' stack arrays
// do not escape to a call.
// d and nc are m's sizes (compile-time constants in a fixed-size kernel).
TETHER_INLINE Status DiagnoseNonFiniteSolve(const Model& m, const Workspace& ws, int d, int nc,
                                            const double* q, const double* v, const double* a,
                                            const double* lambda, const double* e_dot, double r1,
                                            double r2) {
  if (!AllFinite(m, ws)) return DescribeNonFinite(m, ws);
  for (int j = 0; j < d; ++j) {
    if (!std::isfinite(a[j])) {
      return NonFinite("acceleration of coordinate '" + m.coordinate_names[static_cast<size_t>(j)] +
                       "'");
    }
  }
  for (int i = 0; i < nc; ++i) {
    if (!std::isfinite(lambda[i])) {
      return NonFinite("multiplier lambda of constraint '" +
                       m.constraint_names[static_cast<size_t>(i)] + "'");
    }
    if (!std::isfinite(e_dot[i])) {
      return NonFinite("velocity residual of constraint '" +
                       m.constraint_names[static_cast<size_t>(i)] + "'");
    }
  }
  for (int j = 0; j < d; ++j) {
    if (!std::isfinite(q[j]) || !std::isfinite(v[j])) return NonFinite("an input or state value");
  }
  if (!std::isfinite(r1) || !std::isfinite(r2)) {
    return NonFinite("a KKT row residual (the solve overflowed)");
  }
  return Status::Ok();
}

// Folds an estimate of cond_1(W) at time t into the window's maximum. When
// it is the largest so far, marks in `involved` (nc) the constraints that
// carry the estimate's column W^-1 e_column: those within a factor 10 of
// its largest entry (a near dependence among them), or all of them when the
// column is unknown (< 0). solve(x) turns e_column in x (nc, scratch) into
// W^-1 e_column, whose entry for constraint i is x[slot(i)]. Shared by the
// dense and sparse kernels.
template <class Solve, class Slot>
TETHER_INLINE void AddCondition(EvaluationStats* st, uint8_t* involved, int nc, double t,
                                double w_condition, int column, double* x, Solve solve, Slot slot) {
  if (!(w_condition > st->max_w_condition)) [[likely]]
    return;
  st->max_w_condition = w_condition;
  st->worst_condition_time = t;
  if (column < 0) {
    for (int i = 0; i < nc; ++i) involved[i] = 1;
    return;
  }
  for (int p = 0; p < nc; ++p) x[p] = p == column ? 1 : 0;
  solve(x);
  double big = 0;
  for (int p = 0; p < nc; ++p) big = std::max(big, std::fabs(x[p]));
  for (int i = 0; i < nc; ++i) involved[i] = std::fabs(x[slot(i)]) >= 0.1 * big;
}

// Scratch of EvaluateImpl: on the stack for fixed sizes (N > 0), where the
// compiler can keep it in registers and knows it aliases nothing, else the
// workspace's heap vector.
template <int N>
struct Scratch {
  explicit Scratch(std::vector<double>&) {}
  double* data() { return buf; }
  double buf[N];
};
template <>
struct Scratch<0> {
  explicit Scratch(std::vector<double>& v) : p(v.data()) {}
  double* data() { return p; }
  double* p;
};

// What an evaluation records besides a_out. Every kind computes and checks
// a, lambda and the factorisation (non-finite values and dependent
// constraints are errors).
enum class Record {
  // An integrator's intermediate stage with no certificate window open:
  // nothing reads its KKT row residuals or maxima.
  kNothing,
  // An intermediate stage inside a certificate window: the row residuals
  // and the window's maxima (judgement (b) covers every evaluation), but
  // nothing is published (the evaluation at the new state overwrites it).
  kStatistics,
  // Everything, published into the workspace (frames, the certificate).
  kEverything,
};

// The general-size kernel (D = 0) for integrator stages, out of line in
// dynamics.cc, which is built with the loop vectorizer (large systems).
template <Record kRecord>
Status EvaluateGeneralStage(const Model& m, Workspace* ws, double t, const double* q,
                            const double* v, double* a_out);

// The evaluation, written once; D and C fix the sizes at compile time for
// small systems (D = 0: taken from the model), so the loops unroll.
// One long function on purpose (about 200 lines): the hot kernel of every
// integrator stage, whose fixed-size scratch lives on its stack so the
// compiler keeps it in registers; the steps are marked by comments.
template <int D, int C, Record kRecord = Record::kEverything>
TETHER_INLINE Status EvaluateImpl(const Model& m, Workspace* ws, double t, const double* q,
                                  const double* v, double* a_out) {
  constexpr bool kFixed = D > 0;
  const int d = kFixed ? D : m.nq;
  const int nc = kFixed ? C : m.nc;
  constexpr int kD = kFixed ? D : 0;
  constexpr int kC = kFixed ? (C > 0 ? C : 1) : 0;
  double* work = ws->dyn_work.data();
  LoadVars(m, d, *ws, t, q, v, work);
  m.dynamics.Eval(work);
  const double* out = ws->dyn_out;
  // Every tape output feeds a or lambda, so non-finite values are caught
  // there (or by a failing factorisation) and only then named precisely.
  // Model::Blocks' layout, spelled out: through the struct GCC keeps more
  // pointers live in this kernel (+2% instructions a step on the double
  // pendulum, callgrind).
  const double* g = out + m.off_g;
  const double* G = out + m.off_G;
  const double* gt = out + m.off_gt;
  const double* H = out + m.off_H;
  const double* F = out + m.off_F;
  const double* two_alpha = ws->feedback_off ? ws->zero_gains.data() : m.two_alpha.data();
  const double* beta_sq = ws->feedback_off ? ws->zero_gains.data() : m.beta_sq.data();
  const Inertia inertia = m.inertia;

  // The mass factor (diagonal: M_ii and its inverses; else L and 1/L_ii).
  const double* Mdiag = m.mass_diag.data();
  const double* minv = m.mass_inv.data();
  const double* minv_sqrt = m.mass_inv_sqrt.data();
  const double* L = m.mass_chol.data();
  const double* Linv = m.mass_chol_inv_diag.data();
  const double* Mfull = m.mass_dense.data();
  if (inertia == Inertia::kKinetic) {
    double* Lk = ws->L.data();
    std::memcpy(Lk, out + m.off_M, sizeof(double) * static_cast<size_t>(d * d));
    int bad = Cholesky(Lk, ws->L_inv_diag.data(), d);
    if (bad >= 0 && !AllFinite(m, *ws)) return DescribeNonFinite(m, *ws);
    if (bad >= 0) {
      std::string message =
          "the mass matrix M(q) = d2T/dv2 is not positive definite (pivot at "
          "coordinate '" +
          m.coordinate_names[static_cast<size_t>(bad)] +
          "'); expected a kinetic energy that is positive for every velocity";
      return Aborted(message, {{"system.kinetic_energy", message}});
    }
    L = Lk;
    Linv = ws->L_inv_diag.data();
    Mfull = out + m.off_M;
  }
  const double* Mmul = inertia == Inertia::kDiagonal ? Mdiag : Mfull;

  Scratch<kD> b_s(ws->Minv_F), a_s(ws->a), gtl_s(ws->tmp), Ma_s(ws->r1);
  Scratch<kC> lambda_s(ws->lambda), e_dot_s(ws->e_dot), rhs_s(ws->rhs), Winv_s(ws->W_inv_diag);
  Scratch<kC * kD> Y_s(ws->Y);
  Scratch<kC * kC> W_s(ws->W);
  double* b = b_s.data();
  double* a = a_s.data();
  double* gtl = gtl_s.data();
  double* Ma = Ma_s.data();
  double* lambda = lambda_s.data();
  double* e_dot = e_dot_s.data();
  double* rhs = rhs_s.data();
  double* Winv = Winv_s.data();
  double* Y = Y_s.data();
  double* W = W_s.data();

  // M^-1 F.
  for (int j = 0; j < d; ++j) b[j] = F[j];
  SolveMass(inertia, minv, L, Linv, d, b);

  for (int i = 0; i < nc; ++i) {
    const double* Gi = G + i * d;
    double s = gt[i];
    for (int j = 0; j < d; ++j) s += Gi[j] * v[j];
    e_dot[i] = s;
  }
  double w_condition = 1;
  // cond_1(W) estimated only inside a certificate window
  // (ws->in_certificate_window) and at accepted states and FSAL stages
  // (kEverything), not at a fixed-step method's intermediate stages;
  // otherwise the LDL^T pivot ratio, which nothing reads.
  const bool estimate = kRecord == Record::kEverything && nc > 1 && ws->in_certificate_window;
  double w_norm1 = 0;
  int w_column = -1;
  Scratch<kC> cx_s(ws->cond_x), cy_s(ws->cond_y), cz_s(ws->cond_z);
  double* cx = cx_s.data();
  double* cy = cy_s.data();
  double* cz = cz_s.data();
  if (nc > 0) {
    // Y rows: y_i = L^-1 G_i^T.
    for (int k = 0; k < nc * d; ++k) Y[k] = G[k];
    for (int i = 0; i < nc; ++i) HalfSolveMass(inertia, minv_sqrt, L, Linv, d, Y + i * d);
    // W = Y Y^T (full, so the upper triangle stays for diagnostics).
    for (int i = 0; i < nc; ++i) {
      for (int k = 0; k <= i; ++k) {
        double s = 0;
        const double* yi = Y + i * d;
        const double* yk = Y + k * d;
        for (int j = 0; j < d; ++j) s += yi[j] * yk[j];
        W[i * nc + k] = s;
        W[k * nc + i] = s;
      }
    }
    // rhs = G M^-1 F + H + 2 alpha e' + beta^2 e.
    for (int i = 0; i < nc; ++i) {
      const double* Gi = G + i * d;
      double s = 0;
      for (int j = 0; j < d; ++j) s += Gi[j] * b[j];
      rhs[i] = s + H[i] + two_alpha[i] * e_dot[i] + beta_sq[i] * g[i];
    }
    // |W|_1 for the condition estimate, before the factorisation overwrites W.
    if (estimate) {
      for (int i = 0; i < nc; ++i) {
        double s = 0;
        for (int k = 0; k < nc; ++k) s += std::fabs(W[i * nc + k]);
        w_norm1 = std::max(w_norm1, s);
      }
    }
    double lo, hi;
    int bad = Ldlt(W, Winv, nc, m.dependence_tolerance, &lo, &hi);
    if (bad >= 0) {
      if (!AllFinite(m, *ws)) return DescribeNonFinite(m, *ws);
      if (kFixed) {
        std::copy(W, W + nc * nc, ws->W.begin());
        std::copy(Winv, Winv + bad, ws->W_inv_diag.begin());  // the rows factorised
      }
      return DependentConstraints(m, ws, bad, t);
    }
    w_condition = nc == 1 ? 1.0 : hi / lo;  // = (max / min Cholesky pivot)^2
    for (int i = 0; i < nc; ++i) lambda[i] = rhs[i];
    LdltSolve(W, Winv, nc, nc, lambda);
    if (estimate) {
      w_condition = w_norm1 * InverseNormEstimate(W, Winv, nc, cx, cy, cz, &w_column);
    }
  }

  // a = M^-1 (F - G^T lambda).
  for (int j = 0; j < d; ++j) gtl[j] = 0;
  for (int i = 0; i < nc; ++i) {
    const double* Gi = G + i * d;
    for (int j = 0; j < d; ++j) gtl[j] += Gi[j] * lambda[i];
  }
  for (int j = 0; j < d; ++j) a[j] = F[j] - gtl[j];
  SolveMass(inertia, minv, L, Linv, d, a);

  // Row residuals r1 = M a + G^T lambda - F, r2 = G a + H + 2 alpha e' + beta^2 e
  // and, inside a certificate window only, their backward error (judgement
  // (b)) and operand magnitudes: outside one nothing reads them.
  KktRows rows;
  if constexpr (kRecord != Record::kNothing) {
    MultiplyMass(inertia, Mmul, d, a, Ma);
    // A's operand magnitudes, then (a non-diagonal M) |L^T||a|.
    Scratch<2 * kD> A_s(ws->kkt_scratch);
    // |L||D||L^T||lambda| into cy (the condition estimate is done with it).
    if (ws->in_certificate_window) FactorMagnitudes(W, Winv, nc, lambda, cy);
    rows = KktRowResiduals < kD,
    kFixed ? C
           : 0 > (d, nc, inertia, Mmul, minv, F, G, H, g, e_dot, two_alpha, beta_sq, a, lambda, b,
                  Ma, gtl, A_s.data(),
                  kRecord == Record::kEverything ? ws->constraint_magnitude.data() : nullptr, cy, L,
                  A_s.data() + d, ws->stats.max_backward_error, ws->stats.max_relative_residual,
                  ws->in_certificate_window);
  }
  const double r1 = rows.r1, r2 = rows.r2;
  {
    // x * 0 is 0 for a finite x and NaN otherwise: one sum, one product and
    // one branch. A sum that overflows from finite terms trips it too; the
    // precise check below then finds nothing and the evaluation goes on.
    double sum = 0;
    for (int j = 0; j < d; ++j) sum += a[j];
    for (int i = 0; i < nc; ++i) sum += lambda[i] + g[i] + e_dot[i];
    if (sum * 0.0 != 0) [[unlikely]] {
      Status why = DiagnoseNonFiniteSolve(m, *ws, d, nc, q, v, a, lambda, e_dot, r1, r2);
      if (!why.ok()) return why;
    }
  }
  // Publish the results (the scratch above may live on the stack).
  if (a_out) std::copy(a, a + d, a_out);
  if constexpr (kRecord == Record::kNothing) {
    return Status::Ok();
  }
  if constexpr (kRecord == Record::kEverything) {
    if (kFixed) {
      std::copy(a, a + d, ws->a.begin());
      std::copy(lambda, lambda + nc, ws->lambda.begin());
      std::copy(e_dot, e_dot + nc, ws->e_dot.begin());
    }
    std::copy(g, g + nc, ws->e.begin());
    ws->dynamics_residual = r1;
    ws->constraint_residual = r2;
  }

  // The window's maxima, with where and when the worst occurred.
  EvaluationStats& st = ws->stats;
  st.AddRows(t, r1, r2, rows.relative, rows.ratio, rows.row);
  if (estimate || nc <= 1) {
    AddCondition(
        &st, ws->cond_involved.data(), nc, t, w_condition, w_column, cx,
        [&](double* x) { LdltSolve(W, Winv, nc, nc, x); }, [](int i) { return i; });
  }
  ++st.evaluations;
  return Status::Ok();
}

}  // namespace internal
}  // namespace tether
