// The FMU's projection of an inconsistent start onto the constraints
// (tether.project_start, model_description.h): a master that sets q0.*,
// v0.* or a parameter that moves the constraints (a rod length) before
// initialization gets a start on g(q) = 0 and G v + g_t = 0 instead of a
// warning only. The engine has no projection of its own (it judges the
// start, validate.cc, and the Baumgarte feedback pulls the residual back
// over time), so this one is built on what Simulation::Evaluate gives:
//
//   positions: Newton on g(q) = 0 with the minimum-norm correction,
//     q <- q - G^+ g(q), G^+ the pseudo-inverse (Eigen's complete
//     orthogonal decomposition: dependent constraints are handled), until
//     |g|_inf stops decreasing below kTargetResidual or kMaxIterations;
//   velocities: v <- v - G^+ (G v + g_t), one step (the residual is linear
//     in v), the minimum-norm change.
//
// G is read exactly, not by perturbation of q: the velocity residual
// e' = G(q) v + g_t is linear in v, so its change from v = 0 to v = unit
// vector j is column j of G (up to one rounding per entry).
// The corrections are Euclidean in q and v (not mass-weighted).
//
// Threading: a plain function; it changes `sim`'s state (the caller sets
// it again).
#pragma once

#include <string>

#include "engine/simulation.h"
#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether::fmu {

struct ProjectionResult {
  // The residuals before and after, max norm.
  double position_before = 0, velocity_before = 0;
  double position_after = 0, velocity_after = 0;
  int iterations = 0;
};

inline constexpr double kTargetResidual = 1e-14;
inline constexpr int kMaxIterations = 50;

// Projects `start` (t, q, v of `sim`'s description; v may be empty = 0) in
// place. FAILED_PRECONDITION naming the residual when Newton does not bring
// |g|_inf to `tolerance` (a start too far from the constraints, or none
// satisfiable); INVALID_ARGUMENT / ABORTED from the evaluations.
Status ProjectStart(Simulation& sim, double tolerance, v1::State* start, ProjectionResult* result);

}  // namespace tether::fmu
