// The ensemble's random draws (docs/ENSEMBLES.md, "Random draws"): a
// generator whose output is the same on every platform and standard
// library, so that a seed names the same instances everywhere.
// std::normal_distribution and std::uniform_real_distribution are not used:
// their algorithms are unspecified and differ between libstdc++ and libc++.
//
// - Stream: SplitMix64 (Steele, Lea and Flood 2014; the seeding generator
//   of xoshiro), one per (seed, instance index, distribution index), its
//   state the mix of the three, so a draw does not depend on any other.
// - Uniform on [0, 1): the top 53 bits of a 64-bit output times 2^-53.
// - Normal: Marsaglia's polar method (two uniforms on (-1, 1), rejected
//   outside the unit disc), with the natural logarithm computed here from
//   IEEE additions, multiplications and divisions only (not the C
//   library's log, whose last bits may differ between libraries). The file
//   that includes this is compiled with -ffp-contract=off, so no compiler
//   fuses those operations differently on machines with FMA.
#pragma once

#include "engine/internal/base/internal.h"

#include <cmath>
#include <cstdint>

namespace tether::ensemble_random {

inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  // The stream of draw `distribution` of instance `index` under `seed`.
  SplitMix64(uint64_t seed, uint64_t index, uint64_t distribution)
      : state_(Mix(seed + kGolden) ^ Mix(index * 2 + 1) ^ Mix((distribution + 1) * kGolden)) {}

  uint64_t Next() {
    state_ += kGolden;
    return Mix(state_);
  }
  // Uniform on [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  uint64_t state_;
};

// ln(x) for finite x > 0 from + - * / and frexp/ldexp (exact) only:
// x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1),
// |s| <= 0.1716, summed as the odd series to s^41 (next term < 1e-33).
inline double PortableLog(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2;
    e -= 1;
  }
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  double sum = 0;
  for (int k = 41; k >= 3; k -= 2) sum = (sum + 1.0 / k) * s2;
  const double ln_m = 2 * s * (1 + sum);
  constexpr double kLn2Hi = 0x1.62e42fefa3800p-1;   // ln 2, upper bits (exact times e)
  constexpr double kLn2Lo = 0x1.ef35793c76730p-45;  // ln 2 - kLn2Hi
  return (e * kLn2Hi + ln_m) + e * kLn2Lo;
}

// Standard normal by the polar method.
inline double StandardNormal(SplitMix64* g) {
  for (;;) {
    const double u = 2 * g->Uniform() - 1;
    const double v = 2 * g->Uniform() - 1;
    const double s = u * u + v * v;
    if (s >= 1 || s == 0) continue;
    return u * std::sqrt(-2 * PortableLog(s) / s);  // sqrt is correctly rounded (IEEE 754)
  }
}

}  // namespace tether::ensemble_random
