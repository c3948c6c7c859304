// The `tether` command line, made of two tables: the commands (kCommands in
// main.cc: name, arguments, help, how it uses --server, its handler) and
// the flags (kFlags in command_line.cc: name, value, the commands it is
// for, help, what a good value is, its setter, its environment variable).
// The parser, the checks of the command line and the --help texts (all
// commands, or `tether COMMAND --help`) read them, so a new command or a
// new flag is one row.
#pragma once

#include <span>
#include <string>

#include "cli/options.h"

namespace tether::cli {

// How a command uses --server ADDR.
enum class ServerUse {
  kNone,      // runs in this process and refuses --server
  kOptional,  // runs in this process, or on the server with --server ADDR
  kRequired,  // runs on the server, so it needs --server ADDR
  kAddress,   // keeps ADDR (fmu bakes it in) and makes no call
};

struct Command {
  const char* name;      // "run"
  const char* synopsis;  // its arguments, "SPEC.json"; '\n' separates alternatives
  const char* help;      // what it does; '\n' starts a continuation line
  ServerUse server;
  // Printed after its options in the help (e.g. where a file is looked
  // for), or nullptr.
  const char* notes;
  // Carries it out once the command line is checked; returns the exit
  // code (options.h).
  int (*run)(const Command& self, const Options& options);
  // Takes the rest of the command line, flags included, as its arguments,
  // unparsed: plot and animate hand them to the Python package, whose own
  // parser checks them and prints their help.
  bool forwards_arguments = false;
};

// Parses argv into *options against `commands` and kFlags, prints the
// help (exit 0) or a usage error (exit 2, naming the flag or the command
// and what was expected), reads the connect options the flags do not give
// from the environment (with --server only), and checks what the command
// line alone can decide. Returns kParsed with *command set when the command
// is to be run; otherwise the exit code.
inline constexpr int kParsed = -1;
int ParseCommandLine(int argc, char** argv, std::span<const Command> commands, Options* options,
                     const Command** command);

// "tether --server ADDR sessions list | get ID | ...": the usage of one
// command on one line, for its own usage errors.
std::string UsageLine(const Command& command);

}  // namespace tether::cli
