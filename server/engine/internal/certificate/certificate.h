// The residual certificate (docs/MATH.md sections 9-11): the four
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

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "engine/internal/base/ball.h"
#include "engine/internal/certificate/defect_enclosure.h"
#include "engine/internal/integrate/integrator.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/evaluate_kernel.h"
#include "engine/internal/kkt/sparse_ldlt.h"
#include "engine/internal/model/model.h"
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
// |k'(s)| <= scale e^{-rate s} for every s >= 0 (docs/MATH.md section 10.2):
// critical: 1, 0.7 alpha; underdamped: beta/mu, alpha; overdamped (roots
// r2 < r1 < 0): max(1, (2|r2|/|r1|) e^{|r1|/(2|r2|) - 1}), |r1|/2.
struct Envelope {
  double scale = 1, rate = 0;
};
Envelope DerivativeEnvelope(double alpha, double beta);
// The convolution bound's deviation factor (section 10.2): scale h
// (e^{rate h} (1 - e^{-rate T}) / (4 rate) + h / 2), T / 4 for the first
// term when rate = 0.
double DeviationGain(double alpha, double beta, double h, double T);

// The same quantities as proven upper bounds (residual_law_enclosed.cc):
// the closed forms evaluated in outward-rounded interval arithmetic, for
// every (e0, w0) in the given balls. The maximum over [0, T] is found by
// bisection on interval evaluations, so it does not rest on locating the
// critical point in floating point.
double MaxHomogeneousUpper(double alpha, double beta, const ball::Ball& e0, const ball::Ball& w0,
                           double T);
double HomogeneousUpper(double alpha, double beta, const ball::Ball& e0, const ball::Ball& w0,
                        double T);
double DefectGainUpper(double alpha, double beta, double T);
}  // namespace residual_law

// The defect mode in force for `options` (MODE_UNSPECIFIED: the default,
// SAMPLED; README and docs/benchmarks.md give the measurement behind it).
v1::CertificateOptions::Mode CertificateMode(const v1::CertificateOptions& options);

// Weights of the quintic Hermite basis at s = theta h (position, first and
// second derivative with respect to theta), for (q0, v0, a0, q1, v1, a1).
struct HermiteWeights {
  double p[6], dp[6], ddp[6];
  explicit HermiteWeights(double theta);
};

// The weights of one sample point scaled for a step of length h: p, p' and
// p'' in time units are the dot products of these with (q0, v0, a0, q1, v1,
// a1).
struct ScaledHermite {
  double p[6], dp[6], ddp[6];
  ScaledHermite() = default;
  ScaledHermite(const HermiteWeights& w, double h);
};

