// Command line of the `tether` tool, parsed once and shared by the offline
// (engine in-process) and remote (--server) paths.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tether::cli {

// Exit codes, documented in the README.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;    // I/O or server unreachable
inline constexpr int kExitBadInput = 2;   // bad description or arguments
inline constexpr int kExitRunFailed = 3;  // the simulation failed numerically

// run without --steps or --until: this many steps.
inline constexpr uint64_t kDefaultSteps = 1000;

struct Options {
  std::string command;                    // a command's name (command_line.h: kCommands)
  std::vector<std::string> args;          // positional arguments after the command
  std::optional<std::string> server;      // --server ADDR: talk to a tether-server
  std::optional<uint64_t> steps;          // --steps N
  std::optional<double> until;            // --until T
  std::optional<uint64_t> every;          // --every K (default 1, none with --output-interval)
  std::optional<double> output_interval;  // --output-interval DT
  std::string format = "jsonl";           // --format jsonl|csv
  std::optional<std::string> output;      // --output FILE (fmu: NAME.fmu)
  std::optional<int> fmi_version;         // --fmi 2|3 (fmu)
  bool certificate = true;                // --no-certificate turns it off
  bool quiet = false;                     // --quiet: no progress bar, no summary
  // --constraints N|all: the summary lists the N constraints with the
  // largest bounds (0: all of them).
  uint64_t summary_constraints = 10;
  // sessions update: --parameter NAME=VALUE, --input NAME=VALUE (the
  // input's default and current value), --gains ALPHA,BETA (the
  // description's Baumgarte gains), --certificate sampled|enclosed|off.
  std::vector<std::pair<std::string, double>> parameters;
  std::vector<std::pair<std::string, double>> inputs;
  std::optional<std::pair<double, double>> gains;
  std::optional<std::string> certificate_mode;
  // ensemble: --sweep NAME=START:STOP:COUNT (repeatable, the first
  // slowest), --random NAME=uniform:A:B|normal:MU:SIGMA (repeatable),
  // --count N draws, --seed S, --workers N (offline threads).
  struct Sweep {
    std::string name;
    double start = 0, stop = 0;
    uint32_t count = 0;
  };
  struct Random {
    std::string name;
    bool normal = false;  // else uniform
    double a = 0, b = 0;
  };
  std::vector<Sweep> sweeps;
  std::vector<Random> randoms;
  // --instances FILE.csv: explicit instances, one row each (slowest).
  std::optional<std::string> instances_file;
  // --reduce: with --output-interval, the mean, standard deviation, min and
  // max over the instances per output time instead of their frames.
  bool reduce = false;
  std::optional<uint64_t> count;
  uint64_t seed = 0;
  std::optional<uint64_t> workers;
  bool lanes = true;            // --no-lanes (offline): every instance on the scalar engine
  bool fast_functions = false;  // --functions fast: vectorised functions on the lane path
  double timeout_seconds = 0;   // --timeout S for remote calls (0: none)
  bool help = false;            // --help: this help instead of the command
  bool version = false;         // --version

  // How --server is reached (client::ConnectOptions' fields of the same
  // names): from the flags, else from their environment variables (their
  // rows in command_line.cc). TETHER_TLS_CERT and TETHER_TLS_KEY
  // (tether-server's own) are read instead, with a deprecation warning,
  // when neither TETHER_CLIENT_TLS_* is set.
  std::string tls_ca;                  // --tls-ca FILE
  std::string tls_cert;                // --tls-cert FILE
  std::string tls_key;                 // --tls-key FILE
  std::string tls_server_name;         // --tls-server-name NAME
  std::string token;                   // --token TOKEN (never printed)
  std::string token_file;              // --token-file FILE
  bool allow_plaintext_token = false;  // --allow-plaintext-token
  // Where each of those came from ("--tls-cert", "TETHER_CLIENT_TLS_CERT"
  // or "TETHER_TLS_CERT"), keyed by the field's name, for messages.
  std::map<std::string, std::string> sources;
};

}  // namespace tether::cli
