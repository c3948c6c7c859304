// Mechanisms (SystemSpec.mechanism: bodies, joints, loop closures) compiled
// into the expression form the rest of the engine runs: coordinates named
// after the joints, body kinematics as definitions, a kinetic and a
// potential energy, generalized forces and constraints (docs/MECHANISMS.md).
// Validate and Simulation::Create expand a mechanism themselves; this is the
// same step on its own, for `tether expand` and for tests.
#pragma once

#include <vector>

#include "tether/v1/simulation.pb.h"

namespace tether {

struct ExpandOptions {
  // Substitute every definition's text into the expressions that use it
  // (parenthesized), leaving no definitions: for an engine without
  // definitions, and for tests. The text grows with the depth of the tree
  // (each level of a chain about triples a rotation's text).
  bool inline_definitions = false;
};

// `system` with its mechanism replaced by what it compiles to; a system
// without a mechanism is returned unchanged. Problems are ERROR diagnostics
// whose field names the element ("system.mechanism.joints[2].parent"); the
// result is meaningful only when there are none. Bounded: at most
// kMaxMechanismElements bodies, joints and loop closures each, names of at
// most 128 bytes, and the output grows linearly with the mechanism (without
// inline_definitions).
v1::SystemSpec ExpandMechanism(const v1::SystemSpec& system,
                               std::vector<v1::Diagnostic>* diagnostics,
                               const ExpandOptions& options = {});

inline constexpr int kMaxMechanismElements = 1000;

}  // namespace tether
