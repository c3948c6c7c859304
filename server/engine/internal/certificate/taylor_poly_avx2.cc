// The polynomial path's kernels for AVX2 (taylor_poly.h: the squares of
// taylor_poly.cc's PolySquareT, eta's coefficients of PolyEta, the
// coordinates' coefficients of PolyCoordinate): the same
// operations on the same operands in the same order, four lanes at a time
// instead of two, so the same bits (enclosure_test compares them:
// PolyKernelsHaveTheSameBitsOnEveryInstructionSet).
//
// Built with -mavx2 -ffp-contract=off (server/CMakeLists.txt; no -mfma: a
// fused multiply-add rounds once where the baseline kernel rounds twice)
// and run only where CPUID and the OS report AVX2 (PolyAvx2Available).
// Everything here but PolySquareAvx2 has internal linkage and no inline
// function of another header is called, so no AVX2 code can stand in for a
// baseline function at link time.
//
// Layout: the baseline kernel accumulates coefficient k of the square as a
// lane pair (midpoint, radius); here two coefficients k, k + 1 (k even)
// share one four-lane vector (m_k, r_k, m_{k+1}, r_{k+1}), and each term
// (i, k - i) of coefficient k is paired with the term (i, k + 1 - i) of
// coefficient k + 1: a_i's pair (m_i, u_i) twice against the operand pairs
// (m_j, v_j), (m_{j+1}, v_{j+1}). Each coefficient still receives its terms
// in increasing i. Where one of the two terms does not exist (j = -1 or
// j = LA) its half adds -0, which leaves every double as it is; the first
// term of a coefficient is added to -0 instead of being assigned (-0 + t = t
// for every t, zeros and NaN included).
#include "engine/internal/certificate/taylor_poly.h"

