// Energies and joint forces: the kinetic energy of every moving body, from
// its centre of mass's velocity v_c = v + w x c (body frame) and its
// inertia about the centre of mass,
//   T_body = m/2 v_c.v_c + 1/2 w.(I w),
// the potential energy of gravity and joint springs, and the generalized
// forces of dampers and actuators. Quaternion joints add to T the term
// k/2 (q.dq/dt)^2, which vanishes on the unit sphere's tangent space
// (d/dt |q|^2 / 2 = q.dq/dt = 0) and whose Lagrangian force k d/dt(q.dq/dt) q
// lies along the norm constraint's gradient q: it changes only that
// constraint's multiplier, and makes M(q) invertible (without it the
// direction dq/dt ~ q carries no kinetic energy).
#include "engine/internal/mechanism/emitter.h"

namespace tether::mechanism {

namespace {

Sym A(const std::string& name) { return Sym::Atom(name); }

}  // namespace

void Emitter::Energies() {
  Sym T, V;
  const V3 g = ToV3(m_.gravity());
  for (int j : tree_.order) {
    const v1::Joint& jt = m_.joints(j);
    if (jt.type() == v1::Joint::FIXED) continue;
    const int cb = tree_.body_index.at(jt.child());
    const MassProperties& mp = tree_.carried[static_cast<size_t>(cb)];
    if (mp.mass == 0) continue;
    const Frame& C = frames_[static_cast<size_t>(cb)];
    const std::string& cn = jt.child();
    const std::string cf = BodyField(cb) + ".name";
    const Vec vc = DefineVec(cn + "_vc", C.v + Cross(C.w, ToVec(mp.com)), true, cf);
    const Vec Iw = ToMat(mp.inertia) * C.w;
    const Sym Tb = Sym(mp.mass / 2) * Dot(vc, vc) + Sym(0.5) * Dot(C.w, Iw);
    T += Define(cn + "_T", Tb, true, cf);
    // -m g . (p + R c), the centre of mass in the world.
    V += Sym(-mp.mass) * Dot(ToVec(g), C.p + C.R * ToVec(mp.com));
  }
  for (const auto& [j, qn] : quaternions_) {
    const v1::Joint& jt = m_.joints(j);
    // k: 4/3 of the trace of what the joint turns, about the joint (its
    // child and everything below it, at the reference configuration), so
    // that the norm direction's entry of M is of the size of the rotation's
    // (M = 4 G^T I G there, I that inertia). The child's own inertia about
    // its centre of mass, used before, is small beside m |c|^2 for a mass
    // off the joint (a ball on a rod: M's condition m |c|^2 / I, 1e13 for a
    // point mass, and judgement (b) failed), and 0 for a massless gimbal
    // carrying the mass (M singular).
    const double k =
        4.0 / 3.0 * tree_.subtree_trace[static_cast<size_t>(tree_.body_index.at(jt.child()))];
    Sym s;
    for (const auto& n : qn) s += A(n) * A("der(" + n + ")");
    const Sym rate = Define(jt.name() + "_norm_rate", s, false, JointField(j) + ".name");
    T += Sym(k / 2) * rate * rate;
  }
  for (int j = 0; j < m_.joints_size(); ++j) {
    const v1::Joint& jt = m_.joints(j);
    const int c = first_coordinate_[static_cast<size_t>(j)];
    if (c < 0 || JointCoordinates(jt.type()) != 1) continue;
    const Sym q = A(jt.name());
    if (jt.has_spring() && jt.spring().stiffness() != 0) {
      const Sym dq = q - Sym(jt.spring().rest());
      V += Sym(jt.spring().stiffness() / 2) * dq * dq;
    }
    Sym& Q = forces_[static_cast<size_t>(c)];
    if (jt.damping() != 0) Q += Sym(-jt.damping()) * A("der(" + jt.name() + ")");
    if (!jt.actuator_input().empty()) Q += A(jt.actuator_input());
  }
  // Always definitions, so that outputs may name them (energy = T + V).
  for (const auto& [name, value] :
       {std::pair<const char*, const Sym&>{"mechanism_T", T}, {"mechanism_V", V}}) {
    if (!Claim(name, path_)) return;
    v1::Definition* d = out_->add_definitions();
    d->set_name(name);
    d->set_expression(Text(value, name));
  }
}

}  // namespace tether::mechanism
