#include "engine/internal/mechanism/tree.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <Eigen/Eigenvalues>

#include "engine/mechanism.h"
#include "engine/status.h"

namespace tether::mechanism {

namespace {

constexpr size_t kMaxName = 128;

void Error(std::vector<v1::Diagnostic>* d, std::string field, std::string message) {
  AddError(d, std::move(field), std::move(message));
}

std::string Idx(const std::string& base, int i) { return base + "[" + std::to_string(i) + "]"; }
std::string Q(const std::string& s) { return QuoteForMessage(s); }
std::string Num(double x) { return FormatNumber(x); }

bool Finite(const v1::Vector3& v) {
  return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z());
}

// The inertia tensor of `in` as a matrix in its own frame.
M3 InertiaMatrix(const v1::Inertia& in) {
  return {{{in.ixx(), in.ixy(), in.ixz()},
           {in.ixy(), in.iyy(), in.iyz()},
           {in.ixz(), in.iyz(), in.izz()}}};
}

// I about the centre of mass expressed in frame `R` (columns the inertial
// frame's axes): R I R^T.
M3 Rotate(const M3& R, const M3& I) { return Mul(R, Mul(I, TransposeOf(R))); }

// Parallel axis: inertia about a point at offset d from the centre of mass.
M3 Shifted(const M3& I, double m, const V3& d) {
  M3 r = I;
  const double dd = DotOf(d, d);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r[i][j] += m * ((i == j ? dd : 0.0) - d[i] * d[j]);
  return r;
}

// Checks a body's mass and inertia (field paths under `field`).
bool CheckMass(const v1::Body& b, const std::string& field, std::vector<v1::Diagnostic>* d) {
  const auto& in = b.inertia();
  const double entries[] = {in.ixx(), in.ixy(), in.ixz(), in.iyy(), in.iyz(), in.izz()};
  if (!std::isfinite(b.mass()) || b.mass() < 0) {
    Error(d, field + ".mass", "expected a finite mass >= 0, found " + Num(b.mass()));
    return false;
  }
  for (double x : entries) {
    if (!std::isfinite(x)) {
      Error(d, field + ".inertia", "expected finite entries, found " + Num(x));
      return false;
    }
  }
  if (!Finite(b.inertial_origin().xyz()) || !Finite(b.inertial_origin().rpy())) {
    Error(d, field + ".inertial_origin", "expected finite numbers");
    return false;
  }
  if (b.mass() == 0) {
    for (double x : entries) {
      if (x != 0) {
        Error(d, field + ".inertia",
              "a body of mass 0 (a massless frame) must have a zero inertia, found an entry " +
                  Num(x));
        return false;
      }
    }
    return true;
  }
  // A point mass (every entry 0) is a body too: what M(q) needs of it is
  // its mass off the axes it turns about, which the description's initial
  // evaluation judges (M not positive definite names the coordinate).
  if (std::all_of(std::begin(entries), std::end(entries), [](double x) { return x == 0; }))
    return true;
  const M3 I = InertiaMatrix(in);
  Eigen::Matrix3d m;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m(i, j) = I[i][j];
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(m, Eigen::EigenvaluesOnly);
  const Eigen::Vector3d l = es.eigenvalues();  // ascending
  const double scale = std::max(std::fabs(l(2)), 1e-300);
  if (!(l(0) > 1e-12 * scale) || !(l(2) > 0)) {
    Error(d, field + ".inertia",
          "the inertia of body " + Q(b.name()) + " (mass " + Num(b.mass()) +
              ") is not positive definite: principal moments " + Num(l(0)) + ", " + Num(l(1)) +
              ", " + Num(l(2)) + " (a body with mass needs all three > 0)");
    return false;
  }
  if (l(0) + l(1) < l(2) * (1 - 1e-9)) {
    Error(d, field + ".inertia",
          "the principal moments of body " + Q(b.name()) + " " + Num(l(0)) + ", " + Num(l(1)) +
              ", " + Num(l(2)) +
              " violate the triangle inequality I1 + I2 >= I3: no rigid body has this inertia");
    return false;
  }
  return true;
}

}  // namespace

void AddError(std::vector<v1::Diagnostic>* diags, std::string field, std::string message) {
  v1::Diagnostic d;
  d.set_severity(v1::Diagnostic::ERROR);
  d.set_field(std::move(field));
  d.set_message(std::move(message));
  diags->push_back(std::move(d));
}

Transform Compose(const Transform& a, const Transform& b) {
  return {Mul(a.R, b.R), Add(a.p, Mul(a.R, b.p))};
}

V3 ToV3(const v1::Vector3& v) { return {v.x(), v.y(), v.z()}; }

Transform FromPose(const v1::Pose& pose) {
  return {RotationRpy(ToV3(pose.rpy())), ToV3(pose.xyz())};
}