namespace tether::taylor {

#if defined(__AVX2__)

namespace {

typedef double V4 __attribute__((vector_size(32)));
typedef double V2x __attribute__((vector_size(16)));
typedef long long I4 __attribute__((vector_size(32)));

constexpr double kUnit = 0x1p-53;        // ball::kU
constexpr double kSmallest = 0x1p-1074;  // ball::kTiny

inline V4 Load4(const double* p) {
  V4 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void Store4(double* p, V4 v) { __builtin_memcpy(p, &v, sizeof v); }
inline void Store2x(double* p, V2x v) { __builtin_memcpy(p, &v, sizeof v); }
inline V4 Splat4(double x) { return V4{x, x, x, x}; }
inline V4 Abs4(V4 v) {
  const I4 mask = {0x7fffffffffffffffLL, 0x7fffffffffffffffLL, 0x7fffffffffffffffLL,
                   0x7fffffffffffffffLL};
  return reinterpret_cast<V4>(reinterpret_cast<I4>(v) & mask);
}
inline V2x Abs2x(V2x v) {
  typedef long long I2 __attribute__((vector_size(16)));
  const I2 mask = {0x7fffffffffffffffLL, 0x7fffffffffffffffLL};
  return reinterpret_cast<V2x>(reinterpret_cast<I2>(v) & mask);
}
// ball::RadiusUp2, four at a time (the same operations).
inline V4 RadiusUp4(V4 x) {
  const auto tiny = Abs4(x) < Splat4(0x1p-1035);
  const V4 product = (tiny ? Splat4(0) : x) * Splat4(1 + 0x1p-40);
  return (tiny ? x : product) + Splat4(kSmallest);
}
// (lo's low half, hi's high half).
inline V4 Halves(V4 lo, V4 hi) { return __builtin_shufflevector(lo, hi, 0, 1, 6, 7); }

// acc[g] += the terms (i, 2g - i) and (i, 2g + 1 - i) of the square's
// coefficients 2g and 2g + 1 (0 <= i, j < LA), a_i's pair (xp) twice against
// the operand pairs (yp), in increasing i; a half whose term does not exist
// adds -0.
template <int LA, int G, int NP>
inline void Accumulate(const V4* xp, const V4* yp, V4* acc) {
  const V4 nz = Splat4(-0.0);
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    const int k = 2 * g;
    const int lo = k - LA + 1 > 0 ? k - LA + 1 : 0, hi = k + 1 < LA - 1 ? k + 1 : LA - 1;
#pragma GCC unroll 8
    for (int i = lo; i <= hi; ++i) {
      // a_i's pair twice, against (y_{k-i}, y_{k+1-i}).
      const V4 xi = i % 2 == 0 ? __builtin_shufflevector(xp[i / 2], xp[i / 2], 0, 1, 0, 1)
                               : __builtin_shufflevector(xp[i / 2], xp[i / 2], 2, 3, 2, 3);
      const int j = k - i;  // -1 <= j <= LA - 1
      V4 y;
      if (j < 0) {
        y = __builtin_shufflevector(yp[0], yp[0], 0, 1, 0, 1);  // its low half unused
      } else if (j + 1 == LA) {
        // y_j twice: its high half unused. Not the padding y_LA, whose radius
        // lane is kTiny: a product with a subnormal result takes a microcode
        // assist (some hundred cycles on this project's AMD machines).
        y = j % 2 == 0 ? __builtin_shufflevector(yp[j / 2], yp[j / 2], 0, 1, 0, 1)
                       : __builtin_shufflevector(yp[j / 2], yp[j / 2], 2, 3, 2, 3);
      } else if (j % 2 == 0) {
        y = yp[j / 2];
      } else {
        y = __builtin_shufflevector(yp[j / 2], yp[j / 2 + 1], 2, 3, 4, 5);
      }
      V4 t = xi * y;
      if (j < 0) t = Halves(nz, t);        // coefficient k has no term j = -1
      if (j + 1 == LA) t = Halves(t, nz);  // coefficient k + 1 has no term j + 1 = LA
      acc[g] += t;
    }
  }
}

// Four coefficients' midpoints m and radii r as the squares' operand
// pairs (PolySquareT's x and y): xp[0..1] = (m_j, u_j, m_j+1, u_j+1) and
// yp[0..1] = (m_j, v_j, m_j+1, v_j+1), u = 2|m| + r, v = r + gamma |m|.
inline void OperandPairs(V4 m, V4 r, double gamma, V4* xp, V4* yp) {
  const V4 p = Abs4(m);
  const V4 u = Splat4(2) * p + r, v = r + Splat4(gamma) * p;
  xp[0] = __builtin_shufflevector(m, u, 0, 4, 1, 5);
  xp[1] = __builtin_shufflevector(m, u, 2, 6, 3, 7);
  yp[0] = __builtin_shufflevector(m, v, 0, 4, 1, 5);
  yp[1] = __builtin_shufflevector(m, v, 2, 6, 3, 7);
}

template <int LA, bool kAdd, bool kDiff>
void SquareAvx2(const PolySeries& a, const PolySeries* b, const PolySeries* z, PolySeries* c) {
  constexpr int LC = 2 * LA - 1, n = kAdd ? LA + 1 : LA;
  constexpr int LQ = (LA + 3) / 4 * 4;  // a's lanes read, in fours (a's padding is 0)
  constexpr int G = (LC + 1) / 2;       // coefficient pairs (2g, 2g + 1)
  constexpr int NP = LQ / 2;            // operand pairs formed
  constexpr double gamma = n * kUnit * (1 + 0x1p-40);  // gamma_n, as PolySquareT
  static_assert(LQ <= kPolyLanes && 2 * G <= kPolyLanes);
  // xp[q] = (m_2q, u_2q, m_2q+1, u_2q+1), yp[q] = (m_2q, v_2q, m_2q+1, v_2q+1):
  // PolySquareT's x and y, a pair of indices a vector.
  V4 xp[NP], yp[NP];
#pragma GCC unroll 4
  for (int i = 0; i < LQ; i += 4) {
    V4 m = Load4(&a.m[i]), r = Load4(&a.r[i]);
    if constexpr (kDiff) {
      m = m - Load4(&b->m[i]);
      r = RadiusUp4(r + Load4(&b->r[i]) + Splat4(kUnit) * Abs4(m));
    }
    OperandPairs(m, r, gamma, &xp[i / 2], &yp[i / 2]);
  }
  V4 acc[G];
  if constexpr (kAdd) {
    // (mz_k, Rz_k + gamma |mz_k|) as in PolySquareT; z's lanes from LC on
    // are 0 (coefficient LC is set to 0 below).
#pragma GCC unroll 4
    for (int k = 0; k < 2 * G; k += 4) {
      const V4 m = Load4(&z->m[k]), r = Load4(&z->r[k]) + Splat4(gamma) * Abs4(m);
      acc[k / 2] = __builtin_shufflevector(m, r, 0, 4, 1, 5);
      if (k / 2 + 1 < G) acc[k / 2 + 1] = __builtin_shufflevector(m, r, 2, 6, 3, 7);
    }
  } else {
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[g] = Splat4(-0.0);
  }
  Accumulate<LA, G, NP>(xp, yp, acc);
  // PolySquareT's rounding: the midpoints unchanged, the radii
  // RadiusUp(s) + (2n + 1) kTiny; coefficient LC is 0.
  const V4 up = {1, 1 + 0x1p-40, 1, 1 + 0x1p-40};
  const V4 add = {-0.0, (2 * n + 1) * kSmallest, -0.0, (2 * n + 1) * kSmallest};
  V4 f[G + 1];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) f[g] = acc[g] * up + add;
  f[G - 1] = Halves(f[G - 1], Splat4(0));
  f[G] = Splat4(0);
#pragma GCC unroll 8
  for (int g = 0; g < G; g += 2) {
    if (g + 1 < G) {
      Store4(&c->m[2 * g], __builtin_shufflevector(f[g], f[g + 1], 0, 2, 4, 6));
      Store4(&c->r[2 * g], __builtin_shufflevector(f[g], f[g + 1], 1, 3, 5, 7));
    } else {
      Store2x(&c->m[2 * g], V2x{f[g][0], f[g][2]});
      Store2x(&c->r[2 * g], V2x{f[g][1], f[g][3]});
    }
  }
#pragma GCC unroll 12
  for (int k = 2 * G; k < kPolyLanes; ++k) c->m[k] = c->r[k] = 0;
  c->len = LC;
}

// taylor_program.cc's SquareTruncatedT<LA, N> (the general path's square
// truncated at N coefficients): its x and y, every term added to +0 in
// increasing i, coefficients from LC on not computed (lanes LC..N-1 zeroed),
// the radii RadiusUp(s + 2 LA kTiny).
template <int LA, int N>
void SquareTruncatedAvx2(const PolySeries& a, const PolySeries&, PolySeries* c) {
  constexpr int LC = 2 * LA - 1 < N ? 2 * LA - 1 : N;
  constexpr int LQ = (LA + 3) / 4 * 4, G = (LC + 1) / 2, NP = LQ / 2;
  constexpr double gamma = LA * kUnit * (1 + 0x1p-40);
  static_assert(LQ <= kPolyLanes && 2 * G <= kPolyLanes);
  V4 xp[NP], yp[NP];
#pragma GCC unroll 4
  for (int i = 0; i < LQ; i += 4) {
    V4 m = Load4(&a.m[i]), r = Load4(&a.r[i]);
    if (i + 4 > LA) {
      // Lanes from LA on may hold a longer pass's coefficients (a Program's
      // series are written up to the pass length only): zeros instead, so
      // no stale subnormal enters a product.
      const V4 keep = {i < LA ? 1.0 : 0.0, i + 1 < LA ? 1.0 : 0.0, i + 2 < LA ? 1.0 : 0.0,
                       i + 3 < LA ? 1.0 : 0.0};
      m = keep != Splat4(0) ? m : Splat4(0);
      r = keep != Splat4(0) ? r : Splat4(0);
    }
    OperandPairs(m, r, gamma, &xp[i / 2], &yp[i / 2]);
  }
  V4 acc[G];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) acc[g] = Splat4(0);
  Accumulate<LA, G, NP>(xp, yp, acc);
  // The midpoints unchanged (+ -0, times 1), the radii (s + nt)(1 + 2^-40)
  // + kTiny: ball::RadiusUp(s + nt).
  constexpr double nt = 2 * LA * kSmallest;
  const V4 add = {-0.0, nt, -0.0, nt}, up = {1, 1 + 0x1p-40, 1, 1 + 0x1p-40},
           tiny = {-0.0, kSmallest, -0.0, kSmallest};
  V4 f[G + 1];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) f[g] = (acc[g] + add) * up + tiny;
  f[G] = Splat4(0);
