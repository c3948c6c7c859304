// The `tether validate|evaluate|run SPEC.json` commands, written once for
// both backends (backend.h): reading the description, warnings, --output,
// the frame formats, the progress bar, the certificate line and summary,
// the messages and the exit codes (options.h).
#pragma once

#include <fstream>
#include <ostream>
#include <string>

#include "cli/backend.h"
#include "cli/options.h"

namespace tether::cli {

// `tether validate`, `evaluate` and `run` of the one description file in
// options.args on `backend`; each returns the process exit code.
int ValidateCommand(const Options& options, Backend& backend);
int EvaluateCommand(const Options& options, Backend& backend);
int RunCommand(const Options& options, Backend& backend);
// The run of an open session (`run`, `sessions run`): frames (and the
// certificate line) to stdout or --output, the certificate's summary on
// stderr; the exit code.
int RunSession(const Options& options, Session& session);

// Prints a failed call on stderr and returns its exit code: a failed run as
// "tether: simulation failed at MESSAGE"; anything else as "tether: CODE",
// then one "error: field: description" line per field violation (or
// "error: MESSAGE" when there are none).
int ReportFailure(const BackendStatus& status);

// Where a command writes: standard output, or --output FILE opened (and
// truncated) into *file; nullptr, after saying so on stderr, when FILE
// cannot be opened.
std::ostream* OpenOutput(const Options& options, std::ofstream* file);

// Prints "tether: MESSAGE" and a pointer to --help; returns kExitBadInput.
int BadUsage(const std::string& message);

}  // namespace tether::cli