// Evaluates the interpolant with scaled weights c; N > 0 declares n == N at
// compile time. Outputs never overlap inputs.
template <int N = 0>
inline void HermiteAt(int n, const ScaledHermite& c, const double* q0, const double* v0,
                      const double* a0, const double* q1, const double* v1, const double* a1,
                      double* __restrict p, double* __restrict dp, double* __restrict ddp) {
  if constexpr (N > 0) n = N;
  // The q0 and q1 weights of p sum to 1 and those of p' and p'' cancel, so
  // each is written with dq = q1 - q0: one weight fewer per output, and p
  // is q0 plus a small correction. In locals: the stores below could alias
  // `c` for all the compiler knows.
  const double cp1 = c.p[1], cp2 = c.p[2], cp3 = c.p[3], cp4 = c.p[4], cp5 = c.p[5];
  const double cd1 = c.dp[1], cd2 = c.dp[2], cd3 = c.dp[3], cd4 = c.dp[4], cd5 = c.dp[5];
  const double cdd1 = c.ddp[1], cdd2 = c.ddp[2], cdd3 = c.ddp[3], cdd4 = c.ddp[4], cdd5 = c.ddp[5];
  int i = 0;
  if constexpr (N == 0 || N >= 2) {
    // Two coordinates at a time (ball.h's generic vectors: the same IEEE
    // operations in the same order as the scalar loop below, so the same
    // bits; -O2 does not vectorize it on its own).
    using ball::Splat2;
    using ball::V2;
    const V2 vp1 = Splat2(cp1), vp2 = Splat2(cp2), vp3 = Splat2(cp3), vp4 = Splat2(cp4),
             vp5 = Splat2(cp5);
    const V2 vd1 = Splat2(cd1), vd2 = Splat2(cd2), vd3 = Splat2(cd3), vd4 = Splat2(cd4),
             vd5 = Splat2(cd5);
    const V2 vdd1 = Splat2(cdd1), vdd2 = Splat2(cdd2), vdd3 = Splat2(cdd3), vdd4 = Splat2(cdd4),
             vdd5 = Splat2(cdd5);
    for (; i + 2 <= n; i += 2) {
      const V2 x0 = ball::Load2(q0 + i), x1 = ball::Load2(v0 + i), x2 = ball::Load2(a0 + i),
               x4 = ball::Load2(v1 + i), x5 = ball::Load2(a1 + i);
      const V2 dq = ball::Load2(q1 + i) - x0;
      ball::Store2(p + i, x0 + (vp3 * dq + vp1 * x1 + vp2 * x2 + vp4 * x4 + vp5 * x5));
      ball::Store2(dp + i, vd3 * dq + vd1 * x1 + vd2 * x2 + vd4 * x4 + vd5 * x5);
      ball::Store2(ddp + i, vdd3 * dq + vdd1 * x1 + vdd2 * x2 + vdd4 * x4 + vdd5 * x5);
    }
  }
  for (; i < n; ++i) {
    const double x0 = q0[i], x1 = v0[i], x2 = a0[i], x4 = v1[i], x5 = a1[i];
    const double dq = q1[i] - x0;
    p[i] = x0 + (cp3 * dq + cp1 * x1 + cp2 * x2 + cp4 * x4 + cp5 * x5);
    dp[i] = cd3 * dq + cd1 * x1 + cd2 * x2 + cd4 * x4 + cd5 * x5;
    ddp[i] = cdd3 * dq + cdd1 * x1 + cdd2 * x2 + cdd4 * x4 + cdd5 * x5;
  }
}

// Quintic Hermite interpolant on [0, h] through (q0, v0, a0) and
// (q1, v1, a1), at s = theta h: position p, velocity p', acceleration p''.
void QuinticHermite(int n, double h, const HermiteWeights& w, const double* q0, const double* v0,
                    const double* a0, const double* q1, const double* v1, const double* a1,
                    double* p, double* dp, double* ddp);
void QuinticHermite(int n, double h, double theta, const double* q0, const double* v0,
                    const double* a0, const double* q1, const double* v1, const double* a1,
                    double* p, double* dp, double* ddp);

// Tolerance of judgement (a), initial consistency: the start is consistent
// when |g|_inf and |G v + g_t|_inf are both at most this (default 1e-9).
// The one definition, read by Validate's report and the certificate.
double ConsistencyTolerance(const v1::CertificateOptions& options);
// Tolerance of judgement (b), the componentwise backward error of the KKT
// rows (internal::KktRowResiduals, docs/MATH.md section 9). Unset (0): a
// row passes when |r_i| <= kKktBackwardErrorTolerance (16) x gamma_{n_i} x
// the magnitude of its operands, gamma_n = n u / (1 - n u), u = 2^-53, n the
// row length (nq + nc + 1 for a dynamics row, nq + nc + 3 for a constraint
// row). Set: when |r_i| <= kkt_tolerance x that magnitude.
// Returns the option, 0 when unset.
double KktTolerance(const v1::CertificateOptions& options);
// The warning level of cond_1(W) (Certificate.conditioning_warning): about
// 1 / sqrt(u), beyond which lambda keeps half its digits or fewer.
inline constexpr double kConditioningWarning = 1e8;
// A step's sup |eta| counts as a jump (a non-smooth point crossed inside
// it) when it is at least kDefectJumpFactor times both the previous and the
// next step's (a spike: a defect growing from rest does not count) and above
// sqrt(u) times the magnitude of the terms of the constraint's KKT row at
// the step's end (below that it is rounding), and when it is at least
// kDefectJumpShare of the constraint's sup |eta| over the whole window (so
// the erratic first steps from rest, where the defect is tiny, do not
// count). The window's first and last steps have no neighbour on one side
// and are not judged. The first kMaxDefectJumpCandidates spikes are kept;
// of those that pass, at most kMaxDefectJumps are listed.
inline constexpr double kDefectJumpFactor = 1e3;
inline constexpr int kMaxDefectJumps = 16;
inline constexpr double kDefectJumpShare = 1e-3;
inline constexpr int kMaxDefectJumpCandidates = 256;

