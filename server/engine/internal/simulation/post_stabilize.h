// RK4_POST_STABILIZED's end of step (docs/MATH.md section 7.3): the step's
// end, reached by RK4 on the dynamics without the Baumgarte feedback, is
// moved along the constraint normals onto the residual law's exact map of
// the step's start,
//   (e, e')(t1) = Phi(h) (e, e')(t0),  Phi(h) = exp(h [[0, 1], [-beta^2, -2 alpha]]),
// per constraint (ResidualLawMap, integrator.h):
//   q <- q + M^-1 G^T W^-1 (e* - g(q))   (Newton, G and W at the current q)
//   v <- v + M^-1 G^T W^-1 (e'* - G v - g_t)   (linear in v; G at the end q)
// with W = G M^-1 G^T, the range-space matrix of the KKT solve (section 5),
// factorised here by the same kernels: the dense LDL^T (Ldlt) or the
// sparse one on the model's fixed pattern (SparseLdlt). Allocation-free
// after construction; one per simulation whose method is post-stabilized.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <vector>

#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/sparse_ldlt.h"
#include "engine/internal/model/model.h"
#include "engine/status.h"

namespace tether {

class PostStabilizer {
 public:
  // The Newton iterations Apply allows; a step whose correction has not
  // converged by then fails (its message names the largest correction).
  static constexpr int kMaxIterations = 8;

  explicit PostStabilizer(const Model& m);

  // At the step's start (t0, q0, v0), with the workspace's inputs: each
  // constraint's (e, e') there, mapped over h by the residual law: the
  // targets of Apply. Evaluates the constraints' tape once.
  void Targets(const Model& m, Workspace* ws, double t0, const double* q0, const double* v0,
               double h);

  // Moves (q, v) at t1 onto the targets. Evaluates the constraints' tape
  // (the dynamics' for a configuration-dependent M) once per Newton
  // iteration, usually twice. Fails (ABORTED) when W is singular (dependent
  // constraints) or the iteration does not converge.
  Status Apply(const Model& m, Workspace* ws, double t1, double* q, double* v);

  // Heap bytes held (heap_bytes.h).
  int64_t heap_bytes() const;

 private:
  // W = G M^-1 G^T at the evaluation `out` (the tape outputs) factorised;
  // false with *bad the constraint whose pivot failed.
  bool Factor(const Model& m, const double* out, int* bad);
  // dx = M^-1 G^T W^-1 delta on the factor (x_ scratch), G from `out`.
  void Correction(const Model& m, const double* out, const double* delta, double* dx);

  double h_ = -1;                            // the h of phi_ (-1: none)
  std::vector<double> phi_;                  // (4 nc) each constraint's Phi(h), row-major
  std::vector<double> e_target_, w_target_;  // (nc)
  std::vector<double> delta_, x_, dx_;       // (nc), (nc), (nq)
  // Dense path: rows y_i = L^-1 G_i^T (nc x nq), W and its LDL^T (nc x
  // nc), 1 / D; M(q)'s Cholesky factor and 1 / L_ii (kinetic energy).
  std::vector<double> Y_, W_, W_inv_diag_, L_, L_inv_diag_;
  // Sparse path: the numeric factor on the model's pattern, and 1 / M_jj
  // (M(q)'s diagonal; else the model's).
  SparseKktScratch sparse_;
  std::vector<double> minv_;
  const double* minv_now_ = nullptr;
  const double* L_now_ = nullptr;
  const double* L_inv_now_ = nullptr;
};

}  // namespace tether