bool IsIdentifier(const std::string& name) {
  if (name.empty()) return false;
  const auto alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!alpha(name[0])) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

int JointCoordinates(v1::Joint::Type type) {
  switch (type) {
    case v1::Joint::REVOLUTE:
    case v1::Joint::CONTINUOUS:
    case v1::Joint::PRISMATIC: return 1;
    case v1::Joint::SPHERICAL: return 4;
    case v1::Joint::FLOATING: return 7;
    default: return 0;
  }
}

bool BuildTree(const v1::Mechanism& m, const std::string& path,
               const std::vector<std::string>& inputs, Tree* tree,
               std::vector<v1::Diagnostic>* diags) {
  const size_t errors_before = diags->size();
  auto failed = [&] { return diags->size() > errors_before; };
  const std::string bodies_path = path + ".bodies", joints_path = path + ".joints";
  const int nb = m.bodies_size(), nj = m.joints_size();
  if (nb > kMaxMechanismElements || nj > kMaxMechanismElements ||
      m.loop_closures_size() > kMaxMechanismElements) {
    Error(diags, path,
          "at most " + std::to_string(kMaxMechanismElements) +
              " bodies, joints and loop closures each, found " + std::to_string(nb) + ", " +
              std::to_string(nj) + " and " + std::to_string(m.loop_closures_size()));
    return false;
  }
  if (nb == 0) {
    Error(diags, bodies_path, "a mechanism needs at least one body (its root, the world frame)");
    return false;
  }
  if (!Finite(m.gravity())) {
    Error(diags, path + ".gravity",
          "expected finite numbers, found (" + Num(m.gravity().x()) + ", " + Num(m.gravity().y()) +
              ", " + Num(m.gravity().z()) + ")");
  }
  // Names.
  auto check_name = [&](const std::string& name, const std::string& field, const char* kind,
                        std::map<std::string, int, std::less<>>* seen, int index) {
    if (!IsIdentifier(name) || name.size() > kMaxName) {
      Error(diags, field,
            std::string("expected a ") + kind +
                " name that is an identifier of at most 128 bytes (a letter or '_', then letters, "
                "digits or '_'), found " +
                Q(name));
      return;
    }
    auto [it, inserted] = seen->emplace(name, index);
    if (!inserted) {
      Error(diags, field,
            std::string("duplicate ") + kind + " name " + Q(name) + " (also at index " +
                std::to_string(it->second) + ")");
    }
  };
  tree->body_index.clear();
  for (int i = 0; i < nb; ++i) {
    check_name(m.bodies(i).name(), Idx(bodies_path, i) + ".name", "body", &tree->body_index, i);
    CheckMass(m.bodies(i), Idx(bodies_path, i), diags);
  }
  std::map<std::string, int, std::less<>> joint_names;
  tree->parent_joint.assign(static_cast<size_t>(nb), -1);
  for (int j = 0; j < nj; ++j) {
    const v1::Joint& jt = m.joints(j);
    const std::string f = Idx(joints_path, j);
    check_name(jt.name(), f + ".name", "joint", &joint_names, j);
    if (!v1::Joint::Type_IsValid(jt.type()) || jt.type() == v1::Joint::TYPE_UNSPECIFIED) {
      Error(diags, f + ".type",
            "expected REVOLUTE, CONTINUOUS, PRISMATIC, FIXED, SPHERICAL or FLOATING");
    }
    if (!Finite(jt.origin().xyz()) || !Finite(jt.origin().rpy())) {
      Error(diags, f + ".origin", "expected finite numbers");
    }
    const int dof = JointCoordinates(jt.type());
    if (dof == 1) {
      // Any finite non-zero length: normalised by UnitOf, which neither
      // underflows nor overflows.
      if (!Finite(jt.axis()) || !NonZero(ToV3(jt.axis()))) {
        Error(diags, f + ".axis",
              "expected a finite axis of non-zero length, found (" + Num(jt.axis().x()) + ", " +
                  Num(jt.axis().y()) + ", " + Num(jt.axis().z()) + ")");
      }
    }
    const bool has_spring =
        jt.has_spring() && (jt.spring().stiffness() != 0 || jt.spring().rest() != 0);
    if (has_spring) {
      if (dof != 1) {
        Error(diags, f + ".spring",
              "springs act on one-coordinate joints only (revolute, continuous, prismatic)");
      } else if (!std::isfinite(jt.spring().stiffness()) || jt.spring().stiffness() < 0 ||
                 !std::isfinite(jt.spring().rest())) {
        Error(diags, f + ".spring", "expected a finite stiffness >= 0 and a finite rest value");
      }
    }
    if (jt.damping() != 0) {
      if (dof != 1) {
        Error(diags, f + ".damping",
              "dampers act on one-coordinate joints only (revolute, continuous, prismatic)");
      } else if (!std::isfinite(jt.damping()) || jt.damping() < 0) {
        Error(diags, f + ".damping", "expected a finite damping >= 0, found " + Num(jt.damping()));
      }
    }
    if (!jt.actuator_input().empty()) {
      if (dof != 1) {
        Error(diags, f + ".actuator_input",
              "actuators act on one-coordinate joints only (revolute, continuous, prismatic)");
      } else if (std::find(inputs.begin(), inputs.end(), jt.actuator_input()) == inputs.end()) {
        Error(diags, f + ".actuator_input",
              "no input named " + Q(jt.actuator_input()) + " in system.inputs; declare it there");
      }
    }
    auto parent = tree->body_index.find(jt.parent());
    auto child = tree->body_index.find(jt.child());
    if (parent == tree->body_index.end()) {
      Error(diags, f + ".parent", "no body named " + Q(jt.parent()));
    }
    if (child == tree->body_index.end()) {
      Error(diags, f + ".child", "no body named " + Q(jt.child()));
    } else if (parent != tree->body_index.end() && parent->second == child->second) {
      Error(diags, f + ".child", "a joint's child must differ from its parent " + Q(jt.parent()));
    } else {
      int& pj = tree->parent_joint[static_cast<size_t>(child->second)];
      if (pj >= 0) {
        Error(diags, f + ".child",
              "body " + Q(jt.child()) + " is already the child of joint " + Q(m.joints(pj).name()) +
                  " (joints[" + std::to_string(pj) +
                  "]): a body has one parent joint; close loops with loop_closures");
      } else {
        pj = j;
      }
    }
  }
  if (failed()) return false;
  // The root: the one body that is no joint's child.
  std::vector<int> roots;
  for (int i = 0; i < nb; ++i) {
    if (tree->parent_joint[static_cast<size_t>(i)] < 0) roots.push_back(i);
  }
  if (roots.empty()) {
    Error(diags, joints_path,
          "every body is some joint's child, so the joints form a cycle: a mechanism is a tree "
          "from one root body (the world frame); close loops with loop_closures");
    return false;
  }
  if (roots.size() > 1) {
    std::string names;
    for (size_t k = 0; k < roots.size() && k < 8; ++k) {
      names += (k ? ", " : "") + Q(m.bodies(roots[k]).name());
    }
    Error(diags, Idx(bodies_path, roots[1]),
          "bodies " + names +
              " are no joint's child: a mechanism has exactly one root body (the world frame); "
              "attach the others with a joint (FIXED, FLOATING, ...)");
    return false;
  }
  tree->root = roots[0];
  // Joints from the root, parents first: a breadth-first walk over children
  // in file order; a joint it never reaches lies on a cycle.
  std::vector<std::vector<int>> children(static_cast<size_t>(nb));
  for (int j = 0; j < nj; ++j) {
    children[static_cast<size_t>(tree->body_index.at(m.joints(j).parent()))].push_back(j);
  }
  tree->order.clear();
  std::vector<int> queue = {tree->root};
  for (size_t k = 0; k < queue.size(); ++k) {
    for (int j : children[static_cast<size_t>(queue[k])]) {
      tree->order.push_back(j);
      queue.push_back(tree->body_index.at(m.joints(j).child()));
    }
  }
  if (static_cast<int>(tree->order.size()) < nj) {
    std::vector<bool> reached(static_cast<size_t>(nj), false);
    for (int j : tree->order) reached[static_cast<size_t>(j)] = true;
    for (int j = 0; j < nj; ++j) {
      if (!reached[static_cast<size_t>(j)]) {
        Error(diags, Idx(joints_path, j) + ".parent",
              "joint " + Q(m.joints(j).name()) + " lies on a cycle of joints (its parent " +
                  Q(m.joints(j).parent()) + " is not reached from the root body " +
                  Q(m.bodies(tree->root).name()) + "); close loops with loop_closures");
        return false;
      }
    }
  }
  // Carriers, frames in them, and what each carrier carries.
  tree->carrier.assign(static_cast<size_t>(nb), -1);
  tree->in_carrier.assign(static_cast<size_t>(nb), Transform{});
  tree->carrier[static_cast<size_t>(tree->root)] = tree->root;
  for (int j : tree->order) {
    const v1::Joint& jt = m.joints(j);
    const int p = tree->body_index.at(jt.parent()), c = tree->body_index.at(jt.child());
    if (jt.type() == v1::Joint::FIXED) {
      tree->carrier[static_cast<size_t>(c)] = tree->carrier[static_cast<size_t>(p)];
      tree->in_carrier[static_cast<size_t>(c)] =
          Compose(tree->in_carrier[static_cast<size_t>(p)], FromPose(jt.origin()));
    } else {
      tree->carrier[static_cast<size_t>(c)] = c;
    }
  }
  tree->carried.assign(static_cast<size_t>(nb), MassProperties{});
  // Sum of m, of m c, and of the inertias about the carrier's origin.
  std::vector<M3> about_origin(static_cast<size_t>(nb), M3{});
  for (int i = 0; i < nb; ++i) {
    const v1::Body& b = m.bodies(i);
    if (b.mass() == 0) continue;
    const int c = tree->carrier[static_cast<size_t>(i)];
    const Transform x =
        Compose(tree->in_carrier[static_cast<size_t>(i)], FromPose(b.inertial_origin()));
    MassProperties& mp = tree->carried[static_cast<size_t>(c)];
    const M3 I = Rotate(x.R, InertiaMatrix(b.inertia()));
    const M3 Io = Shifted(I, b.mass(), x.p);
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) about_origin[static_cast<size_t>(c)][r][s] += Io[r][s];
    mp.com = Add(mp.com, Scaled(b.mass(), x.p));
    mp.mass += b.mass();
  }
  for (int i = 0; i < nb; ++i) {
    MassProperties& mp = tree->carried[static_cast<size_t>(i)];
    if (mp.mass > 0) {
      mp.com = Scaled(1 / mp.mass, mp.com);
      mp.inertia = Shifted(about_origin[static_cast<size_t>(i)], -mp.mass, mp.com);
      // Symmetric to the last bit.
      for (int r = 0; r < 3; ++r)
        for (int s = r + 1; s < 3; ++s) mp.inertia[s][r] = mp.inertia[r][s];
    }
  }
  // Every body's frame and centre of mass at the reference configuration,
  // and what each centre adds to the trace about each ancestor's origin
  // (trace is invariant under rotation: tr I_c + 2 m |c - o|^2). O(bodies x
  // depth), at most a million terms within the body limit.
  {
    std::vector<Transform> frame(static_cast<size_t>(nb));
    for (int j : tree->order) {
      const v1::Joint& jt = m.joints(j);
      const size_t p = static_cast<size_t>(tree->body_index.at(jt.parent()));
      frame[static_cast<size_t>(tree->body_index.at(jt.child()))] =
          Compose(frame[p], FromPose(jt.origin()));
    }
    tree->subtree_trace.assign(static_cast<size_t>(nb), 0.0);
    for (int i = 0; i < nb; ++i) {
      const v1::Body& b = m.bodies(i);
      if (b.mass() == 0) continue;
      const M3 I = InertiaMatrix(b.inertia());
      const double own = I[0][0] + I[1][1] + I[2][2];
      const V3 com = Compose(frame[static_cast<size_t>(i)], FromPose(b.inertial_origin())).p;
      for (int a = i;;) {
        const V3 r = Sub(com, frame[static_cast<size_t>(a)].p);
        tree->subtree_trace[static_cast<size_t>(a)] += own + 2 * b.mass() * DotOf(r, r);
        const int j = tree->parent_joint[static_cast<size_t>(a)];
        if (j < 0) break;
        a = tree->body_index.at(m.joints(j).parent());
      }
    }
  }
  if (std::all_of(m.joints().begin(), m.joints().end(),
                  [](const v1::Joint& jt) { return jt.type() == v1::Joint::FIXED; })) {
    Error(diags, joints_path,
          "no joint moves (" +
              std::string(nj == 0 ? "there are no joints" : "every joint is FIXED") +
              "): expected at least one REVOLUTE, CONTINUOUS, PRISMATIC, SPHERICAL or FLOATING "
              "joint, whose coordinates the simulation integrates");
    return false;
  }
  // A moving body needs mass at or below it (a massless intermediate frame
  // between two joints is fine when what it carries has mass).
  std::vector<double> below(static_cast<size_t>(nb), 0.0);
  for (int i = 0; i < nb; ++i) below[static_cast<size_t>(i)] = m.bodies(i).mass();
  for (auto it = tree->order.rbegin(); it != tree->order.rend(); ++it) {
    const v1::Joint& jt = m.joints(*it);
    below[static_cast<size_t>(tree->body_index.at(jt.parent()))] +=
        below[static_cast<size_t>(tree->body_index.at(jt.child()))];
  }
  for (int j : tree->order) {
    const v1::Joint& jt = m.joints(j);
    if (jt.type() == v1::Joint::FIXED) continue;
    const int c = tree->body_index.at(jt.child());
    if (!(below[static_cast<size_t>(c)] > 0)) {
      Error(diags, Idx(bodies_path, c) + ".mass",
            "body " + Q(jt.child()) + " moves on joint " + Q(jt.name()) +
                " but neither it nor any body it carries has mass: expected a mass > 0");
    }
  }
  return !failed();
}

}  // namespace tether::mechanism
