// remote_commands.h in a build without the gRPC client
// (TETHER_BUILD_SERVICE=OFF): every command that would call a server says
// so and exits 1.
#include <iostream>

#include "cli/remote_commands.h"

namespace tether::cli {
namespace {

int NoClient() {
  std::cerr << "tether: this build has no gRPC client (configure with TETHER_BUILD_SERVICE=ON)\n";
  return kExitFailure;
}

}  // namespace

int HealthCommand(const Command&, const Options&) { return NoClient(); }
int SessionsCommand(const Command&, const Options&) { return NoClient(); }
int SnapshotsCommand(const Command&, const Options&) { return NoClient(); }
int OnServer(const Options&, int (*)(const Options&, Backend&)) { return NoClient(); }

}  // namespace tether::cli