#pragma GCC unroll 8
  for (int g = 0; g < G; g += 2) {
    if (2 * g + 4 <= LC) {
      Store4(&c->m[2 * g], __builtin_shufflevector(f[g], f[g + 1], 0, 2, 4, 6));
      Store4(&c->r[2 * g], __builtin_shufflevector(f[g], f[g + 1], 1, 3, 5, 7));
    } else {
#pragma GCC unroll 4
      for (int k = 2 * g; k < LC; ++k) {
        const V4& fk = f[k / 2];
        c->m[k] = fk[k % 2 == 0 ? 0 : 2];
        c->r[k] = fk[k % 2 == 0 ? 1 : 3];
      }
    }
  }
#pragma GCC unroll 8
  for (int k = LC; k < N; ++k) c->m[k] = c->r[k] = 0;
  c->len = LC;
}

// Columns of the 4 x 4 matrix whose rows are r0..r3.
inline void Transpose4(V4 r0, V4 r1, V4 r2, V4 r3, V4* c) {
  const V4 t0 = __builtin_shufflevector(r0, r1, 0, 4, 2, 6);
  const V4 t1 = __builtin_shufflevector(r0, r1, 1, 5, 3, 7);
  const V4 t2 = __builtin_shufflevector(r2, r3, 0, 4, 2, 6);
  const V4 t3 = __builtin_shufflevector(r2, r3, 1, 5, 3, 7);
  c[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
  c[1] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
  c[2] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
  c[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

// taylor_program.cc's SquarePairT<LA, N, NC>: one four-lane vector a
// coefficient (midpoint, the piece's radius, the centre's, 0), every term
// added to +0 in increasing i, as SquareTruncatedT's lane pairs. The
// operands' vectors are formed four coefficients at a time (each lane
// SquarePairT's operations: 2 p + r, r + gamma p) and transposed, and the
// results transposed back.
template <int LA, int N, int NC>
void SquarePairAvx2(const PolySeries& a, const PolySeries& ac, const PolySeries&, const PolySeries&,
                    PolySeries* c, PolySeries* cc) {
  static_assert(N == 8 && N <= kPolyLanes);
  constexpr int LC = 2 * LA - 1 < N ? 2 * LA - 1 : N;
  constexpr int LAC = LA < NC ? LA : NC;
  constexpr int LCC = 2 * LAC - 1 < NC ? 2 * LAC - 1 : NC;
  constexpr int LQ = (LA + 3) / 4 * 4;
  constexpr double gamma = LA * kUnit * (1 + 0x1p-40), gammac = LAC * kUnit * (1 + 0x1p-40);
  V4 x[LQ], y[LQ];
#pragma GCC unroll 2
  for (int i = 0; i < LQ; i += 4) {
    V4 m = Load4(&a.m[i]), r = Load4(&a.r[i]), rc = Load4(&ac.r[i]);
    if (i + 4 > LA) {
      // Lanes from LA on may hold a longer pass's coefficients: zeros
      // instead (their vectors are not used; no stale subnormal is).
      const V4 keep = {i < LA ? 1.0 : 0.0, i + 1 < LA ? 1.0 : 0.0, i + 2 < LA ? 1.0 : 0.0,
                       i + 3 < LA ? 1.0 : 0.0};
      m = keep != Splat4(0) ? m : Splat4(0);
      r = keep != Splat4(0) ? r : Splat4(0);
      rc = keep != Splat4(0) ? rc : Splat4(0);
    }
    const V4 p = Abs4(m), two_p = Splat4(2) * p;
    Transpose4(m, two_p + r, two_p + rc, Splat4(0), &x[i]);
    Transpose4(m, r + Splat4(gamma) * p, rc + Splat4(gammac) * p, Splat4(0), &y[i]);
  }
  V4 acc[LC];
#pragma GCC unroll 8
  for (int k = 0; k < LC; ++k) acc[k] = Splat4(0);
#pragma GCC unroll 8
  for (int i = 0; i < LA; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < LA; ++j) {
      if (i + j < LC) acc[i + j] += x[i] * y[j];
    }
  }
  // ball::RadiusUp(s + 2 LA kTiny) in lane 1, with 2 LAC kTiny in lane 2;
  // coefficients from LC on +0 in every lane.
  constexpr double nt = 2 * LA * kSmallest, ntc = 2 * LAC * kSmallest;
  const V4 add = {-0.0, nt, ntc, -0.0}, up = {1, 1 + 0x1p-40, 1 + 0x1p-40, 1},
           tiny = {-0.0, kSmallest, kSmallest, -0.0};
  V4 f[N];
#pragma GCC unroll 8
  for (int k = 0; k < N; ++k) f[k] = k < LC ? (acc[k] + add) * up + tiny : Splat4(0);
#pragma GCC unroll 2
  for (int k = 0; k < N; k += 4) {
    V4 rows[4];
    Transpose4(f[k], f[k + 1], f[k + 2], f[k + 3], rows);
    // The centre's radii from LCC on: 0.
    const V4 keep = {k < LCC ? 1.0 : 0.0, k + 1 < LCC ? 1.0 : 0.0, k + 2 < LCC ? 1.0 : 0.0,
                     k + 3 < LCC ? 1.0 : 0.0};
    Store4(&c->m[k], rows[0]);
    Store4(&cc->m[k], rows[0]);
    Store4(&c->r[k], rows[1]);
    Store4(&cc->r[k], keep != Splat4(0) ? rows[2] : Splat4(0));
  }
  c->len = LC;
  cc->len = LCC;
}

template <int LA>
constexpr PolySquareKernel kRow[2][2] = {
    {&SquareAvx2<LA, false, false>, &SquareAvx2<LA, false, true>},
    {&SquareAvx2<LA, true, false>, &SquareAvx2<LA, true, true>}};

// PolyEta four coefficients at a time: lanes k..k+3 of e, e shifted by
// one and by two (0 beyond lane 11, as PolyEta's last pair).
void EtaAvx2(const PolySeries& e, double e0m, double e0r, const double* c2, const double* c1,
             double cb, double* cm, double* cr) {
  const V4 vcb = Splat4(cb), zero = Splat4(0);
#pragma GCC unroll 3
  for (int k = 0; k < kPolyLanes; k += 4) {
    V4 e0 = Load4(&e.m[k]), r0 = Load4(&e.r[k]);
    if (k == 0) {
      e0[0] = e0m;
      r0[0] = e0r;
    }
    V4 e1, r1, e2, r2;
    if (k + 4 < kPolyLanes) {
      e1 = Load4(&e.m[k + 1]);
      r1 = Load4(&e.r[k + 1]);
      e2 = Load4(&e.m[k + 2]);
      r2 = Load4(&e.r[k + 2]);
    } else {
      e1 = __builtin_shufflevector(e0, zero, 1, 2, 3, 4);
      r1 = __builtin_shufflevector(r0, zero, 1, 2, 3, 4);
      e2 = __builtin_shufflevector(e0, zero, 2, 3, 4, 5);
      r2 = __builtin_shufflevector(r0, zero, 2, 3, 4, 5);
    }
    const V4 vc2 = Load4(&c2[k]), vc1 = Load4(&c1[k]);
    const V4 t2 = vc2 * e2, t1 = vc1 * e1, t0 = vcb * e0;
    const V4 rad = Abs4(vc2) * r2 + Abs4(vc1) * r1 + vcb * r0;
    const V4 mag = Abs4(t2) + Abs4(t1) + Abs4(t0);
    Store4(&cm[k], t2 + t1 + t0);
    Store4(&cr[k], RadiusUp4(Splat4(1 + 5 * kUnit) * rad + Splat4(8 * kUnit) * mag +
                             Splat4(4 * kSmallest)));
  }
}

// PolyCoordinate with coefficients 0..3 in one vector and 4..5 in a pair.
void CoordinateAvx2(const double (*W)[6], const double* x, double* m, double* r) {
  const double q0 = x[0];
  V4 sm4 = {q0, 0, 0, 0}, sa4 = Abs4(V4{q0, 0, 0, 0});
  V2x sm2 = {0, 0}, sa2 = {0, 0};
#pragma GCC unroll 5
  for (int b = 1; b < 6; ++b) {
    const V4 t4 = Load4(&W[b][0]) * Splat4(x[b]);
    sm4 += t4;
    sa4 += Abs4(t4);
    V2x w2;
    __builtin_memcpy(&w2, &W[b][4], sizeof w2);
    const V2x t2 = w2 * V2x{x[b], x[b]};
    sm2 += t2;
    sa2 += Abs2x(t2);
  }
  Store4(&m[0], sm4);
  Store2x(&m[4], sm2);
  Store4(&r[0], RadiusUp4(Splat4(9 * kUnit) * RadiusUp4(sa4) + Splat4(6 * kSmallest)));
  // The pair through the four-lane rounding, twice (not padded with zeros:
  // RadiusUp(0) is kTiny, and 9u kTiny a product with a subnormal operand
  // and result, which takes a microcode assist).
  const V4 r2 = RadiusUp4(Splat4(9 * kUnit) * RadiusUp4(V4{sa2[0], sa2[1], sa2[0], sa2[1]}) +
                          Splat4(6 * kSmallest));
  Store2x(&r[4], V2x{r2[0], r2[1]});
}

static_assert(kPolyLanes % 4 == 0);

}  // namespace

PolyEtaKernel PolyEtaAvx2() { return &EtaAvx2; }

PolyProductKernel PolySquareTruncatedAvx2(int la, int n) {
  constexpr PolyProductKernel k7[7] = {&SquareTruncatedAvx2<1, 7>, &SquareTruncatedAvx2<2, 7>,
                                       &SquareTruncatedAvx2<3, 7>, &SquareTruncatedAvx2<4, 7>,
                                       &SquareTruncatedAvx2<5, 7>, &SquareTruncatedAvx2<6, 7>,
                                       &SquareTruncatedAvx2<7, 7>};
  constexpr PolyProductKernel k8[8] = {&SquareTruncatedAvx2<1, 8>, &SquareTruncatedAvx2<2, 8>,
                                       &SquareTruncatedAvx2<3, 8>, &SquareTruncatedAvx2<4, 8>,
                                       &SquareTruncatedAvx2<5, 8>, &SquareTruncatedAvx2<6, 8>,
                                       &SquareTruncatedAvx2<7, 8>, &SquareTruncatedAvx2<8, 8>};
  if (la < 1 || la > n) return nullptr;
  return n == 7 ? k7[la - 1] : n == 8 ? k8[la - 1] : nullptr;
}
PolyCoordinateKernel PolyCoordinateAvx2() { return &CoordinateAvx2; }

PolyPairKernel PolySquarePairAvx2(int la) {
  constexpr PolyPairKernel k[8] = {&SquarePairAvx2<1, 8, 7>, &SquarePairAvx2<2, 8, 7>,
                                   &SquarePairAvx2<3, 8, 7>, &SquarePairAvx2<4, 8, 7>,
                                   &SquarePairAvx2<5, 8, 7>, &SquarePairAvx2<6, 8, 7>,
                                   &SquarePairAvx2<7, 8, 7>, &SquarePairAvx2<8, 8, 7>};
  return la >= 1 && la <= 8 ? k[la - 1] : nullptr;
}

PolySquareKernel PolySquareAvx2(int la, bool add, bool diff) {
  switch (la) {
    case 1: return kRow<1>[add][diff];
    case 2: return kRow<2>[add][diff];
    case 3: return kRow<3>[add][diff];
    case 4: return kRow<4>[add][diff];
    case 5: return kRow<5>[add][diff];
    case 6: return kRow<6>[add][diff];
    default: return nullptr;
  }
}

#else

// Not x86-64 (or a compiler without the flag): no AVX2 kernels.
PolySquareKernel PolySquareAvx2(int, bool, bool) { return nullptr; }
PolyEtaKernel PolyEtaAvx2() { return nullptr; }
PolyProductKernel PolySquareTruncatedAvx2(int, int) { return nullptr; }
PolyCoordinateKernel PolyCoordinateAvx2() { return nullptr; }
PolyPairKernel PolySquarePairAvx2(int) { return nullptr; }

#endif

}  // namespace tether::taylor
