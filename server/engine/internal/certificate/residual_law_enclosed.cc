// Proven upper bounds of the residual law's closed forms (certificate.h,
// residual_law::*Upper): the ENCLOSED certificate's e_hom and integral of
// |k|, evaluated in interval.h's outward-rounded arithmetic.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "engine/internal/base/interval.h"
#include "engine/internal/certificate/certificate.h"

namespace tether::residual_law {
namespace {

using interval::Interval;

enum class Damping { kCritical, kOver, kUnder };

// Exact classification: (alpha - beta)(alpha + beta) has the sign of
// alpha - beta. Near-critical gains take the over- or underdamped form,
// whose interval evaluation stays valid (only wider) where it cancels.
Damping Kind(double alpha, double beta) {
  return alpha == beta ? Damping::kCritical : (alpha > beta ? Damping::kOver : Damping::kUnder);
}

// sqrt(|alpha^2 - beta^2|) as an interval (not critical: alpha != beta).
Interval Root(double alpha, double beta) {
  return interval::Sqrt(
      interval::Abs((Interval(alpha) - Interval(beta)) * (Interval(alpha) + Interval(beta))));
}

// Overdamped roots r1 > r2 of r^2 + 2 alpha r + beta^2 (alpha > beta):
// r2 = -alpha - s, r1 = -beta^2 / (alpha + s) without cancellation (0 when
// beta = 0), s = sqrt(alpha^2 - beta^2).
struct OverRoots {
  Interval r1, r2;
};
OverRoots Over(double alpha, double beta) {
  const Interval a(alpha), s = Root(alpha, beta);
  return {beta == 0 ? Interval(0.0) : -(Interval(beta) * Interval(beta)) / (a + s), -(a + s)};
}

// e_hom(t) for every (e0, w0) in E0 x W0 and t in `t`.
Interval HomogeneousI(double alpha, double beta, const Interval& E0, const Interval& W0,
                      const Interval& t) {
  const Interval a(alpha);
  switch (Kind(alpha, beta)) {
    case Damping::kCritical: return (E0 + (W0 + a * E0) * t) * interval::Exp(-(a * t));
    case Damping::kOver: {
      // e^{r2 t} (E0 + (W0 - r2 E0) t f(2 s t)), f(x) = expm1(x) / x, the
      // same function as c1 e^{r1 t} + c2 e^{r2 t} (r1 - r2 = 2 s) without
      // its cancellation near the critical point: there c1 and c2 are huge
      // and opposite, and their interval sum was wide (alpha = 10 +
      // 1e-12, beta = 10 bounded a free response of 0.0102 by 1725). f is
      // increasing, so its range over an interval is that of its ends.
      // For x = 2 s t above 1 the cancellation is mild (the exponentials
      // differ by e or more) and f would overflow far out: the c1, c2 form.
      const auto [r1, r2] = Over(alpha, beta);
      const Interval x = Interval(2.0) * Root(alpha, beta) * t;
      if (x.hi <= 1) {
        auto f = [](double at) {
          if (!(at > 0)) return Interval(1.0);  // f(0) = 1 (x >= 0 here)
          return interval::Expm1(Interval(at)) / Interval(at);
        };
        const Interval F = interval::Hull(f(x.lo), f(x.hi));
        return interval::Exp(r2 * t) * (E0 + (W0 - r2 * E0) * t * F);
      }
      const Interval c1 = (W0 - r2 * E0) / (r1 - r2);
      const Interval c2 = E0 - c1;
      return c1 * interval::Exp(r1 * t) + c2 * interval::Exp(r2 * t);
    }
    case Damping::kUnder: {
      const Interval mu = Root(alpha, beta);
      const Interval B = (W0 + a * E0) / mu;
      const Interval mt = mu * t;
      return interval::Exp(-(a * t)) * (E0 * interval::Cos(mt) + B * interval::Sin(mt));
    }
  }
  return interval::Entire();
}

Interval FromBall(const ball::Ball& b) { return ball::ToInterval(b); }

}  // namespace

double HomogeneousUpper(double alpha, double beta, const ball::Ball& e0, const ball::Ball& w0,
                        double T) {
  if (e0.m == 0 && e0.r == 0 && w0.m == 0 && w0.r == 0) return 0;
  return HomogeneousI(alpha, beta, FromBall(e0), FromBall(w0), Interval(T)).mag();
}

double MaxHomogeneousUpper(double alpha, double beta, const ball::Ball& e0, const ball::Ball& w0,
                           double T) {
  if (e0.m == 0 && e0.r == 0 && w0.m == 0 && w0.r == 0) return 0;
  const Interval E0 = FromBall(e0), W0 = FromBall(w0);
  if (!(T > 0)) return HomogeneousI(alpha, beta, E0, W0, Interval(0.0)).mag();
  // e_hom' is the free response from (w0, -2 alpha w0 - beta^2 e0).
  const Interval E1 = W0, W1 = -(Interval(2 * alpha) * W0) - Interval(beta) * Interval(beta) * E0;
  auto value = [&](const Interval& t) { return HomogeneousI(alpha, beta, E0, W0, t); };
  // |e_hom| over [a, b]: where e_hom' keeps its sign the largest value is
  // at an end (tight); otherwise the mean-value form around the middle,
  // second-order tight near the critical point, or the natural extension.
  auto at = [&](const Interval& t) {
    const Interval d = HomogeneousI(alpha, beta, E1, W1, t);
    if (d.lo > 0 || d.hi < 0)
      return std::max(value(Interval(t.lo)).mag(), value(Interval(t.hi)).mag());
    const double mid = t.lo + (t.hi - t.lo) / 2;
    const Interval mean = value(Interval(mid)) + d * (t - Interval(mid));
    return std::min(mean.mag(), value(t).mag());
  };
  // A target the maximum is near: the values at the ends and at the
  // floating-point critical point (MaxHomogeneous's), with their balls.
  const double target =
      std::max({at(Interval(0.0)), at(Interval(T)), MaxHomogeneous(alpha, beta, e0.m, w0.m, T)});
  // Underdamped: |e_hom(t)| <= e^{-alpha t} sqrt(A^2 + B^2) caps a piece
  // starting at time a (the envelope makes far pieces cheap to accept, and
  // is the maximum itself without damping).
  const bool under = Kind(alpha, beta) == Damping::kUnder;
  Interval amplitude(0.0);
  if (under) {
    const Interval A(E0.mag()), B(((W0 + Interval(alpha) * E0) / Root(alpha, beta)).mag());
    amplitude = interval::Sqrt(A * A + B * B + Interval(std::numeric_limits<double>::min()));
  }
  // Bisection: accept a piece whose enclosure is within 1e-9 of the
  // target; split the others, at most kBudget evaluations in all; what is
  // left unresolved contributes its enclosure (valid, only looser).
  constexpr int kBudget = 256;
  const double accept = target * (1 + 1e-9) + 1e-300;
  double best = target;
  struct Piece {
    double a, b;
  };
  std::vector<Piece> stack{{0, T}};
  int evaluations = 0;
  while (!stack.empty()) {
    const Piece p = stack.back();
    stack.pop_back();
    double up = at(Interval(p.a, p.b));
    if (under)
      up = std::min(up, (interval::Exp(-(Interval(alpha) * Interval(p.a))) * amplitude).hi);
    ++evaluations;
    if (std::isnan(up)) return std::numeric_limits<double>::infinity();
    const double mid = p.a + (p.b - p.a) / 2;
    if (up <= accept || evaluations >= kBudget || !(mid > p.a && mid < p.b)) {
      best = std::max(best, up);
      continue;
    }
    stack.push_back({mid, p.b});
    stack.push_back({p.a, mid});
  }
  return best;
}

double DefectGainUpper(double alpha, double beta, double T) {
  if (!(T > 0)) return 0;
  const Interval t(T), a(alpha);
  switch (Kind(alpha, beta)) {
    case Damping::kCritical: {
      if (alpha == 0) return (t * t / Interval(2.0)).hi;
      // (1 - (1 + x) e^{-x}) / alpha^2, x = alpha T: the interval form is
      // valid where it cancels (x small), only wider.
      const Interval x = a * t;
      const Interval f = -interval::Expm1(-x) - x * interval::Exp(-x);
      return (Interval(std::max(f.lo, 0.0), f.hi) / (a * a)).hi;
    }
    case Damping::kOver: {
      // k(s) = (e^{r1 s} - e^{r2 s}) / (r1 - r2) >= 0; Phi(r) = expm1(r T) / r.
      const auto [r1, r2] = Over(alpha, beta);
      auto phi = [&](const Interval& r) { return interval::Expm1(r * t) / r; };
      return (((beta == 0 ? t : phi(r1)) - phi(r2)) / (r1 - r2)).hi;
    }
    case Damping::kUnder: {
      // k(s) = e^{-alpha s} sin(mu s) / mu: whole half periods are a
      // geometric series, then the partial one (certificate.cc, DefectGain).
      const Interval mu = Root(alpha, beta);
      const Interval pi_i = interval::Outward(std::numbers::pi, std::numbers::pi, 1);
      const Interval half_r = pi_i / mu;  // pi itself is rounded: widen by an ulp
      const Interval denom = a * a + mu * mu;
      const Interval rho = interval::Exp(-(a * half_r));
      const Interval I0 = mu * (Interval(1.0) + rho) / denom;
      auto whole = [&](double n) {
        if (n == 0) return Interval(0.0);
        if (alpha == 0) return Interval(n) * I0;
        return I0 * -interval::Expm1(-(a * Interval(n) * half_r)) / -interval::Expm1(-(a * half_r));
      };
      const double N = std::floor(T / ((half_r.lo + half_r.hi) / 2));
      const Interval x = t - Interval(N) * half_r;
      if (!(x.lo >= 0 && x.hi <= half_r.lo) || !std::isfinite(N)) {
        // The partial period is not certainly within [0, half]: N + 2 whole
        // half periods surely cover [0, T] and |k| >= 0.
        return (whole(N + 2) / mu).hi;
      }
      const Interval part = (mu - interval::Exp(-(a * x)) *
                                      (a * interval::Sin(mu * x) + mu * interval::Cos(mu * x))) /
                            denom;
      return ((whole(N) + interval::Exp(-(a * Interval(N) * half_r)) * part) / mu).hi;
    }
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace tether::residual_law
