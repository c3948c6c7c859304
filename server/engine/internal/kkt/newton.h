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
// RADAU_IIA (radau_iia.h) needs a second, complex matrix beside the real
// one: its stage system decouples into one real system with c1 = h gamma
// and one complex system with c1 = h mu, c2 = (h mu)^2 (mu a complex
// eigenvalue of its Runge-Kutta matrix). K is affine in (c1, c2) (the tape
// builds M - c1 dPhi/dv - c2 dPhi/dq), so the complex K is assembled from
// two real evaluations of the same tape, K(Re c) + i (K(Re c + Im c) -
// K(Re c)), and factorised by the same dense or sparse LU over
// std::complex<double>: sparse where the model is, with no finite
// differences. A solver made with `complex_pair` holds both factorisations
// (PreparePair); the complex ones are sized at construction like the real.
// On the sparse path the pair's two matrices (the real one included, which
// such a solver's Prepare factorises the same way) are factorised by
// SuiteSparse's KLU (klu_lu.h says why), not by SparseLU, which SDIRK3's
// solver keeps (its trajectories are unchanged): one klu_factor a matrix,
// a function of its values alone (deterministic, no history).
//
// Threading: a NewtonSolver belongs to one Simulation, like its Workspace.
#pragma once

#include "engine/internal/base/internal.h"

#include <complex>
#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <Eigen/SparseLU>

#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/klu_lu.h"
#include "engine/internal/model/model.h"
#include "engine/status.h"

namespace tether {

// Largest nq + nc factorised densely.
inline constexpr int kNewtonDenseMax = 32;

class NewtonSolver {
 public:
  // model.newton must be enabled (CompileModel with with_newton).
  // complex_pair: also hold the complex factorisation of PreparePair
  // (RADAU_IIA).
  explicit NewtonSolver(const Model& model, bool complex_pair = false);

  // Evaluates and factorises K at (t, q, v) with inputs u (nu) for c1, c2.
  // Solves the KKT system there for a and lambda (in its own workspace: the
  // simulation's evaluation and its certificate statistics are untouched).
  // ABORTED when that solve fails or K is singular.
  Status Prepare(double t, const double* q, const double* v, const double* u, double c1, double c2);
  // The Newton correction z = -(I - c1 da/dv - c2 da/dq)^-1 r (nq each) at
  // the prepared point.
  void Solve(const double* r, double* z);
  // Prepare's real matrix at (c1, c2) and, from the same KKT solve at (t,
  // q, v), the complex matrix at (d1, d2). Needs complex_pair.
  Status PreparePair(double t, const double* q, const double* v, const double* u, double c1,
                     double c2, std::complex<double> d1, std::complex<double> d2);
  // z = -(I - d1 da/dv - d2 da/dq)^-1 r (nq each, complex) at the point and
  // (d1, d2) of the last PreparePair.
  void SolveComplex(const std::complex<double>* r, std::complex<double>* z);
  bool sparse() const { return sparse_; }
  // Heap bytes held, counting the sparse LU factors at their first
  // allocation whether a factorisation was made yet or not (heap_bytes.h).
  int64_t heap_bytes() const;

 private:
  using ComplexDense = Eigen::MatrixXcd;
  // SolveKkt at the point and the tape's inputs but c1, c2.
  Status LoadPoint(double t, const double* q, const double* v, const double* u);
  // The tape's K entries at (c1, c2) (checked finite; in work_'s outputs).
  Status EvaluateK(double c1, double c2, const double** out);
  Status FactorReal(const double* out);
  // -[M r; G r] into rhs (nq + nc), for a real or complex r.
  template <class Scalar, class Vector>
  void NewtonRhs(const Scalar* r, Vector* rhs) const;

  const Model& m_;
  bool complex_pair_;
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
  // Complex pair (complex_pair_ only): the real part's K entries, then the
  // complex K on the dense or the sparse path, and its right-hand side.
  std::vector<double> k_re_;
  ComplexDense Kc_;
  Eigen::PartialPivLU<ComplexDense> dense_clu_;
  // Sparse path of the pair: KLU on K_'s pattern, and the complex K's
  // values in K_'s order.
  std::unique_ptr<KluLu> klu_real_, klu_complex_;
  std::vector<std::complex<double>> kc_values_;
  Eigen::VectorXcd crhs_, csol_;
};

}  // namespace tether