class CertificateRecorder {
 public:
  CertificateRecorder(const Model& model, const v1::CertificateOptions& options, Method method);

  // Starts a window at t0; ws holds the evaluation at the window's first state.
  void Begin(const Model& model, Workspace* ws, double t0, const double* q0, const double* v0);

  // Records a completed step of length h from t0 to t1; ws holds the
  // evaluation at (t1, q1, v1) and a0, a1 are the accelerations at both
  // ends. h is the step the integrator took: fixed-step times are
  // anchor + k h, so t1 - t0 can differ from it in the last bits. N, C > 0
  // declare the model's sizes at compile time (Simulation::AdvanceSized);
  // 0 takes them from the model.
  template <int N = 0, int C = 0>
  // `scratch` (the shape of ws, or null: no estimate) evaluates the local
  // error estimate's point (EstimateLocalError).
  void RecordStep(const Model& model, Workspace* ws, double t0, const double* q0, const double* v0,
                  const double* a0, double t1, double h, const double* q1, const double* v1,
                  const double* a1, Workspace* scratch = nullptr);

  // Records an adaptive method's own error estimate of the step from t0
  // (StepResult::error_estimate, error_coordinate >= 0, error_norm): the
  // window keeps the largest, its coordinate and time, and the largest
  // norm.
  void RecordMethodEstimate(double t0, double estimate, int coordinate, double norm) {
    if (coordinate < 0) return;
    if (!(estimate <= max_method_error_) || method_error_coordinate_ < 0) {
      max_method_error_ = estimate;
      method_error_time_ = t0;
      method_error_coordinate_ = coordinate;
    }
    max_method_error_norm_ = std::max(max_method_error_norm_, norm);
  }

  void Fill(const Model& model, const Workspace& ws, v1::Certificate* certificate) const;

  int samples_per_step() const { return samples_per_step_; }
  bool enclosed() const { return encloser_ != nullptr; }
  // Heap bytes held (heap_bytes.h), the encloser's included.
  int64_t heap_bytes() const;

 private:
  // Fill's parts, by concept (certificate.cc): the window's maxima over
  // the constraints, each constraint's judgements (a) and (c), judgement
  // (b), the defect jumps, and the bound's basis in words.
  struct WindowMaxima {
    double e0 = 0, w0 = 0, max_e = 0, max_ed = 0, delta = 0, bound = 0, final_bound = 0;
    double supremum_bound = 0;  // eq. (10.3)'s bound, beside `bound`
    double radius = 0;          // the largest spectral radius of the residual test system
  };
  void FillConstraint(const Model& m, int i, v1::ConstraintCertificate* cc, WindowMaxima* w) const;
  void FillKktJudgement(const Model& m, const Workspace& ws, v1::Certificate* c) const;
  void FillDefectJumps(const Model& m, v1::Certificate* c) const;
  void FillSampling(v1::Certificate* c) const;
  void FillAccuracy(const Model& m, v1::Certificate* c) const;

  // eta from g, G, g_t, H in `constraints` (the layout of Model::constraints
  // outputs, also the start of the dynamics outputs) with velocity dp and
  // acceleration ddp.
  // `sample` is the sample's place in its step, 1 .. samples_per_step + 1
  // (the step's end), or 0 for the window's start: the step means of
  // section 10.2 weigh it by quad_w_[sample].
  template <int N = 0, int C = 0>
  void SampleDefect(const Model& model, const double* constraints, const double* dp,
                    const double* ddp, int sample);
  // eta at the state ws was last evaluated at, with its own a: the
  // constraint rows' signed residuals when the evaluation kept them
  // (Workspace::constraint_rows_current: the sparse path's accepted
  // states), else SampleDefect with ws's a. The same quantity either way
  // (the row is G a + H + 2 alpha (G v + g_t) + beta^2 g, e' summed from
  // g_t first): no second pass over G.
  template <int N = 0, int C = 0>
  void SampleDefectAtState(const Model& model, const Workspace& ws, const double* v, int sample);
  // SampleDefect's second half: last_eta_ into the window's and the step's
  // maxima and sums.
  void FoldSample(int nc, int sample);
  // The sample points' weights scaled for a step of length h (kept while
  // consecutive steps have the same h, as fixed-step methods do).
  const ScaledHermite* ScaledWeights(double h);
  // Judges the step before this one against its neighbours
  // (kDefectJumpFactor) and starts the next step's sup |eta|.
  void TrackDefectJumps(const Model& model, const Workspace& ws, double t0, double t1);

