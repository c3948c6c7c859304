// Hand-written reference implementations for bench/engine_bench.cc.
//
// Each model computes exactly what the engine computes for the same
// description (docs/MATH.md, "Baumgarte-stabilised multiplier"):
//
//   W      = G M^-1 G^T
//   lambda = W^-1 (G M^-1 F + H + 2 alpha (G v) + beta^2 g)
//   a      = M^-1 (F - G^T lambda)
//
// integrated with the classical RK4 step the engine uses (integrator.h,
// StepRk4): four acceleration evaluations per step, the last one at the
// new state (reused as the next step's a0). Everything is plain scalar C++
// on fixed-size arrays: no allocation, no virtual calls, no intrinsics, no
// residual checks or bookkeeping, i.e. what a competent engineer would write
// by hand for one specific model. The inertia is diagonal (point masses) and
// the models are time-independent (g_t = 0).
//
//   CirclePendulumRef  x, y; g = (x^2 + y^2 - l^2)/2; closed-form 1x1 solve.
//   DoublePendulumRef  x1, y1, x2, y2; two rods; closed-form 2x2 solve.
//   ChainDenseRef<N>   N point masses, 2N coordinates, N distance
//                      constraints (mass 1 tied to the origin); dense G
//                      (N x 2N), dense W (N x N) and a dense Cholesky, the
//                      same O(d^2 m + d m^2 + m^3) algorithm as the engine.
//   ChainBandedRef<N>  The same chain exploiting its structure (each row of
//                      G has at most 4 non-zeros, W is tridiagonal): O(N).
//                      Not the same operation count as the engine; shown
//                      only to put the dense algorithm itself in context.
#pragma once

#include <array>
#include <cmath>

namespace tether_bench {

// Gains and gravity shared by every benchmark model.
struct Gains {
  double alpha = 10;
  double beta = 10;
};

// RK4 on q' = v, v' = a(q, v) with fixed-size state, exactly as the engine's
// Integrator::StepRk4 orders its operations.
template <class Model>
class Rk4 {
 public:
  static constexpr int kD = Model::kDof;

  explicit Rk4(const Model& model, double h) : model_(model), h_(h) {}

  // Positions the integrator and evaluates a0 (as Simulation::BeginRun does).
  void Reset(const double* q0, const double* v0) {
    for (int i = 0; i < kD; ++i) {
      q_[i] = q0[i];
      v_[i] = v0[i];
    }
    model_.Accel(q_.data(), v_.data(), a_.data());
  }

  void Step() {
    const double h = h_;
    double Q2[kD], V2[kD], A2[kD], Q3[kD], V3[kD], A3[kD], Q4[kD], V4[kD], A4[kD];
    for (int i = 0; i < kD; ++i) {
      Q2[i] = q_[i] + 0.5 * h * v_[i];
      V2[i] = v_[i] + 0.5 * h * a_[i];
    }
    model_.Accel(Q2, V2, A2);
    for (int i = 0; i < kD; ++i) {
      Q3[i] = q_[i] + 0.5 * h * V2[i];
      V3[i] = v_[i] + 0.5 * h * A2[i];
    }
    model_.Accel(Q3, V3, A3);
    for (int i = 0; i < kD; ++i) {
      Q4[i] = q_[i] + h * V3[i];
      V4[i] = v_[i] + h * A3[i];
    }
    model_.Accel(Q4, V4, A4);
    const double h6 = h / 6;
    for (int i = 0; i < kD; ++i) {
      const double q1 = q_[i] + h6 * (v_[i] + 2 * V2[i] + 2 * V3[i] + V4[i]);
      const double v1 = v_[i] + h6 * (a_[i] + 2 * A2[i] + 2 * A3[i] + A4[i]);
      q_[i] = q1;
      v_[i] = v1;
    }
    // The acceleration at the new state (the engine evaluates it too: it is
    // the frame's `a` and the next step's a0).
    model_.Accel(q_.data(), v_.data(), a_.data());
  }

