// The residual certificate (docs/MATH.md, seed 001 eq. 4-7): the four
// judgements (a)-(d) and an a-posteriori bound on the constraint drift.
//
// Each step is turned into a C^2 curve by the quintic Hermite interpolant
// through (q, v, a) at both ends; its velocity is the derivative of its
// position, so no kinematic defect is left over. The defect
// eta = e'' + 2 alpha e' + beta^2 e of that curve is sampled inside every step;
// with delta = sup |eta| the position residual obeys
//   |e(t)| <= |e_hom(t)| + delta * integral_0^t |k(s)| ds
// where e_hom is the free response from (e(t0), e'(t0)) and k the impulse
// response of e'' + 2 alpha e' + beta^2 e. delta is a sampled supremum.
#pragma once

#include <vector>

#include "engine/dynamics.h"
#include "engine/integrator.h"
#include "engine/model.h"
#include "tether/v1/simulation.pb.h"

namespace tether {

// Closed forms for one residual equation e'' + 2 alpha e' + beta^2 e = eta
// (alpha, beta >= 0), all cases (under-, critically, over-damped).
namespace residual_law {
// Free response at time t from e(0) = e0, e'(0) = w0.
double Homogeneous(double alpha, double beta, double e0, double w0, double t);
// max over [0, T] of |Homogeneous(t)|, from its critical points.
double MaxHomogeneous(double alpha, double beta, double e0, double w0, double T);
// integral over [0, T] of |k(s)| ds, k'' + 2 alpha k' + beta^2 k = 0,
// k(0) = 0, k'(0) = 1.
double DefectGain(double alpha, double beta, double T);
}  // namespace residual_law

// Weights of the quintic Hermite basis at s = theta h (position, first and
// second derivative with respect to theta), for (q0, v0, a0, q1, v1, a1).
struct HermiteWeights {
  double p[6], dp[6], ddp[6];
  explicit HermiteWeights(double theta);
};

// Quintic Hermite interpolant on [0, h] through (q0, v0, a0) and
// (q1, v1, a1), at s = theta h: position p, velocity p', acceleration p''.
void QuinticHermite(int n, double h, const HermiteWeights& w, const double* q0, const double* v0,
                    const double* a0, const double* q1, const double* v1, const double* a1,
                    double* p, double* dp, double* ddp);
void QuinticHermite(int n, double h, double theta, const double* q0, const double* v0,
                    const double* a0, const double* q1, const double* v1, const double* a1,
                    double* p, double* dp, double* ddp);

class CertificateRecorder {
 public:
  CertificateRecorder(const Model& model, const v1::CertificateOptions& options, Method method);

  // Starts a window at t0; ws holds the evaluation at the window's first state.
  void Begin(const Model& model, Workspace* ws, double t0, const double* q0, const double* v0);

  // Records a completed step; ws holds the evaluation at (t1, q1, v1) and
  // a0, a1 are the accelerations at both ends.
  void RecordStep(const Model& model, Workspace* ws, double t0, const double* q0,
                  const double* v0, const double* a0, double t1, const double* q1,
                  const double* v1, const double* a1);

  void Fill(const Model& model, const Workspace& ws, v1::Certificate* certificate) const;

  int samples_per_step() const { return samples_per_step_; }

 private:
  // eta from g, G, g_t, H in `constraints` (the layout of Model::constraints
  // outputs, also the start of the dynamics outputs) with velocity dp and
  // acceleration ddp.
  void SampleDefect(const Model& model, const double* constraints, const double* dp,
                    const double* ddp);

  Method method_;
  int samples_per_step_;
  double consistency_tolerance_;
  double kkt_tolerance_;

  double t_start_ = 0, t_end_ = 0;
  uint64_t steps_ = 0;
  uint64_t samples_ = 0;
  double max_h_ = 0;
  std::vector<double> e0_, w0_;          // at t_start (nc)
  std::vector<double> max_e_, max_ed_;   // over step ends (nc)
  std::vector<double> delta_;            // sampled sup |eta| (nc)
  std::vector<HermiteWeights> weights_;  // per interior sample point
  std::vector<double> p_, dp_, ddp_;     // interpolant scratch (nq)
};

}  // namespace tether