  // The accuracy estimate (docs/MATH.md section 10.3): the dynamics'
  // defect of the step's interpolant at its midpoint, delta = p'' -
  // a(t, p, p'), evaluated in `scratch` (with ws's inputs), and the local
  // error it implies, h^2 / 2 |delta|, per coordinate; the window keeps the
  // largest, its coordinate and time. The evaluation is an integrator
  // stage's (Record::kNothing: a alone, inlined for fixed sizes N, C), whose
  // a has the bits of SolveKkt's: the record kind only adds statistics,
  // which nothing reads in `scratch`.
  // The estimate reads the dynamics' defect at theta = kErrorTheta = 2/5 of
  // the step (docs/MATH.md section 10.3: there the end velocity's Hermite
  // basis has no curvature, so the defect is the end position's error
  // times H3''(2/5) = 72/25, over h^2).
  // Returns whether that point's evaluation succeeded: then scratch's tape
  // outputs and p_, dp_, ddp_ hold the point's (RecordStep's sample at the
  // same theta, when the samples have one, reads them).
  template <int N = 0, int C = 0>
  bool EstimateLocalError(const Model& model, const Workspace& ws, Workspace* scratch, double t0,
                          double h, const double* q0, const double* v0, const double* a0,
                          const double* q1, const double* v1, const double* a1);

  // ENCLOSED: encloses eta over the step (instead of SampleDefect).
  void EncloseStep(const Model& model, const Workspace& ws, double t0, const double* q0,
                   const double* v0, const double* a0, double h, const double* q1, const double* v1,
                   const double* a1);

  Method method_;
  v1::CertificateOptions::Mode mode_;
  std::unique_ptr<DefectEncloser> encloser_;   // ENCLOSED with constraints
  std::vector<double> step_sup_;               // (nc) the enclosure of this step
  std::vector<ball::Ball> step_mean_;          // (nc) and of its mean (section 10.2)
  std::vector<ball::Ball> e0_ball_, w0_ball_;  // (nc) enclosures of e, e' at t_start
  std::vector<char> start_ok_;                 // (nc)
  uint64_t unenclosed_steps_ = 0, pieces_ = 0;
  double first_unenclosed_time_ = 0;
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
  std::vector<double> theta_;            // interior sample points in (0, 1)
  std::vector<HermiteWeights> weights_;  // per interior sample point
  std::vector<ScaledHermite> scaled_;    // weights_ scaled for scaled_h_
  double scaled_h_ = 0;                  // 0: none yet
  std::vector<double> p_, dp_, ddp_;     // interpolant scratch (nq)
  // Defect jumps: sup |eta| of this step, the one before and the one before
  // that (nc), the largest KKT row magnitude over the window (nc).
  std::vector<double> step_delta_, prev_step_delta_, prev2_step_delta_, max_magnitude_;
  double prev_t0_ = 0, prev_t1_ = 0;
  struct Jump {
    double t0, t1, factor, value;
    int constraint;
  };
  std::vector<Jump> jumps_;          // the first kMaxDefectJumpCandidates spikes
  bool Counts(const Jump& j) const;  // passes the window-wide floors