  void Steps(long n) {
    for (long k = 0; k < n; ++k) Step();
  }

  const double* q() const { return q_.data(); }
  const double* v() const { return v_.data(); }

 private:
  Model model_;
  double h_;
  std::array<double, kD> q_{}, v_{}, a_{};
};

// ---------------------------------------------------------------------------
// Circle pendulum: one mass m on g = (x^2 + y^2 - l^2)/2, gravity along -y.
struct CirclePendulumRef {
  static constexpr int kDof = 2;
  double l = 1, m = 1, grav = 9.81;
  Gains k;

  void Accel(const double* q, const double* v, double* a) const {
    const double x = q[0], y = q[1], vx = v[0], vy = v[1];
    const double minv = 1.0 / m;
    const double Fx = 0, Fy = -m * grav;
    const double g = 0.5 * (x * x + y * y - l * l);
    const double gd = x * vx + y * vy;            // G v
    const double H = vx * vx + vy * vy;           // D^2 g [v, v]
    const double W = (x * x + y * y) * minv;      // G M^-1 G^T
    const double GMF = (x * Fx + y * Fy) * minv;  // G M^-1 F
    const double lambda = (GMF + H + 2 * k.alpha * gd + k.beta * k.beta * g) / W;
    a[0] = (Fx - x * lambda) * minv;
    a[1] = (Fy - y * lambda) * minv;
  }
};

// ---------------------------------------------------------------------------
// Double pendulum in Cartesian coordinates (x1, y1, x2, y2):
//   g1 = (x1^2 + y1^2 - l1^2)/2,  g2 = ((x2-x1)^2 + (y2-y1)^2 - l2^2)/2.
struct DoublePendulumRef {
  static constexpr int kDof = 4;
  double l1 = 1, l2 = 1, m1 = 1, m2 = 1, grav = 9.81;
  Gains k;

  void Accel(const double* q, const double* v, double* a) const {
    const double x1 = q[0], y1 = q[1], x2 = q[2], y2 = q[3];
    const double vx1 = v[0], vy1 = v[1], vx2 = v[2], vy2 = v[3];
    const double i1 = 1.0 / m1, i2 = 1.0 / m2;
    const double F1x = 0, F1y = -m1 * grav, F2x = 0, F2y = -m2 * grav;
    const double dx = x2 - x1, dy = y2 - y1, dvx = vx2 - vx1, dvy = vy2 - vy1;
    // G = [[x1, y1, 0, 0], [-dx, -dy, dx, dy]].
    const double g1 = 0.5 * (x1 * x1 + y1 * y1 - l1 * l1);
    const double g2 = 0.5 * (dx * dx + dy * dy - l2 * l2);
    const double gd1 = x1 * vx1 + y1 * vy1;
    const double gd2 = dx * dvx + dy * dvy;
    const double H1 = vx1 * vx1 + vy1 * vy1;
    const double H2 = dvx * dvx + dvy * dvy;
    // W = G M^-1 G^T (symmetric 2x2).
    const double W11 = (x1 * x1 + y1 * y1) * i1;
    const double W12 = -(x1 * dx + y1 * dy) * i1;
    const double W22 = (dx * dx + dy * dy) * (i1 + i2);
    // G M^-1 F.
    const double b1x = F1x * i1, b1y = F1y * i1, b2x = F2x * i2, b2y = F2y * i2;
    const double r1 = x1 * b1x + y1 * b1y + H1 + 2 * k.alpha * gd1 + k.beta * k.beta * g1;
    const double r2 =
        dx * (b2x - b1x) + dy * (b2y - b1y) + H2 + 2 * k.alpha * gd2 + k.beta * k.beta * g2;
    // 2x2 solve (Cramer).
    const double det = W11 * W22 - W12 * W12;
    const double lam1 = (W22 * r1 - W12 * r2) / det;
    const double lam2 = (W11 * r2 - W12 * r1) / det;
    // a = M^-1 (F - G^T lambda).
    a[0] = (F1x - x1 * lam1 + dx * lam2) * i1;
    a[1] = (F1y - y1 * lam1 + dy * lam2) * i1;
    a[2] = (F2x - dx * lam2) * i2;
    a[3] = (F2y - dy * lam2) * i2;
  }
};

// ---------------------------------------------------------------------------
// Chain of N point masses: coordinates (x1, y1, ..., xN, yN); constraint i
// (0-based) ties mass i to mass i-1 (mass -1 is the origin):
//   g_i = ((x_i - x_{i-1})^2 + (y_i - y_{i-1})^2 - l^2)/2.
template <int N>
struct ChainParams {
  double l = 1;
  double grav = 9.81;
  std::array<double, N> mass{};
  Gains k;
};

// Dense: the engine's algorithm with plain loops over full matrices.
template <int N>
struct ChainDenseRef {
  static constexpr int kDof = 2 * N;
  static constexpr int kD = 2 * N, kM = N;
  ChainParams<N> p;

