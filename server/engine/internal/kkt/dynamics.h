// One acceleration evaluation: the range-space solution of the Baumgarte-
// stabilised KKT system (docs/MATH.md)
//
//   [ M  G^T ] [ a      ]   [ F                          ]
//   [ G  0   ] [ lambda ] = [ -H - 2 alpha e' - beta^2 e ]
//
// W = G M^-1 G^T is formed from Y = L^-1 G^T (M = L L^T, Cholesky) and
// factorised by the square-root-free Cholesky W = L D L^T; a constant M is
// factorised once at compile time, M(q) per evaluation. Cost O(d^2 m + d m^2 + m^3) plus the tape.
// No allocation.
//
// Two paths, chosen once per model at compile time (sparse_analysis.h): the
// dense one above, and for large systems with a structurally diagonal mass
// matrix (m >= kSparseMinConstraints = 16 and an LDL^T factor of the
// AMD-reordered W with at most half the dense factor's entries) a
// sparse one: only G's structural nonzeros, W's fixed pattern, a numeric
// sparse LDL^T per evaluation, O(nnz(G) + flops(L)). Both give the same a
// and lambda to rounding (tests/sparse_kkt_test.cc: 1e-12 relative over a
// run); CompileOptions::kkt forces either for tests. Every golden frame
// case is small, so frames keep their bits.
//
// Hand-written, not Eigen: these dense kernels run on stack scratch of the
// fixed sizes the step loop is instantiated for (TETHER_FIXED_SIZES) and
// fuse the row residuals into the solve. Eigen 3.4's fixed-size LDLT (it
// pivots) and LLT solve the bare W x = r 1.4-2x slower than the same
// square-root-free LDLᵀ loop for m = 2..8 (bench/dense_solve_bench.cc,
// docs/benchmarks.md), and replacing the loops would also change the bits of
// every frame, which the service promises to keep. Eigen is the tests'
// reference instead (tests/kkt_reference_test.cc). Large sparse systems are
// a different trade: there Eigen's sparse module (SimplicialLDLT with its
// ordering) is the first choice, and its condition estimates (LDLT::rcond)
// for the certificate.
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "engine/internal/kkt/sparse_ldlt.h"
#include "engine/internal/model/model.h"
#include "engine/status.h"

namespace tether {

// Largest residuals and conditioning seen over a window of evaluations.
struct EvaluationStats {
  double max_dynamics_residual = 0;    // max |M a + G^T lambda - F|_inf
  double max_constraint_residual = 0;  // max |G a + H + 2 alpha e' + beta^2 e|_inf
  double max_relative_residual = 0;    // max |r_i| / operand magnitude_i (KktRowResiduals)
  double max_backward_error = 0;       // max |r_i| / (gamma_{n_i} magnitude_i)
  int worst_kkt_row = -1;              // its row: j < nq dynamics, nq + i constraint i
  double worst_kkt_time = 0;           // and time
  double max_w_condition = 0;          // max estimate of cond_1(W) (1 for one constraint)
  double worst_condition_time = 0;     // its time; ws->cond_involved the constraints
  uint64_t evaluations = 0;

  // Folds one evaluation's row residuals at time t into the maxima: r1, r2
  // absolute, `relative` and `ratio` (the backward error) at `row`.
  void AddRows(double t, double r1, double r2, double relative, double ratio, int row) {
    max_dynamics_residual = std::max(max_dynamics_residual, r1);
    max_constraint_residual = std::max(max_constraint_residual, r2);
    max_relative_residual = std::max(max_relative_residual, relative);
    if (ratio > max_backward_error) [[unlikely]] {
      max_backward_error = ratio;
      worst_kkt_row = row;
      worst_kkt_time = t;
    }
  }
};

// Per-simulation scratch and results (MuJoCo's mjData in spirit). Sized once
// from the model; evaluation allocates nothing.
struct Workspace {
  explicit Workspace(const Model& model);
  Workspace(const Workspace&) = delete;  // dyn_out, con_out point into this
  Workspace& operator=(const Workspace&) = delete;

  std::vector<double> u;  // current inputs (nu)
  // Inputs interpolated linearly over a run (Simulation::SetInputRates):
  // when not empty (nu entries), an evaluation at time t sees
  // u_k + u_rate_k (t - u_anchor) instead of u_k (LoadVars). Empty: held.
  std::vector<double> u_rate;
  double u_anchor = 0;
  // Inputs from a caller's function (Simulation::SetInputSource, an FMI 3
  // FMU's intermediate update): when set, an evaluation at time t calls
  // (*u_source)(t, u) with u holding the inputs as set, and sees what it
  // leaves there (instead of the ramp). Not owned.
  const std::function<void(double t, double* u)>* u_source = nullptr;
  // !u_rate.empty() || u_source: one load for the evaluations' test.
  bool u_ramp = false;

