// `tether fmu SPEC.json --output NAME.fmu [--fmi 2|3]`: an FMI 2.0 or 3.0
// Co-Simulation FMU of a description (README "FMU export",
// docs/COSIMULATION.md).
#pragma once

#include "cli/options.h"

namespace tether::cli {

// Writes the FMU options.output names; returns the process exit code
// (options.h): 2 for a bad description or bad flags, 1 when the FMU
// library cannot be found or the file cannot be written.
int WriteFmu(const Options& options);

}  // namespace tether::cli
