#include "engine/internal/simulation/post_stabilize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/integrate/integrator.h"
#include "engine/internal/kkt/evaluate_kernel.h"

namespace tether {

namespace {
// e'_i = (G v)_i + g_t,i from the tape outputs b (G dense, or its nonzeros
// on the sparse path).
double VelocityResidual(const Model& m, const Model::TapeBlocks& b, const double* v, int i) {
  double w = b.gt[i];
  if (m.sparse.enabled) {
    const size_t r = static_cast<size_t>(i);
    for (int k = m.sparse.row_ptr[r]; k < m.sparse.row_ptr[r + 1]; ++k) {
      w += b.G[k] * v[m.sparse.col[static_cast<size_t>(k)]];
    }
  } else {
    for (int j = 0; j < m.nq; ++j) w += b.G[i * m.nq + j] * v[j];
  }
  return w;
}
}  // namespace

PostStabilizer::PostStabilizer(const Model& m)
    : phi_(4 * static_cast<size_t>(m.nc)),
      e_target_(static_cast<size_t>(m.nc)),
      w_target_(static_cast<size_t>(m.nc)),
      delta_(static_cast<size_t>(m.nc)),
      x_(static_cast<size_t>(m.nc)),
      dx_(static_cast<size_t>(m.nq)) {
  const size_t nq = static_cast<size_t>(m.nq), nc = static_cast<size_t>(m.nc);
  if (m.sparse.enabled) {
    sparse_.Resize(m.sparse);
    if (m.inertia == Inertia::kKinetic) minv_.assign(nq, 0.0);
  } else {
    Y_.assign(nc * nq, 0.0);
    W_.assign(nc * nc, 0.0);
    W_inv_diag_.assign(nc, 0.0);
    if (m.inertia == Inertia::kKinetic) {
      L_.assign(nq * nq, 0.0);
      L_inv_diag_.assign(nq, 0.0);
    }
  }
}

void PostStabilizer::Targets(const Model& m, Workspace* ws, double t0, const double* q0,
                             const double* v0, double h) {
  const int d = m.nq, nc = m.nc;
  if (h != h_) {
    for (int i = 0; i < nc; ++i) {
      double phi[2][2];
      ResidualLawMap(m.alpha[static_cast<size_t>(i)], m.beta[static_cast<size_t>(i)], h, phi);
      std::memcpy(&phi_[4 * static_cast<size_t>(i)], phi, sizeof phi);
    }
    h_ = h;
  }
  internal::LoadVars(m, d, *ws, t0, q0, v0, ws->con_work.data());
  m.constraints.Eval(ws->con_work.data());
  const Model::TapeBlocks b = m.Blocks(ws->con_out);
  for (int i = 0; i < nc; ++i) {
    const double w = VelocityResidual(m, b, v0, i);
    const double* phi = &phi_[4 * static_cast<size_t>(i)];
    e_target_[static_cast<size_t>(i)] = phi[0] * b.g[i] + phi[1] * w;
    w_target_[static_cast<size_t>(i)] = phi[2] * b.g[i] + phi[3] * w;
  }
}

bool PostStabilizer::Factor(const Model& m, const double* out, int* bad) {
  const int d = m.nq, nc = m.nc;
  const Model::TapeBlocks b = m.Blocks(out);
  if (m.sparse.enabled) {
    // M diagonal: the model's, or M(q)'s diagonal (the dynamics tape).
    const double* minv = m.mass_inv.data();
    if (m.inertia == Inertia::kKinetic) {
      for (int j = 0; j < d; ++j) {
        if (!(b.M[j] > 0) || !std::isfinite(b.M[j])) {
          *bad = -1;  // M(q) not positive definite
          return false;
        }
        minv_[static_cast<size_t>(j)] = 1.0 / b.M[j];
      }
      minv = minv_.data();
    }
    minv_now_ = minv;
    const SparseKkt& sp = m.sparse;
    const int* row_ptr = sp.row_ptr.data();
    const int* col = sp.col.data();
    const uint8_t* consecutive = sp.row_consecutive.data();
    const int* order = sp.order.data();
    double* x = sparse_.x.data();
    auto form_row = [&](int p) {
      const int i = order[p];
      double w = 0;
      ForEachInRow(row_ptr, col, consecutive, i,
                   [&](int k, int j) { w += b.G[k] * b.G[k] * minv[j]; });
      x[p] = 0;  // no right-hand side yet: Correction solves with the factor
      return w;
    };
    double lo, hi;
    const int p =
        SparseLdlt(sp, &sparse_, b.G, minv, m.dependence_tolerance, &lo, &hi, x, form_row);
    if (p >= 0) {
      *bad = order[p];
      return false;
    }
    return true;
  }
  const Inertia inertia = m.inertia;
  const double* L = m.mass_chol.data();
  const double* Linv = m.mass_chol_inv_diag.data();
  if (inertia == Inertia::kKinetic) {
    std::memcpy(L_.data(), b.M, sizeof(double) * static_cast<size_t>(d * d));
    if (internal::Cholesky(L_.data(), L_inv_diag_.data(), d) >= 0) {
      *bad = -1;  // M(q) not positive definite
      return false;
    }
    L = L_.data();
    Linv = L_inv_diag_.data();
  }
  L_now_ = L;
  L_inv_now_ = Linv;
  double* Y = Y_.data();
  double* W = W_.data();
  std::copy(b.G, b.G + nc * d, Y);
  for (int i = 0; i < nc; ++i) {
    internal::HalfSolveMass(inertia, m.mass_inv_sqrt.data(), L, Linv, d, Y + i * d);
  }
  for (int i = 0; i < nc; ++i) {
    for (int k = 0; k <= i; ++k) {
      double s = 0;
      for (int j = 0; j < d; ++j) s += Y[i * d + j] * Y[k * d + j];
      W[i * nc + k] = s;
      W[k * nc + i] = s;
    }
  }
  double lo, hi;
  const int p = internal::Ldlt(W, W_inv_diag_.data(), nc, m.dependence_tolerance, &lo, &hi);
  if (p >= 0) {
    *bad = p;
    return false;
  }
  return true;
}

void PostStabilizer::Correction(const Model& m, const double* out, const double* delta,
                                double* dx) {
  const int d = m.nq, nc = m.nc;
  const Model::TapeBlocks b = m.Blocks(out);
  std::fill(dx, dx + d, 0.0);
  if (m.sparse.enabled) {
    const SparseKkt& sp = m.sparse;
    double* x = sparse_.x.data();
    for (int p = 0; p < nc; ++p) x[p] = delta[sp.order[static_cast<size_t>(p)]];
    SparseLdltForwardSolve(sp, sparse_, x);
    SparseLdltBackSolve(sp, sparse_, x);
    for (int i = 0; i < nc; ++i) {
      const double mu = x[sp.pos_of[static_cast<size_t>(i)]];
      for (int k = sp.row_ptr[static_cast<size_t>(i)]; k < sp.row_ptr[static_cast<size_t>(i) + 1];
           ++k) {
        dx[sp.col[static_cast<size_t>(k)]] += b.G[k] * mu;
      }
    }
    for (int j = 0; j < d; ++j) dx[j] *= minv_now_[j];
    return;
  }
  double* x = x_.data();
  std::copy(delta, delta + nc, x);
  internal::LdltSolve(W_.data(), W_inv_diag_.data(), nc, nc, x);
  for (int i = 0; i < nc; ++i) {
    for (int j = 0; j < d; ++j) dx[j] += b.G[i * d + j] * x[i];
  }
  internal::SolveMass(m.inertia, m.mass_inv.data(), L_now_, L_inv_now_, d, dx);
}

Status PostStabilizer::Apply(const Model& m, Workspace* ws, double t1, double* q, double* v) {
  const int d = m.nq, nc = m.nc;
  // The constraints' tape gives g, G, g_t; a configuration-dependent M
  // needs the dynamics' (whose first outputs are the same).
  const bool kinetic = m.inertia == Inertia::kKinetic;
  double* work = kinetic ? ws->dyn_work.data() : ws->con_work.data();
  double* dx = dx_.data();
  double* delta = delta_.data();
  double largest = 0, previous = HUGE_VAL;
  int where = 0;
  for (int iteration = 1; iteration <= kMaxIterations; ++iteration) {
    internal::LoadVars(m, d, *ws, t1, q, v, work);
    (kinetic ? m.dynamics : m.constraints).Eval(work);
    const double* out = kinetic ? ws->dyn_out : ws->con_out;
    int bad = -1;
    if (!Factor(m, out, &bad)) {
      if (bad < 0) {
        return Aborted("post-stabilization at t = " + FormatNumber(t1) +
                       ": the mass matrix M(q) = d2T/dv2 is not positive definite there; " +
                       "expected a kinetic energy that is positive for every velocity");
      }
      return Aborted("post-stabilization at t = " + FormatNumber(t1) + ": constraint '" +
                     m.constraint_names[static_cast<size_t>(bad)] +
                     "' depends on the others there (W = G M^-1 G^T is singular); expected " +
                     "independent constraints along the trajectory");
    }
    const double* g = m.Blocks(out).g;
    for (int i = 0; i < nc; ++i) delta[i] = e_target_[static_cast<size_t>(i)] - g[i];
    Correction(m, out, delta, dx);
    // Converged when the correction is at rounding of q (then it changes
    // G, whose evaluation here serves the velocity, by as little), or when
    // it no longer shrinks fourfold (Newton's quadratic convergence has
    // reached the rounding of g's own evaluation, which for coordinates far
    // from 1 or with large terms in g is above q's) while below 2^-30.
    largest = 0;
    double scaled = 0;
    for (int j = 0; j < d; ++j) {
      q[j] += dx[j];
      const double size = std::fabs(dx[j]);
      const double relative = size / std::max(1.0, std::fabs(q[j]));
      if (!(relative <= scaled)) scaled = relative;
      if (!(size <= largest)) {
        largest = size;
        where = j;
      }
    }
    if (!std::isfinite(scaled)) break;
    const bool at_rounding = scaled <= 8 * std::numeric_limits<double>::epsilon();
    const bool stalled = scaled <= 0x1p-30 && scaled > 0.25 * previous;
    previous = scaled;
    if (at_rounding || stalled) {
      // e' = G v + g_t at the corrected q (to rounding), onto its target.
      const Model::TapeBlocks b = m.Blocks(out);
      for (int i = 0; i < nc; ++i) {
        delta[i] = w_target_[static_cast<size_t>(i)] - VelocityResidual(m, b, v, i);
      }
      Correction(m, out, delta, dx);
      for (int j = 0; j < d; ++j) v[j] += dx[j];
      return Status::Ok();
    }
  }
  return Aborted("post-stabilization at t = " + FormatNumber(t1) + ": the Newton iteration " +
                 "onto the residual law did not converge in " + std::to_string(kMaxIterations) +
                 " iterations (last correction " + FormatNumber(largest) + " at coordinate '" +
                 m.coordinate_names[static_cast<size_t>(where)] +
                 "'); expected a step_size short enough for the constraints to be nearly " +
                 "linear over the step");
}

int64_t PostStabilizer::heap_bytes() const {
  return HeapBytesOf(phi_, e_target_, w_target_, delta_, x_, dx_, Y_, W_, W_inv_diag_, L_,
                     L_inv_diag_, minv_) +
         sparse_.heap_bytes();
}

}  // namespace tether
