// The linear algebra of the implicit method (SDIRK3, integrator.h): one
// simplified-Newton matrix per step, from the model's symbolic Jacobian.
//
// A stage of SDIRK3 solves A = a(t_i, q^ + c2 A, v^ + c1 A) for the stage
// acceleration A (c1 = h gamma, c2 = (h gamma)^2). Newton's correction for
// the residual r = A - a(...) is z = -(I - c1 da/dv - c2 da/dq)^-1 r. The
// Jacobian of a is never formed (it is dense even when the model is
// sparse): differentiating the KKT system shows that z is the first block of
//
//   K [z; mu] = -[M r; G r],   K = [ M - c1 dPhi/dv - c2 dPhi/dq   G^T ]
//                                  [ G - c1 dPsi/dv - c2 dPsi/dq   0   ]
//
// (model.h, NewtonTape; Phi and Psi are the KKT right-hand sides minus the
// left-hand side at fixed a and lambda). K has the sparsity of M, G and the
// constraints' and forces' second derivatives, and its entries come from a
// tape compiled from the symbolic derivatives: no finite differences.
//
// K is evaluated and factorised at each stage's first guess and again when
// the iteration contracts slowly (integrator.h, StepSdirk3). For
// nq + nc <= kNewtonDenseMax: a dense LU with partial pivoting
// (Eigen::PartialPivLU, sized once; no allocation per step,
// DynamicsTest.NoHeapAllocationWhileStepping). Above: Eigen::SparseLU on K's
// fixed pattern, ordered (COLAMD) once at construction and refactorised
// numerically each time (SparseLU's factorize allocates its supernodal
// storage: this path allocates per factorisation). Both are deterministic:
// no threads, a fixed pivot rule. Cost and the dense/sparse measurement:
// docs/benchmarks.md, "Stiff gains: the implicit method".
//
// Threading: a NewtonSolver belongs to one Simulation, like its Workspace.
#pragma once

#include "engine/internal/base/internal.h"

#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <Eigen/SparseLU>

#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/model/model.h"
#include "engine/status.h"

namespace tether {

// Largest nq + nc factorised densely.
inline constexpr int kNewtonDenseMax = 32;

class NewtonSolver {
 public:
  // model.newton must be enabled (CompileModel with with_newton).
  explicit NewtonSolver(const Model& model);

  // Evaluates and factorises K at (t, q, v) with inputs u (nu) for c1, c2.
  // Solves the KKT system there for a and lambda (in its own workspace: the
  // simulation's evaluation and its certificate statistics are untouched).
  // ABORTED when that solve fails or K is singular.
  Status Prepare(double t, const double* q, const double* v, const double* u, double c1, double c2);
  // The Newton correction z = -(I - c1 da/dv - c2 da/dq)^-1 r (nq each) at
  // the prepared point.
  void Solve(const double* r, double* z);
  bool sparse() const { return sparse_; }
  // Heap bytes held, counting the sparse LU factors at their first
  // allocation whether a factorisation was made yet or not (heap_bytes.h).
  int64_t heap_bytes() const;

 private:
  const Model& m_;
  Workspace ws_;
  std::vector<double> work_;  // the Newton tape's work buffer
  int n_;                     // nq + nc
  bool sparse_;
  // Dense path.
  Eigen::MatrixXd Kd_;
  Eigen::PartialPivLU<Eigen::MatrixXd> dense_lu_;
  // Sparse path: K_'s value array position of each tape K output.
  Eigen::SparseMatrix<double> K_;
  std::vector<int> k_pos_;
  Eigen::SparseLU<Eigen::SparseMatrix<double>, Eigen::COLAMDOrdering<int>> sparse_lu_;
  Eigen::VectorXd rhs_, sol_;
};

}  // namespace tether
