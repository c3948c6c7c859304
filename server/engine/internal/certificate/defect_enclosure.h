// The ENCLOSED certificate's step enclosure (docs/MATH.md section 10):
// an upper bound, proven for every time in the step, of the defect
//   eta_i(t) = e_i'' + 2 alpha_i e_i' + beta_i^2 e_i,  e_i(t) = g_i(q_h(t), t),
// of the step's quintic Hermite interpolant q_h (certificate.h).
//
// Method (a Taylor form with a proven remainder, in theta = (t - t0) / h):
// on a piece [theta_m - rho, theta_m + rho] of the step,
//   eta(theta_m + s) = sum_{k=0..K} eta_k s^k + R s^(K+1),   |s| <= rho,
// where eta_k are eta's Taylor coefficients at theta_m and R encloses its
// (K+1)-th Taylor coefficient at every point of the piece (Taylor's theorem
// with the Lagrange remainder). Both come from one Taylor-mode evaluation
// of the constraints g along the interpolant in ball arithmetic (taylor.h):
// at the point theta_m for eta_0..eta_K, over the whole piece for R. The
// coefficients are small where the defect is (they are the defect's own,
// not those of the large terms G q'' and H that cancel in it), so the
// enclosure stays within a small factor of the true supremum. The
// polynomial part is bounded both by sum |eta_k| rho^k and by the Lebesgue
// constant of K + 1 Chebyshev nodes times its largest value there; the
// smaller is taken. A piece whose remainder is not small against its
// polynomial part (kSplitShare) is split in two, up to kMaxDepth times.
//
// Polynomial constraints (every g_i a polynomial in q, v, t, of degree at
// most 2 in q: taylor::PolynomialDegrees) have e(theta) a polynomial of
// known degree D <= 10 along the quintic, so one evaluation at theta_m of
// length D + 1 gives all of eta's coefficients: the remainder is the exact
// tail sum_{k=K+1..D} |eta_k| rho^k, with no pass over the piece.
//
// A non-smooth operation whose switch lies in a piece (abs, min, max,
// sign, step, atan2's cut), a singularity or an overflow leaves the
// constraints computed from it unenclosed for the step: their bound is
// +inf, and nothing is claimed.
#pragma once

#include "engine/internal/base/internal.h"

#include <array>
#include <memory>
#include <vector>

#include "engine/internal/base/ball.h"
#include "engine/internal/certificate/taylor.h"
#include "engine/internal/certificate/taylor_poly.h"
#include "engine/internal/certificate/taylor_program.h"
#include "engine/internal/model/model.h"

namespace tether {

class DefectEncloser {
 public:
  // The Taylor order K of the polynomial part; the remainder is of order
  // K + 1 (measured against 3 and 5 on the circle, the double pendulum and
  // chain/8 in docs/benchmarks.md).
  static constexpr int kOrder = 4;
  // A piece is split in two when a constraint's remainder term exceeds
  // kSplitShare of its polynomial part (the Taylor form is then loose: the
  // piece is long against the time scale of g along the step) and a tenth
  // of the constraint's bound over the window so far; at most kMaxDepth
  // times (2^kMaxDepth pieces per step).
  static constexpr double kSplitShare = 0.25;
  static constexpr int kMaxDepth = 4;

  // Heap bytes held (heap_bytes.h), the evaluators' included.
  int64_t heap_bytes() const;

  // How steps are enclosed: the Taylor form with a pass over the piece
  // (any smooth constraints), the polynomial path in ball arithmetic, or
  // the polynomial path in floating point with an a priori bound (kAuto
  // picks the last that applies; the others force a more general path, for
  // the tests).
  enum class Path { kAuto, kGeneral, kPolynomialBall, kPolynomialFloat };
  // isa: the polynomial path's kernels (taylor_poly.h; the same bits on
  // every instruction set, for the tests).
  explicit DefectEncloser(const Model& model, Path force = Path::kAuto,
                          taylor::PolyIsa isa = taylor::PolyIsa::kAuto);
  // The path the steps take (kPolynomialFloat falls back to
  // kPolynomialBall for a step with h outside [2^-300, 2^300]).
  Path path() const {
    return poly_eval_ ? Path::kPolynomialFloat
                      : (exact_len_ > 0 ? Path::kPolynomialBall : Path::kGeneral);
  }

  struct StepResult {
    int pieces = 0;        // pieces evaluated (1 without subdivision)
    bool enclosed = true;  // false: some constraint's bound is +inf
  };
  // sup_out[i] >= sup over t in [t0, t0 + h] of |eta_i(t)| (+inf when not
  // enclosed). running[i] is the constraint's bound over the window so
  // far: a piece whose remainder stays below a tenth of it is not split
  // (it cannot raise the window's bound much). u holds the inputs (nu).
  // mean_out[i] (null: not wanted) encloses eta_i's mean over the step,
  // the integral over theta in [0, 1] (the pieces' Taylor forms integrated:
  // docs/MATH.md section 10.2); Unbounded where not enclosed.
  StepResult EncloseStep(const Model& m, const double* u, double t0, double h, const double* q0,
                         const double* v0, const double* a0, const double* q1, const double* v1,
                         const double* a1, const double* running, double* sup_out,
                         ball::Ball* mean_out = nullptr);

