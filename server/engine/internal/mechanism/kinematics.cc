// Frames and velocities: for every joint, parents first, the child's
// rotation E relative to its parent (a function of the joint's
// coordinates), its world rotation R = R_parent E and origin
// p = p_parent + R_parent r, and its body-frame angular and origin
// velocities by the recursion
//   w = E^T w_parent + (joint's relative angular velocity),
//   v = E^T (v_parent + w_parent x r) + (joint's relative linear velocity),
// every vector and matrix entry a definition (docs/MECHANISMS.md).
#include <cmath>

#include "engine/internal/mechanism/emitter.h"
#include "engine/status.h"

namespace tether::mechanism {

namespace {

Sym A(const std::string& name) { return Sym::Atom(name); }
Sym Der(const std::string& coordinate) { return Sym::Atom("der(" + coordinate + ")"); }

// The rotation of a unit quaternion (w, x, y, z) (Hamilton convention).
Mat QuaternionMatrix(const Sym& w, const Sym& x, const Sym& y, const Sym& z) {
  const Sym two(2.0);
  Mat r;
  r[0] = {Sym(1.0) - two * (y * y + z * z), two * (x * y - w * z), two * (x * z + w * y)};
  r[1] = {two * (x * y + w * z), Sym(1.0) - two * (x * x + z * z), two * (y * z - w * x)};
  r[2] = {two * (x * z - w * y), two * (y * z + w * x), Sym(1.0) - two * (x * x + y * y)};
  return r;
}

// Body-frame angular velocity of a quaternion: 2 vec(q* (x) dq/dt)
// = 2 (w dv - dw v - v x dv), v = (x, y, z).
Vec QuaternionRate(const std::array<std::string, 4>& n) {
  const Sym w = A(n[0]), dw = Der(n[0]);
  const Vec v = {A(n[1]), A(n[2]), A(n[3])}, dv = {Der(n[1]), Der(n[2]), Der(n[3])};
  const Vec c = Cross(v, dv);
  Vec r;
  for (int i = 0; i < 3; ++i) r[i] = Sym(2.0) * (w * dv[i] - dw * v[i] - c[i]);
  return r;
}

const char* const kAxes[3] = {"x", "y", "z"};

}  // namespace

bool Emitter::Claim(const std::string& name, const std::string& field) {
  if (taken_.insert(name).second) return true;
  AddError(diags_, field,
           "the mechanism's generated name " + QuoteForMessage(name) +
               " is already used in the description (a parameter, input, definition or another "
               "generated name); rename the element");
  failed_ = true;
  return false;
}

std::string Emitter::Text(const Sym& value, const std::string& name) {
  if (value.Finite()) return value.Text();
  if (!failed_) {
    AddError(diags_, path_,
             "the mechanism's numbers overflow: " + QuoteForMessage(name) +
                 " has a coefficient beyond the largest double (products of the lengths, masses "
                 "and inertias of the bodies and joints it involves); expected values whose "
                 "products stay finite");
  }
  failed_ = true;
  return "0";
}

Sym Emitter::Define(const std::string& name, const Sym& value, bool always,
                    const std::string& field) {
  if (value.IsTrivial() && !always) return value;
  if (!Claim(name, field.empty() ? path_ : field)) return value;
  v1::Definition* d = out_->add_definitions();
  d->set_name(name);
  d->set_expression(Text(value, name));
  return value.IsTrivial() ? value : A(name);
}

Vec Emitter::DefineVec(const std::string& prefix, const Vec& value, bool always,
                       const std::string& field) {
  Vec r;
  for (int i = 0; i < 3; ++i) r[i] = Define(prefix + kAxes[i], value[i], always, field);
  return r;
}

Mat Emitter::DefineMat(const std::string& prefix, const Mat& value, bool always,
                       const std::string& field) {
  Mat r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      r[i][j] = Define(prefix + std::to_string(i + 1) + std::to_string(j + 1), value[i][j], always,
                       field);
  return r;
}

void Emitter::Kinematics() {
  const int nj = m_.joints_size();
  // Coordinates, in the joints' order.
  first_coordinate_.assign(static_cast<size_t>(nj), -1);
  std::vector<std::vector<std::string>> coords(static_cast<size_t>(nj));
  for (int j = 0; j < nj; ++j) {
    const v1::Joint& jt = m_.joints(j);
    auto& names = coords[static_cast<size_t>(j)];
    switch (JointCoordinates(jt.type())) {
      case 1: names = {jt.name()}; break;
      case 4:
        names = {jt.name() + "_qw", jt.name() + "_qx", jt.name() + "_qy", jt.name() + "_qz"};
        break;
      case 7:
        names = {jt.name() + "_x",  jt.name() + "_y",  jt.name() + "_z", jt.name() + "_qw",
                 jt.name() + "_qx", jt.name() + "_qy", jt.name() + "_qz"};
        break;
      default: break;
    }
    if (!names.empty()) first_coordinate_[static_cast<size_t>(j)] = out_->coordinates_size();
    for (const auto& n : names) {
      Claim(n, JointField(j) + ".name");
      out_->add_coordinates(n);
      forces_.push_back(Sym());
    }
  }
  if (failed_) return;
  frames_.assign(static_cast<size_t>(m_.bodies_size()), Frame{});
  Frame& root = frames_[static_cast<size_t>(tree_.root)];
  root.R = ToMat(Identity());
  root.p = root.w = root.v = Vec{};
  for (int j : tree_.order) {
    const v1::Joint& jt = m_.joints(j);
    if (jt.type() == v1::Joint::FIXED) continue;
    const int pb = tree_.body_index.at(jt.parent()), cb = tree_.body_index.at(jt.child());
    const Frame& P = frames_[static_cast<size_t>(tree_.carrier[static_cast<size_t>(pb)])];
    const Transform x0 = Compose(tree_.in_carrier[static_cast<size_t>(pb)], FromPose(jt.origin()));
    const Mat R0 = ToMat(x0.R);
    const auto& names = coords[static_cast<size_t>(j)];
    Mat E;                 // child from parent-carrier rotation
    Vec r = ToVec(x0.p);   // child origin in the parent carrier's frame
    Vec w_rel{}, v_rel{};  // relative velocities, child frame
    const std::string& jn = jt.name();
    if (JointCoordinates(jt.type()) == 1) {
      const V3 axis = UnitOf(ToV3(jt.axis()));
      if (jt.type() == v1::Joint::PRISMATIC) {
        E = R0;
        r = r + R0 * Scale(A(jn), ToVec(axis));
        v_rel = Scale(Der(jn), ToVec(axis));
      } else {
        E = R0 * RotationAxis(axis, A("cos(" + jn + ")"), A("sin(" + jn + ")"));
        w_rel = Scale(Der(jn), ToVec(axis));
      }
    } else {
      const size_t q0 = jt.type() == v1::Joint::FLOATING ? 3 : 0;
      const std::array<std::string, 4> qn = {names[q0], names[q0 + 1], names[q0 + 2],
                                             names[q0 + 3]};
      quaternions_.push_back({j, qn});
      const Mat Q = DefineMat(jn + "_Q", QuaternionMatrix(A(qn[0]), A(qn[1]), A(qn[2]), A(qn[3])),
                              false, JointField(j) + ".name");
      E = R0 * Q;
      w_rel = QuaternionRate(qn);
      if (jt.type() == v1::Joint::FLOATING) {
        r = r + R0 * Vec{A(names[0]), A(names[1]), A(names[2])};
        v_rel = Transpose(Q) * Vec{Der(names[0]), Der(names[1]), Der(names[2])};
      }
    }
    E = DefineMat(jn + "_E", E, false, JointField(j) + ".name");
    const std::string& cn = jt.child();
    const std::string cf = BodyField(cb) + ".name";
    Frame& C = frames_[static_cast<size_t>(cb)];
    const Mat Et = Transpose(E);
    C.R = DefineMat(cn + "_R", P.R * E, true, cf);
    C.p = DefineVec(cn + "_p", P.p + P.R * r, true, cf);
    C.w = DefineVec(cn + "_w", Et * P.w + w_rel, true, cf);
    C.v = DefineVec(cn + "_v", Et * (P.v + Cross(P.w, r)) + v_rel, true, cf);
    if (failed_) return;
  }
  // Bodies on fixed joints: their frames, for outputs (unused ones are
  // dropped).
  for (int b = 0; b < m_.bodies_size(); ++b) {
    const int c = tree_.carrier[static_cast<size_t>(b)];
    if (c == b) continue;
    const Frame& C = frames_[static_cast<size_t>(c)];
    const Transform& x = tree_.in_carrier[static_cast<size_t>(b)];
    const std::string& bn = m_.bodies(b).name();
    DefineMat(bn + "_R", C.R * ToMat(x.R), true, BodyField(b) + ".name");
    DefineVec(bn + "_p", C.p + C.R * ToVec(x.p), true, BodyField(b) + ".name");
    if (failed_) return;
  }
}

}  // namespace tether::mechanism
