#include "engine/internal/mechanism/symbolic.h"

#include <algorithm>
#include <cmath>

#include "engine/status.h"

namespace tether::mechanism {

Sym::Sym(double c) {
  if (c != 0) terms_.push_back({{}, c});
}

Sym Sym::Atom(std::string name) {
  Sym s;
  s.terms_.push_back({{std::move(name)}, 1.0});
  return s;
}

double Sym::Constant() const {
  if (terms_.size() == 1 && terms_[0].first.empty()) return terms_[0].second;
  return 0;
}

bool Sym::IsTrivial() const {
  if (IsConstant()) return true;
  return terms_.size() == 1 && terms_[0].first.size() == 1 && std::fabs(terms_[0].second) == 1;
}

void Sym::Add(const Monomial& m, double c) {
  if (c == 0) return;
  for (auto it = terms_.begin(); it != terms_.end(); ++it) {
    if (it->first == m) {
      it->second += c;
      if (it->second == 0) terms_.erase(it);
      return;
    }
  }
  terms_.push_back({m, c});
}

Sym operator+(const Sym& a, const Sym& b) {
  Sym r = a;
  for (const auto& [m, c] : b.terms_) r.Add(m, c);
  return r;
}

Sym operator-(const Sym& a, const Sym& b) {
  Sym r = a;
  for (const auto& [m, c] : b.terms_) r.Add(m, -c);
  return r;
}

Sym operator*(const Sym& a, const Sym& b) {
  Sym r;
  for (const auto& [ma, ca] : a.terms_) {
    for (const auto& [mb, cb] : b.terms_) {
      Sym::Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      r.Add(m, ca * cb);
    }
  }
  return r;
}

namespace {

// "a*b^2*c" for the sorted atoms of a monomial.
std::string MonomialText(const std::vector<std::string>& m) {
  std::string out;
  for (size_t i = 0; i < m.size();) {
    size_t j = i;
    while (j < m.size() && m[j] == m[i]) ++j;
    if (!out.empty()) out += "*";
    out += m[i];
    if (j - i > 1) out += "^" + std::to_string(j - i);
    i = j;
  }
  return out;
}

}  // namespace

bool Sym::Finite() const {
  for (const auto& term : terms_)
    if (!std::isfinite(term.second)) return false;
  return true;
}

std::string Sym::Text() const {
  if (terms_.empty()) return "0";
  std::string out;
  for (const auto& [m, c] : terms_) {
    const bool negative = c < 0;
    const double mag = std::fabs(c);
    std::string term;
    if (m.empty()) {
      term = FormatNumber(mag);
    } else if (mag == 1) {
      term = MonomialText(m);
    } else {
      term = FormatNumber(mag) + "*" + MonomialText(m);
    }
    if (out.empty()) {
      out = negative ? "-" + term : term;
    } else {
      out += negative ? " - " : " + ";
      out += term;
    }
  }
  return out;
}

Vec ToVec(const V3& v) { return {Sym(v[0]), Sym(v[1]), Sym(v[2])}; }

Mat ToMat(const M3& m) {
  Mat r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] = Sym(m[i][j]);
  return r;
}

Vec operator+(const Vec& a, const Vec& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
Vec operator-(const Vec& a, const Vec& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }

Vec operator*(const Mat& m, const Vec& v) {
  Vec r;
  for (int i = 0; i < 3; ++i) r[i] = m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2];
  return r;
}

Mat operator*(const Mat& a, const Mat& b) {
  Mat r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
  return r;
}

Mat Transpose(const Mat& m) {
  Mat r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] = m[j][i];
  return r;
}

Vec Cross(const Vec& a, const Vec& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

Sym Dot(const Vec& a, const Vec& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

Vec Scale(const Sym& s, const Vec& v) { return {s * v[0], s * v[1], s * v[2]}; }

V3 Add(const V3& a, const V3& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
V3 Sub(const V3& a, const V3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }

V3 Mul(const M3& m, const V3& v) {
  V3 r{};
  for (int i = 0; i < 3; ++i) r[i] = m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2];
  return r;
}

M3 Mul(const M3& a, const M3& b) {
  M3 r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
  return r;
}

M3 TransposeOf(const M3& m) {
  M3 r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] = m[j][i];
  return r;
}

V3 CrossOf(const V3& a, const V3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

double DotOf(const V3& a, const V3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
double Norm(const V3& v) { return std::sqrt(DotOf(v, v)); }
V3 Scaled(double s, const V3& v) { return {s * v[0], s * v[1], s * v[2]}; }

V3 UnitOf(const V3& v) {
  // Where the squares are safe (no component's square that matters is
  // subnormal, none overflows), the plain formula, whose bits every model
  // with an ordinary axis has always had.
  if (const double n = Norm(v); n > 1e-150 && n < 1e150) return Scaled(1 / n, v);
  const double big = std::max({std::fabs(v[0]), std::fabs(v[1]), std::fabs(v[2])});
  // Divided, not multiplied by 1/big, which overflows for a subnormal big.
  const V3 s{v[0] / big, v[1] / big, v[2] / big};
  return Scaled(1 / Norm(s), s);
}

bool NonZero(const V3& v) { return v[0] != 0 || v[1] != 0 || v[2] != 0; }

M3 Identity() { return {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}; }

namespace {

double Snap(double x) {
  if (std::fabs(x) < 1e-16) return 0;
  if (std::fabs(x - 1) < 1e-16) return 1;
  if (std::fabs(x + 1) < 1e-16) return -1;
  return x;
}

}  // namespace

M3 RotationRpy(const V3& rpy) {
  const double cr = Snap(std::cos(rpy[0])), sr = Snap(std::sin(rpy[0]));
  const double cp = Snap(std::cos(rpy[1])), sp = Snap(std::sin(rpy[1]));
  const double cy = Snap(std::cos(rpy[2])), sy = Snap(std::sin(rpy[2]));
  const M3 rx = {{{1, 0, 0}, {0, cr, -sr}, {0, sr, cr}}};
  const M3 ry = {{{cp, 0, sp}, {0, 1, 0}, {-sp, 0, cp}}};
  const M3 rz = {{{cy, -sy, 0}, {sy, cy, 0}, {0, 0, 1}}};
  return Mul(rz, Mul(ry, rx));
}

Mat RotationAxis(const V3& k, const Sym& cos_q, const Sym& sin_q) {
  // [k]x, the cross-product matrix.
  const M3 kx = {{{0, -k[2], k[1]}, {k[2], 0, -k[0]}, {-k[1], k[0], 0}}};
  Mat r;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const double kk = k[i] * k[j];
      r[i][j] = Sym((i == j ? 1.0 : 0.0) - kk) * cos_q + Sym(kk) + Sym(kx[i][j]) * sin_q;
    }
  }
  return r;
}

}  // namespace tether::mechanism
