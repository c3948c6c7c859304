// The commands only a server has, with --server ADDR: `tether health
// [SERVICE]`, `tether sessions list | get ID | delete ID | export ID
// --output FILE | import FILE [NAME]` and `tether snapshots create ID
// [LABEL] | list ID | restore ID N | delete ID N`.
#pragma once

#include "cli/options.h"

namespace tether::cli {

// Runs options.command ("health" or "sessions") against *options.server;
// returns the process exit code. Errors are printed as the driver prints
// them (driver.h).
int RunRemoteCommand(const Options& options);

}  // namespace tether::cli