  // SAMPLED's convolution bound (docs/MATH.md section 10.2): quadrature
  // weights of a step's samples (samples_per_step + 2, from its start),
  // the last sample's eta (nc), this step's weighted sum, largest and
  // smallest eta (nc), and over the window the largest |step mean| and the
  // largest deviation from a step's mean (nc).
  std::vector<double> quad_w_;
  // The accuracy estimate's window maximum (m of coordinate units), where
  // and when; -1: none yet.
  bool estimate_local_error_ = true;  // CertificateOptions.skip_local_error_estimate unset
  double max_local_error_ = 0, worst_local_error_time_ = 0;
  int worst_local_error_coordinate_ = -1;
  // The adaptive method's own estimate (RecordMethodEstimate); -1: none.
  double max_method_error_ = 0, method_error_time_ = 0, max_method_error_norm_ = 0;
  int method_error_coordinate_ = -1;
  // The estimate's point (kErrorTheta), its weights scaled for point_h_ (0:
  // none yet), and its acceleration a(t, p, p') (nq).
  static constexpr double kErrorTheta = 2.0 / 5.0;
  static constexpr double kErrorCurvature = 72.0 / 25.0;  // H3''(2/5)
  ScaledHermite point_scaled_;
  double point_h_ = 0;
  std::vector<double> point_a_;
  std::vector<double> last_eta_, step_sum_, step_max_, step_min_, mean_max_, deviation_max_;
  // Starts a step's mean at its first sample (the previous step's end).
  void BeginStepMean(int nc);
  // Folds the finished step's mean and deviation into the window's.
  void EndStepMean(int nc);
};

// ---------------------------------------------------------------------------
// Implementation of the per-step templates.

template <int N, int C>
inline void CertificateRecorder::SampleDefect(const Model& m, const double* out, const double* dp,
                                              const double* ddp, int sample) {
  const int d = N > 0 ? N : m.nq;
  const int nc = N > 0 ? C : m.nc;
  if (nc == 0) return;
  const Model::TapeBlocks blocks = m.Blocks(out);
  const double* G = blocks.G;
  const double* H = blocks.H;
  const double* gt = blocks.gt;
  const double* g = blocks.g;
  const double* two_alpha = m.two_alpha.data();
  const double* beta_sq = m.beta_sq.data();
  const bool sparse = N == 0 && m.sparse.enabled;  // G as its nonzeros (sparse_analysis.h)
  const int* row_ptr = m.sparse.row_ptr.data();
  const int* col = m.sparse.col.data();
  const uint8_t* consecutive = m.sparse.row_consecutive.data();
  // Two passes with the same operations per row as one: each row's eta
  // into last_eta_, then the maxima and the step's sums over all rows, two
  // at a time and without branches (chain/16: 95 -> 80 instructions a row
  // and sample; docs/benchmarks.md, certcost3).
  double* last_eta = last_eta_.data();
  auto row = [&](int i) TETHER_INLINE_LAMBDA {
    const double* Gi = G + i * d;
    double Ga = 0, Gv = 0;
    if (sparse) {
      // The kernel's row walk (sparse_ldlt.h): unrolled for short rows, in
      // the same order, so the same sums.
      ForEachInRow(row_ptr, col, consecutive, i, [&](int k, int j) TETHER_INLINE_LAMBDA {
        Ga += G[k] * ddp[j];
        Gv += G[k] * dp[j];
      });
    } else {
      for (int j = 0; j < d; ++j) {
        Ga += Gi[j] * ddp[j];
        Gv += Gi[j] * dp[j];
      }
    }
    last_eta[i] = Ga + H[i] + two_alpha[i] * (Gv + gt[i]) + beta_sq[i] * g[i];
  };
  int i = 0;
  if (sparse) {
    // A planar chain's rows two at a time, in the lanes of V2s, as the
    // kernel's constraint rows (EvaluateSparse): each lane does `row`'s
    // operations in its order, so the same bits.
    using ball::V2;
    const V2 zero = ball::Splat2(0);
    while (i + 1 < nc) {
      V2 gp[4], av[4], vv[4];
      int c0, c1;
      if (!RowPair4(row_ptr, col, consecutive, i, G, gp, &c0, &c1)) {
        row(i++);
        continue;
      }
      Gather4(ddp, c0, c1, av);
      Gather4(dp, c0, c1, vv);
      V2 Ga = zero, Gv = zero;
      for (int t = 0; t < 4; ++t) {
        Ga += gp[t] * av[t];
        Gv += gp[t] * vv[t];
      }
      ball::Store2(last_eta + i, Ga + ball::Load2(H + i) +
                                     ball::Load2(two_alpha + i) * (Gv + ball::Load2(gt + i)) +
                                     ball::Load2(beta_sq + i) * ball::Load2(g + i));
      i += 2;
    }
  }
  for (; i < nc; ++i) row(i);
  FoldSample(nc, sample);
}

