// The commands only a server has: `tether health [SERVICE]` and
// `tether sessions list | get ID | delete ID`, with --server ADDR.
#pragma once

#include "cli/options.h"

namespace tether::cli {

// Runs options.command ("health" or "sessions") against *options.server;
// returns the process exit code. Errors are printed as the driver prints
// them (driver.h).
int RunRemoteCommand(const Options& options);

}  // namespace tether::cli