  // Tape buffers. The outputs live inside the work buffers (Tape::Outputs).
  std::vector<double> dyn_work;     // dynamics tape scratch
  std::vector<double> con_work;     // constraint tape scratch
  std::vector<double> out_work;     // output tape scratch
  const double* dyn_out = nullptr;  // dynamics tape outputs (see Model offsets)
  const double* con_out = nullptr;  // g, G, g_t, H at a sample point

  // Results of the last SolveKkt (all views of the state it was given).
  std::vector<double> a;                     // accelerations (nq)
  std::vector<double> lambda;                // multipliers (nc)
  std::vector<double> e;                     // g (nc)
  std::vector<double> e_dot;                 // G v + g_t (nc)
  double dynamics_residual = 0;              // |r1|_inf
  double constraint_residual = 0;            // |r2|_inf
  std::vector<double> constraint_magnitude;  // operand magnitude of each constraint row (nc)
  // Each constraint row's signed residual G a + H + 2 alpha e' + beta^2 g
  // (nc): the defect eta at this state with a, the interpolant's
  // acceleration at a step's end (docs/MATH.md section 10.1). Valid only
  // while constraint_rows_current is set: by the sparse path's evaluation
  // at an accepted state inside a certificate window, cleared by its every
  // other evaluation (the dense path never sets it).
  std::vector<double> constraint_row_residual;
  bool constraint_rows_current = false;

  // Set inside a certificate window: evaluations then compute the KKT rows'
  // backward error (judgement (b)) and, at accepted states, estimate
  // cond_1(W) (a few O(nc^2) solves with the factor) into stats; outside,
  // only the absolute row residuals of the frames.
  bool in_certificate_window = false;
  // Cleared by the step loop around the evaluation at a new state that no
  // frame will show (no frame this step, no output grid, no certificate):
  // the sparse path then skips what only a frame or the certificate reads
  // (the row residuals, e, the stats); a, lambda and e' are computed as
  // always. Every other evaluation publishes everything.
  bool publish = true;
  // Set by the step loop around a post-stabilized method's stages
  // (RK4_POST_STABILIZED, docs/MATH.md section 7.3): evaluations then leave
  // the Baumgarte feedback out, reading the gains as zero_gains' zeros
  // (G a = -H), and judge their rows as solved so.
  bool feedback_off = false;
  std::vector<double> zero_gains;      // (nc) zeros
  EvaluationStats stats;               // accumulated over evaluations
  std::vector<uint8_t> cond_involved;  // constraints of stats' worst conditioning (nc)

  // Scratch.
  std::vector<double> L;            // Cholesky of M(q) (kinetic), row-major
  std::vector<double> L_inv_diag;   // 1 / L_ii
  std::vector<double> Minv_F;       // M^-1 F (nq)
  std::vector<double> Y;            // rows y_i = L^-1 G_i^T (nc x nq)
  std::vector<double> W;            // G M^-1 G^T, then its LDL^T (nc x nc)
  std::vector<double> W_inv_diag;   // 1 / D_ii of that LDL^T (nc)
  std::vector<double> rhs;          // (nc)
  std::vector<double> tmp;          // (nq)
  std::vector<double> r1;           // (nq)
  std::vector<double> kkt_scratch;  // operand magnitudes of a (nq), |L^T||a| (nq, a dense M)
  // The condition estimator's scratch (nc); cond_y then receives the
  // factor magnitudes of judgement (b) (FactorMagnitudes).
  std::vector<double> cond_x, cond_y, cond_z;
  // The sparse path's numeric factor (model.sparse.enabled; Y, W, L and
  // W_inv_diag are then empty).
  SparseKktScratch sparse;

  // Heap bytes held (heap_bytes.h; the struct itself not included).
  int64_t heap_bytes() const;
};

// Evaluates at (t, q, v) with the workspace's inputs. On failure returns
// ABORTED naming the cause (dependent constraints, M(q) not positive
// definite, a non-finite quantity) without the step/time prefix.
Status SolveKkt(const Model& model, Workspace* ws, double t, const double* q, const double* v);

// The sizes (nq, nc) that get a kernel of their own, with the loops
// unrolled and the scratch on the stack: X(D, C) for each.
#define TETHER_FIXED_SIZES(X) \
  X(1, 0) X(1, 1) X(2, 0) X(2, 1) X(2, 2) X(3, 1) X(3, 2) X(4, 1) X(4, 2) X(4, 3)

// SolveKkt for a model with nq == D and nc == C (one of TETHER_FIXED_SIZES),
// or any model when D == 0. SolveKkt picks the kernel at each call; a caller
// that evaluates many times can pick it once.
template <int D, int C>
Status SolveKktSized(const Model& model, Workspace* ws, double t, const double* q, const double* v);

// g, G, g_t, H at (t, q, v) into ws->con_out.
void EvaluateConstraints(const Model& model, Workspace* ws, double t, const double* q,
                         const double* v);

// The observables at (t, q, v) into y (ny).
void EvaluateOutputs(const Model& model, Workspace* ws, double t, const double* q, const double* v,
                     double* y);

}  // namespace tether