template <int N, int C>
inline void CertificateRecorder::SampleDefectAtState(const Model& m, const Workspace& ws,
                                                     const double* v, int sample) {
  const int nc = N > 0 ? C : m.nc;
  if (nc == 0) return;
  if (!ws.constraint_rows_current) return SampleDefect<N, C>(m, ws.dyn_out, v, ws.a.data(), sample);
  std::copy(ws.constraint_row_residual.begin(), ws.constraint_row_residual.end(),
            last_eta_.begin());
  FoldSample(nc, sample);
}

inline void CertificateRecorder::FoldSample(int nc, int sample) {
  const double* last_eta = last_eta_.data();
  double* delta = delta_.data();
  double* step_delta = step_delta_.data();
  // |eta|, or infinity when eta is not finite (a NaN defect must not be
  // hidden by max()); max(x, y) as std::max's (x < y ? y : x), min as
  // std::min's (y < x ? y : x), so a NaN eta leaves the step's extremes as
  // they were and its sum NaN (EndStepMean), as before.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const bool in_step = sample > 0;
  const double w = in_step ? quad_w_[static_cast<size_t>(sample)] : 0.0;
  double* step_sum = step_sum_.data();
  double* step_max = step_max_.data();
  double* step_min = step_min_.data();
  int i = 0;
  {
    using ball::V2;
    const V2 inf2 = ball::Splat2(kInf), w2 = ball::Splat2(w);
    for (; i + 2 <= nc; i += 2) {
      const V2 eta = ball::Load2(last_eta + i);
      V2 ae = ball::Abs2(eta);
      ae = ae < inf2 ? ae : inf2;  // NaN and +-inf: infinity
      const V2 dl = ball::Load2(delta + i), sd = ball::Load2(step_delta + i);
      ball::Store2(delta + i, dl < ae ? ae : dl);
      ball::Store2(step_delta + i, sd < ae ? ae : sd);
      if (in_step) {
        const V2 mx = ball::Load2(step_max + i), mn = ball::Load2(step_min + i);
        ball::Store2(step_sum + i, ball::Load2(step_sum + i) + w2 * eta);
        ball::Store2(step_max + i, mx < eta ? eta : mx);
        ball::Store2(step_min + i, eta < mn ? eta : mn);
      }
    }
  }
  for (; i < nc; ++i) {
    const double eta = last_eta[i];
    const double ae = std::isfinite(eta) ? std::fabs(eta) : kInf;
    delta[i] = std::max(delta[i], ae);
    step_delta[i] = std::max(step_delta[i], ae);
    if (in_step) {
      step_sum[i] += w * eta;
      step_max[i] = std::max(step_max[i], eta);
      step_min[i] = std::min(step_min[i], eta);
    }
  }
  ++samples_;
}

