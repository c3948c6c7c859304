// A mechanism's checks and its tree: which body is the root, the order in
// which joints are reached from it, the moving bodies ("carriers") that
// fixed joints merge their children into, and each carrier's mass
// properties. Every problem is an ERROR diagnostic naming the element
// (system.mechanism.joints[2].parent).
#pragma once

#include "engine/internal/base/internal.h"

#include <map>
#include <string>
#include <vector>

#include "engine/internal/mechanism/symbolic.h"
#include "tether/v1/simulation.pb.h"

namespace tether::mechanism {

// A rigid transform: x_outer = R x_inner + p.
struct Transform {
  M3 R = Identity();
  V3 p{};
};
Transform Compose(const Transform& a, const Transform& b);  // a then b: a * b
Transform FromPose(const v1::Pose& pose);
V3 ToV3(const v1::Vector3& v);

// A body's mass, centre of mass and inertia about it, in some frame.
struct MassProperties {
  double mass = 0;
  V3 com{};
  M3 inertia{};  // about com, in the frame's axes
};

struct Tree {
  int root = -1;  // body index
  // Joints in the order they are reached from the root (parents first;
  // siblings in file order).
  std::vector<int> order;
  // Per body: the joint whose child it is (-1 for the root), its carrier
  // (itself, or the nearest ancestor not on a fixed joint) and its frame in
  // the carrier's.
  std::vector<int> parent_joint;
  std::vector<int> carrier;
  std::vector<Transform> in_carrier;
  // Per body: what it carries (itself and every body fixed to it), in its
  // frame (meaningful for carriers).
  std::vector<MassProperties> carried;
  // Per body: the trace of the inertia about its frame's origin of
  // everything at or below it (itself, the bodies fixed to it, every
  // descendant), with every joint at its reference (coordinates 0,
  // quaternions the identity). A quaternion joint's scale (energy.cc): the
  // rotation's entries of M are those of this inertia (at the reference).
  std::vector<double> subtree_trace;
  std::map<std::string, int, std::less<>> body_index;
};

// Checks `m` (field paths under `path`, e.g. "system.mechanism") and builds
// its tree; false, with diagnostics, when it has errors. `inputs` are the
// system's input names (actuators must name one).
bool BuildTree(const v1::Mechanism& m, const std::string& path,
               const std::vector<std::string>& inputs, Tree* tree,
               std::vector<v1::Diagnostic>* diags);

// Appends an ERROR diagnostic on `field`.
void AddError(std::vector<v1::Diagnostic>* diags, std::string field, std::string message);

// Whether `name` is an identifier (a letter or '_' then letters, digits, '_').
bool IsIdentifier(const std::string& name);

// Degrees of freedom (coordinates) of a joint type: 1, 0 (fixed), 4
// (spherical), 7 (floating).
int JointCoordinates(v1::Joint::Type type);

}  // namespace tether::mechanism
