// URDF -> a runnable SimulationSpec with a mechanism (docs/MECHANISMS.md,
// "URDF import"): one body per link, one joint per joint (one coordinate
// per non-fixed joint, named after it, in file order), SI units, gravity
// 9.81 m/s^2 along -z of the root link, the initial state zero (a floating
// joint's quaternion the identity), RK4 at h = 1e-3, and an output
// `energy` (T + V). <limit> is not enforced (a warning names the limited
// joints), <dynamics damping> becomes a joint damper on a one-coordinate
// joint (elsewhere it is ignored with a note), visual, collision, material,
// transmission and gazebo elements are ignored (one note). The result is
// validated whole (Validate, within the default compile limits): what the
// import returns runs, or the error says why.
//
// Read with tinyxml2, hardened like the server's inputs: at most
// kMaxUrdfBytes and kMaxUrdfTags, elements nested at most kMaxUrdfDepth
// deep, no DOCTYPE (so no entity declarations, hence no expansion), at most
// kMaxMechanismElements links and joints. Every error names the file, the
// line and the element ("arm.urdf:12: <joint name='elbow'>: ...").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether::urdf {

inline constexpr size_t kMaxUrdfBytes = 16u << 20;
inline constexpr int kMaxUrdfDepth = 32;
// Tags ('<') in the file, counted before parsing: tinyxml2 keeps about 130
// bytes an element, so 16 MiB of "<a/>" held 540 MB. 1000 links with
// visuals, collisions and inertials and their joints are about 25 000.
inline constexpr size_t kMaxUrdfTags = 250000;

struct Import {
  v1::SimulationSpec spec;
  std::string robot_name;
  // Warnings and notes for the user (limits not enforced, elements
  // ignored, names changed to identifiers), one line each.
  std::vector<std::string> warnings;
};

// `source` names the text in messages (the file's path).
Status ImportUrdf(std::string_view xml, std::string_view source, Import* out);
Status ImportUrdfFile(const std::string& path, Import* out);

}  // namespace tether::urdf