  // Balls enclosing e_i and e_i' at the step's start (theta = 0) of the
  // interpolant, which depend only on q0 and v0 there; ok[i] = 0 for a
  // constraint not enclosed there.
  void StartResiduals(const Model& m, const double* u, double t0, double h, const double* q0,
                      const double* v0, const double* a0, const double* q1, const double* v1,
                      const double* a1, ball::Ball* e, ball::Ball* w, char* ok);

 private:
  // The interpolant's data as balls for each coordinate the constraints
  // use: q0, h v0, h^2 a0, q1 - q0, h v1, h^2 a1 (exact data, rounded
  // products).
  void Data(double h, const double* q0, const double* v0, const double* a0, const double* q1,
            const double* v1, const double* a1);
  // w[k][b] = P_b^(k)(theta_m) / k!, P_b the quintic Hermite basis
  // (b = 3: q1's, which multiplies q1 - q0; q0 is added to d_0).
  struct BasisWeights {
    double w[6][6];
  };
  static void Weights(double theta_m, BasisWeights* w);
  // The variables' series in s = theta - theta_m at every point of
  // [theta_m - rho, theta_m + rho], n coefficients. rho = 0 (at theta_m)
  // must come first for a piece: it computes the centre's coefficients the
  // pass over the piece widens. Written into vars_, or into `out` (one
  // series per tape variable) where given.
  void SetVariables(const Model& m, const double* u, double t0, double h, double theta_m,
                    double rho, int n, taylor::Series* out = nullptr);
  // One piece: per constraint the polynomial part and the remainder.
  void EnclosePiece(const Model& m, const double* u, double t0, double h, double theta_m,
                    double rho);
  // SetVariables for the polynomial path (rho = 0, every coefficient of
  // each variable) from the step's data raw_ and the weights w_root_.
  void SetPolynomialVariables(const Model& m, const double* u, double t0, double h, double theta_m);
  // The polynomial path in plain floating point with an a priori error
  // bound (taylor::PolyEvaluator) where it applies (poly_eval_, and h in
  // [2^-300, 2^300]); EnclosePolynomialPiece's ball arithmetic otherwise.
  bool PolyVariables(const Model& m, const double* u, double t0, double h, double theta_m);
  // Coordinate i's Taylor coefficients d_0..d_5 at theta_m from the step's
  // data raw_ and the weights W (DoubleWeights, for h in [2^-300, 2^300]),
  // in plain floating point with an a priori error bound
  // (taylor::PolyCoordinate): midpoints m[0..5] and radii r[0..5]. Both
  // paths' centres use it (PolyVariables; SetVariables at rho = 0 for the
  // general path).
  void CoordinateCoefficients(const double (*W)[6], int i, double* m, double* r) const;
  void EnclosePolyPiece(const Model& m);
  // EnclosePiece for polynomial constraints (exact_len_ > 0): one pass.
  void EnclosePolynomialPiece(const Model& m, const double* u, double t0, double h, double theta_m,
                              double rho);
  // The powers of rho and the Chebyshev nodes times rho for a piece of
  // radius rho (kept while rho is unchanged).
  void SetRho(double rho);
  // The bound of the polynomial part sum_{k<=K} eta_k s^k on |s| <= rho
  // (SetRho) from eta's coefficients 0..K at theta_m, midpoints m and
  // radii r; the Ball overload stores it in poly_[i].
  double PolynomialPart(const double* m, const double* r) const;
  void PolynomialPart(const ball::Ball* coef, size_t i);
  // The integral over |s| <= rho (SetRho) of sum_{k<=K} eta_k s^k, in ball
  // arithmetic (only the even powers remain: 2 rho^(k+1) / (k+1)).
  ball::Ball PolynomialIntegral(const double* m, const double* r) const;
  // The balls (k + 2)(k + 1) / h^2 and 2 alpha_i (k + 1) / h of eta's
  // coefficients from e's (EtaCoefficients), kept while h is unchanged.
  void ScaleForStep(const Model& m, double h);
  ball::Ball Eta(const taylor::PolySeries& e, int len, size_t i, int k) const;

