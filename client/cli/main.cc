// tether: validate, evaluate and run simulation descriptions, offline (the
// engine in this process) or through a tether-server (--server ADDR). The
// commands are the rows of kCommands; the flags, the parser and the help
// are command_line.cc's.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/backend.h"
#include "cli/command_line.h"
#include "cli/driver.h"
#include "cli/ensemble_command.h"
#include "cli/fmu_command.h"
#include "cli/mechanism_commands.h"
#include "cli/options.h"
#include "cli/python_command.h"
#include "cli/remote_commands.h"
#include "engine/integration_methods.h"

#if defined(__SANITIZE_ADDRESS__)
#define TETHER_CLI_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_CLI_SANITIZED 1
#endif
#endif

namespace tether::cli {
namespace {

// The commands that read one description file.
int OneDescription(const Command& self, const Options& o) {
  if (o.args.size() == 1) return kExitOk;
  return BadUsage(std::string(self.name) + ": expected exactly one description file, found " +
                  std::to_string(o.args.size()));
}

// validate, evaluate and run: the engine in this process, or with --server
// the server.
template <int (*kCommand)(const Options&, Backend&)>
int OnBackend(const Command& self, const Options& o) {
  if (int code = OneDescription(self, o); code != kExitOk) return code;
  if (o.server) return OnServer(o, kCommand);
  return kCommand(o, *MakeOfflineBackend());
}

int Fmu(const Command& self, const Options& o) {
  if (int code = OneDescription(self, o); code != kExitOk) return code;
  // No call is made: --server is baked into the FMU as its tether.server
  // parameter's start value (the remote mode's default address).
  return WriteFmu(o);
}

int Urdf(const Command& self, const Options& o) {
  if (o.args.size() != 1) {
    return BadUsage(std::string(self.name) + ": expected exactly one URDF file, found " +
                    std::to_string(o.args.size()));
  }
  return UrdfCommand(o);
}

int Expand(const Command& self, const Options& o) {
  if (int code = OneDescription(self, o); code != kExitOk) return code;
  return ExpandCommand(o);
}

// The engine's method table, one method a line: its name first.
int Methods(const Command& self, const Options& o) {
  if (!o.args.empty()) {
    return BadUsage(std::string(self.name) + ": expected no arguments, found " +
                    std::to_string(o.args.size()));
  }
  for (const IntegrationMethod& m : IntegrationMethods()) {
    std::string name(m.name);
    name.resize(std::max<std::size_t>(name.size() + 2, 21), ' ');
    std::cout << name << "order " << m.order << ", "
              << (m.adaptive ? "adaptive step (error control)" : "fixed step (step_size)")
              << (m.implicit ? ", implicit (Newton iterations)" : "") << "\n";
  }
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "tether: write error on standard output\n";
    return kExitFailure;
  }
  return kExitOk;
}

constexpr const char* kPythonNotes =
    "Drawn by the Python package (tether_client, with matplotlib) in python3, or "
    "$TETHER_PYTHON; `python3 -m tether_client plot --help` (or `animate --help`) prints every "
    "option.";

const Command kCommands[] = {
    {"validate", "SPEC.json",
     "compile the description and check it at the initial state;\n"
     "exit 0 when valid (warnings are printed), 2 otherwise",
     ServerUse::kOptional, nullptr, OnBackend<ValidateCommand>},
    {"evaluate", "SPEC.json", "one evaluation at the initial state, printed as JSON",
     ServerUse::kOptional, nullptr, OnBackend<EvaluateCommand>},
    {"run", "SPEC.json", "simulate and write frames and the residual certificate",
     ServerUse::kOptional, nullptr, OnBackend<RunCommand>},
    {"ensemble",
     "SPEC.json [--sweep NAME=START:STOP:COUNT ...] [--instances FILE] [--random "
     "NAME=uniform:A:B|normal:MU:SIGMA --count N --seed S] --until T [--output "
     "FILE.jsonl|FILE.csv]",
     "run many instances of the description (a grid and/or seeded\n"
     "random draws of parameters, initial q (x), v (der(x)) or\n"
     "inputs) to time T: one line per instance with its values,\n"
     "final state, status and certificate summary",
     ServerUse::kOptional, nullptr, OnBackend<EnsembleCommand>},
    {"fmu", "SPEC.json --output NAME.fmu [--fmi 2|3]",
     "write an FMI 2.0 (or, with --fmi 3, 3.0) Co-Simulation FMU\nof the description\n"
     "(the engine runs in the importing process; with --server\n"
     "ADDR the FMU runs a session on that server by default)",
     ServerUse::kAddress,
     "The FMU library is found at TETHER_FMU_LIBRARY, else ../lib/tether/tether-fmi2.so "
     "next to this executable, else in its own directory.",
     Fmu},
    {"urdf", "ROBOT.urdf [--output SPEC.json]",
     "write a runnable description (JSON) with the URDF's mechanism:\n"
     "one coordinate per non-fixed joint, named after it",
     ServerUse::kNone,
     "Gravity 9.81 m/s^2 along -z of the root link, the initial state zero, RK4 at h = 1e-3; "
     "<limit> is not enforced, <dynamics damping> becomes a damper (docs/MECHANISMS.md).",
     Urdf},
    {"expand", "SPEC.json [--output FILE]",
     "print the expression-level description (coordinates,\n"
     "definitions, energies, constraints) a mechanism compiles to",
     ServerUse::kNone, nullptr, Expand},
    {"methods", "",
     "the integration methods of this tether's engine (a\n"
     "description's integrator.method), one a line",
     ServerUse::kNone, nullptr, Methods},
    {"health", "[SERVICE]", "exit 0 when the server is serving", ServerUse::kRequired, nullptr,
     HealthCommand},
    {"sessions",
     "list | get ID | create SPEC.json [NAME] | delete ID\n"
     "run ID [--steps N | --until T] [--every K] ...\n"
     "update ID [--parameter NAME=VALUE] [--input NAME=VALUE] [--gains A,B]\n"
     "export ID --output FILE | import FILE [NAME]",
     "inspect, create and delete sessions; run: an existing\n"
     "session from its state (the options of run; the session\n"
     "stays); update: its parameters, inputs, gains or\n"
     "--certificate; export: a session's description and state\n"
     "as portable bytes, import: a new session from them",
     ServerUse::kRequired, nullptr, SessionsCommand},
    {"snapshots", "create ID [LABEL] | list ID | restore ID N | delete ID N",
     "save, list, roll back to and drop\n"
     "server-side snapshots of a session's state",
     ServerUse::kRequired, nullptr, SnapshotsCommand},
    {"plot", "RUN.jsonl [--spec SPEC.json] --output FIG.png|FIG.svg [--title T]",
     "draw a run's coordinates, multipliers and each constraint's\n"
     "residual against the certificate's bound (RUN.jsonl: tether\n"
     "run's output; --spec names the columns)",
     ServerUse::kNone, kPythonNotes, PythonCommand, true},
    {"animate",
     "RUN.jsonl [--spec SPEC.json] --point X,Y [--point X,Y ...] [--link A,B ...] "
     "--output MOTION.gif",
     "animate a planar mechanism: each --point is a coordinate or\n"
     "output pair; --link A,B a bar between points (indices, or\n"
     "origin; default a chain from the origin)",
     ServerUse::kNone, kPythonNotes, PythonCommand, true},
};

}  // namespace
}  // namespace tether::cli

int main(int argc, char** argv) {
  using namespace tether::cli;
  std::ios::sync_with_stdio(false);
  Options options;
  const Command* command = nullptr;
  const int code = ParseCommandLine(argc, argv, kCommands, &options, &command);
  if (code != kParsed) return code;
  const int result = command->run(*command, options);
#if defined(TETHER_CLI_SANITIZED)
  return result;  // LeakSanitizer's check runs at a normal exit
#else
  // The process ends without static destructors, once what it wrote is
  // flushed. A command that talked to a server leaves gRPC's threads behind
  // it (a channel reconnecting after a failed TLS handshake, the cleanup
  // after the last channel is gone), and tearing gRPC's and OpenSSL's
  // globals down under them crashed the CLI once, after it had printed its
  // error (SIGSEGV, exit 139, in `sessions list` with a wrong CA; not
  // reproduced in 560 runs since; gRPC's teardown after a failed handshake
  // is reported to race upstream). Nothing the CLI owns needs a destructor
  // by now: every file a command writes is closed before it returns.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(result);
#endif
}
