// Command line of the `tether` tool, parsed once and shared by the offline
// (engine in-process) and remote (--server) paths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tether::cli {

// Exit codes, documented in the README.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;    // I/O or server unreachable
inline constexpr int kExitBadInput = 2;   // bad description or arguments
inline constexpr int kExitRunFailed = 3;  // the simulation failed numerically

struct Options {
  std::string command;                    // validate | evaluate | run | health | sessions
  std::vector<std::string> args;          // positional arguments after the command
  std::optional<std::string> server;      // --server ADDR: talk to a tether-server
  std::optional<uint64_t> steps;          // --steps N
  std::optional<double> until;            // --until T
  std::optional<uint64_t> every;          // --every K (default 1, none with --output-interval)
  std::optional<double> output_interval;  // --output-interval DT
  std::string format = "jsonl";           // --format jsonl|csv
  std::optional<std::string> output;      // --output FILE
  bool certificate = true;                // --no-certificate turns it off
  bool quiet = false;                     // --quiet: no progress bar, no summary
  double timeout_seconds = 0;             // --timeout S for remote calls (0: none)
};

}  // namespace tether::cli
