// Exact instantaneous partial derivatives of a description's accelerations
// a, multipliers lambda and outputs y at a point (t, q, v, u), with respect
// to the coordinates q, the velocities v and the inputs u: the FMU's
// fmi2/fmi3GetDirectionalDerivative (docs/COSIMULATION.md "Directional
// derivatives").
//
// From the compiled model's symbolic Jacobians (the sensitivity tape,
// compiled when CompileOptions::sensitivity asks), through the KKT solve
// differentiated rather than perturbed: with Phi = F - M a - G^T lambda and
// Psi = -H - 2 alpha e' - beta^2 g - G a (their partials taken at fixed a
// and lambda), the solution's derivatives solve
//
//   [ M  G^T ] [ da/dz      ]   [ dPhi/dz ]
//   [ G  0   ] [ dlambda/dz ] = [ dPsi/dz ]      z = (q, v, u),
//
// here by the range space as SolveKkt (M = L L^T, W = G M^-1 G^T; Eigen's
// dense Cholesky and LDL^T: a solve per call, not the step loop's, so the
// library's kernels rather than hand-written ones), and dy/dz is the
// outputs' own Jacobian. These are the partials at the current state,
// not the sensitivities of a communication step.
//
// Threading: a plain function of its arguments.
#pragma once

#include <span>
#include <vector>

#include "engine/simulation.h"
#include "engine/status.h"

namespace tether {

struct KktJacobian {
  int nq = 0, nc = 0, nu = 0, ny = 0;
  int nz = 0;  // 2 nq + nu columns: q, then v, then u
  // Row-major: da/dz (nq x nz), dlambda/dz (nc x nz), dy/dz (ny x nz).
  std::vector<double> da, dlambda, dy;
  // The partials with respect to time itself at fixed (q, v, u) (explicit
  // t in forces, constraints or outputs), through the same solve: da/dt
  // (nq), dlambda/dt (nc), dy/dt (ny). With them a quantity's total time
  // derivative along the motion is d/dq . v + d/dv . a + d/du . u' + d/dt
  // (an FMU's output derivatives, fmi2GetRealOutputDerivatives).
  std::vector<double> da_dt, dlambda_dt, dy_dt;
  // The point's a and lambda (the KKT solve's).
  std::vector<double> a, lambda;
};

// The Jacobians at (t, q, v) with inputs u (sizes nq, nq, nu). `sim` must
// come from Simulation::Create with CompileOptions::sensitivity set
// (FAILED_PRECONDITION otherwise); its state is not used or changed.
// ABORTED when the KKT system is singular there (dependent constraints,
// M not positive definite).
Status EvaluateKktJacobian(const Simulation& sim, double t, std::span<const double> q,
                           std::span<const double> v, std::span<const double> u, KktJacobian* out);

}  // namespace tether
