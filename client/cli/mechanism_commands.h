// `tether urdf ROBOT.urdf [--output SPEC.json]`: a runnable description with
// a mechanism from a URDF file (client/urdf/urdf_import.h). `tether expand
// SPEC.json [--output FILE]`: the expression-level description a mechanism
// compiles to (engine/mechanism.h), with readable names, so that nothing
// is hidden and a user can start from it.
#pragma once

#include "cli/options.h"

namespace tether::cli {

// Return the process exit code (options.h): 2 for a bad file or arguments,
// 1 when the output cannot be written.
int UrdfCommand(const Options& options);
int ExpandCommand(const Options& options);

}  // namespace tether::cli
