// A compiled system (MuJoCo's mjModel in spirit): immutable after
// compilation and shared by every simulation of the same description.
//
// Variable layout of every tape: [t, q (nq), v (nq), u (nu)].
#pragma once

#include "engine/internal/base/internal.h"

#include <memory>
#include <string>
#include <vector>

#include "engine/compile_options.h"
#include "engine/internal/expr/subgraph.h"
#include "engine/internal/expr/tape.h"
#include "engine/internal/model/sparse_analysis.h"
#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether {

enum class Inertia { kDiagonal, kDense, kKinetic };

// The symbolic Newton matrix of the implicit method (SDIRK3; newton.h), built
// only when the spec's method asks for it. With a = a(t, q, v) from the KKT
// system and Phi = F - M a - G^T lambda, Psi = -H - 2 alpha e' - beta^2 g - G a
// (partials taken with a and lambda held fixed), the stage equation's
// simplified-Newton matrix is
//
//   K = [ M - c1 dPhi/dv - c2 dPhi/dq   G^T ]   (nq + nc square),
//       [ G - c1 dPsi/dv - c2 dPsi/dq   0   ]
//
// whose solve gives (I - c1 da/dv - c2 da/dq)^-1 without forming da/dq.
// The tape's variables are [t, q, v, u, a (nq), lambda (nc), c1, c2] and its
// outputs K's structural nonzeros (entries that did not simplify to 0), then
// M's entries, then G's, at the positions below.
struct NewtonTape {
  bool enabled = false;
  Tape tape;
  std::vector<int32_t> k_row, k_col;                      // one per K output
  std::vector<int32_t> m_row, m_col;                      // one per M output (rows, cols < nq)
  std::vector<int32_t> g_row, g_col;                      // one per G output (row < nc, col < nq)
  int var_a = 0, var_lambda = 0, var_c1 = 0, var_c2 = 0;  // tape variable slots
};

// The symbolic Jacobians of the KKT system at a point, for its exact
// directional derivatives (engine/sensitivity.h), built only when
// CompileOptions::sensitivity asks. With Phi and Psi as for NewtonTape and
// z = [q (nq), v (nq), u (nu)] (nz = 2 nq + nu), the tape's variables are
// [t, q, v, u, a (nq), lambda (nc)] and its outputs, dense and row-major:
// dPhi/dz (nq x nz), dPsi/dz (nc x nz), M (nq x nq), G (nc x nq) and the
// outputs' dy/dz (ny x nz), then the explicit time partials dPhi/dt (nq),
// dPsi/dt (nc) and dy/dt (ny), at the offsets below.
struct SensitivityTape {
  bool enabled = false;
  Tape tape;
  int var_a = 0, var_lambda = 0;
  int nz = 0;
  int off_dphi = 0, off_dpsi = 0, off_M = 0, off_G = 0, off_dy = 0;
  int off_dphi_dt = 0, off_dpsi_dt = 0, off_dy_dt = 0;
};

struct Model {
  int nq = 0;  // coordinates d
  int nc = 0;  // constraints m
  int nu = 0;  // inputs
  int ny = 0;  // outputs
  int num_vars() const { return 1 + 2 * nq + nu; }
  int var_t() const { return 0; }
  int var_q(int i) const { return 1 + i; }
  int var_v(int i) const { return 1 + nq + i; }
  int var_u(int k) const { return 1 + 2 * nq + k; }

  std::vector<std::string> coordinate_names;  // (nq)
  std::vector<std::string> constraint_names;  // (nc)
  std::vector<std::string> input_names;       // (nu)
  std::vector<std::string> output_names;      // (ny)
  std::vector<double> input_defaults;         // (nu)

  Inertia inertia = Inertia::kDiagonal;
  std::vector<double> mass_diag;           // kDiagonal: M_ii (nq)
  std::vector<double> mass_inv;            // kDiagonal: 1/M_ii (nq)
  std::vector<double> mass_inv_sqrt;       // kDiagonal: 1/sqrt(M_ii) (nq)
  std::vector<double> mass_dense;          // kDense: M, row-major (nq x nq)
  std::vector<double> mass_chol;           // kDense: L with M = L L^T, row-major
  std::vector<double> mass_chol_inv_diag;  // kDense: 1/L_ii (nq)

  std::vector<double> alpha;      // effective Baumgarte gains per constraint (nc)
  std::vector<double> beta;       // (nc)
  std::vector<double> two_alpha;  // 2 alpha (nc), as the evaluation uses them
  std::vector<double> beta_sq;    // beta^2 (nc)

  // Tape outputs, concatenated in this order:
  //   g (nc), G (nc x nq, row-major), g_t (nc), H (nc), F (nq),
  //   and for Inertia::kKinetic, M(q) (nq x nq, row-major).
  // On the sparse path (sparse.enabled), G is only its structural nonzeros
  // in sparse's CSR order (nnz_G entries) and M(q) only its diagonal (nq).
  Tape dynamics;
  // g, G, g_t, H only (the certificate's defect samples).
  Tape constraints;
  // The observables (ny).
  Tape outputs;
  // g alone, for Taylor-mode evaluation in ball arithmetic (the ENCLOSED
  // certificate, defect_enclosure.h); linear in g's nodes.
  expr::Subgraph defect_program;
  int off_g = 0, off_G = 0, off_gt = 0, off_H = 0, off_F = 0, off_M = 0;

  // The blocks of the dynamics tape's outputs `out` (the layout above; the
  // constraints tape shares its first four): the one place it is unpacked.
  struct TapeBlocks {
    const double* g;   // (nc)
    const double* G;   // (nc x nq, or its nonzeros on the sparse path)
    const double* gt;  // (nc)
    const double* H;   // (nc)
    const double* F;   // (nq) dynamics tape only
    const double* M;   // (nq x nq, or its diagonal) kKinetic dynamics tape only
  };
  TapeBlocks Blocks(const double* out) const {
    return {out + off_g, out + off_G, out + off_gt, out + off_H, out + off_F, out + off_M};
  }

  // The sparse KKT solve's symbolic analysis (sparse_analysis.h); disabled for
  // the dense path.
  SparseKkt sparse;

  // SDIRK3's Newton matrix (disabled unless CompileModel's with_newton).
  NewtonTape newton;
  // The KKT system's Jacobians (disabled unless CompileOptions::sensitivity).
  SensitivityTape sensitivity;

  // A constraint row whose squared Cholesky pivot of W falls below this
  // fraction of its diagonal entry is reported as dependent.
  double dependence_tolerance = 1e-12;

  // Heap bytes held (heap_bytes.h), the struct itself included, and the
  // pages of the tapes' machine code (Tape::code_bytes).
  int64_t heap_bytes() const;
  int64_t code_bytes() const;
};

// Checks and compiles spec.system within options.limits. On any error
// returns nullptr; every problem found is appended to `diagnostics` with
// its field path (warnings too, e.g. alpha = 0). When a compile limit is
// exceeded or options.cancelled stops the compilation, also sets `*stopped`
// (RESOURCE_EXHAUSTED naming the expression being compiled, the limit and
// its value, or CANCELLED); it is left Ok otherwise. with_newton also
// compiles model.newton (the implicit method's Newton matrix).
std::shared_ptr<const Model> CompileModel(const v1::SystemSpec& system,
                                          const CompileOptions& options,
                                          std::vector<v1::Diagnostic>* diagnostics, Status* stopped,
                                          bool with_newton = false);

// Appends a diagnostic.
void AddDiagnostic(std::vector<v1::Diagnostic>* diagnostics, v1::Diagnostic::Severity severity,
                   std::string field, std::string message);

}  // namespace tether
