// The `tether --server ADDR ...` path: the same commands as offline, carried
// out by a tether-server, plus `health` and `sessions`.
#pragma once

#include "cli/options.h"

namespace tether::cli {

// Runs options.command against *options.server; returns the process exit
// code (same codes and same stdout as the offline path).
int RunRemote(const Options& options);

}  // namespace tether::cli