template <int N, int C>
void CertificateRecorder::RecordStep(const Model& m, Workspace* ws, double t0, const double* q0,
                                     const double* v0, const double* a0, double t1, double h,
                                     const double* q1, const double* v1, const double* a1,
                                     Workspace* scratch) {
  const int d = N > 0 ? N : m.nq;
  const int nc = N > 0 ? C : m.nc;
  if (nc && encloser_) {
    EncloseStep(m, *ws, t0, q0, v0, a0, h, q1, v1, a1);
    TrackDefectJumps(m, *ws, t0, t1);
  } else if (nc) {
    const ScaledHermite* c = ScaledWeights(h);
    const double* dp = dp_.data();  // the estimate's (EstimateLocalError)
    double* ddp = ddp_.data();
    // A samples_per_step of 4 (9, 14, ...) puts a sample at theta = 2/5,
    // where the accuracy estimate evaluates the dynamics: its tape's first
    // outputs are the constraints tape's (the same graph nodes, the same
    // bits), so that sample reads them instead of evaluating the
    // constraints again.
    const int shared = scratch && estimate_local_error_ && (samples_per_step_ + 1) % 5 == 0
                           ? 2 * (samples_per_step_ + 1) / 5 - 1
                           : -1;
    BeginStepMean(nc);
    for (int j = 0; j < samples_per_step_; ++j) {
      if (j == shared) {
        // The same point and bits as HermiteAt with c[j] (theta_[j] =
        // (j + 1) / (samples_per_step + 1) = 2/5 = kErrorTheta, and the same
        // time t0 + theta h).
        if (EstimateLocalError<N, C>(m, *ws, scratch, t0, h, q0, v0, a0, q1, v1, a1)) {
          SampleDefect<N, C>(m, scratch->dyn_out, dp, ddp, j + 1);
          continue;
        }
      }
      // EvaluateConstraints, with the interpolant written in place as the
      // tape's q and v.
      double* work = ws->con_work.data();
      HermiteAt<N>(d, c[j], q0, v0, a0, q1, v1, a1, work + 1, work + 1 + d, ddp);
      internal::LoadTimeAndInputs(m, d, *ws, t0 + theta_[j] * h, work);
      m.constraints.Eval(work);
      SampleDefect<N, C>(m, ws->con_out, work + 1 + d, ddp, j + 1);
    }
    // The step's end: the dynamics evaluation there already holds g, G, g_t,
    // H, and on the sparse path eta itself (its constraint rows at a1).
    if (a1 == ws->a.data()) {
      SampleDefectAtState<N, C>(m, *ws, v1, samples_per_step_ + 1);
    } else {
      SampleDefect<N, C>(m, ws->dyn_out, v1, a1, samples_per_step_ + 1);
    }
    EndStepMean(nc);
    TrackDefectJumps(m, *ws, t0, t1);
    if (shared >= 0) scratch = nullptr;  // the estimate is done
  }
  const double* e = ws->e.data();
  const double* e_dot = ws->e_dot.data();
  double* max_e = max_e_.data();
  double* max_ed = max_ed_.data();
  for (int i = 0; i < nc; ++i) {
    max_e[i] = std::max(max_e[i], std::fabs(e[i]));
    max_ed[i] = std::max(max_ed[i], std::fabs(e_dot[i]));
  }
  if (scratch && estimate_local_error_)
    EstimateLocalError<N, C>(m, *ws, scratch, t0, h, q0, v0, a0, q1, v1, a1);
  max_h_ = std::max(max_h_, h);
  t_end_ = t1;
  ++steps_;
}

template <int N, int C>
bool CertificateRecorder::EstimateLocalError(const Model& m, const Workspace& ws,
                                             Workspace* scratch, double t0, double h,
                                             const double* q0, const double* v0, const double* a0,
                                             const double* q1, const double* v1, const double* a1) {
  const int d = N > 0 ? N : m.nq;
  if (h != point_h_) {
    // Kept while h is unchanged (the same bits as computing them each step).
    static const HermiteWeights kPoint(kErrorTheta);
    point_scaled_ = ScaledHermite(kPoint, h);
    point_h_ = h;
  }
  double* p = p_.data();
  double* dp = dp_.data();
  double* ddp = ddp_.data();
  HermiteAt<N>(d, point_scaled_, q0, v0, a0, q1, v1, a1, p, dp, ddp);
  if (m.nu) {
    scratch->u = ws.u;
    // Ramped inputs (SetInputRates) at t0 + h/2 as well; copied only when
    // either has them (an empty vector's assignment is a call per step).
    if (ws.u_ramp || scratch->u_ramp) {
      scratch->u_rate = ws.u_rate;
      scratch->u_anchor = ws.u_anchor;
      scratch->u_source = ws.u_source;
      scratch->u_ramp = ws.u_ramp;
    }
  }
  const double t = t0 + kErrorTheta * h;
  double* a = point_a_.data();
  Status s;
  if constexpr (N > 0) {
    s = internal::EvaluateImpl<N, C, internal::Record::kNothing>(m, scratch, t, p, dp, a);
  } else {
    s = internal::EvaluateGeneralStage<internal::Record::kNothing>(m, scratch, t, p, dp, a);
  }
  double worst = std::numeric_limits<double>::infinity();
  int coordinate = 0;
  if (s.ok()) {
    worst = 0;
    for (int j = 0; j < d; ++j) {
      // The end position's error from the defect there (section 10.3).
      const double e = h * h / kErrorCurvature * std::fabs(ddp[j] - a[j]);
      // A NaN is no estimate: it becomes infinite.
      if (!(e <= worst)) {
        worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
        coordinate = j;
      }
    }
  }
  if (worst > max_local_error_ || worst_local_error_coordinate_ < 0) {
    max_local_error_ = worst;
    worst_local_error_time_ = t;
    worst_local_error_coordinate_ = coordinate;
  }
  return s.ok();
}

}  // namespace tether
