// The defect enclosure's polynomial paths (defect_enclosure.h): for
// constraints that are polynomials of degree at most 2 in q along the
// quintic, every Taylor coefficient of eta from one evaluation at the
// piece's centre, in ball arithmetic or, where the a priori error bound of
// taylor::PolyEvaluator applies, in plain floating point with that bound.
// Apart from defect_enclosure.cc (the general Taylor form with a pass over
// the piece, the step's pieces) because it is a second, self-contained
// evaluation scheme of its own length.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/internal/certificate/defect_enclosure.h"

namespace tether {

using ball::Abs2;
using ball::Ball;
using ball::Dot;
using ball::Load2;
using ball::Splat2;
using ball::Store2;
using ball::V2;

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

const double (*DefectEncloser::DoubleWeightsAt(double theta_m, double h))[6] {
  if (theta_m == 0.5) return wd_root_;
  Weights(theta_m, &scratch_weights_);
  DoubleWeights(scratch_weights_, h, wd_scratch_);
  return wd_scratch_;
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
  const double(*W)[6] = DoubleWeightsAt(theta_m, h);
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
    if (pv.kind == PolyVar::kPosition) {
      CoordinateCoefficients(W, i, s.m, s.r);
    } else {
      // A velocity: (k + 1) d_{k+1} / h = V d_{k+1} for V_k = fl((k + 1)
      // fl(1/h)), within 2.02 u of (k + 1) / h: the error is at most
      // (1 + 2.02 u) |V| r + 3.02 u |V m| + kTiny / 2.
      double dm[6], drr[6];
      CoordinateCoefficients(W, i, dm, drr);
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
    // Over kPolyLanes lanes (e's are 0 from e.len on, and e_k = 0 for
    // k >= kMaxLength, beyond the lanes too: PolyEvaluator::Supports).
    constexpr int L = taylor::kMaxLength, N = taylor::kPolyLanes;
    static_assert(N >= L + 1 && N % 2 == 0);
    alignas(32) double cm[N], cr[N];
    // The root's offset k on coefficient 0 (root = f (x + k)): as kAddShort,
    // fl(x_0 + k) with its rounding u |fl(x_0 + k)| added to the radius.
    const double offset = poly_eval_->root_offset(ii);
    const double e0m = e.m[0] + offset;
    const double e0r = offset == 0 ? e.r[0] : ball::RadiusUp(e.r[0] + kU * std::fabs(e0m));
    eta_(e, e0m, e0r, c2d_[ii].data(), c1d_[ii].data(), bsqd_[ii], cm, cr);
    poly_[ii] = PolynomialPart(cm, cr);
    poly_int_[ii] = PolynomialIntegral(cm, cr);
    // The tail sum_{k=K+1..L-1} |eta_k| rho^k (rho^k exact), nonnegative
    // terms summed in RN: RadiusUp covers the rounding, L kTiny the
    // products' underflow.
    double tail = 0;
    for (int k = K + 1; k < L; ++k) tail += (std::fabs(cm[k]) + cr[k]) * rho_pow_[k];
    rem_[ii] = ball::RadiusUp(tail + ball::TinyTimes(L));
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
    rem_[ii] = ball::RadiusUp(tail + ball::TinyTimes(n));
    if (!(poly_[ii] <= std::numeric_limits<double>::max()) ||
        !(rem_[ii] <= std::numeric_limits<double>::max())) {
      piece_ok_[ii] = 0;
    }
  }
}

}  // namespace tether
