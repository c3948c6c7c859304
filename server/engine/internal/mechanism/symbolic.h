// The mechanism compiler's expression text: a polynomial in named atoms
// (coordinates, der(coordinate), definitions) with numeric coefficients,
// folded as it is built (0 * x vanishes, 1 * x is x, constants multiply
// out), so that what the compiler writes reads like what an engineer would
// write: a joint about z gives cos(q) and sin(q) terms, not 0*... + 1*....
#pragma once

#include "engine/internal/base/internal.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace tether::mechanism {

class Sym {
 public:
  Sym() = default;
  Sym(double c);  // NOLINT: a constant converts implicitly
  static Sym Atom(std::string name);

  bool IsConstant() const {
    return terms_.empty() || (terms_.size() == 1 && terms_[0].first.empty());
  }
  // Value of a constant (0 when not constant).
  double Constant() const;
  bool IsZero() const { return terms_.empty(); }
  // A constant, or one atom with coefficient 1: worth no definition.
  bool IsTrivial() const;
  // Expression text ("0" for zero).
  std::string Text() const;
  // Whether every coefficient is a finite double (a product of large
  // lengths, masses and inertias can overflow).
  bool Finite() const;

  friend Sym operator+(const Sym& a, const Sym& b);
  friend Sym operator-(const Sym& a, const Sym& b);
  friend Sym operator*(const Sym& a, const Sym& b);
  friend Sym operator-(const Sym& a) { return Sym(-1.0) * a; }
  Sym& operator+=(const Sym& b) { return *this = *this + b; }

 private:
  // A monomial: its atoms, sorted (repeats are powers).
  using Monomial = std::vector<std::string>;
  void Add(const Monomial& m, double c);
  std::vector<std::pair<Monomial, double>> terms_;  // no zero coefficients
};

using Vec = std::array<Sym, 3>;
using Mat = std::array<std::array<Sym, 3>, 3>;

// Numeric 3-vectors and 3x3 matrices (row-major) for the constant parts.
using V3 = std::array<double, 3>;
using M3 = std::array<std::array<double, 3>, 3>;

Vec ToVec(const V3& v);
Mat ToMat(const M3& m);
Vec operator+(const Vec& a, const Vec& b);
Vec operator-(const Vec& a, const Vec& b);
Vec operator*(const Mat& m, const Vec& v);
Mat operator*(const Mat& a, const Mat& b);
Mat Transpose(const Mat& m);
Vec Cross(const Vec& a, const Vec& b);
Sym Dot(const Vec& a, const Vec& b);
Vec Scale(const Sym& s, const Vec& v);

V3 Add(const V3& a, const V3& b);
V3 Sub(const V3& a, const V3& b);
V3 Mul(const M3& m, const V3& v);
M3 Mul(const M3& a, const M3& b);
M3 TransposeOf(const M3& m);
V3 CrossOf(const V3& a, const V3& b);
double DotOf(const V3& a, const V3& b);
double Norm(const V3& v);
V3 Scaled(double s, const V3& v);
// v / |v| for any finite v with a non-zero component: divided by its largest
// component first, so that the squares neither underflow ((3e-160, 4e-160,
// 0) would normalise to length 1.0000056) nor overflow ((1e200, 0, 0)).
V3 UnitOf(const V3& v);
// Whether some component is non-zero (a length's square can underflow to 0).
bool NonZero(const V3& v);
M3 Identity();
// R = Rz(yaw) Ry(pitch) Rx(roll), URDF's convention; entries within 1e-16
// of 0 or +-1 are snapped to them (sin(pi) and cos(pi/2)), so that a
// quarter turn writes no 6e-17 terms.
M3 RotationRpy(const V3& rpy);
// Rodrigues' rotation by `angle` about the unit axis k, written with the
// atoms cos_name and sin_name: cos (I - k k^T) + k k^T + sin [k]x.
Mat RotationAxis(const V3& k, const Sym& cos_q, const Sym& sin_q);

}  // namespace tether::mechanism
