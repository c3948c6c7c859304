// Why the engine's small dense solves are hand-written (the comment at the
// top of server/engine/internal/kkt/dynamics.h quotes this benchmark): W x = r
// for a symmetric positive definite W of fixed size m, solved by the
// square-root-free LDLᵀ loop the engine's kernel uses (evaluate_kernel.h,
// without the residual bookkeeping it fuses in) against Eigen 3.4's
// fixed-size LDLT (with its diagonal pivoting) and LLT. Every variant
// solves the same system; the first iteration's solutions are compared
// before anything is timed.
//
//   cmake --build build -j2 --target tether_dense_solve_bench
//   build/bin/tether_dense_solve_bench --benchmark_repetitions=3
//   --benchmark_report_aggregates_only=true
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <benchmark/benchmark.h>
#include <Eigen/Dense>

namespace {

template <int m>
struct System {
  double W[m * m], r[m];
  System() {
    std::mt19937 gen(1);
    std::uniform_real_distribution<double> u(-1, 1);
    double A[m * m];
    for (double& a : A) a = u(gen);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < m; ++j) {
        double s = i == j ? m : 0;
        for (int k = 0; k < m; ++k) s += A[i * m + k] * A[j * m + k];
        W[i * m + j] = s;
      }
    }
    for (double& x : r) x = u(gen);
  }
};

template <int m>
void SolveHand(const System<m>& sys, double* x) {
  double L[m * m], D[m];
  for (int j = 0; j < m; ++j) {
    double d = sys.W[j * m + j];
    for (int k = 0; k < j; ++k) d -= L[j * m + k] * L[j * m + k] * D[k];
    D[j] = d;
    const double inv = 1.0 / d;
    for (int i = j + 1; i < m; ++i) {
      double s = sys.W[i * m + j];
      for (int k = 0; k < j; ++k) s -= L[i * m + k] * L[j * m + k] * D[k];
      L[i * m + j] = s * inv;
    }
  }
  for (int i = 0; i < m; ++i) {
    double s = sys.r[i];
    for (int k = 0; k < i; ++k) s -= L[i * m + k] * x[k];
    x[i] = s;
  }
  for (int i = 0; i < m; ++i) x[i] /= D[i];
  for (int i = m - 1; i >= 0; --i) {
    double s = x[i];
    for (int k = i + 1; k < m; ++k) s -= L[k * m + i] * x[k];
    x[i] = s;
  }
}

template <int m>
using Mat = Eigen::Matrix<double, m, m, Eigen::RowMajor>;
template <int m>
using Vec = Eigen::Matrix<double, m, 1>;

template <int m>
void CheckEqualWork() {
  const System<m> sys;
  double x[m];
  SolveHand(sys, x);
  const Eigen::Map<const Mat<m>> W(sys.W);
  const Eigen::Map<const Vec<m>> r(sys.r);
  const Vec<m> ldlt = W.ldlt().solve(r), llt = W.llt().solve(r);
  for (int i = 0; i < m; ++i) {
    if (std::fabs(x[i] - ldlt[i]) > 1e-12 || std::fabs(x[i] - llt[i]) > 1e-12) {
      std::fprintf(stderr, "dense_solve_bench: m = %d solutions differ at %d\n", m, i);
      std::exit(1);
    }
  }
}

template <int m>
void BM_HandLdlt(benchmark::State& state) {
  CheckEqualWork<m>();
  System<m> sys;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sys.W);
    double x[m];
    SolveHand(sys, x);
    benchmark::DoNotOptimize(x);
  }
}

// Eigen's fixed-size factorisation `Decomposition` (LDLT or LLT) and solve.
template <int m, template <class, int> class Decomposition>
void BM_Eigen(benchmark::State& state) {
  CheckEqualWork<m>();
  System<m> sys;
  const Eigen::Map<const Mat<m>> W(sys.W);
  const Eigen::Map<const Vec<m>> r(sys.r);
  for (auto _ : state) {
    benchmark::DoNotOptimize(sys.W);
    Vec<m> x = Decomposition<Mat<m>, Eigen::Lower>(W).solve(r);
    benchmark::DoNotOptimize(x);
  }
}
template <int m>
void BM_EigenLdlt(benchmark::State& state) {
  BM_Eigen<m, Eigen::LDLT>(state);
}
template <int m>
void BM_EigenLlt(benchmark::State& state) {
  BM_Eigen<m, Eigen::LLT>(state);
}

#define TETHER_DENSE_SOLVE_SIZES(X) X(2) X(3) X(4) X(6) X(8)
#define TETHER_REGISTER(m)    \
  BENCHMARK(BM_HandLdlt<m>);  \
  BENCHMARK(BM_EigenLdlt<m>); \
  BENCHMARK(BM_EigenLlt<m>);
TETHER_DENSE_SOLVE_SIZES(TETHER_REGISTER)
#undef TETHER_REGISTER

}  // namespace

BENCHMARK_MAIN();
