#include "engine/internal/certificate/certificate.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "engine/internal/base/heap_bytes.h"

namespace tether {

namespace residual_law {
namespace {

enum class Damping { kCritical, kOver, kUnder };

struct Roots {
  Damping kind;
  double r1 = 0, r2 = 0;  // overdamped: real roots r1 > r2 (both <= 0)
  double mu = 0;          // underdamped: imaginary part
};

Roots Classify(double alpha, double beta) {
  const double disc = alpha * alpha - beta * beta;
  const double scale = std::max(alpha * alpha, beta * beta);
  Roots r;
  if (std::fabs(disc) <= 1e-12 * scale) {
    r.kind = Damping::kCritical;
  } else if (disc > 0) {
    r.kind = Damping::kOver;
    const double s = std::sqrt(disc);
    r.r2 = -alpha - s;
    r.r1 = -(beta * beta) / (alpha + s);  // = -alpha + s without cancellation
  } else {
    r.kind = Damping::kUnder;
    r.mu = std::sqrt(-disc);
  }
  return r;
}

// expm1(r T) / r, continuous at r = 0.
double Phi(double r, double T) { return r == 0 ? T : std::expm1(r * T) / r; }

}  // namespace

double Homogeneous(double alpha, double beta, double e0, double w0, double t) {
  const Roots r = Classify(alpha, beta);
  switch (r.kind) {
    case Damping::kCritical: return (e0 + (w0 + alpha * e0) * t) * std::exp(-alpha * t);
    case Damping::kOver: {
      const double c1 = (w0 - r.r2 * e0) / (r.r1 - r.r2);
      const double c2 = e0 - c1;
      return c1 * std::exp(r.r1 * t) + c2 * std::exp(r.r2 * t);
    }
    case Damping::kUnder: {
      const double B = (w0 + alpha * e0) / r.mu;
      return std::exp(-alpha * t) * (e0 * std::cos(r.mu * t) + B * std::sin(r.mu * t));
    }
  }
  return 0;
}

double MaxHomogeneous(double alpha, double beta, double e0, double w0, double T) {
  double best = std::max(std::fabs(e0), std::fabs(Homogeneous(alpha, beta, e0, w0, T)));
  auto consider = [&](double t) {
    if (t > 0 && t < T && std::isfinite(t)) {
      best = std::max(best, std::fabs(Homogeneous(alpha, beta, e0, w0, t)));
    }
  };
  const Roots r = Classify(alpha, beta);
  switch (r.kind) {
    case Damping::kCritical: {
      // d/dt [(e0 + c t) e^{-alpha t}] = (c - alpha (e0 + c t)) e^{-alpha t}
      const double c = w0 + alpha * e0;
      if (alpha > 0 && c != 0) consider((c - alpha * e0) / (alpha * c));
      break;
    }
    case Damping::kOver: {
      const double c1 = (w0 - r.r2 * e0) / (r.r1 - r.r2);
      const double c2 = e0 - c1;
      if (c1 * r.r1 != 0) {
        const double ratio = -c2 * r.r2 / (c1 * r.r1);
        if (ratio > 0) consider(std::log(ratio) / (r.r1 - r.r2));
      }
      break;
    }
    case Damping::kUnder: {
      // Extremes where tan(mu t) = (mu B - alpha A) / (alpha B + mu A); the
      // envelope decays, so the first one after 0 is the largest.
      const double A = e0, B = (w0 + alpha * e0) / r.mu;
      const double phi = std::atan2(r.mu * B - alpha * A, alpha * B + r.mu * A);
      double x = std::fmod(phi, std::numbers::pi);
      if (x <= 0) x += std::numbers::pi;
      consider(x / r.mu);
      break;
    }
  }
  return best;
}

double DefectGain(double alpha, double beta, double T) {
  if (T <= 0) return 0;
  const Roots r = Classify(alpha, beta);
  switch (r.kind) {
    case Damping::kCritical: {
      if (alpha == 0) return T * T / 2;
      const double x = alpha * T;
      // 1 - (1 + x) e^{-x}, by its series where that cancels.
      const double f = x < 1e-3 ? x * x / 2 - x * x * x / 3 + x * x * x * x / 8
                                : -std::expm1(-x) - x * std::exp(-x);
      return f / (alpha * alpha);
    }
    case Damping::kOver:
      // k(s) = (e^{r1 s} - e^{r2 s}) / (r1 - r2) >= 0.
      return (Phi(r.r1, T) - Phi(r.r2, T)) / (r.r1 - r.r2);
    case Damping::kUnder: {
      // k(s) = e^{-alpha s} sin(mu s) / mu changes sign every pi/mu; the
      // integral of |k| over whole half periods is a geometric series.
      const double mu = r.mu, a = alpha;
      const double half = std::numbers::pi / mu;
      const double denom = a * a + mu * mu;
      const double I0 = mu * (1 + std::exp(-a * half)) / denom;  // first half period
      const double N = std::floor(T / half);
      const double rho = std::exp(-a * half);
      const double whole =
          N == 0 ? 0 : (a == 0 ? N * I0 : I0 * -std::expm1(-a * N * half) / (1 - rho));
      // Partial half period of length x, shifted by N half periods.
      const double x = T - N * half;
      const double part =
          (mu - std::exp(-a * x) * (a * std::sin(mu * x) + mu * std::cos(mu * x))) / denom;
      return (whole + std::exp(-a * N * half) * part) / mu;
    }
  }
  return 0;
}

Envelope DerivativeEnvelope(double alpha, double beta) {
  const Roots r = Classify(alpha, beta);
  switch (r.kind) {
    case Damping::kCritical:
      // k'(s) = (1 - alpha s) e^{-alpha s}, and |1 - x| e^{-0.3 x} <= 1
      // (for x > 1 its largest value is e^{-1.3} / 0.3 = 0.91).
      return {1, 0.7 * alpha};
    case Damping::kUnder:
      // k'(s) = e^{-alpha s} (cos mu s - (alpha/mu) sin mu s).
      return {beta / r.mu, alpha};
    case Damping::kOver: {
      // k'(s) = e^{r1 s} (1 + r2 (1 - e^{-(r1 - r2) s}) / (r1 - r2)), so
      // |k'(s)| <= (1 + |r2| s) e^{r1 s} <= c e^{r1 s / 2} with c the
      // largest (1 + |r2| s) e^{r1 s / 2}: at s* = 2/|r1| - 1/|r2| when
      // that is > 0.
      const double a1 = -r.r1, a2 = -r.r2;
      if (!(a1 > 0)) return {1, 0};  // beta = 0: k'(s) = e^{-2 alpha s} <= 1
      const double c = 2 * a2 / a1 > 1 ? (2 * a2 / a1) * std::exp(a1 / (2 * a2) - 1) : 1;
      return {std::max(1.0, c), a1 / 2};
    }
  }
  return {1, 0};
}

double DeviationGain(double alpha, double beta, double h, double T) {
  if (T <= 0 || h <= 0) return 0;
  const Envelope env = DerivativeEnvelope(alpha, beta);
  // Whole steps: sum_j (h_j^2 / 4) sup over the step of |k'| (the integral
  // of |s - c_j| over it is h_j^2 / 4), and sum_j h_j e^{-rate (t - t_{j+1})}
  // <= e^{rate h} x integral_0^T e^{-rate s} ds. The step holding t:
  // integral_0^h |k| <= scale h^2 / 2.
  const double x = env.rate * T;
  double sum = env.rate > 0 ? std::exp(env.rate * h) * -std::expm1(-x) / env.rate : T;
  sum = std::min(sum, T * std::exp(env.rate * h));
  if (Classify(alpha, beta).kind == Damping::kCritical && alpha > 0) {
    // Critical gains, exactly: sum_j h_j sup_{I_j} |k'| <= integral_0^T |k'|
    // + h TV(|k'|), with |k'(s)| = |1 - a s| e^{-a s} (antiderivative of
    // (1 - x) e^{-x}: x e^{-x}) and TV(|k'|) <= 1 + 2 e^{-2} on [0, inf).
    const double X = alpha * T;
    const double integral = (X <= 1 ? X * std::exp(-X) : 2 / std::numbers::e - X * std::exp(-X));
    sum = std::min(sum, integral / alpha + h * (1 + 2 * std::exp(-2.0)));
  }
  return env.scale * h * (sum / 4 + h / 2);
}

}  // namespace residual_law

HermiteWeights::HermiteWeights(double s) {
  const double s2 = s * s, s3 = s2 * s, s4 = s3 * s, s5 = s4 * s;
  const double P[6] = {1 - 10 * s3 + 15 * s4 - 6 * s5,    s - 6 * s3 + 8 * s4 - 3 * s5,
                       0.5 * (s2 - 3 * s3 + 3 * s4 - s5), 10 * s3 - 15 * s4 + 6 * s5,
                       -4 * s3 + 7 * s4 - 3 * s5,         0.5 * (s3 - 2 * s4 + s5)};
  const double D[6] = {-30 * s2 + 60 * s3 - 30 * s4,
                       1 - 18 * s2 + 32 * s3 - 15 * s4,
                       0.5 * (2 * s - 9 * s2 + 12 * s3 - 5 * s4),
                       30 * s2 - 60 * s3 + 30 * s4,
                       -12 * s2 + 28 * s3 - 15 * s4,
                       0.5 * (3 * s2 - 8 * s3 + 5 * s4)};
  const double E[6] = {-60 * s + 180 * s2 - 120 * s3,
                       -36 * s + 96 * s2 - 60 * s3,
                       0.5 * (2 - 18 * s + 36 * s2 - 20 * s3),
                       60 * s - 180 * s2 + 120 * s3,
                       -24 * s + 84 * s2 - 60 * s3,
                       0.5 * (6 * s - 24 * s2 + 20 * s3)};
  for (int k = 0; k < 6; ++k) {
    p[k] = P[k];
    dp[k] = D[k];
    ddp[k] = E[k];
  }
}

ScaledHermite::ScaledHermite(const HermiteWeights& w, double h) {
  // Basis k multiplies q0, v0, a0, q1, v1, a1: in time units the v terms
  // carry h, the a terms h^2, and each derivative divides by h.
  const double h2 = h * h, ih = 1 / h, ih2 = ih * ih;
  const double sp[6] = {1, h, h2, 1, h, h2};
  const double sd[6] = {ih, 1, h, ih, 1, h};
  const double sdd[6] = {ih2, ih, 1, ih2, ih, 1};
  for (int k = 0; k < 6; ++k) {
    p[k] = w.p[k] * sp[k];
    dp[k] = w.dp[k] * sd[k];
    ddp[k] = w.ddp[k] * sdd[k];
  }
}

void QuinticHermite(int n, double h, const HermiteWeights& w, const double* q0, const double* v0,
                    const double* a0, const double* q1, const double* v1, const double* a1,
                    double* p, double* dp, double* ddp) {
  HermiteAt(n, ScaledHermite(w, h), q0, v0, a0, q1, v1, a1, p, dp, ddp);
}

void QuinticHermite(int n, double h, double theta, const double* q0, const double* v0,
                    const double* a0, const double* q1, const double* v1, const double* a1,
                    double* p, double* dp, double* ddp) {
  QuinticHermite(n, h, HermiteWeights(theta), q0, v0, a0, q1, v1, a1, p, dp, ddp);
}

double ConsistencyTolerance(const v1::CertificateOptions& options) {
  return options.consistency_tolerance() > 0 ? options.consistency_tolerance() : 1e-9;
}

v1::CertificateOptions::Mode CertificateMode(const v1::CertificateOptions& options) {
  return options.mode() == v1::CertificateOptions::ENCLOSED ? v1::CertificateOptions::ENCLOSED
                                                            : v1::CertificateOptions::SAMPLED;
}

double KktTolerance(const v1::CertificateOptions& options) {
  return options.kkt_tolerance() > 0 ? options.kkt_tolerance() : 0;
}

namespace {
// The decay rate of e'' + 2 alpha e' + beta^2 e = 0: the slowest root's
// -Re, alpha - sqrt(alpha^2 - beta^2) written without cancellation.
double GainsDecayRate(double alpha, double beta) {
  if (beta >= alpha) return alpha;
  return beta * beta / (alpha + std::sqrt((alpha - beta) * (alpha + beta)));
}
}  // namespace

void CertificateRecorder::TrackDefectJumps(const Model& m, const Workspace& ws, double t0,
                                           double t1) {
  // Two constraints at a time (ball.h's generic vectors, std::max as
  // (x < y ? y : x)): the same operations as one at a time, so the same
  // bits; the jumps, rare, in a scalar pass in constraint order.
  using ball::V2;
  const int nc = m.nc;
  double* prev = prev_step_delta_.data();
  double* prev2 = prev2_step_delta_.data();
  double* cur = step_delta_.data();
  double* max_mag = max_magnitude_.data();
  const double* mag = ws.constraint_magnitude.data();
  // The previous step, between the one before it and this one.
  auto side_of = [&](int k) { return std::max(prev2[k], cur[k]); };
  if (steps_ >= 2) {
    const V2 factor = ball::Splat2(kDefectJumpFactor), zero = ball::Splat2(0);
    bool any = false;
    int k = 0;
    for (; k + 2 <= nc; k += 2) {
      const V2 s = ball::Load2(prev + k), p2 = ball::Load2(prev2 + k), c = ball::Load2(cur + k);
      const V2 side = p2 < c ? c : p2;
      const auto jump = (s >= factor * side) & (s > zero);
      any |= (jump[0] | jump[1]) != 0;
    }
    for (; k < nc; ++k) any |= prev[k] >= kDefectJumpFactor * side_of(k) && prev[k] > 0;
    if (any) [[unlikely]] {
      for (int i = 0; i < nc; ++i) {
        const double s = prev[i], side = side_of(i);
        if (s >= kDefectJumpFactor * side && s > 0 &&
            jumps_.size() < static_cast<size_t>(kMaxDefectJumpCandidates)) {
          jumps_.push_back({prev_t0_, prev_t1_,
                            side > 0 ? s / side : std::numeric_limits<double>::infinity(), s, i});
        }
      }
    }
  }
  int k = 0;
  for (; k + 2 <= nc; k += 2) {
    const V2 mm = ball::Load2(max_mag + k), mk = ball::Load2(mag + k);
    ball::Store2(prev2 + k, ball::Load2(prev + k));
    ball::Store2(prev + k, ball::Load2(cur + k));
    ball::Store2(max_mag + k, mm < mk ? mk : mm);
    ball::Store2(cur + k, ball::Splat2(0));
  }
  for (; k < nc; ++k) {
    prev2[k] = prev[k];
    prev[k] = cur[k];
    max_mag[k] = std::max(max_mag[k], mag[k]);
    cur[k] = 0;
  }
  prev_t0_ = t0;
  prev_t1_ = t1;
}

CertificateRecorder::CertificateRecorder(const Model& model, const v1::CertificateOptions& options,
                                         Method method)
    : method_(method),
      mode_(CertificateMode(options)),
      samples_per_step_(options.samples_per_step() ? static_cast<int>(options.samples_per_step())
                                                   : 3),
      consistency_tolerance_(ConsistencyTolerance(options)),
      kkt_tolerance_(KktTolerance(options)),
      e0_(static_cast<size_t>(model.nc)),
      w0_(static_cast<size_t>(model.nc)),
      max_e_(static_cast<size_t>(model.nc)),
      max_ed_(static_cast<size_t>(model.nc)),
      delta_(static_cast<size_t>(model.nc)),
      p_(static_cast<size_t>(model.nq)),
      dp_(static_cast<size_t>(model.nq)),
      ddp_(static_cast<size_t>(model.nq)),
      step_delta_(static_cast<size_t>(model.nc)),
      prev_step_delta_(static_cast<size_t>(model.nc)),
      prev2_step_delta_(static_cast<size_t>(model.nc)),
      max_magnitude_(static_cast<size_t>(model.nc)) {
  jumps_.reserve(kMaxDefectJumpCandidates);
  estimate_local_error_ = !options.skip_local_error_estimate();
  if (estimate_local_error_) point_a_.assign(static_cast<size_t>(model.nq), 0.0);
  if (mode_ == v1::CertificateOptions::ENCLOSED && model.nc > 0) {
    encloser_ = std::make_unique<DefectEncloser>(model);
    const size_t nc = static_cast<size_t>(model.nc);
    step_sup_.resize(nc);
    step_mean_.resize(nc);
    e0_ball_.resize(nc);
    w0_ball_.resize(nc);
    start_ok_.resize(nc);
  }
  for (int j = 1; j <= samples_per_step_; ++j) {
    theta_.push_back(static_cast<double>(j) / (samples_per_step_ + 1));
    weights_.emplace_back(theta_.back());
  }
  scaled_.resize(weights_.size());
  // The step mean's quadrature over its samples_per_step + 2 equispaced
  // points (start and end included): Boole's rule for the default 3
  // interior points (exact for quintics), composite Simpson for an even
  // number of intervals, else the trapezoid rule.
  const int n = samples_per_step_ + 1;  // intervals
  quad_w_.assign(static_cast<size_t>(n) + 1, 0.0);
  if (n == 4) {
    quad_w_ = {7 / 90.0, 32 / 90.0, 12 / 90.0, 32 / 90.0, 7 / 90.0};
  } else if (n % 2 == 0) {
    for (int j = 0; j <= n; ++j)
      quad_w_[static_cast<size_t>(j)] = (j == 0 || j == n ? 1.0 : (j % 2 ? 4.0 : 2.0)) / (3.0 * n);
  } else {
    for (int j = 0; j <= n; ++j)
      quad_w_[static_cast<size_t>(j)] = (j == 0 || j == n ? 0.5 : 1.0) / n;
  }
  const size_t nc = static_cast<size_t>(model.nc);
  for (auto* v : {&last_eta_, &step_sum_, &step_max_, &step_min_, &mean_max_, &deviation_max_})
    v->assign(nc, 0.0);
}

void CertificateRecorder::BeginStepMean(int nc) {
  // Two constraints at a time, as FoldSample (the same bits as one at a time).
  using ball::V2;
  const double* eta = last_eta_.data();
  double* sum = step_sum_.data();
  double* hi = step_max_.data();
  double* lo = step_min_.data();
  const double w0 = quad_w_[0];
  int k = 0;
  for (; k + 2 <= nc; k += 2) {
    const V2 e = ball::Load2(eta + k);
    ball::Store2(sum + k, ball::Splat2(w0) * e);
    ball::Store2(hi + k, e);
    ball::Store2(lo + k, e);
  }
  for (; k < nc; ++k) {
    sum[k] = w0 * eta[k];
    hi[k] = lo[k] = eta[k];
  }
}

void CertificateRecorder::EndStepMean(int nc) {
  // Two constraints at a time (std::max as (x < y ? y : x), finiteness as
  // |x| < inf): the same bits as one at a time.
  using ball::V2;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double* sum = step_sum_.data();
  const double* hi = step_max_.data();
  const double* lo = step_min_.data();
  double* mean_max = mean_max_.data();
  double* deviation_max = deviation_max_.data();
  const V2 inf = ball::Splat2(kInf);
  int k = 0;
  for (; k + 2 <= nc; k += 2) {
    const V2 mean = ball::Load2(sum + k);
    const V2 above = ball::Load2(hi + k) - mean, below = mean - ball::Load2(lo + k);
    const V2 deviation = above < below ? below : above;
    const V2 abs_mean = ball::Abs2(mean);
    // A non-finite sample makes both infinite (max() would drop a NaN).
    const auto finite = (abs_mean < inf) & (ball::Abs2(deviation) < inf);
    const V2 mm = ball::Load2(mean_max + k), dm = ball::Load2(deviation_max + k);
    ball::Store2(mean_max + k, finite ? (mm < abs_mean ? abs_mean : mm) : inf);
    ball::Store2(deviation_max + k, finite ? (dm < deviation ? deviation : dm) : inf);
  }
  for (; k < nc; ++k) {
    const double mean = sum[k];
    const double deviation = std::max(hi[k] - mean, mean - lo[k]);
    const bool finite = std::isfinite(mean) && std::isfinite(deviation);
    mean_max[k] = finite ? std::max(mean_max[k], std::fabs(mean)) : kInf;
    deviation_max[k] = finite ? std::max(deviation_max[k], deviation) : kInf;
  }
}

void CertificateRecorder::Begin(const Model& model, Workspace* ws, double t0, const double* q0,
                                const double* v0) {
  t_start_ = t_end_ = t0;
  steps_ = 0;
  samples_ = 0;
  max_h_ = 0;
  for (int i = 0; i < model.nc; ++i) {
    e0_[static_cast<size_t>(i)] = ws->e[static_cast<size_t>(i)];
    w0_[static_cast<size_t>(i)] = ws->e_dot[static_cast<size_t>(i)];
    max_e_[static_cast<size_t>(i)] = std::fabs(ws->e[static_cast<size_t>(i)]);
    max_ed_[static_cast<size_t>(i)] = std::fabs(ws->e_dot[static_cast<size_t>(i)]);
    delta_[static_cast<size_t>(i)] = 0;
    step_delta_[static_cast<size_t>(i)] = 0;
    prev_step_delta_[static_cast<size_t>(i)] = 0;
    prev2_step_delta_[static_cast<size_t>(i)] = 0;
    max_magnitude_[static_cast<size_t>(i)] = 0;
    mean_max_[static_cast<size_t>(i)] = 0;  // section 10.2, both modes
    deviation_max_[static_cast<size_t>(i)] = 0;
  }
  jumps_.clear();
  max_local_error_ = worst_local_error_time_ = 0;
  worst_local_error_coordinate_ = -1;
  max_method_error_ = method_error_time_ = max_method_error_norm_ = 0;
  method_error_coordinate_ = -1;
  ws->stats = EvaluationStats{};
  std::fill(ws->cond_involved.begin(), ws->cond_involved.end(), 0);
  // The window's first evaluation counts towards (b), with the condition
  // estimate on: evaluated again (the same bits, it succeeded before).
  ws->in_certificate_window = true;
  (void)SolveKkt(model, ws, t0, q0, v0);
  unenclosed_steps_ = pieces_ = 0;
  first_unenclosed_time_ = 0;
  if (encloser_) {
    // e and e' at the start are those of every interpolant starting there
    // (its value and derivative at theta = 0 are q0 and v0 whatever the
    // rest of the data), enclosed now; the first step's enclosure covers
    // eta there.
    const double* a = ws->a.data();
    encloser_->StartResiduals(model, model.nu ? ws->u.data() : nullptr, t0, 1.0, q0, v0, a, q0, v0,
                              a, e0_ball_.data(), w0_ball_.data(), start_ok_.data());
    return;
  }
  // eta at the first state (the interpolant's acceleration there is a0),
  // from the evaluation the workspace holds (on the sparse path, its
  // constraint rows); it belongs to the first step.
  SampleDefectAtState(model, *ws, v0, 0);
}

void CertificateRecorder::EncloseStep(const Model& m, const Workspace& ws, double t0,
                                      const double* q0, const double* v0, const double* a0,
                                      double h, const double* q1, const double* v1,
                                      const double* a1) {
  const double* u = m.nu ? ws.u.data() : nullptr;
  const DefectEncloser::StepResult r = encloser_->EncloseStep(
      m, u, t0, h, q0, v0, a0, q1, v1, a1, delta_.data(), step_sup_.data(), step_mean_.data());
  pieces_ += static_cast<uint64_t>(r.pieces);
  if (!r.enclosed && unenclosed_steps_++ == 0) first_unenclosed_time_ = t0;
  for (int i = 0; i < m.nc; ++i) {
    const size_t k = static_cast<size_t>(i);
    delta_[k] = std::max(delta_[k], step_sup_[k]);
    step_delta_[k] = step_sup_[k];
    // Section 10.2, proven: |mean| <= Mag(its enclosure), and
    // |eta - mean| <= sup |eta| + |mean| (an infinite one is no bound).
    const double mean = ball::Mag(step_mean_[k]);
    const double deviation = ball::RadiusUp(step_sup_[k] + mean);
    const bool finite = std::isfinite(mean) && std::isfinite(deviation);
    mean_max_[k] = finite ? std::max(mean_max_[k], mean) : ball::kInf;
    deviation_max_[k] = finite ? std::max(deviation_max_[k], deviation) : ball::kInf;
  }
}

const ScaledHermite* CertificateRecorder::ScaledWeights(double h) {
  // Recomputed in place when the step changes (DOPRI5, a landing step).
  if (h != scaled_h_) {
    for (size_t j = 0; j < weights_.size(); ++j) scaled_[j] = ScaledHermite(weights_[j], h);
    scaled_h_ = h;
  }
  return scaled_.data();
}

bool CertificateRecorder::Counts(const Jump& j) const {
  const size_t k = static_cast<size_t>(j.constraint);
  const double sqrt_u = std::sqrt(std::numeric_limits<double>::epsilon() / 2);
  return j.value >= kDefectJumpShare * delta_[k] && j.value > sqrt_u * max_magnitude_[k];
}

// Judgements (a) and (c) of constraint i (docs/MATH.md): its residuals, its
// residual law's bound over the window and the step's stability for its
// gains; the window-wide maxima grow by them.
void CertificateRecorder::FillConstraint(const Model& m, int i, v1::ConstraintCertificate* cc,
                                         WindowMaxima* w) const {
  const size_t k = static_cast<size_t>(i);
  const double al = m.alpha[k], be = m.beta[k];
  const double T = t_end_ - t_start_;
  cc->set_name(m.constraint_names[k]);
  cc->set_alpha(al);
  cc->set_beta(be);
  cc->set_initial_position_residual(std::fabs(e0_[k]));
  cc->set_initial_velocity_residual(std::fabs(w0_[k]));
  cc->set_max_position_residual(max_e_[k]);
  cc->set_max_velocity_residual(max_ed_[k]);
  cc->set_defect_bound(delta_[k]);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double hom_max, hom_end, gain, forced, position, final_position;
  // The convolution form (10.5): SAMPLED from the step means by
  // quadrature, ENCLOSED from their enclosures (section 10.2).
  double convolution_position = kInf, convolution_final = kInf;
  if (encloser_) {
    // Proven: every quantity rounded up.
    const bool ok = start_ok_[k];
    hom_max = ok ? residual_law::MaxHomogeneousUpper(al, be, e0_ball_[k], w0_ball_[k], T) : kInf;
    hom_end = ok ? residual_law::HomogeneousUpper(al, be, e0_ball_[k], w0_ball_[k], T) : kInf;
    gain = residual_law::DefectGainUpper(al, be, T);
    forced = delta_[k] == 0 ? 0 : ball::RadiusUp(delta_[k] * gain);
    position = ball::RadiusUp(hom_max + forced);
    final_position = ball::RadiusUp(hom_end + forced);
    if (steps_ > 0) {
      // (10.5) proven: the envelope's factor is computed in floating point
      // (a few libm calls, each within 4 ulps) and widened by 1e-12.
      const double deviation_gain =
          ball::RadiusUp(residual_law::DeviationGain(al, be, max_h_, T) * (1 + 1e-12));
      const double mean_part = mean_max_[k] == 0 ? 0 : ball::RadiusUp(mean_max_[k] * gain);
      const double deviation_part =
          deviation_max_[k] == 0 ? 0 : ball::RadiusUp(deviation_max_[k] * deviation_gain);
      const double convolution = ball::RadiusUp(mean_part + deviation_part);
      convolution_position = ball::RadiusUp(hom_max + convolution);
      convolution_final = ball::RadiusUp(hom_end + convolution);
    }
  } else {
    hom_max = residual_law::MaxHomogeneous(al, be, e0_[k], w0_[k], T);
    hom_end = std::fabs(residual_law::Homogeneous(al, be, e0_[k], w0_[k], T));
    gain = residual_law::DefectGain(al, be, T);
    // 0 * inf (no defect over an empty window) is no bound violation.
    forced = delta_[k] == 0 ? 0 : delta_[k] * gain;
    position = hom_max + forced;
    final_position = hom_end + forced;
  }
  // Eq. (10.3), the seed's supremum form, is reported beside the
  // convolution bound (10.5), taken when it is smaller.
  cc->set_supremum_position_bound(position);
  if (!encloser_ && steps_ > 0) {
    const double mean_part = mean_max_[k] == 0 ? 0 : mean_max_[k] * gain;
    const double deviation_gain = residual_law::DeviationGain(al, be, max_h_, T);
    const double deviation_part = deviation_max_[k] == 0 ? 0 : deviation_max_[k] * deviation_gain;
    convolution_position = hom_max + mean_part + deviation_part;
    convolution_final = hom_end + mean_part + deviation_part;
  }
  if (steps_ > 0) {
    cc->set_step_mean_defect_bound(mean_max_[k]);
    cc->set_defect_deviation_bound(deviation_max_[k]);
    cc->set_convolution_position_bound(convolution_position);
    // NaN-safe: only a smaller, non-NaN convolution bound replaces (10.3).
    if (convolution_position < position) {
      position = convolution_position;
      final_position = std::min(final_position, convolution_final);
    }
  }
  // SAMPLED's bound against what the window measured (section 11): a
  // residual at a step's end above it by more than the consistency
  // tolerance (the user's zero, as judgement (a)'s) refutes it. A sine wire
  // moving with 4 periods a step, sampled at the same phase every step,
  // gave a bound of 6.5e-9 beside a measured 22.5; an abs() kink crossed,
  // 0.0107 beside 0.0367. Nothing is claimed then, as ENCLOSED claims
  // nothing for a step it cannot enclose.
  if (!encloser_ && max_e_[k] > position + consistency_tolerance_) {
    cc->set_bound_refuted(true);
    position = final_position = kInf;
  }
  cc->set_homogeneous_bound(hom_max);
  cc->set_defect_gain(gain);
  cc->set_position_bound(position);
  cc->set_final_position_bound(final_position);
  const double rho = steps_ ? ResidualTestUpdate(method_, max_h_, al, be).spectral_radius : 0;
  cc->set_spectral_radius(rho);
  // The per-step factor rho read as a rate: rho = exp(-rate h). A
  // post-stabilized method's rho is the law's own exp(-h gains_decay_rate)
  // (section 7.3), which underflows to 0 at stiff gains (10^5, h = 0.01):
  // its rate is that of the law, not -log(0) / h.
  const double gains_rate = GainsDecayRate(al, be);
  const MethodDescriptor* descriptor = FindMethod(method_);
  double rate = 0;
  if (rho < 1 && max_h_ > 0) {
    rate = descriptor && descriptor->post_stabilized ? gains_rate
           : rho > 0                                 ? -std::log(rho) / max_h_
                                                     : std::numeric_limits<double>::infinity();
  }
  cc->set_residual_decay_rate(rate);
  cc->set_gains_decay_rate(gains_rate);
  uint64_t jumps = 0;
  for (const Jump& j : jumps_)
    jumps += j.constraint == i && j.value >= kDefectJumpShare * delta_[k];
  cc->set_defect_jump_count(jumps);

  w->e0 = std::max(w->e0, std::fabs(e0_[k]));
  w->w0 = std::max(w->w0, std::fabs(w0_[k]));
  w->max_e = std::max(w->max_e, max_e_[k]);
  w->max_ed = std::max(w->max_ed, max_ed_[k]);
  w->delta = std::max(w->delta, delta_[k]);
  // position may be NaN only if a bound is; max() would drop it.
  w->bound = std::isnan(position) || std::isnan(w->bound) ? kInf : std::max(w->bound, position);
  const double supremum = cc->supremum_position_bound();
  w->supremum_bound = std::isnan(supremum) || std::isnan(w->supremum_bound)
                          ? kInf
                          : std::max(w->supremum_bound, supremum);
  w->final_bound = std::isnan(final_position) || std::isnan(w->final_bound)
                       ? kInf
                       : std::max(w->final_bound, final_position);
  w->radius = std::max(w->radius, rho);
}

// Judgement (b) (docs/MATH.md section 9): the KKT rows' residuals and
// backward error over the window, where the worst occurred, and W's
// conditioning beside it.
void CertificateRecorder::FillKktJudgement(const Model& m, const Workspace& ws,
                                           v1::Certificate* c) const {
  const EvaluationStats& st = ws.stats;
  c->set_max_kkt_residual(std::max(st.max_dynamics_residual, st.max_constraint_residual));
  c->set_max_relative_kkt_residual(st.max_relative_residual);
  c->set_kkt_backward_error(st.max_backward_error);
  c->set_kkt_backward_error_tolerance(internal::kKktBackwardErrorTolerance);
  c->set_feedback_verified(kkt_tolerance_ > 0
                               ? st.max_relative_residual <= kkt_tolerance_
                               : st.max_backward_error <= internal::kKktBackwardErrorTolerance);
  if (st.worst_kkt_row >= 0) {
    const size_t r = static_cast<size_t>(st.worst_kkt_row);
    c->set_worst_kkt_row(st.worst_kkt_row < m.nq
                             ? "dynamics row of coordinate '" + m.coordinate_names[r] + "'"
                             : "constraint row '" +
                                   m.constraint_names[r - static_cast<size_t>(m.nq)] + "'");
    c->set_worst_kkt_time(st.worst_kkt_time);
  }
  c->set_max_w_condition(st.max_w_condition);
  c->set_worst_w_condition_time(st.worst_condition_time);
  for (int i = 0; i < m.nc; ++i) {
    if (ws.cond_involved[static_cast<size_t>(i)])
      c->add_worst_w_condition_constraints(m.constraint_names[static_cast<size_t>(i)]);
  }
  c->set_conditioning_warning(st.max_w_condition >= kConditioningWarning);
}

// The window's defect jumps (kDefectJumpFactor) that pass its floors, at
// most kMaxDefectJumps.
void CertificateRecorder::FillDefectJumps(const Model& m, v1::Certificate* c) const {
  for (const Jump& j : jumps_) {
    if (!Counts(j)) continue;
    if (c->defect_jumps_size() == kMaxDefectJumps) break;
    auto* dj = c->add_defect_jumps();
    dj->set_t_start(j.t0);
    dj->set_t_end(j.t1);
    dj->set_constraint(m.constraint_names[static_cast<size_t>(j.constraint)]);
    dj->set_jump_factor(j.factor);
  }
}

// What the bound rests on, in words: the mode, the samples or enclosed
// pieces, and what is not claimed.
void CertificateRecorder::FillSampling(v1::Certificate* c) const {
  if (mode_ == v1::CertificateOptions::ENCLOSED) {
    c->set_sampling(
        "ENCLOSED: eta = e'' + 2 alpha e' + beta^2 e of the quintic Hermite interpolant through "
        "(q, v, a) at both ends of every step is enclosed over the whole of each of " +
        std::to_string(steps_) +
        " steps (a Taylor form in time with a proven remainder, in outward-rounded ball "
        "arithmetic; " +
        std::to_string(pieces_) +
        " pieces), and e_hom and the integral of |k| are rounded up; position_bound is the "
        "smaller of the supremum form (defect_bound times the integral of |k|) and the "
        "convolution form (each step's mean defect, enclosed, times that integral, plus the "
        "deviations from the step means), both rounded up, so it holds at every time of the "
        "window for the interpolated trajectory" +
        (unenclosed_steps_ ? " except that " + std::to_string(unenclosed_steps_) +
                                 " steps could not be enclosed (a non-smooth point crossed, a "
                                 "singularity or an overflow): their constraints' bounds are "
                                 "infinite"
                           : std::string()) +
        "; it bounds the drift from the constraint manifold, not the distance to the exact "
        "solution; step_stable is a linear test-system diagnostic of the feedback scale, not a "
        "proof of nonlinear stability");
    return;
  }
  c->set_sampling(
      "SAMPLED: eta = e'' + 2 alpha e' + beta^2 e sampled on the quintic Hermite interpolant "
      "through (q, v, a) at both ends of every step (its velocity is the derivative of its "
      "position), at " +
      std::to_string(samples_per_step_) + " interior points and the end of each of " +
      std::to_string(steps_) + " steps plus the window's start (" + std::to_string(samples_) +
      " samples); defect_bound is this sampled supremum; position_bound is the smaller of the "
      "supremum form (defect_bound times the integral of |k|) and the convolution form (each "
      "step's mean defect, by quadrature of its samples, times that integral, plus the "
      "deviations from the step means, which the residual law averages out), so it holds up "
      "to that sampling" +
      (c->refuted_bounds_size()
           ? "; for " + std::to_string(c->refuted_bounds_size()) +
                 " constraints a residual measured at a step's end exceeds that bound (the "
                 "samples missed the defect: aliasing with the step, or a non-smooth point "
                 "crossed), so their bounds are refuted and infinite (refuted_bounds; ENCLOSED "
                 "encloses every step)"
           : std::string()) +
      "; step_stable is a linear test-system diagnostic of the feedback "
      "scale, not a proof of nonlinear stability");
}

// The accuracy estimate and the order-reduction warning (docs/MATH.md
// section 10.3).
void CertificateRecorder::FillAccuracy(const Model& m, v1::Certificate* c) const {
  if (worst_local_error_coordinate_ >= 0) {
    c->set_max_local_error_estimate(max_local_error_);
    c->set_worst_local_error_coordinate(
        m.coordinate_names[static_cast<size_t>(worst_local_error_coordinate_)]);
    c->set_worst_local_error_time(worst_local_error_time_);
  }
  if (method_error_coordinate_ >= 0) {
    c->set_max_method_error_estimate(max_method_error_);
    c->set_worst_method_error_coordinate(
        m.coordinate_names[static_cast<size_t>(method_error_coordinate_)]);
    c->set_worst_method_error_time(method_error_time_);
    c->set_max_method_error_norm(max_method_error_norm_);
  }
  const MethodDescriptor* d = FindMethod(method_);
  // A stage order of 3 or more (RADAU_IIA: stiffly accurate, stage order 3
  // below its order 5) keeps the error at alpha = beta = 1000 within 0.35x to
  // 9.4x of the non-stiff one at the same h (docs/benchmarks.md), where
  // stage order 1 (SDIRK3) loses 100x to 1000x: no warning for it.
  constexpr int kStageOrderKeepsAccuracy = 3;
  if (d == nullptr || !d->implicit || d->stage_order >= d->order ||
      d->stage_order >= kStageOrderKeepsAccuracy || steps_ == 0) {
    return;
  }
  double stiffest = 0;
  int which = -1;
  for (int i = 0; i < m.nc; ++i) {
    const double g =
        max_h_ * std::max(m.alpha[static_cast<size_t>(i)], m.beta[static_cast<size_t>(i)]);
    if (g > stiffest) {
      stiffest = g;
      which = i;
    }
  }
  if (stiffest <= 1) return;
  c->set_accuracy_warning(
      v1::IntegratorSpec::Method_Name(method_) + " has stage order " +
      std::to_string(d->stage_order) + " below its order " + std::to_string(d->order) +
      ": at h x gain = " + FormatNumber(stiffest) + " (constraint '" +
      m.constraint_names[static_cast<size_t>(which)] +
      "') its order drops (order reduction under stiff gains), so the trajectory can be much "
      "less accurate than h^" +
      std::to_string(d->order) +
      " suggests while every judgement passes; see max_local_error_estimate, or use RADAU_IIA "
      "(stage order 3), or RK4 with h x gain <= about 1.25");
}

void CertificateRecorder::Fill(const Model& m, const Workspace& ws, v1::Certificate* c) const {
  c->Clear();
  c->set_t_start(t_start_);
  c->set_t_end(t_end_);
  c->set_steps(steps_);
  WindowMaxima w;
  for (int i = 0; i < m.nc; ++i) {
    v1::ConstraintCertificate* cc = c->add_constraints();
    FillConstraint(m, i, cc, &w);
    if (cc->bound_refuted()) c->add_refuted_bounds(cc->name());
  }
  c->set_initial_position_residual(w.e0);
  c->set_initial_velocity_residual(w.w0);
  c->set_initial_consistent(w.e0 <= consistency_tolerance_ && w.w0 <= consistency_tolerance_);
  FillKktJudgement(m, ws, c);
  FillDefectJumps(m, c);
  // With no constraints there is no feedback to destabilise.
  const double margin = m.nc ? 1 - w.radius : 1;
  c->set_stability_margin(margin);
  c->set_step_stable(margin > 1e-12);
  c->set_max_step_size(max_h_);

  c->set_max_position_residual(w.max_e);
  c->set_max_velocity_residual(w.max_ed);
  c->set_defect_bound(w.delta);
  c->set_defect_samples(samples_);
  c->set_position_bound(w.bound);
  c->set_supremum_position_bound(w.supremum_bound);
  FillAccuracy(m, c);
  c->set_final_position_bound(w.final_bound);
  c->set_mode(mode_);
  c->set_unenclosed_steps(unenclosed_steps_);
  c->set_first_unenclosed_time(first_unenclosed_time_);
  c->set_enclosure_pieces(pieces_);
  FillSampling(c);
}

int64_t CertificateRecorder::heap_bytes() const {
  int64_t bytes =
      HeapBytesOf(step_sup_, step_mean_, e0_ball_, w0_ball_, start_ok_, e0_, w0_, max_e_, max_ed_,
                  delta_, theta_, weights_, scaled_, p_, dp_, ddp_, step_delta_, prev_step_delta_,
                  prev2_step_delta_, max_magnitude_, jumps_, quad_w_, last_eta_, step_sum_,
                  step_max_, step_min_, mean_max_, deviation_max_, point_a_);
  if (encloser_) bytes += static_cast<int64_t>(sizeof(DefectEncloser)) + encloser_->heap_bytes();
  return bytes;
}

}  // namespace tether