  // > 0: every constraint is a polynomial along the interpolant and e has
  // at most exact_len_ nonzero coefficients (EnclosePolynomialPiece).
  int exact_len_ = 0;
  std::vector<int> var_len_;  // per tape variable: its series' length (exact path)
  double scaled_h_ = 0;       // the h of c2_, c1_ (0: none yet)
  ball::Ball c2_[taylor::kMaxLength];
  // The basis weights times h^p of the datum they multiply (p = 0, 1, 2, 0,
  // 1, 2 for q0, v0, a0, q1 - q0, v1, a1) at theta_m = 0.5 (kept with h),
  // at another centre, and (k + 1) / h (a velocity's coefficient k).
  ball::Ball w_root_[6][6], w_scratch_[6][6], vel_scale_[5];
  void ScaledWeights(const BasisWeights& w, double h, ball::Ball (*out)[6]) const;
  // PolyEvaluator path: the evaluator (null when the program has other
  // operations or the gains are out of range), per-h doubles: the basis
  // weights times h^p at 0.5, (k + 1) / h, eta's constants.
  std::unique_ptr<taylor::PolyEvaluator> poly_eval_;
  bool poly_step_ = false;  // this step uses poly_eval_
  // eta's coefficients from e's (EnclosePolyPiece): taylor::PolyEta or its
  // AVX2 form.
  taylor::PolyEtaKernel eta_ = &taylor::PolyEta;
  // CoordinateCoefficients' kernel: taylor::PolyCoordinate or its AVX2 form.
  taylor::PolyCoordinateKernel coordinate_ = &taylor::PolyCoordinate;
  double wd_root_[6][6] = {}, wd_scratch_[6][6] = {}, veld_[5] = {}, veld_max_ = 0;
  // eta's constants (k + 2)(k + 1) / h^2, 2 alpha_i (k + 1) / h, beta_i^2,
  // each times constraint i's root factor (PolyEvaluator::root_factor).
  std::vector<std::array<double, taylor::kPolyLanes>> c2d_, c1d_;  // (nc)
  std::vector<double> bsqd_;                                       // (nc)
  // The variables the program reads, with their series in poly_eval_ and
  // their coordinate (q, v) or input index (u).
  struct PolyVar {
    taylor::PolySeries* series;
    enum Kind : uint8_t { kTime, kPosition, kVelocity, kInput } kind;
    int coordinate;
  };
  std::vector<PolyVar> poly_vars_;
  void DoubleWeights(const BasisWeights& w, double h, double (*out)[6]) const;
  // DoubleWeights at theta_m for this h: wd_root_ (kept with h) at 0.5,
  // else computed into wd_scratch_.
  const double (*DoubleWeightsAt(double theta_m, double h))[6];
  struct Raw {
    const double *q0, *v0, *a0, *q1, *v1, *a1;
  } raw_{};
  std::vector<std::array<ball::Ball, taylor::kMaxLength>> c1_;  // (nc)
  taylor::Evaluator evaluator_;  // StartResiduals, the polynomial path in balls
  taylor::Program program_;      // the general path's passes (EnclosePiece)
  const std::vector<int32_t>* var_list_;
  std::vector<int> coordinate_of_var_;             // per var_list entry, -1 for t/u
  std::vector<std::array<ball::Ball, 6>> data_;    // per var_list entry (Data)
  std::vector<std::array<ball::Ball, 6>> center_;  // Taylor coefficients at theta_m
  BasisWeights root_weights_, scratch_weights_;    // at 0.5, at another centre
  std::vector<taylor::Series> vars_;               // per tape variable
  std::vector<taylor::Series> piece_vars_;         // the pass over a piece's (EnclosePiece)
  ball::Ball inv_h_, inv_h2_;
  double chebyshev_[kOrder + 1];  // Chebyshev nodes (first kind) on [-1, 1]
  double lebesgue_ = 0;           // LebesgueBound(kOrder)
  // SetRho: rho (0: none yet), rho^k, rho times the nodes (the last
  // repeated up to an even count).
  static constexpr int kNodes = (kOrder + 2) / 2 * 2;
  double rho_ = 0;
  alignas(16) double rho_pow_[taylor::kPolyLanes] = {}, node_[kNodes] = {};
  ball::Ball integral_w_[kOrder / 2 + 1];  // 2 rho^(k+1) / (k + 1), k = 0, 2, ..
  std::vector<ball::Ball> beta_sq_;        // (nc)
  std::vector<double> poly_, rem_;         // (nc) of the last piece
  std::vector<ball::Ball> poly_int_;       // (nc) its polynomial part's integral
  std::vector<ball::Ball> integral_;       // (nc) the step's integral so far
  std::vector<char> piece_ok_;             // (nc)
  struct Piece {
    double theta_m, rho;
    int depth;
  };
  std::vector<Piece> stack_;
  // The general path's centres from CoordinateCoefficients (this step's h
  // is in [2^-300, 2^300]), else from Data in ball arithmetic.
  bool float_centre_ = false;
};

inline void DefectEncloser::CoordinateCoefficients(const double (*W)[6], int i, double* m,
                                                   double* r) const {
  const double q0 = raw_.q0[i];
  const double x[6] = {q0, raw_.v0[i], raw_.a0[i], raw_.q1[i] - q0, raw_.v1[i], raw_.a1[i]};
  coordinate_(W, x, m, r);
}

}  // namespace tether
