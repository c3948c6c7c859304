#include "engine/internal/certificate/defect_enclosure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "engine/internal/base/heap_bytes.h"

namespace tether {

using ball::Ball;
using ball::Dot;

namespace {

using ball::Abs2;
using ball::Load2;
using ball::Splat2;
using ball::V2;

// Coefficients of theta^0..theta^5 of the six quintic Hermite basis
// polynomials (certificate.cc's HermiteWeights), for q0, v0 h, a0 h^2, q1,
// v1 h, a1 h^2. The q0 and q1 rows sum to (1, 0, ...), so for k >= 1 the
// q-terms are written with dq = q1 - q0.
constexpr double kBasis[6][6] = {{1, 0, 0, -10, 15, -6},       {0, 1, 0, -6, 8, -3},
                                 {0, 0, 0.5, -1.5, 1.5, -0.5}, {0, 0, 0, 10, -15, 6},
                                 {0, 0, 0, -4, 7, -3},         {0, 0, 0, 0.5, -1, 0.5}};

// The Lebesgue constant of K + 1 Chebyshev nodes (first kind) is at most
// 1 + (2/pi) ln(K + 1) (Rivlin, An Introduction to the Approximation of
// Functions, 1969, thm 4.5); with a margin for the rounded nodes.
double LebesgueBound(int order) { return 1 + 2 / std::numbers::pi * std::log(order + 1.0) + 0.01; }

}  // namespace

DefectEncloser::DefectEncloser(const Model& model, Path force, taylor::PolyIsa isa)
    : evaluator_(model.defect_program),
      program_(model.defect_program, isa),
      var_list_(&model.defect_program.var_list),
      vars_(static_cast<size_t>(model.num_vars())),
      piece_vars_(vars_.size()),
      beta_sq_(static_cast<size_t>(model.nc)),
      poly_(static_cast<size_t>(model.nc)),
      rem_(static_cast<size_t>(model.nc)),
      poly_int_(static_cast<size_t>(model.nc)),
      integral_(static_cast<size_t>(model.nc)),
      piece_ok_(static_cast<size_t>(model.nc)) {
  c1_.resize(static_cast<size_t>(model.nc));
  // The variables' degrees in theta along the interpolant: t linear, q the
  // quintic, v its derivative, u constant.
  var_len_.assign(vars_.size(), 1);
  std::vector<int> var_degree(vars_.size(), 0);
  for (int32_t v : *var_list_) {
    const size_t k = static_cast<size_t>(v);
    var_degree[k] =
        v == model.var_t() ? 1 : (v < model.var_v(0) ? 5 : (v < model.var_u(0) ? 4 : 0));
    var_len_[k] = var_degree[k] + 1;
  }
  const std::vector<int> degree = taylor::PolynomialDegrees(model.defect_program, var_degree);
  int top = 0;
  for (int32_t r : model.defect_program.roots) {
    const int d = degree[static_cast<size_t>(r)];
    top = d == taylor::kNotPolynomial ? taylor::kMaxLength : std::max(top, d);
  }
  if (top + 1 <= taylor::kMaxLength && force != Path::kGeneral) exact_len_ = top + 1;
  // The plain floating-point path: supported operations, and gains whose
  // per-h constants neither underflow nor overflow (PolyVariables).
  bool gains_in_range = true;
  auto in_range = [](double x) {
    return x == 0 || (std::fabs(x) >= 0x1p-300 && std::fabs(x) <= 0x1p300);
  };
  for (int i = 0; i < model.nc; ++i) {
    gains_in_range = gains_in_range && in_range(model.two_alpha[static_cast<size_t>(i)]) &&
                     in_range(model.beta[static_cast<size_t>(i)]);
  }
  if (exact_len_ > 0 && gains_in_range && force != Path::kPolynomialBall &&
      taylor::PolyEvaluator::Supports(model.defect_program, var_len_)) {
    poly_eval_ = std::make_unique<taylor::PolyEvaluator>(model.defect_program, var_len_,
                                                         /*fold_root_factors=*/true, isa);
    if (isa != taylor::PolyIsa::kBaseline && taylor::PolyAvx2Available())
      eta_ = taylor::PolyEtaAvx2();
    c2d_.resize(static_cast<size_t>(model.nc));
    c1d_.resize(static_cast<size_t>(model.nc));
    bsqd_.resize(static_cast<size_t>(model.nc));
    for (int32_t v : *var_list_) {
      PolyVar pv{poly_eval_->var(v), PolyVar::kPosition, 0};
      if (v == model.var_t()) {
        pv.kind = PolyVar::kTime;
      } else if (v >= model.var_u(0)) {
        pv.kind = PolyVar::kInput;
        pv.coordinate = v - model.var_u(0);
      } else {
        pv.kind = v < model.var_v(0) ? PolyVar::kPosition : PolyVar::kVelocity;
        pv.coordinate = (v - 1) % model.nq;
      }
      poly_vars_.push_back(pv);
    }
    // Times the root's exact factor (a power of 2, PolyEvaluator's
    // fold_root_factors): eta's constants carry it, so the root's scaling
    // step is skipped.
    for (int i = 0; i < model.nc; ++i) {
      const size_t ii = static_cast<size_t>(i);
      bsqd_[ii] = (model.beta[ii] * model.beta[ii]) * poly_eval_->root_factor(ii);
    }
  }
  if (isa != taylor::PolyIsa::kBaseline && taylor::PolyAvx2Available())
    coordinate_ = taylor::PolyCoordinateAvx2();
  for (int32_t v : *var_list_) {
    int coordinate = -1;
    if (v >= 1 && v < 1 + 2 * model.nq) coordinate = (v - 1) % model.nq;  // q or v
    coordinate_of_var_.push_back(coordinate);
  }
  data_.resize(var_list_->size());
  center_.resize(var_list_->size());
  Weights(0.5, &root_weights_);
  for (int i = 0; i < model.nc; ++i) {
    const Ball b{model.beta[static_cast<size_t>(i)], 0};
    beta_sq_[static_cast<size_t>(i)] = b * b;
  }
  stack_.reserve(2 * kMaxDepth + 2);
  for (int j = 0; j <= kOrder; ++j)
    chebyshev_[j] = std::cos((2 * j + 1) * std::numbers::pi / (2 * (kOrder + 1)));
  lebesgue_ = LebesgueBound(kOrder);
}

void DefectEncloser::Data(double h, const double* q0, const double* v0, const double* a0,
                          const double* q1, const double* v1, const double* a1) {
  const Ball H{h, 0};
  const Ball H2 = H * H;
  for (size_t j = 0; j < var_list_->size(); ++j) {
    const int i = coordinate_of_var_[j];
    if (i < 0) continue;
    std::array<Ball, 6>& x = data_[j];
    x[0] = {q0[i], 0};
    x[1] = H * Ball{v0[i], 0};
    x[2] = H2 * Ball{a0[i], 0};
    x[3] = Ball{q1[i], 0} - Ball{q0[i], 0};  // dq: basis 3's weight multiplies q1 - q0
    x[4] = H * Ball{v1[i], 0};
    x[5] = H2 * Ball{a1[i], 0};
  }
}

void DefectEncloser::Weights(double theta_m, BasisWeights* w) {
  // w[k][b] = P_b^(k)(theta_m) / k!: the Taylor shift of basis b's
  // coefficients to theta_m, exact for the dyadic centres used (theta_m =
  // odd / 2^d with d <= kMaxDepth + 1: every partial result is a dyadic
  // rational of fewer than 53 bits).
  for (int b = 0; b < 6; ++b) {
    double T[6];
    for (int k = 0; k < 6; ++k) T[k] = kBasis[b][k];
    for (int k = 0; k < 5; ++k)
      for (int i = 4; i >= k; --i) T[i] += theta_m * T[i + 1];
    for (int k = 0; k < 6; ++k) w->w[k][b] = T[k];
  }
}

void DefectEncloser::SetVariables(const Model& m, const double* u, double t0, double h,
                                  double theta_m, double rho, int n, taylor::Series* out) {
  const Ball xi{theta_m, rho};
  taylor::Series* vars = out ? out : vars_.data();
  if (rho == 0 && float_centre_) {
    // The point pass computes the coordinates' Taylor coefficients at
    // theta_m; the pass over the piece widens them (below).
    const double(*W)[6] = DoubleWeightsAt(theta_m, h);
    for (size_t j = 0; j < var_list_->size(); ++j) {
      const int i = coordinate_of_var_[j];
      if (i < 0) continue;
      double m[6], r[6];
      CoordinateCoefficients(W, i, m, r);
      for (int k = 0; k < 6; ++k) center_[j][static_cast<size_t>(k)] = {m[k], r[k]};
    }
  } else if (rho == 0) {
    // As above in ball arithmetic from Data (h outside [2^-300, 2^300]).
    if (theta_m != 0.5) Weights(theta_m, &scratch_weights_);
    const BasisWeights& w = theta_m == 0.5 ? root_weights_ : scratch_weights_;
    for (size_t j = 0; j < var_list_->size(); ++j) {
      if (coordinate_of_var_[j] < 0) continue;
      const std::array<Ball, 6>& x = data_[j];
      for (int k = 0; k < 6; ++k) {
        // d_k = sum_b (P_b^(k) / k!)(theta_m) x_b (+ q0 for k = 0): exact
        // weights, one rounding bound for the sum.
        Dot dot;
        if (k == 0) dot.AddBall(x[0]);
        for (int b = 1; b < 6; ++b) dot.AddScaled(x[b], w.w[k][b]);
        center_[j][static_cast<size_t>(k)] = dot.Result();
      }
    }
  }
  // Binomial coefficients C(k + j, k).
  static constexpr double kBinomial[6][6] = {{1, 1, 1, 1, 1, 1},  {1, 2, 3, 4, 5, 0},
                                             {1, 3, 6, 10, 0, 0}, {1, 4, 10, 0, 0, 0},
                                             {1, 5, 0, 0, 0, 0},  {1, 0, 0, 0, 0, 0}};
  for (size_t j = 0; j < var_list_->size(); ++j) {
    const int32_t v = (*var_list_)[j];
    taylor::Series& s = vars[v];
    // Each branch writes its leading coefficients and zeroes the rest (the
    // coefficients below `n` only: Program::Evaluate reads no further).
    auto zero_from = [&](int k0) {
      for (int k = k0; k < n; ++k) s.c[k] = {};
    };
    if (v == m.var_t()) {
      s.c[0] = Ball{t0, 0} + ball::Scale(xi, h);
      if (n > 1) s.c[1] = {h, 0};
      zero_from(2);
      continue;
    }
    if (v >= m.var_u(0) && m.nu > 0) {
      s.c[0] = {u[v - m.var_u(0)], 0};
      zero_from(1);
      continue;
    }
    // The Taylor coefficients at any xi of the piece, from those at its
    // centre D (the quintic's own, cancelled): the centred form
    //   d_k(xi) in D_k +- sum_{j>=1} C(k+j, k) |D_{k+j}| rho^j.
    const std::array<Ball, 6>& D = center_[j];
    Ball d[6];
    if (rho > 0) {
      double mag[6];
      for (int k = 0; k < 6; ++k) mag[k] = ball::Mag(D[static_cast<size_t>(k)]);
      for (int k = 0; k < 6; ++k) {
        double r = D[static_cast<size_t>(k)].r, rj = rho;
        for (int i = 1; i + k < 6; ++i) {
          r += kBinomial[k][i] * mag[k + i] * rj;
          rj *= rho;
        }
        d[k] = {D[static_cast<size_t>(k)].m, ball::RadiusUp(r)};
      }
    } else {
      for (int k = 0; k < 6; ++k) d[k] = D[static_cast<size_t>(k)];
    }
    if (v < m.var_v(0)) {
      for (int k = 0; k < std::min(n, 6); ++k) s.c[k] = d[k];
      zero_from(6);
    } else {
      // A velocity: the derivative in time, (k + 1) d_{k+1} / h.
      for (int k = 0; k < std::min(n, 5); ++k)
        s.c[k] = ball::Scale(d[k + 1], static_cast<double>(k + 1)) * inv_h_;
      zero_from(5);
    }
  }
}

void DefectEncloser::ScaledWeights(const BasisWeights& w, double h, Ball (*out)[6]) const {
  const Ball H{h, 0};
  const Ball H2 = H * H;
  for (int k = 0; k < 6; ++k) {
    out[k][0] = {w.w[k][0], 0};
    out[k][3] = {w.w[k][3], 0};
    out[k][1] = ball::Scale(H, w.w[k][1]);
    out[k][4] = ball::Scale(H, w.w[k][4]);
    out[k][2] = ball::Scale(H2, w.w[k][2]);
    out[k][5] = ball::Scale(H2, w.w[k][5]);
  }
}

void DefectEncloser::ScaleForStep(const Model& m, double h) {
  if (h == scaled_h_) return;
  inv_h_ = Ball{1, 0} / Ball{h, 0};
  inv_h2_ = inv_h_ * inv_h_;
  ScaledWeights(root_weights_, h, w_root_);
  // The general path's centres use them too (float_centre_).
  DoubleWeights(root_weights_, h, wd_root_);
  if (poly_eval_) {
    // Each constant is the exact one times at most four factors (1 + delta)
    // (h in [2^-300, 2^300], the gains' range and the root factor's, a
    // power of 2 in [2^-64, 2^64] whose product is exact: no underflow or
    // overflow): within 4.02 u of itself (the bounds in EnclosePolyPiece,
    // PolyVariables).
    const double ih = 1 / h;
    veld_max_ = 0;
    for (int k = 0; k < 5; ++k) {
      veld_[k] = (k + 1) * ih;
      veld_max_ = std::max(veld_max_, std::fabs(veld_[k]));
    }
    for (int k = 0; k < taylor::kPolyLanes; ++k) {
      const double c2 = ((k + 2) * (k + 1) * ih) * ih;
      for (int i = 0; i < m.nc; ++i) {
        const size_t ii = static_cast<size_t>(i), kk = static_cast<size_t>(k);
        const double f = poly_eval_->root_factor(ii);
        c2d_[ii][kk] = c2 * f;
        c1d_[ii][kk] = ((m.two_alpha[ii] * (k + 1)) * ih) * f;
      }
    }
  }
  for (int k = 0; k < 5; ++k) vel_scale_[k] = Ball{static_cast<double>(k + 1), 0} * inv_h_;
  for (int k = 0; k < taylor::kMaxLength; ++k) {
    c2_[k] = Ball{static_cast<double>((k + 2) * (k + 1)), 0} * inv_h2_;
    for (int i = 0; i < m.nc; ++i) {
      const Ball two_alpha{m.two_alpha[static_cast<size_t>(i)], 0};
      c1_[static_cast<size_t>(i)][static_cast<size_t>(k)] =
          ball::Scale(two_alpha, static_cast<double>(k + 1)) * inv_h_;
    }
  }
  scaled_h_ = h;
}

Ball DefectEncloser::Eta(const taylor::PolySeries& e, int len, size_t i, int k) const {
  // eta's coefficient k from e's (in theta units; d/dt = (1/h) d/dtheta):
  // (k + 2)(k + 1) e_{k+2} / h^2 + 2 alpha (k + 1) e_{k+1} / h + beta^2 e_k,
  // e's coefficients from len on being exactly 0.
  auto coef = [&](int j) { return Ball{e.m[j], e.r[j]}; };
  Dot d;
  if (k + 2 < len) d.Add(coef(k + 2), c2_[k]);
  if (k + 1 < len) d.Add(coef(k + 1), c1_[i][static_cast<size_t>(k)]);
  if (k < len) d.Add(coef(k), beta_sq_[i]);
  return d.Result();
}

void DefectEncloser::SetRho(double rho) {
  if (rho == rho_) return;
  // rho is a power of 2 in [2^-(kMaxDepth + 1), 1/2]: its powers up to
  // kPolyLanes - 1 and its products with the nodes are exact.
  double rk = 1;
  for (int k = 0; k < taylor::kPolyLanes; ++k) {
    rho_pow_[k] = rk;
    rk *= rho;
  }
  for (int j = 0; j < kNodes; ++j) node_[j] = rho * chebyshev_[std::min(j, kOrder)];
  // PolynomialIntegral's weights 2 rho^(k+1) / (k + 1), k even.
  for (int k = 0; k <= kOrder; k += 2)
    integral_w_[k / 2] = Ball{2 * rho_pow_[k + 1], 0} / Ball{static_cast<double>(k + 1), 0};
  rho_ = rho;
}

double DefectEncloser::PolynomialPart(const double* m, const double* r) const {
  using ball::kTiny;
  using ball::kU;
  using ball::V2;
  constexpr int K = kOrder;
  // sum |eta_k| rho^k (its terms' underflow: (K + 1) kTiny / 2) and
  // sum r_k rho^k.
  double sum = 0, radii = 0;
  for (int k = 0; k <= K; ++k) {
    sum += (std::fabs(m[k]) + r[k]) * rho_pow_[k];
    radii += r[k] * rho_pow_[k];
  }
  // Lebesgue constant times the largest value at the Chebyshev nodes,
  // evaluated on the midpoints by Horner's rule, two nodes at a time: its
  // rounding is at most gamma_{2K+2} sum |m_k| rho^k plus K kTiny
  // (underflow in 2K operations) and the radii add sum r_k rho^k, both at
  // most `sum` (a priori error bound, Higham thm 5.1), so no ball
  // arithmetic is needed here.
  V2 best = ball::Splat2(0);
  for (int j = 0; j < kNodes; j += 2) {
    const V2 s = ball::Load2(&node_[j]);
    V2 p = ball::Splat2(m[K]);
    for (int k = K - 1; k >= 0; --k) p = p * s + ball::Splat2(m[k]);
    const V2 a = ball::Abs2(p);
    best = a > best ? a : best;
  }
  double at_nodes = std::max(best[0], best[1]);
  at_nodes = ball::RadiusUp(at_nodes + radii + (2 * K + 3) * kU * sum + (K + 1) * kTiny);
  return ball::RadiusUp(
      std::min(ball::RadiusUp(sum + (K + 1) * kTiny), ball::RadiusUp(lebesgue_ * at_nodes)));
}

void DefectEncloser::PolynomialPart(const Ball* coef, size_t i) {
  double m[kOrder + 1], r[kOrder + 1];
  for (int k = 0; k <= kOrder; ++k) {
    m[k] = coef[k].m;
    r[k] = coef[k].r;
  }
  poly_[i] = PolynomialPart(m, r);
  poly_int_[i] = PolynomialIntegral(m, r);
}

Ball DefectEncloser::PolynomialIntegral(const double* m, const double* r) const {
  // 2 rho^(k+1) is exact (rho a power of 2, SetRho); the division by k + 1
  // (once a rho, SetRho) and the products and sums round outward in ball
  // arithmetic.
  Ball sum{0, 0};
  for (int k = 0; k <= kOrder; k += 2) sum = sum + Ball{m[k], r[k]} * integral_w_[k / 2];
  return sum;
}

void DefectEncloser::EnclosePiece(const Model& m, const double* u, double t0, double h,
                                  double theta_m, double rho) {
  SetRho(rho);
  if (exact_len_ > 0) return EnclosePolynomialPiece(m, u, t0, h, theta_m, rho);
  constexpr int K = kOrder;
  static_assert(taylor::Program::kCentreLength == K + 3 && taylor::Program::kPieceLength == K + 4);
  const int nc = m.nc;
  // Two passes, run as one (Program::EvaluatePair: their midpoints are
  // the same, only the radii differ): at the point theta_m, eta_0..eta_K;
  // over the piece, eta's coefficient K + 1 at every point of it.
  // The variables' coefficients from var_len_ on are exact zeros (t is
  // linear, q the quintic, v its derivative, u constant).
  SetVariables(m, u, t0, h, theta_m, 0, K + 3);
  SetVariables(m, u, t0, h, theta_m, rho, K + 4, piece_vars_.data());
  program_.EvaluatePair(vars_.data(), piece_vars_.data(), var_len_.data());
  Ball coef[taylor::kMaxLength];
  for (int i = 0; i < nc; ++i) {
    const size_t ii = static_cast<size_t>(i);
    piece_ok_[ii] = program_.root_ok(ii);
    if (!piece_ok_[ii]) continue;
    const taylor::PolySeries& e = program_.centre_root(ii);
    for (int k = 0; k <= K; ++k) coef[k] = Eta(e, K + 3, ii, k);
    PolynomialPart(coef, ii);
  }
  // |R s^(K+1)| <= |R| rho^(K+1) (rho^(K+1) exact, SetRho).
  const double rho_pow = rho_pow_[K + 1];
  for (int i = 0; i < nc; ++i) {
    const size_t ii = static_cast<size_t>(i);
    if (!piece_ok_[ii]) continue;
    const Ball r = Eta(program_.root(ii), K + 4, ii, K + 1);
    rem_[ii] = ball::RadiusUp(ball::Mag(r) * rho_pow);
    // A NaN anywhere is no bound.
    if (!(poly_[ii] <= std::numeric_limits<double>::max()) ||
        !(rem_[ii] <= std::numeric_limits<double>::max())) {
      piece_ok_[ii] = 0;
    }
  }
}

DefectEncloser::StepResult DefectEncloser::EncloseStep(const Model& m, const double* u, double t0,
                                                       double h, const double* q0, const double* v0,
                                                       const double* a0, const double* q1,
                                                       const double* v1, const double* a1,
                                                       const double* running, double* sup_out,
                                                       Ball* mean_out) {
  const int nc = m.nc;
  StepResult result;
  if (nc == 0) return result;
  const bool h_in_range = std::fabs(h) >= 0x1p-300 && std::fabs(h) <= 0x1p300;
  poly_step_ = poly_eval_ && h_in_range;
  float_centre_ = h_in_range;
  raw_ = {q0, v0, a0, q1, v1, a1};
  if (exact_len_ == 0 && !float_centre_) Data(h, q0, v0, a0, q1, v1, a1);
  ScaleForStep(m, h);
  stack_.clear();
  stack_.push_back({0.5, 0.5, 0});
  int leaves = 0;
  while (!stack_.empty()) {
    const Piece piece = stack_.back();
    stack_.pop_back();
    EnclosePiece(m, u, t0, h, piece.theta_m, piece.rho);
    ++result.pieces;
    bool split = false;
    if (piece.depth < kMaxDepth) {
      for (int i = 0; i < nc && !split; ++i) {
        const size_t ii = static_cast<size_t>(i);
        split = piece_ok_[ii] && rem_[ii] > kSplitShare * poly_[ii] && rem_[ii] > 0.1 * running[i];
      }
    }
    if (split) {
      // Halves: theta_m +- rho / 2 (exact: dyadic).
      const double r = piece.rho / 2;
      stack_.push_back({piece.theta_m + r, r, piece.depth + 1});
      stack_.push_back({piece.theta_m - r, r, piece.depth + 1});
      continue;
    }
    // The first leaf piece sets sup_out, the others raise it; the leaves
    // tile [0, 1], so their integrals sum to the step's (the remainder's
    // over the piece within +- 2 rho rem).
    const bool first = leaves++ == 0;
    for (int i = 0; i < nc; ++i) {
      const size_t ii = static_cast<size_t>(i);
      const double b = piece_ok_[ii] ? ball::RadiusUp(poly_[ii] + rem_[ii]) : ball::kInf;
      sup_out[i] = first ? b : std::max(sup_out[i], b);
      if (!piece_ok_[ii]) result.enclosed = false;
      if (mean_out) {
        const Ball piece_integral =
            piece_ok_[ii] ? poly_int_[ii] + Ball{0, ball::RadiusUp(2 * piece.rho * rem_[ii])}
                          : ball::Unbounded();
        integral_[ii] = first ? piece_integral : integral_[ii] + piece_integral;
      }
    }
  }
  if (mean_out) {
    for (int i = 0; i < nc; ++i) {
      const Ball& v = integral_[static_cast<size_t>(i)];
      mean_out[i] = ball::Bounded(v) ? v : ball::Unbounded();
    }
  }
  return result;
}

void DefectEncloser::StartResiduals(const Model& m, const double* u, double t0, double h,
                                    const double* q0, const double* v0, const double* a0,
                                    const double* q1, const double* v1, const double* a1, Ball* e,
                                    Ball* w, char* ok) {
  // Once a window: the centre in ball arithmetic (Data), whose radii are
  // tighter than CoordinateCoefficients' a priori bound (e and e' at the
  // start are rounding-sized on a consistent start: the homogeneous bound).
  float_centre_ = false;
  Data(h, q0, v0, a0, q1, v1, a1);
  ScaleForStep(m, h);
  SetVariables(m, u, t0, h, 0, 0, 2);
  evaluator_.Evaluate(vars_.data(), 2);
  for (int i = 0; i < m.nc; ++i) {
    const size_t ii = static_cast<size_t>(i);
    ok[i] = evaluator_.root_ok(ii);
    if (!ok[i]) continue;
    e[i] = evaluator_.root(ii).c[0];
    w[i] = evaluator_.root(ii).c[1] * inv_h_;
    ok[i] = ball::Bounded(e[i]) && ball::Bounded(w[i]);
  }
}

int64_t DefectEncloser::heap_bytes() const {
  int64_t bytes = HeapBytesOf(var_len_, c2d_, c1d_, bsqd_, poly_vars_, c1_, coordinate_of_var_,
                              data_, center_, vars_, piece_vars_, beta_sq_, poly_, rem_, poly_int_,
                              integral_, piece_ok_, stack_) +
                  evaluator_.heap_bytes() + program_.heap_bytes();
  if (poly_eval_)
    bytes += static_cast<int64_t>(sizeof(taylor::PolyEvaluator)) + poly_eval_->heap_bytes();
  return bytes;
}

}  // namespace tether
