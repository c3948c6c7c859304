// A lane group: the same double of kLaneWidth instances side by side, for
// the ensemble's lane-wise evaluation (docs/ENSEMBLES.md, "Lanes"). The
// arithmetic is xsimd's (libxsimd-dev, header-only: nothing to ship in the
// container), chosen over Highway for that and because its batch type
// carries the operators the tape's value expressions are written with
// (tape.h's TETHER_TAPE_OPERATIONS are expanded over Lanes unchanged).
//
// Only correctly rounded IEEE operations are lane-wise (+ - * /, sqrt, abs,
// negation): each lane gets the bits the scalar operation gives. Anything
// else (sin, exp, pow, min, ...) goes through Map, the scalar function once
// per lane, so the C library's bits are kept; unless an ensemble asks for
// fast functions (expr/tape_lanes.h, LaneFunctions::kFast), which computes
// sin, exp and the like with xsimd's vectorised functions instead.
//
// The width is 8 whatever the instruction set (one AVX-512 batch, two AVX2
// batches or four SSE2 batches), so which kernel runs never changes which
// instances share a group; and since lanes never mix, nor does it change
// any lane's bits. Where a batch holds fewer than 8 doubles, each operation
// runs on two or four independent batches, which also hides the latency of
// the tape's short dependent chains (docs/ENSEMBLES.md, "Lanes").
//
// Included only by translation units that instantiate the lane kernels
// (ensemble_lanes_*.cc): each is built for one instruction set, and every
// function here is a template on Arch, so no out-of-line copy compiled for
// AVX2 or AVX-512 can be picked by the linker for baseline code.
#pragma once

#include "engine/internal/base/internal.h"

#include <xsimd/xsimd.hpp>

namespace tether::lanes {

inline constexpr int kLaneWidth = 8;

template <class Arch>
struct Lanes {
  using Batch = xsimd::batch<double, Arch>;
  static constexpr int kBatches = kLaneWidth / static_cast<int>(Batch::size);
  static_assert(kBatches * static_cast<int>(Batch::size) == kLaneWidth);

  Batch b[kBatches];

  Lanes() = default;
  // Copies batch by batch. The implicit copy of the array would be an
  // aggregate copy, which GCC 12 (generic tuning) moves in 16-byte pieces:
  // then the next 32- or 64-byte load of the copy waits for the pieces'
  // stores (a failed store forwarding at every tape operand when a lane
  // group is two AVX2 or four SSE2 batches). Each batch's own copy is one
  // register move.
  TETHER_INLINE Lanes(const Lanes& o) {
    for (int k = 0; k < kBatches; ++k) b[k] = o.b[k];
  }
  TETHER_INLINE Lanes& operator=(const Lanes& o) {
    for (int k = 0; k < kBatches; ++k) b[k] = o.b[k];
    return *this;
  }
  // The same value in every lane (implicit: constants in value expressions).
  TETHER_INLINE Lanes(double x) {  // NOLINT(google-explicit-constructor)
    for (int k = 0; k < kBatches; ++k) b[k] = Batch(x);
  }
  static TETHER_INLINE Lanes Load(const double* p) {
    Lanes r;
    for (int k = 0; k < kBatches; ++k) r.b[k] = Batch::load_unaligned(p + k * Batch::size);
    return r;
  }
  TETHER_INLINE void Store(double* p) const {
    for (int k = 0; k < kBatches; ++k) b[k].store_unaligned(p + k * Batch::size);
  }
  TETHER_INLINE double Lane(int l) const {
    double t[kLaneWidth];
    Store(t);
    return t[l];
  }
};

#define TETHER_LANES_BINARY(op)                                                       \
  template <class Arch>                                                               \
  TETHER_INLINE Lanes<Arch> operator op(const Lanes<Arch>& x, const Lanes<Arch>& y) { \
    Lanes<Arch> r;                                                                    \
    for (int k = 0; k < Lanes<Arch>::kBatches; ++k) r.b[k] = x.b[k] op y.b[k];        \
    return r;                                                                         \
  }                                                                                   \
  template <class Arch>                                                               \
  TETHER_INLINE Lanes<Arch> operator op(double x, const Lanes<Arch>& y) {             \
    return Lanes<Arch>(x) op y;                                                       \
  }                                                                                   \
  template <class Arch>                                                               \
  TETHER_INLINE Lanes<Arch> operator op(const Lanes<Arch>& x, double y) {             \
    return x op Lanes<Arch>(y);                                                       \
  }                                                                                   \
  template <class Arch>                                                               \
  TETHER_INLINE Lanes<Arch>& operator op##=(Lanes<Arch>& x, const Lanes<Arch>& y) {   \
    x = x op y;                                                                       \
    return x;                                                                         \
  }
TETHER_LANES_BINARY(+)
TETHER_LANES_BINARY(-)
TETHER_LANES_BINARY(*)
TETHER_LANES_BINARY(/)
#undef TETHER_LANES_BINARY

template <class Arch>
TETHER_INLINE Lanes<Arch> operator-(const Lanes<Arch>& x) {
  Lanes<Arch> r;
  for (int k = 0; k < Lanes<Arch>::kBatches; ++k) r.b[k] = -x.b[k];
  return r;
}

template <class Arch>
TETHER_INLINE Lanes<Arch> Sqrt(const Lanes<Arch>& x) {
  Lanes<Arch> r;
  for (int k = 0; k < Lanes<Arch>::kBatches; ++k) r.b[k] = xsimd::sqrt(x.b[k]);
  return r;
}

template <class Arch>
TETHER_INLINE Lanes<Arch> Abs(const Lanes<Arch>& x) {
  Lanes<Arch> r;
  for (int k = 0; k < Lanes<Arch>::kBatches; ++k) r.b[k] = xsimd::abs(x.b[k]);
  return r;
}

// f(x_l, y_l) in each lane, by the scalar function itself.
template <class Arch, class F>
TETHER_INLINE Lanes<Arch> Map(const Lanes<Arch>& x, const Lanes<Arch>& y, F f) {
  double a[kLaneWidth], c[kLaneWidth];
  x.Store(a);
  y.Store(c);
  for (int l = 0; l < kLaneWidth; ++l) a[l] = f(a[l], c[l]);
  return Lanes<Arch>::Load(a);
}

// x^n by squaring: the scalar PowInt's sequence of products (tape.cc).
template <class Arch>
TETHER_INLINE Lanes<Arch> PowInt(const Lanes<Arch>& x, int n) {
  const bool invert = n < 0;
  unsigned k = static_cast<unsigned>(invert ? -n : n);
  Lanes<Arch> result(1.0), base = x;
  while (k) {
    if (k & 1u) result = result * base;
    base = base * base;
    k >>= 1;
  }
  return invert ? 1.0 / result : result;
}

}  // namespace tether::lanes