  void Accel(const double* q, const double* v, double* a) const {
    double minv[kD], F[kD];
    for (int i = 0; i < N; ++i) {
      minv[2 * i] = minv[2 * i + 1] = 1.0 / p.mass[i];
      F[2 * i] = 0;
      F[2 * i + 1] = -p.mass[i] * p.grav;
    }
    // g, G (dense, m x d), H.
    double g[kM], G[kM][kD], H[kM];
    for (int i = 0; i < kM; ++i) {
      for (int j = 0; j < kD; ++j) G[i][j] = 0;
      const double px = i ? q[2 * i - 2] : 0, py = i ? q[2 * i - 1] : 0;
      const double pvx = i ? v[2 * i - 2] : 0, pvy = i ? v[2 * i - 1] : 0;
      const double dx = q[2 * i] - px, dy = q[2 * i + 1] - py;
      const double dvx = v[2 * i] - pvx, dvy = v[2 * i + 1] - pvy;
      g[i] = 0.5 * (dx * dx + dy * dy - p.l * p.l);
      H[i] = dvx * dvx + dvy * dvy;
      G[i][2 * i] = dx;
      G[i][2 * i + 1] = dy;
      if (i) {
        G[i][2 * i - 2] = -dx;
        G[i][2 * i - 1] = -dy;
      }
    }
    // rhs = G M^-1 F + H + 2 alpha G v + beta^2 g.
    double b[kD], rhs[kM];
    for (int j = 0; j < kD; ++j) b[j] = F[j] * minv[j];
    for (int i = 0; i < kM; ++i) {
      double gmf = 0, gv = 0;
      for (int j = 0; j < kD; ++j) {
        gmf += G[i][j] * b[j];
        gv += G[i][j] * v[j];
      }
      rhs[i] = gmf + H[i] + 2 * p.k.alpha * gv + p.k.beta * p.k.beta * g[i];
    }
    // W = G M^-1 G^T (lower triangle), then its Cholesky in place.
    double GM[kM][kD], W[kM][kM];
    for (int i = 0; i < kM; ++i) {
      for (int j = 0; j < kD; ++j) GM[i][j] = G[i][j] * minv[j];
    }
    for (int i = 0; i < kM; ++i) {
      for (int k = 0; k <= i; ++k) {
        double s = 0;
        for (int j = 0; j < kD; ++j) s += GM[i][j] * G[k][j];
        W[i][k] = s;
      }
    }
    for (int j = 0; j < kM; ++j) {
      double s = W[j][j];
      for (int k = 0; k < j; ++k) s -= W[j][k] * W[j][k];
      const double piv = std::sqrt(s);
      W[j][j] = piv;
      for (int i = j + 1; i < kM; ++i) {
        double r = W[i][j];
        for (int k = 0; k < j; ++k) r -= W[i][k] * W[j][k];
        W[i][j] = r / piv;
      }
    }
    // lambda = W^-1 rhs (forward, then back substitution).
    double lam[kM];
    for (int i = 0; i < kM; ++i) {
      double s = rhs[i];
      for (int k = 0; k < i; ++k) s -= W[i][k] * lam[k];
      lam[i] = s / W[i][i];
    }
    for (int i = kM - 1; i >= 0; --i) {
      double s = lam[i];
      for (int k = i + 1; k < kM; ++k) s -= W[k][i] * lam[k];
      lam[i] = s / W[i][i];
    }
    // a = M^-1 (F - G^T lambda).
    for (int j = 0; j < kD; ++j) {
      double s = F[j];
      for (int i = 0; i < kM; ++i) s -= G[i][j] * lam[i];
      a[j] = s * minv[j];
    }
  }
};

// Banded: the same mathematics using the chain's sparsity (tridiagonal W,
// Thomas-style LDL^T). O(N) per evaluation.
template <int N>
struct ChainBandedRef {
  static constexpr int kDof = 2 * N;
  ChainParams<N> p;

