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
using ball::Store2;
using ball::V2;
inline V2 Up2(V2 x) { return ball::RadiusUp2(x); }

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

DefectEncloser::DefectEncloser(const Model& model, Path force)
    : evaluator_(model.defect_program),
      var_list_(&model.defect_program.var_list),
      vars_(static_cast<size_t>(model.num_vars())),
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
                                                         /*fold_root_factors=*/true);
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
                                  double theta_m, double rho, int n) {
  const Ball xi{theta_m, rho};
  if (rho == 0) {
    // The point pass computes the coordinates' Taylor coefficients at
    // theta_m; the pass over the piece widens them (below).
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
    taylor::Series& s = vars_[static_cast<size_t>(v)];
    for (int k = 0; k < n; ++k) s.c[k] = {};
    if (v == m.var_t()) {
      s.c[0] = Ball{t0, 0} + ball::Scale(xi, h);
      if (n > 1) s.c[1] = {h, 0};
      continue;
    }
    if (v >= m.var_u(0) && m.nu > 0) {
      s.c[0] = {u[v - m.var_u(0)], 0};
      continue;
    }
    // The Taylor coefficients at any xi of the piece, from those at its
    // centre D (the quintic's own, cancelled): the centred form
    //   d_k(xi) in D_k +- sum_{j>=1} C(k+j, k) |D_{k+j}| rho^j.
    const std::array<Ball, 6>& D = center_[j];
    Ball d[6];
    for (int k = 0; k < 6; ++k) {
      double r = D[static_cast<size_t>(k)].r, rj = rho;
      if (rho > 0) {
        for (int i = 1; i + k < 6; ++i) {
          r += kBinomial[k][i] * ball::Mag(D[static_cast<size_t>(k + i)]) * rj;
          rj *= rho;
        }
        r = ball::RadiusUp(r);
      }
      d[k] = {D[static_cast<size_t>(k)].m, r};
    }
    if (v < m.var_v(0)) {
      for (int k = 0; k < std::min(n, 6); ++k) s.c[k] = d[k];
    } else {
      // A velocity: the derivative in time, (k + 1) d_{k+1} / h.
      for (int k = 0; k < std::min(n, 5); ++k)
        s.c[k] = ball::Scale(d[k + 1], static_cast<double>(k + 1)) * inv_h_;
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

void DefectEncloser::SetPolynomialVariables(const Model& m, const double* u, double t0, double h,
                                            double theta_m) {
  const Ball(*W)[6] = w_root_;
  if (theta_m != 0.5) {
    Weights(theta_m, &scratch_weights_);
    ScaledWeights(scratch_weights_, h, w_scratch_);
    W = w_scratch_;
  }
  // Each variable's series holds exactly 0 beyond its length (vars_ starts
  // zero and no writer puts anything else there), so only the
  // coefficients up to the length are written.
  for (size_t j = 0; j < var_list_->size(); ++j) {
    const int32_t v = (*var_list_)[j];
    taylor::Series& s = vars_[static_cast<size_t>(v)];
    if (v == m.var_t()) {
      s.c[0] = Ball{t0, 0} + ball::Scale(Ball{theta_m, 0}, h);
      s.c[1] = {h, 0};
      continue;
    }
    const int i = coordinate_of_var_[j];
    if (i < 0) {
      s.c[0] = {u[v - m.var_u(0)], 0};
      continue;
    }
    // d_k = sum_b (P_b^(k) / k!)(theta_m) h^p_b x_b (+ q0 for k = 0), x_b
    // the exact data (q1 - q0 rounded): one rounding bound for the sum.
    const double q0 = raw_.q0[i], v0 = raw_.v0[i], a0 = raw_.a0[i], v1 = raw_.v1[i],
                 a1 = raw_.a1[i];
    const Ball dq = Ball{raw_.q1[i], 0} - Ball{q0, 0};
    Ball d[6];
    for (int k = 0; k < 6; ++k) {
      Dot dot;
      if (k == 0) dot.AddBall({q0, 0});
      dot.AddExact(v0, W[k][1]);
      dot.AddExact(a0, W[k][2]);
      dot.Add(dq, W[k][3]);
      dot.AddExact(v1, W[k][4]);
      dot.AddExact(a1, W[k][5]);
      d[k] = dot.Result();
    }
    if (v < m.var_v(0)) {
      for (int k = 0; k < 6; ++k) s.c[k] = d[k];
    } else {
      // A velocity: the derivative in time, (k + 1) d_{k+1} / h.
      for (int k = 0; k < 5; ++k) s.c[k] = d[k + 1] * vel_scale_[k];
    }
  }
}

void DefectEncloser::ScaleForStep(const Model& m, double h) {
  if (h == scaled_h_) return;
  inv_h_ = Ball{1, 0} / Ball{h, 0};
  inv_h2_ = inv_h_ * inv_h_;
  ScaledWeights(root_weights_, h, w_root_);
  if (poly_eval_) {
    // Each constant is the exact one times at most four factors (1 + delta)
    // (h in [2^-300, 2^300], the gains' range and the root factor's, a
    // power of 2 in [2^-64, 2^64] whose product is exact: no underflow or
    // overflow): within 4.02 u of itself (the bounds in EnclosePolyPiece,
    // PolyVariables).
    const double ih = 1 / h;
    DoubleWeights(root_weights_, h, wd_root_);
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

Ball DefectEncloser::Eta(const taylor::Series& e, int len, size_t i, int k) const {
  // eta's coefficient k from e's (in theta units; d/dt = (1/h) d/dtheta):
  // (k + 2)(k + 1) e_{k+2} / h^2 + 2 alpha (k + 1) e_{k+1} / h + beta^2 e_k,
  // e's coefficients from len on being exactly 0.
  Dot d;
  if (k + 2 < len) d.Add(e.c[k + 2], c2_[k]);
  if (k + 1 < len) d.Add(e.c[k + 1], c1_[i][static_cast<size_t>(k)]);
  if (k < len) d.Add(e.c[k], beta_sq_[i]);
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
  // and the products and sums round outward in ball arithmetic.
  Ball sum{0, 0};
  for (int k = 0; k <= kOrder; k += 2) {
    const Ball w = Ball{2 * rho_pow_[k + 1], 0} / Ball{static_cast<double>(k + 1), 0};
    sum = sum + Ball{m[k], r[k]} * w;
  }
  return sum;
}

void DefectEncloser::EnclosePiece(const Model& m, const double* u, double t0, double h,
                                  double theta_m, double rho) {
  SetRho(rho);
  if (exact_len_ > 0) return EnclosePolynomialPiece(m, u, t0, h, theta_m, rho);
  constexpr int K = kOrder;
  const int nc = m.nc;
  // At the point theta_m: eta_0..eta_K.
  SetVariables(m, u, t0, h, theta_m, 0, K + 3);
  evaluator_.Evaluate(vars_.data(), K + 3);
  Ball coef[taylor::kMaxLength];
  for (int i = 0; i < nc; ++i) {
    const size_t ii = static_cast<size_t>(i);
    piece_ok_[ii] = evaluator_.root_ok(ii);
    if (!piece_ok_[ii]) continue;
    const taylor::Series& e = evaluator_.root(ii);
    for (int k = 0; k <= K; ++k) coef[k] = Eta(e, K + 3, ii, k);
    PolynomialPart(coef, ii);
  }
  // Over the piece: eta's coefficient K + 1 at every point of it.
  SetVariables(m, u, t0, h, theta_m, rho, K + 4);
  evaluator_.Evaluate(vars_.data(), K + 4);
  // |R s^(K+1)| <= |R| rho^(K+1) (rho^(K+1) exact, SetRho).
  const double rho_pow = rho_pow_[K + 1];
  for (int i = 0; i < nc; ++i) {
    const size_t ii = static_cast<size_t>(i);
    if (!piece_ok_[ii] || !evaluator_.root_ok(ii)) {
      piece_ok_[ii] = 0;
      continue;
    }
    const Ball r = Eta(evaluator_.root(ii), K + 4, ii, K + 1);
    rem_[ii] = ball::RadiusUp(ball::Mag(r) * rho_pow);
    // A NaN anywhere is no bound.
    if (!(poly_[ii] <= std::numeric_limits<double>::max()) ||
        !(rem_[ii] <= std::numeric_limits<double>::max())) {
      piece_ok_[ii] = 0;
    }
  }
}

void DefectEncloser::DoubleWeights(const BasisWeights& w, double h, double (*out)[6]) const {
  // w h^p for the datum's power p of h (0, 1, 2, 0, 1, 2), rounded: at most
  // two roundings (h^2, then times w; w is a dyadic rational with at most
  // 26 bits after the point, nonzero ones at least 2^-26: no underflow).
  // Stored transposed: out[b][k].
  const double h2 = h * h;
  for (int k = 0; k < 6; ++k) {
    out[0][k] = w.w[k][0];
    out[3][k] = w.w[k][3];
    out[1][k] = w.w[k][1] * h;
    out[4][k] = w.w[k][4] * h;
    out[2][k] = w.w[k][2] * h2;
    out[5][k] = w.w[k][5] * h2;
  }
}

bool DefectEncloser::PolyVariables(const Model& m, const double* u, double t0, double h,
                                   double theta_m) {
  using ball::kTiny;
  using ball::kU;
  const double(*W)[6] = wd_root_;
  if (theta_m != 0.5) {
    Weights(theta_m, &scratch_weights_);
    DoubleWeights(scratch_weights_, h, wd_scratch_);
    W = wd_scratch_;
  }
  for (const PolyVar& pv : poly_vars_) {
    taylor::PolySeries& s = *pv.series;
    const int i = pv.coordinate;
    if (pv.kind == PolyVar::kTime) {
      // t0 + theta_m h (theta_m exact): two roundings, within 2.01 u of
      // |t0| + |theta_m h|, and a subnormal product's kTiny / 2; then h.
      const double th = theta_m * h;
      s.m[0] = t0 + th;
      s.r[0] = ball::RadiusUp(3 * kU * (std::fabs(t0) + std::fabs(th)) + kTiny);
      s.m[1] = h;
      s.r[1] = 0;
      continue;
    }
    if (pv.kind == PolyVar::kInput) {
      s.m[0] = u[i];
      s.r[0] = 0;
      continue;
    }
    // d_k = [k = 0] q0 + sum_b W_kb x_b (x_3 = q1 - q0, rounded): each
    // computed term is the exact one times at most three factors
    // (1 + delta) (W's two, the product's; or dq's and the product's) plus
    // a subnormal product's kTiny / 2, and the sum of six terms adds
    // gamma_5: |d_k - m_k| <= (gamma_5 + 3.02 u) sum |terms| + 6 kTiny.
    const double q0 = raw_.q0[i], v0 = raw_.v0[i], a0 = raw_.a0[i], v1 = raw_.v1[i],
                 a1 = raw_.a1[i], dq = raw_.q1[i] - q0;
    // Two coefficients at a time (W is stored [b][k]).
    const double x[6] = {0, v0, a0, dq, v1, a1};
    V2 sm[3] = {V2{q0, 0}, V2{0, 0}, V2{0, 0}};
    V2 sa[3] = {V2{std::fabs(q0), 0}, V2{0, 0}, V2{0, 0}};
    for (int b = 1; b < 6; ++b) {
      const V2 xb = Splat2(x[b]);
      for (int p = 0; p < 3; ++p) {
        const V2 t = Load2(&W[b][2 * p]) * xb;
        sm[p] += t;
        sa[p] += Abs2(t);
      }
    }
    V2 dr[3];
    for (int p = 0; p < 3; ++p) dr[p] = Up2(Splat2(9 * kU) * Up2(sa[p]) + Splat2(6 * kTiny));
    if (pv.kind == PolyVar::kPosition) {
      for (int p = 0; p < 3; ++p) {
        Store2(&s.m[2 * p], sm[p]);
        Store2(&s.r[2 * p], dr[p]);
      }
    } else {
      // A velocity: (k + 1) d_{k+1} / h = V d_{k+1} for V_k = fl((k + 1)
      // fl(1/h)), within 2.02 u of (k + 1) / h: the error is at most
      // (1 + 2.02 u) |V| r + 3.02 u |V m| + kTiny / 2.
      double dm[6], drr[6];
      for (int p = 0; p < 3; ++p) {
        Store2(&dm[2 * p], sm[p]);
        Store2(&drr[2 * p], dr[p]);
      }
      for (int k = 0; k < 5; ++k) {
        const double vk = std::fabs(veld_[k]);
        s.m[k] = dm[k + 1] * veld_[k];
        s.r[k] = ball::RadiusUp(vk * (1 + 3 * kU) * drr[k + 1] +
                                4 * kU * vk * std::fabs(dm[k + 1]) + kTiny);
      }
    }
  }
  return true;
}

void DefectEncloser::EnclosePolyPiece(const Model& m) {
  using ball::kTiny;
  using ball::kU;
  constexpr int K = kOrder;
  poly_eval_->Evaluate();
  for (int i = 0; i < m.nc; ++i) {
    const size_t ii = static_cast<size_t>(i);
    const taylor::PolySeries& e = poly_eval_->root(ii);
    // e = f x for the root factor f (x = root(i) plus the offset, below;
    // exact: f a power of 2), so
    // eta_k = (f c2_k) x_{k+2} + (f c1_k) x_{k+1} + (f beta^2) x_k with
    // the rounded constants c (|c - c_exact| <= 4.02 u |c|; f > 0): its
    // error is at most
    //   (1 + 4.02 u) sum_t |c_t| r_t + (4.02 u + gamma_3) sum_t |c_t m_t|
    //   + 3 kTiny / 2.
    const double c_b = bsqd_[ii];
    const auto& c1 = c1d_[ii];
    const auto& c2v = c2d_[ii];
    // Over kPolyLanes lanes, two at a time (e's are 0 from e.len on, and
    // e_k = 0 for k >= kMaxLength, beyond the lanes too:
    // PolyEvaluator::Supports).
    constexpr int L = taylor::kMaxLength, N = taylor::kPolyLanes;
    static_assert(N >= L + 1 && N % 2 == 0);
    alignas(16) double cm[N], cr[N];
    const V2 cb = Splat2(c_b);
    // The root's offset k on coefficient 0 (root = f (x + k)): as kAddShort,
    // fl(x_0 + k) with its rounding u |fl(x_0 + k)| added to the radius.
    const double offset = poly_eval_->root_offset(ii);
    const double e0m = e.m[0] + offset;
    const double e0r = offset == 0 ? e.r[0] : ball::RadiusUp(e.r[0] + kU * std::fabs(e0m));
#pragma GCC unroll 6
    for (int k = 0; k < N; k += 2) {
      const bool last = k + 2 >= N;  // e_{k+2}, e_{k+3} beyond the lanes
      const V2 e0 = k == 0 ? V2{e0m, e.m[1]} : Load2(&e.m[k]);
      const V2 r0 = k == 0 ? V2{e0r, e.r[1]} : Load2(&e.r[k]);
      const V2 e1 = last ? V2{e.m[k + 1], 0} : Load2(&e.m[k + 1]);
      const V2 r1 = last ? V2{e.r[k + 1], 0} : Load2(&e.r[k + 1]);
      const V2 e2 = last ? Splat2(0) : Load2(&e.m[k + 2]);
      const V2 r2 = last ? Splat2(0) : Load2(&e.r[k + 2]);
      const V2 c2 = Load2(&c2v[static_cast<size_t>(k)]), c1k = Load2(&c1[static_cast<size_t>(k)]);
      const V2 t2 = c2 * e2, t1 = c1k * e1, t0 = cb * e0;
      const V2 rad = Abs2(c2) * r2 + Abs2(c1k) * r1 + cb * r0;
      const V2 mag = Abs2(t2) + Abs2(t1) + Abs2(t0);
      Store2(&cm[k], t2 + t1 + t0);
      Store2(&cr[k], Up2(Splat2(1 + 5 * kU) * rad + Splat2(8 * kU) * mag + Splat2(4 * kTiny)));
    }
    poly_[ii] = PolynomialPart(cm, cr);
    poly_int_[ii] = PolynomialIntegral(cm, cr);
    // The tail sum_{k=K+1..L-1} |eta_k| rho^k (rho^k exact), nonnegative
    // terms summed in RN: RadiusUp covers the rounding, L kTiny the
    // products' underflow.
    double tail = 0;
    for (int k = K + 1; k < L; ++k) tail += (std::fabs(cm[k]) + cr[k]) * rho_pow_[k];
    rem_[ii] = ball::RadiusUp(tail + L * kTiny);
    piece_ok_[ii] = poly_[ii] <= std::numeric_limits<double>::max() &&
                    rem_[ii] <= std::numeric_limits<double>::max();
  }
}

void DefectEncloser::EnclosePolynomialPiece(const Model& m, const double* u, double t0, double h,
                                            double theta_m, double rho) {
  constexpr int K = kOrder;
  if (poly_step_) {
    PolyVariables(m, u, t0, h, theta_m);
    return EnclosePolyPiece(m);
  }
  const int n = exact_len_;
  // e is a polynomial of degree n - 1 in s = theta - theta_m: its
  // coefficients at theta_m are all there is, and so are eta's (degree
  // n - 1 as well).
  SetPolynomialVariables(m, u, t0, h, theta_m);
  evaluator_.Evaluate(vars_.data(), n, var_len_.data());
  Ball coef[taylor::kMaxLength + K];
  for (int i = 0; i < m.nc; ++i) {
    const size_t ii = static_cast<size_t>(i);
    piece_ok_[ii] = evaluator_.root_ok(ii);
    if (!piece_ok_[ii]) continue;
    const taylor::Series& e = evaluator_.root(ii);
    // Eta, inline.
    const auto& c1 = c1_[ii];
    const Ball beta_sq = beta_sq_[ii];
    for (int k = 0; k < n; ++k) {
      Dot d;
      if (k + 2 < n) d.Add(e.c[k + 2], c2_[k]);
      if (k + 1 < n) d.Add(e.c[k + 1], c1[static_cast<size_t>(k)]);
      d.Add(e.c[k], beta_sq);
      coef[k] = d.Result();
    }
    for (int k = n; k <= K; ++k) coef[k] = {};
    PolynomialPart(coef, ii);
    // The tail sum_{k=K+1..n-1} |eta_k| rho^k (rho^k exact: a power of 2),
    // nonnegative terms summed in RN: RadiusUp covers the rounding, n kTiny
    // the products' underflow.
    double tail = 0;
    for (int k = K + 1; k < n; ++k) tail += ball::Mag(coef[k]) * rho_pow_[k];
    rem_[ii] = ball::RadiusUp(tail + n * ball::kTiny);
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
  poly_step_ = poly_eval_ && std::fabs(h) >= 0x1p-300 && std::fabs(h) <= 0x1p300;
  if (exact_len_ > 0) {
    raw_ = {q0, v0, a0, q1, v1, a1};
  } else {
    Data(h, q0, v0, a0, q1, v1, a1);
  }
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
  int64_t bytes =
      HeapBytesOf(var_len_, c2d_, c1d_, bsqd_, poly_vars_, c1_, coordinate_of_var_, data_, center_,
                  vars_, beta_sq_, poly_, rem_, poly_int_, integral_, piece_ok_, stack_) +
      evaluator_.heap_bytes();
  if (poly_eval_)
    bytes += static_cast<int64_t>(sizeof(taylor::PolyEvaluator)) + poly_eval_->heap_bytes();
  return bytes;
}

}  // namespace tether
