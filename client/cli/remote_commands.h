// What needs the gRPC client, behind a header that does not: the commands
// only a server has, with --server ADDR (`tether health [SERVICE]`,
// `tether sessions list | get ID | create SPEC.json [NAME] | delete ID |
// export ID --output FILE | import FILE [NAME]`, `tether snapshots create
// ID [LABEL] | list ID | restore ID N | delete ID N`), and validate,
// evaluate and run on a server. A build without the client
// (TETHER_BUILD_SERVICE=OFF) links no_remote.cc instead, where each says so.
#pragma once

#include "cli/backend.h"
#include "cli/command_line.h"
#include "cli/options.h"

namespace tether::cli {

// Each checks the connect options (the flags and their variables), then
// carries out `self` against *options.server; returns the process exit
// code. Errors are printed as the driver prints them (driver.h); bad
// arguments as the command's usage line.
int HealthCommand(const Command& self, const Options& options);
int SessionsCommand(const Command& self, const Options& options);
int SnapshotsCommand(const Command& self, const Options& options);

// Checks the connect options, then runs `command` (driver.h) with the
// server as its backend.
int OnServer(const Options& options, int (*command)(const Options&, Backend&));

}  // namespace tether::cli
