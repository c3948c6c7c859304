// The dense KKT evaluation (evaluate_kernel.h's EvaluateImpl) over a lane
// group (base/lanes.h), for the fixed sizes of the ensemble's lane path: the
// tape over the lanes, then the mass factor, W = G M^-1 G^T, its
// square-root-free LDL^T and the solves, each with the scalar kernel's
// operations in the scalar kernel's order (the comments name the scalar
// function each loop follows), so every lane gets the bits of its
// instance's scalar evaluation. Only the accelerations come out: the row
// residuals, the window statistics and the condition estimate are what a
// frame or the certificate reads, and the lane path runs neither.
//
// No branch depends on a lane's values: where the scalar kernel would stop
// (a pivot that fails, a non-finite result) the lane is marked in *bad and
// computed on (its values then mean nothing; the other lanes are not
// touched). The caller runs a marked instance again on the scalar path,
// which names the failure as a plain run does.
#pragma once

#include "engine/internal/base/internal.h"

#include <cmath>

#include "engine/internal/base/lanes.h"
#include "engine/internal/expr/tape_lanes.h"
#include "engine/internal/model/model.h"

namespace tether::lanes {

// The lanes that passed every check so far, as one vector mask a batch: a
// check (CheckLanes) is a comparison and an and, no branch; ApplyTo then
// clears ok[l] for each lane that failed one (the common case, every lane
// passing, one test). A lane's checks are the scalar kernel's, on the
// same values: which lanes fail is what checking each value at once would
// give, and no value depends on ok (the step loop reads it between steps).
template <class Arch>
struct LanePass {
  using Bool = typename Lanes<Arch>::Batch::batch_bool_type;
  Bool b[Lanes<Arch>::kBatches];
  TETHER_INLINE LanePass() {
    for (auto& x : b) x = Bool(true);
  }
  TETHER_INLINE void ApplyTo(bool* ok) const {
    Bool all = b[0];
    for (int k = 1; k < Lanes<Arch>::kBatches; ++k) all = all & b[k];
    if (xsimd::all(all)) return;
    constexpr int kSize = static_cast<int>(Lanes<Arch>::Batch::size);
    bool passed[kLaneWidth];
    for (int k = 0; k < Lanes<Arch>::kBatches; ++k) b[k].store_unaligned(passed + k * kSize);
    for (int l = 0; l < kLaneWidth; ++l) ok[l] = ok[l] && passed[l];
  }
};

// Per lane: pass_l &= pred(x_l), `pred` on a batch giving a batch_bool
// (the predicates below).
template <class Arch, class Pred>
TETHER_INLINE void CheckLanes(const Lanes<Arch>& x, LanePass<Arch>* pass, Pred pred) {
  for (int k = 0; k < Lanes<Arch>::kBatches; ++k) pass->b[k] = pass->b[k] & pred(x.b[k]);
}

// CheckLanes' predicates, on a batch: the scalar kernel's tests.
struct IsPositive {
  template <class B>
  auto operator()(const B& x) const {
    return x > B(0.0);
  }
};
struct IsFinite {
  template <class B>
  auto operator()(const B& x) const {
    return xsimd::isfinite(x);
  }
};
struct IsZero {
  template <class B>
  auto operator()(const B& x) const {
    return x == B(0.0);
  }
};

// ForwardSubst: x <- L^-1 x (L lanes, or the model's constant factor).
template <int n, class Arch, class M>
TETHER_INLINE void ForwardSubstLanes(const M* L, const M* inv, Lanes<Arch>* x) {
  for (int i = 0; i < n; ++i) {
    Lanes<Arch> s = x[i];
    const M* row = L + i * n;
    for (int k = 0; k < i; ++k) s -= row[k] * x[k];
    x[i] = s * inv[i];
  }
}

// BackSubst: x <- L^-T x.
template <int n, class Arch, class M>
TETHER_INLINE void BackSubstLanes(const M* L, const M* inv, Lanes<Arch>* x) {
  for (int i = n - 1; i >= 0; --i) {
    Lanes<Arch> s = x[i];
    for (int k = i + 1; k < n; ++k) s -= L[k * n + i] * x[k];
    x[i] = s * inv[i];
  }
}

// SolveMass and HalfSolveMass.
template <int d, class Arch, class M>
TETHER_INLINE void SolveMassLanes(Inertia inertia, const double* minv, const M* L, const M* Linv,
                                  Lanes<Arch>* x) {
  if (inertia == Inertia::kDiagonal) {
    for (int i = 0; i < d; ++i) x[i] = x[i] * minv[i];
  } else {
    ForwardSubstLanes<d>(L, Linv, x);
    BackSubstLanes<d>(L, Linv, x);
  }
}
template <int d, class Arch, class M>
TETHER_INLINE void HalfSolveMassLanes(Inertia inertia, const double* minv_sqrt, const M* L,
                                      const M* Linv, Lanes<Arch>* x) {
  if (inertia == Inertia::kDiagonal) {
    for (int i = 0; i < d; ++i) x[i] = x[i] * minv_sqrt[i];
  } else {
    ForwardSubstLanes<d>(L, Linv, x);
  }
}

// Cholesky: in place, lower triangle; a lane fails in *pass where the
// scalar one returns a row.
template <int n, class Arch>
TETHER_INLINE void CholeskyLanes(Lanes<Arch>* A, Lanes<Arch>* inv, LanePass<Arch>* pass) {
  for (int j = 0; j < n; ++j) {
    Lanes<Arch>* rj = A + j * n;
    const Lanes<Arch> original = rj[j];
    Lanes<Arch> s = original;
    for (int k = 0; k < j; ++k) s -= rj[k] * rj[k];
    CheckLanes(s, pass, IsPositive());
    CheckLanes(original, pass, IsFinite());
    const Lanes<Arch> piv = Sqrt(s);
    const Lanes<Arch> r_piv = 1.0 / piv;
    rj[j] = piv;
    inv[j] = r_piv;
    for (int i = j + 1; i < n; ++i) {
      Lanes<Arch>* ri = A + i * n;
      Lanes<Arch> r = ri[j];
      for (int k = 0; k < j; ++k) r -= ri[k] * rj[k];
      ri[j] = r * r_piv;
    }
  }
}

// Ldlt: in place, unit L below the diagonal, D on it; a lane fails in
// *pass where the scalar one returns a row (a pivot not above tol
// |original|, or not positive).
template <int n, class Arch>
TETHER_INLINE void LdltLanes(Lanes<Arch>* A, Lanes<Arch>* inv, double tol, LanePass<Arch>* pass) {
  using B = typename Lanes<Arch>::Batch;
  for (int j = 0; j < n; ++j) {
    Lanes<Arch>* rj = A + j * n;
    const Lanes<Arch> original = rj[j];
    Lanes<Arch> s = original;
    for (int k = 0; k < j; ++k) s -= rj[k] * rj[k] * A[k * n + k];
    for (int k = 0; k < Lanes<Arch>::kBatches; ++k) {
      pass->b[k] = pass->b[k] & (s.b[k] > B(tol) * xsimd::abs(original.b[k])) & (s.b[k] > B(0.0));
    }
    const Lanes<Arch> r_piv = 1.0 / s;
    rj[j] = s;
    inv[j] = r_piv;
    for (int i = j + 1; i < n; ++i) {
      Lanes<Arch>* ri = A + i * n;
      Lanes<Arch> r = ri[j];
      for (int k = 0; k < j; ++k) r -= ri[k] * rj[k] * A[k * n + k];
      ri[j] = r * r_piv;
    }
  }
}

// LdltSolve (stride n): x <- A^-1 x.
template <int n, class Arch>
TETHER_INLINE void LdltSolveLanes(const Lanes<Arch>* A, const Lanes<Arch>* inv, Lanes<Arch>* x) {
  for (int i = 0; i < n; ++i) {
    Lanes<Arch> s = x[i];
    const Lanes<Arch>* row = A + i * n;
    for (int k = 0; k < i; ++k) s -= row[k] * x[k];
    x[i] = s;
  }
  for (int i = 0; i < n; ++i) x[i] = x[i] * inv[i];
  for (int i = n - 1; i >= 0; --i) {
    Lanes<Arch> s = x[i];
    for (int k = i + 1; k < n; ++k) s -= A[k * n + i] * x[k];
    x[i] = s;
  }
}

// EvaluateImpl<D, C> for the accelerations a (D) at (t, q, v) of every
// lane. `work` is the dynamics tape's lane buffer (InitLaneWork'd, the
// inputs in place); `functions` says how it computes the tape's
// transcendental operations (tape_lanes.h), and `program` is EvalLanes'
// (PrepareLaneProgram'd for the same functions; `work` of its
// num_slots). A lane fails in *pass where its scalar evaluation would
// fail, or its results need its diagnosis (a non-finite sum).
template <int D, int C, class Arch>
TETHER_INLINE void EvaluateLanes(const Model& m, LaneFunctions functions,
                                 const LaneProgram* program, Lanes<Arch>* work, double t,
                                 const Lanes<Arch>* q, const Lanes<Arch>* v, Lanes<Arch>* a,
                                 LanePass<Arch>* pass) {
  using V = Lanes<Arch>;
  constexpr int d = D, nc = C;
  constexpr int kC = C > 0 ? C : 1;
  // LoadVars (the inputs stay where the caller put them).
  work[0] = V(t);
  for (int i = 0; i < d; ++i) work[1 + i] = q[i];
  for (int i = 0; i < d; ++i) work[1 + d + i] = v[i];
  // The tape as machine code where it was translated (EvalLanes would
  // run it too, after the entry of a function of some hundred handlers).
  if (program->native) {
    program->native->Run(work);
  } else if (functions == LaneFunctions::kFast) {
    EvalLanes<Arch, LaneFunctions::kFast>(m.dynamics, work, program);
  } else {
    EvalLanes<Arch, LaneFunctions::kExact>(m.dynamics, work, program);
  }
  const V* out = work + m.dynamics.output_base();
  const V* g = out + m.off_g;
  const V* G = out + m.off_G;
  const V* gt = out + m.off_gt;
  const V* H = out + m.off_H;
  const V* F = out + m.off_F;
  const double* two_alpha = m.two_alpha.data();
  const double* beta_sq = m.beta_sq.data();
  const Inertia inertia = m.inertia;

  V b[d], gtl[d], lambda[kC], e_dot[kC], rhs[kC], Winv[kC], Y[kC * d], W[kC * kC];
  // The rest of the kernel, with the mass factor's element type M: the
  // model's constant one (double) or this evaluation's M(q) (V).
  auto solve = [&](const auto* L, const auto* Linv) TETHER_INLINE_LAMBDA {
    // M^-1 F.
    for (int j = 0; j < d; ++j) b[j] = F[j];
    SolveMassLanes<d>(inertia, m.mass_inv.data(), L, Linv, b);
    for (int i = 0; i < nc; ++i) {
      const V* Gi = G + i * d;
      V s = gt[i];
      for (int j = 0; j < d; ++j) s += Gi[j] * v[j];
      e_dot[i] = s;
    }
    if constexpr (nc > 0) {
      // Y rows, W = Y Y^T (the lower triangle: the factorisation reads no
      // more), rhs.
      for (int k = 0; k < nc * d; ++k) Y[k] = G[k];
      for (int i = 0; i < nc; ++i)
        HalfSolveMassLanes<d>(inertia, m.mass_inv_sqrt.data(), L, Linv, Y + i * d);
      for (int i = 0; i < nc; ++i) {
        for (int k = 0; k <= i; ++k) {
          V s(0.0);
          const V* yi = Y + i * d;
          const V* yk = Y + k * d;
          for (int j = 0; j < d; ++j) s += yi[j] * yk[j];
          W[i * nc + k] = s;
          W[k * nc + i] = s;
        }
      }
      for (int i = 0; i < nc; ++i) {
        const V* Gi = G + i * d;
        V s(0.0);
        for (int j = 0; j < d; ++j) s += Gi[j] * b[j];
        rhs[i] = s + H[i] + two_alpha[i] * e_dot[i] + beta_sq[i] * g[i];
      }
      LdltLanes<nc>(W, Winv, m.dependence_tolerance, pass);
      for (int i = 0; i < nc; ++i) lambda[i] = rhs[i];
      LdltSolveLanes<nc>(W, Winv, lambda);
    }
    // a = M^-1 (F - G^T lambda).
    for (int j = 0; j < d; ++j) gtl[j] = V(0.0);
    for (int i = 0; i < nc; ++i) {
      const V* Gi = G + i * d;
      for (int j = 0; j < d; ++j) gtl[j] += Gi[j] * lambda[i];
    }
    for (int j = 0; j < d; ++j) a[j] = F[j] - gtl[j];
    SolveMassLanes<d>(inertia, m.mass_inv.data(), L, Linv, a);
  };
  if (inertia == Inertia::kKinetic) {
    V Lk[d * d], Lk_inv[d];
    for (int k = 0; k < d * d; ++k) Lk[k] = out[m.off_M + k];
    CholeskyLanes<d>(Lk, Lk_inv, pass);
    solve(static_cast<const V*>(Lk), static_cast<const V*>(Lk_inv));
  } else {
    solve(m.mass_chol.data(), m.mass_chol_inv_diag.data());
  }
  // The scalar kernel's finiteness test: x * 0 is 0 for finite x.
  V sum(0.0);
  for (int j = 0; j < d; ++j) sum += a[j];
  for (int i = 0; i < nc; ++i) sum += lambda[i] + g[i] + e_dot[i];
  CheckLanes(sum * 0.0, pass, IsZero());
}

}  // namespace tether::lanes
