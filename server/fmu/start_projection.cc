#include "fmu/start_projection.h"

#include <algorithm>
#include <cmath>
#include <vector>

// Eigen, as the engine uses it: the pseudo-inverse solve of a small dense
// system is the library's (complete orthogonal decomposition), not
// hand-written.
#include <Eigen/Dense>

#include "engine/status.h"

namespace tether::fmu {
namespace {

double MaxAbs(const Eigen::VectorXd& x) { return x.size() == 0 ? 0.0 : x.cwiseAbs().maxCoeff(); }

// The position and velocity residuals at (t, q, v).
Status Residuals(Simulation& sim, double t, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                 Eigen::VectorXd* e, Eigen::VectorXd* e_dot) {
  v1::State s;
  s.set_t(t);
  for (double x : q) s.add_q(x);
  for (double x : v) s.add_v(x);
  if (Status st = sim.SetState(s, "initial"); !st.ok()) return st;
  v1::Frame frame;
  if (Status st = sim.Evaluate(&frame); !st.ok()) return st;
  const auto& r = frame.residuals();
  *e = Eigen::Map<const Eigen::VectorXd>(r.position().data(), r.position_size());
  *e_dot = Eigen::Map<const Eigen::VectorXd>(r.velocity().data(), r.velocity_size());
  return Status::Ok();
}

// G(q) from the velocity residual, linear in v (start_projection.h).
Status ConstraintJacobian(Simulation& sim, double t, const Eigen::VectorXd& q, Eigen::MatrixXd* g) {
  const Eigen::Index n = q.size();
  Eigen::VectorXd e, base, col;
  if (Status s = Residuals(sim, t, q, Eigen::VectorXd::Zero(n), &e, &base); !s.ok()) return s;
  g->resize(base.size(), n);
  for (Eigen::Index j = 0; j < n; ++j) {
    if (Status s = Residuals(sim, t, q, Eigen::VectorXd::Unit(n, j), &e, &col); !s.ok()) return s;
    g->col(j) = col - base;
  }
  return Status::Ok();
}

}  // namespace

Status ProjectStart(Simulation& sim, double tolerance, v1::State* start, ProjectionResult* result) {
  const int n = static_cast<int>(sim.coordinate_names().size());
  const double t = start->t();
  Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(start->q().data(), start->q_size());
  Eigen::VectorXd v = Eigen::VectorXd::Zero(n);
  if (start->v_size() != 0)
    v = Eigen::Map<const Eigen::VectorXd>(start->v().data(), start->v_size());
  Eigen::VectorXd e, e_dot;
  if (Status s = Residuals(sim, t, q, v, &e, &e_dot); !s.ok()) return s;
  *result = ProjectionResult{};
  result->position_before = MaxAbs(e);
  result->velocity_before = MaxAbs(e_dot);
  Eigen::MatrixXd g;
  double residual = MaxAbs(e);
  for (int it = 0; it < kMaxIterations && residual > kTargetResidual; ++it) {
    if (Status s = ConstraintJacobian(sim, t, q, &g); !s.ok()) return s;
    const Eigen::VectorXd trial = q - g.completeOrthogonalDecomposition().solve(e);
    Eigen::VectorXd e_trial, unused;
    if (Status s = Residuals(sim, t, trial, v, &e_trial, &unused); !s.ok()) return s;
    const double r = MaxAbs(e_trial);
    ++result->iterations;
    // Newton converges quadratically near the solution; once rounding
    // stops it from decreasing, the previous iterate is kept.
    if (!(r < residual)) break;
    q = trial;
    e = e_trial;
    residual = r;
  }
  if (!(residual <= tolerance)) {
    return Status(StatusCode::kFailedPrecondition,
                  "projecting the start onto the constraints: Newton reached |g|_inf = " +
                      FormatNumber(residual) + " after " + std::to_string(result->iterations) +
                      " iterations; expected <= " + FormatNumber(tolerance) +
                      " (the start is too far from the constraints, or they cannot be met)");
  }
  if (Status s = ConstraintJacobian(sim, t, q, &g); !s.ok()) return s;
  if (Status s = Residuals(sim, t, q, v, &e, &e_dot); !s.ok()) return s;
  v -= g.completeOrthogonalDecomposition().solve(e_dot);
  if (Status s = Residuals(sim, t, q, v, &e, &e_dot); !s.ok()) return s;
  result->position_after = MaxAbs(e);
  result->velocity_after = MaxAbs(e_dot);
  start->clear_q();
  start->clear_v();
  for (double x : q) start->add_q(x);
  for (double x : v) start->add_v(x);
  return Status::Ok();
}

}  // namespace tether::fmu
