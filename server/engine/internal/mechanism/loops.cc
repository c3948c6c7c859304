// Loop closures and quaternion norms as holonomic constraints. With d the
// world vector from point A (on body_a) to point B (on body_b):
//   POINT_TO_POINT  d.e_x, d.e_y, d.e_z (or d.u, d.v across a plane normal n),
//   DISTANCE        (d.d - L^2) / (2 L),
//   POINT_ON_AXIS   d.u, d.v with u, v perpendicular to the axis (or the
//                   one perpendicular to axis and n),
// u, v fixed in body_a and turned into the world by its rotation. Each is
// a length, so its multiplier is a force along its direction
// (docs/MECHANISMS.md).
#include <cmath>

#include "engine/internal/mechanism/emitter.h"
#include "engine/status.h"

namespace tether::mechanism {

namespace {

Sym A(const std::string& name) { return Sym::Atom(name); }

// A unit vector perpendicular to the unit n: the coordinate axis least
// aligned with n, with its component along n removed.
V3 Perpendicular(const V3& n) {
  int k = 0;
  for (int i = 1; i < 3; ++i) {
    if (std::fabs(n[i]) < std::fabs(n[k])) k = i;
  }
  V3 e{};
  e[k] = 1;
  return UnitOf(Sub(e, Scaled(DotOf(e, n), n)));
}

}  // namespace

void Emitter::Loops() {
  for (const auto& [j, qn] : quaternions_) {
    const std::string name = m_.joints(j).name() + "_norm";
    if (!Claim(name, JointField(j) + ".name")) return;
    Sym s(-1.0);
    for (const auto& n : qn) s += A(n) * A(n);
    v1::Constraint* c = out_->add_constraints();
    c->set_name(name);
    c->set_expression("(" + Text(s, c->name()) + ")/2");
  }
  for (int i = 0; i < m_.loop_closures_size(); ++i) {
    const v1::LoopClosure& lc = m_.loop_closures(i);
    const std::string f = path_ + ".loop_closures[" + std::to_string(i) + "]";
    auto error = [&](const std::string& field, const std::string& message) {
      AddError(diags_, field, message);
      failed_ = true;
    };
    if (!IsIdentifier(lc.name()) || lc.name().size() > 128) {
      error(f + ".name",
            "expected an identifier of at most 128 bytes, found " + QuoteForMessage(lc.name()));
      continue;
    }
    auto a = tree_.body_index.find(lc.body_a()), b = tree_.body_index.find(lc.body_b());
    if (a == tree_.body_index.end())
      error(f + ".body_a", "no body named " + QuoteForMessage(lc.body_a()));
    if (b == tree_.body_index.end())
      error(f + ".body_b", "no body named " + QuoteForMessage(lc.body_b()));
    if (a == tree_.body_index.end() || b == tree_.body_index.end()) continue;
    const int ca = tree_.carrier[static_cast<size_t>(a->second)],
              cb = tree_.carrier[static_cast<size_t>(b->second)];
    if (ca == cb) {
      error(f + ".body_b",
            "bodies " + QuoteForMessage(lc.body_a()) + " and " + QuoteForMessage(lc.body_b()) +
                " move as one (the same body, or fixed to each other): nothing to close");
      continue;
    }
    const Transform& xa = tree_.in_carrier[static_cast<size_t>(a->second)];
    const Transform& xb = tree_.in_carrier[static_cast<size_t>(b->second)];
    const V3 pa = Add(xa.p, Mul(xa.R, ToV3(lc.point_a()))),
             pb = Add(xb.p, Mul(xb.R, ToV3(lc.point_b())));
    const V3 n_raw = ToV3(lc.plane_normal());
    const bool planar = NonZero(n_raw);
    const auto finite = [](const V3& v) {
      return std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2]);
    };
    // A direction in body_a's carrier frame, unit length (a huge one made
    // unit first, so that rotating it cannot overflow).
    const auto direction = [&](const V3& raw) {
      return UnitOf(Mul(xa.R, Norm(raw) < 1e150 ? raw : UnitOf(raw)));
    };
    if (!finite(n_raw) || !finite(pa) || !finite(pb)) {
      error(f, "expected finite points and plane_normal");
      continue;
    }
    if (lc.has_plane_normal() && !planar) {
      // Unset is a ball joint; a zero normal set is a mistake, not that.
      error(f + ".plane_normal",
            "expected a non-zero normal when set (unset: the constraint is not planar), "
            "found (0, 0, 0)");
      continue;
    }
    const V3 n = planar ? direction(n_raw) : V3{};
    // Directions (body_a's carrier frame) along which d is constrained, and
    // their names.
    std::vector<std::pair<std::string, V3>> dirs;
    switch (lc.type()) {
      case v1::LoopClosure::POINT_TO_POINT:
        if (planar) {
          const V3 u = Perpendicular(n);
          dirs = {{lc.name() + "_u", u}, {lc.name() + "_v", CrossOf(n, u)}};
        }
        break;
      case v1::LoopClosure::DISTANCE:
        if (!(lc.distance() > 0) || !std::isfinite(lc.distance())) {
          error(f + ".distance",
                "expected a finite distance > 0, found " + FormatNumber(lc.distance()));
        }
        break;
      case v1::LoopClosure::POINT_ON_AXIS: {
        const V3 ax_raw = ToV3(lc.axis());
        if (!finite(ax_raw) || !NonZero(ax_raw)) {
          error(f + ".axis", "expected a finite axis of non-zero length");
          break;
        }
        const V3 ax = direction(ax_raw);
        if (planar) {
          const V3 u = CrossOf(ax, n);
          if (!(Norm(u) > 1e-9)) {
            error(f + ".plane_normal", "the plane's normal must not be parallel to the axis");
            break;
          }
          dirs = {{lc.name(), UnitOf(u)}};
        } else {
          const V3 u = Perpendicular(ax);
          dirs = {{lc.name() + "_u", u}, {lc.name() + "_v", CrossOf(ax, u)}};
        }
        break;
      }
      default: error(f + ".type", "expected POINT_TO_POINT, DISTANCE or POINT_ON_AXIS");
    }
    if (failed_) continue;
    const Frame& Fa = frames_[static_cast<size_t>(ca)];
    const Frame& Fb = frames_[static_cast<size_t>(cb)];
    const Vec d = DefineVec(lc.name() + "_d", (Fb.p + Fb.R * ToVec(pb)) - (Fa.p + Fa.R * ToVec(pa)),
                            true, f + ".name");
    auto add = [&](const std::string& name, const std::string& text) {
      if (!Claim(name, f + ".name")) return;
      v1::Constraint* c = out_->add_constraints();
      c->set_name(name);
      c->set_expression(text);
      if (lc.has_gains()) *c->mutable_gains() = lc.gains();
    };
    if (lc.type() == v1::LoopClosure::DISTANCE) {
      const double L = lc.distance();
      add(lc.name(), "(" + Text(Dot(d, d) - Sym(L * L), lc.name()) + ")/" + FormatNumber(2 * L));
    } else if (dirs.empty()) {
      const char* axes[3] = {"_x", "_y", "_z"};
      for (int k = 0; k < 3; ++k) add(lc.name() + axes[k], Text(d[k], lc.name() + axes[k]));
    } else {
      for (const auto& [name, u] : dirs) add(name, Text(Dot(Fa.R * ToVec(u), d), name));
    }
  }
}

}  // namespace tether::mechanism