  void Accel(const double* q, const double* v, double* a) const {
    double dx[N], dy[N], inv[N], diag[N], off[N], rhs[N], lam[N];
    for (int i = 0; i < N; ++i) inv[i] = 1.0 / p.mass[i];
    for (int i = 0; i < N; ++i) {
      const double px = i ? q[2 * i - 2] : 0, py = i ? q[2 * i - 1] : 0;
      const double pvx = i ? v[2 * i - 2] : 0, pvy = i ? v[2 * i - 1] : 0;
      dx[i] = q[2 * i] - px;
      dy[i] = q[2 * i + 1] - py;
      const double dvx = v[2 * i] - pvx, dvy = v[2 * i + 1] - pvy;
      const double g = 0.5 * (dx[i] * dx[i] + dy[i] * dy[i] - p.l * p.l);
      const double gv = dx[i] * dvx + dy[i] * dvy;
      const double H = dvx * dvx + dvy * dvy;
      // G_i M^-1 F: gravity gives M^-1 F = (0, -grav) for every mass, so the
      // difference vanishes except for the first link.
      const double bprev = i ? -p.grav : 0;
      const double gmf = dy[i] * (-p.grav - bprev);
      rhs[i] = gmf + H + 2 * p.k.alpha * gv + p.k.beta * p.k.beta * g;
      const double d2 = dx[i] * dx[i] + dy[i] * dy[i];
      diag[i] = d2 * (inv[i] + (i ? inv[i - 1] : 0));
      off[i] = i ? -(dx[i] * dx[i - 1] + dy[i] * dy[i - 1]) * inv[i - 1] : 0;  // W[i][i-1]
    }
    // Tridiagonal solve (forward elimination, back substitution).
    for (int i = 1; i < N; ++i) {
      const double f = off[i] / diag[i - 1];
      diag[i] -= f * off[i];
      rhs[i] -= f * rhs[i - 1];
    }
    lam[N - 1] = rhs[N - 1] / diag[N - 1];
    for (int i = N - 2; i >= 0; --i) lam[i] = (rhs[i] - off[i + 1] * lam[i + 1]) / diag[i];
    // a_i = M_i^-1 (F_i - lambda_i d_i + lambda_{i+1} d_{i+1}).
    for (int i = 0; i < N; ++i) {
      double fx = -lam[i] * dx[i], fy = -p.mass[i] * p.grav - lam[i] * dy[i];
      if (i + 1 < N) {
        fx += lam[i + 1] * dx[i + 1];
        fy += lam[i + 1] * dy[i + 1];
      }
      a[2 * i] = fx * inv[i];
      a[2 * i + 1] = fy * inv[i];
    }
  }
};

}  // namespace tether_bench
