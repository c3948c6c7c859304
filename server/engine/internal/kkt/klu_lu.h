// A sparse LU of a square matrix of fixed pattern, real or complex, by
// SuiteSparse's KLU (libsuitesparse-dev, linked statically: no run-time
// library), for RADAU_IIA's two Newton matrices (newton.h).
//
// Why KLU and not Eigen's SparseLU, which SDIRK3's matrix keeps: the Newton
// matrices here are small (96 x 96 on a chain of 32) and very sparse, where
// SparseLU's supernodal machinery (panels, dense blocks, its column
// elimination tree) costs more than the arithmetic. KLU is a left-looking
// Gilbert-Peierls LU made for such matrices (circuit simulation), with a
// fill-reducing ordering (AMD) computed once per pattern: on chain/32 at
// gains 1e5 RADAU_IIA's step takes 1.87x fewer instructions than with
// SparseLU (docs/benchmarks.md, "RADAU_IIA's sparse Newton pair factorised
// by KLU").
//
// Determinism: every Factor is klu_factor (a fresh partial-pivoting
// factorisation of the values given, on the symbolic analysis of the
// pattern fixed at construction), never klu_refactor (which reuses the
// previous factorisation's pivots and would make the result depend on the
// history): the factors are a function of the matrix alone, so a run
// resumed from a snapshot gets the bits of an uninterrupted one. No threads.
//
// Threading: a KluLu belongs to its NewtonSolver (one Simulation).
#pragma once

#include "engine/internal/base/internal.h"

#include <complex>
#include <cstdint>

#include "engine/status.h"

namespace tether {

class KluLu {
 public:
  // The pattern, compressed by columns (Ap: n + 1 column starts, Ai: row
  // indices, sorted in each column); the arrays must outlive the object.
  // complex: the values Factor takes are std::complex<double>.
  KluLu(int n, const int* Ap, const int* Ai, bool complex);
  ~KluLu();
  KluLu(const KluLu&) = delete;
  KluLu& operator=(const KluLu&) = delete;

  // Factorises the matrix of the pattern with these values (nnz of them, in
  // the pattern's order). ABORTED, naming `what`, when it is singular.
  Status Factor(const double* values, const char* what);
  Status Factor(const std::complex<double>* values, const char* what);
  // b = A^-1 b in place, with the last successful Factor.
  void Solve(double* b);
  void Solve(std::complex<double>* b);
  // Heap bytes: the symbolic analysis as KLU counts it, and the factors at
  // its estimate of their size (L, U and the off-diagonal blocks, with
  // KLU's per-column arrays and workspace), whether a factorisation was
  // made yet or not.
  int64_t heap_bytes() const;

 private:
  struct Impl;
  Status FactorValues(const double* interleaved, const char* what);
  Impl* impl_;
};

}  // namespace tether
