// Judgement (c)'s update matrix of a stiffly accurate 3-stage implicit
// Runge-Kutta method against its stability function computed from the
// tableau alone: R(Z) = I + (b^T x Z)(I - A x Z)^-1 (1 x I) at Z = h [[0,
// 1], [-beta^2, -2 alpha]], b^T the last row of A, solved as a 6 x 6
// system (independent of the step code). For implicit_test (SDIRK3) and
// radau_test (RADAU_IIA).
#pragma once

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "engine/internal/integrate/integrator.h"

namespace tether::testing {

inline void ExpectUpdateIsTheStabilityFunction(Method method, const Eigen::Matrix3d& A) {
  for (double h : {1e-3, 0.01, 0.1, 1.0, 10.0}) {
    const double alpha = 1000, beta = 700;
    Eigen::Matrix2d Z;
    Z << 0, 1, -beta * beta, -2 * alpha;
    Z *= h;
    Eigen::MatrixXd big = Eigen::MatrixXd::Identity(6, 6), bz(2, 6), ones(6, 2);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) big.block<2, 2>(2 * i, 2 * j) -= A(i, j) * Z;
      bz.block<2, 2>(0, 2 * i) = A(2, i) * Z;
      ones.block<2, 2>(2 * i, 0) = Eigen::Matrix2d::Identity();
    }
    const Eigen::Matrix2d R = Eigen::Matrix2d::Identity() + bz * big.lu().solve(ones);
    const auto u = ResidualTestUpdate(method, h, alpha, beta);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        EXPECT_NEAR(u.R[i][j], R(i, j), 1e-9 * (1 + R.cwiseAbs().maxCoeff()))
            << "h " << h << " entry " << i << j;
      }
    }
    EXPECT_LT(u.spectral_radius, 1) << h;
  }
  // L-stable: rho -> 0 as h grows.
  EXPECT_LT(ResidualTestUpdate(method, 100, 1000, 1000).spectral_radius, 1e-3);
}

}  // namespace tether::testing
