// Writes a checked mechanism (tree.h) as expressions: the definitions of
// every moving body's kinematics, the energies, the joints' forces and the
// loop closures' constraints, into a SystemSpec (docs/MECHANISMS.md has the
// equations). kinematics.cc: frames and velocities; energy.cc: T, V and the
// generalized forces; loops.cc: the loop closures.
#pragma once

#include "engine/internal/base/internal.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/internal/mechanism/symbolic.h"
#include "engine/internal/mechanism/tree.h"
#include "tether/v1/simulation.pb.h"

namespace tether::mechanism {

class Emitter {
 public:
  // `taken`: the names the description already uses (parameters, inputs,
  // its own definitions); a generated name that clashes is an error.
  Emitter(const v1::Mechanism& m, const Tree& tree, std::string path, std::set<std::string> taken,
          v1::SystemSpec* out, std::vector<v1::Diagnostic>* diags)
      : m_(m),
        tree_(tree),
        path_(std::move(path)),
        taken_(std::move(taken)),
        out_(out),
        diags_(diags) {}

  // Coordinates (in joint order), then the kinematics of every moving body.
  void Kinematics();
  // mechanism_T, mechanism_V and the generalized forces (one per
  // coordinate, possibly all "0").
  void Energies();
  // Loop closures' constraints (appended to out's constraints).
  void Loops();

  bool failed() const { return failed_; }
  // The joints' generalized forces, one per coordinate.
  const std::vector<Sym>& forces() const { return forces_; }

 private:
  struct Frame {
    Mat R;  // world from body
    Vec p;  // body origin, world
    Vec w;  // angular velocity, body frame
    Vec v;  // origin velocity, body frame
  };
  // A new definition (when `value` is not trivial) or `value` itself.
  // `always`: define it even when trivial (a name users may refer to: a
  // body's frame and velocities), still returning the folded value, so that
  // zeros and ones keep folding.
  // `field`: the element whose name the definition's is made from (a
  // joint's or body's name), which a clash names; "" for the mechanism.
  Sym Define(const std::string& name, const Sym& value, bool always = false,
             const std::string& field = "");
  Vec DefineVec(const std::string& prefix, const Vec& value, bool always = false,
                const std::string& field = "");
  Mat DefineMat(const std::string& prefix, const Mat& value, bool always = false,
                const std::string& field = "");
  // `value`'s expression text, when its coefficients are finite; else an
  // error naming `name` (the generated definition or constraint) and "0".
  std::string Text(const Sym& value, const std::string& name);
  // Records a generated name (coordinates, definitions, constraints);
  // false (with an error) when it is taken.
  bool Claim(const std::string& name, const std::string& field);
  std::string JointField(int j) const { return path_ + ".joints[" + std::to_string(j) + "]"; }
  std::string BodyField(int b) const { return path_ + ".bodies[" + std::to_string(b) + "]"; }

  const v1::Mechanism& m_;
  const Tree& tree_;
  const std::string path_;
  std::set<std::string> taken_;
  v1::SystemSpec* out_;
  std::vector<v1::Diagnostic>* diags_;
  bool failed_ = false;
  std::vector<Frame> frames_;  // per body (carriers and the root)
  // Per joint: its first coordinate's index (-1 for fixed).
  std::vector<int> first_coordinate_;
  std::vector<Sym> forces_;
  // Quaternion joints: (joint, the quaternion's 4 coordinate names).
  std::vector<std::pair<int, std::array<std::string, 4>>> quaternions_;
};

}  // namespace tether::mechanism
