#include "cli/driver.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/output.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"

namespace tether::cli {
namespace {

int ExitCode(BackendStatus::Kind kind) {
  switch (kind) {
    case BackendStatus::Kind::kOk: return kExitOk;
    case BackendStatus::Kind::kBadInput: return kExitBadInput;
    case BackendStatus::Kind::kRunFailed: return kExitRunFailed;
    case BackendStatus::Kind::kFailure: return kExitFailure;
  }
  return kExitFailure;
}

void PrintWarnings(const std::vector<v1::Diagnostic>& warnings) {
  for (const auto& w : warnings)
    std::cerr << "warning: " << w.field() << ": " << w.message() << "\n";
}

// Flushes `out`; on a write error says so (naming `where`) and returns false.
bool Flushed(std::ostream& out, const std::string& where) {
  out.flush();
  if (out) return true;
  std::cerr << "tether: write error on " << where << "\n";
  return false;
}

// Reads options.args[0] with the engine's parser, then runs `command` on
// it: exit 1 when it cannot be read, 2 when it is not a description.
template <int (*kCommand)(const Options&, const v1::SimulationSpec&, Backend&)>
int WithSpec(const Options& o, Backend& backend) {
  v1::SimulationSpec spec;
  Status s = LoadSpecFile(o.args[0], &spec);
  if (s.ok()) return kCommand(o, spec, backend);
  std::cerr << "tether: " << s.message() << "\n";
  return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
}

// The report on stdout; exit 2 when the description is not valid.
int Validate(const Options&, const v1::SimulationSpec& spec, Backend& backend) {
  v1::ValidationReport report;
  BackendStatus s = backend.Validate(spec, &report);
  if (!s.ok()) return ReportFailure(s);
  PrintValidationReport(report, std::cout);
  if (!Flushed(std::cout, "standard output")) return kExitFailure;
  return report.valid() ? kExitOk : kExitBadInput;
}

// The warnings on stderr, the frame as one JSON line (evaluate takes no
// options: a --quiet is refused by the parser).
int Evaluate(const Options&, const v1::SimulationSpec& spec, Backend& backend) {
  v1::Frame frame;
  std::vector<v1::Diagnostic> warnings;
  BackendStatus s = backend.Evaluate(spec, &frame, &warnings);
  PrintWarnings(warnings);
  if (!s.ok()) return ReportFailure(s);
  std::cout << ToJson(frame) << "\n";
  if (!Flushed(std::cout, "standard output")) return kExitFailure;
  return kExitOk;
}

// Open, run, Close; a failure to close is reported only after a good run.
int Run(const Options& o, const v1::SimulationSpec& spec, Backend& backend) {
  std::unique_ptr<Session> session;
  BackendStatus s = backend.Open(spec, &session);
  if (!s.ok()) return ReportFailure(s);
  if (!o.quiet) PrintWarnings(session->info().warnings);
  int exit_code = RunSession(o, *session);
  BackendStatus closed = session->Close();
  if (!closed.ok() && exit_code == kExitOk) exit_code = ReportFailure(closed);
  return exit_code;
}

}  // namespace

int RunSession(const Options& o, Session& session) {
  const Session::Info& info = session.info();
  RunPlan plan;
  plan.steps = o.steps.value_or(o.until ? 0 : kDefaultSteps);
  plan.until = o.until;
  plan.every = o.every.value_or(o.output_interval ? 0 : 1);
  plan.output_interval = o.output_interval;
  plan.certificate = o.certificate;
  if (o.until && !(*o.until > info.start_time)) {
    std::cerr << "tether: --until " << *o.until << ": expected a time later than the initial time "
              << info.start_time << "\n";
    return kExitBadInput;
  }
  if (o.output_interval) {
    // The engine's check, here so a remote run fails as early as offline.
    std::string m = OutputIntervalProblem(info.start_time, o.until, *o.output_interval);
    if (!m.empty()) {
      return ReportFailure({BackendStatus::Kind::kBadInput,
                            "INVALID_ARGUMENT",
                            "output_interval: " + m,
                            {{"output_interval", m}}});
    }
  }
  BackendStatus s = session.Begin(plan);
  if (!s.ok()) return ReportFailure(s);

  std::ofstream file;
  std::ostream* out = OpenOutput(o, &file);
  if (out == nullptr) return kExitFailure;
  std::unique_ptr<FrameWriter> writer = FrameWriter::Create(o.format, info.names, out);
  if (writer == nullptr)
    return BadUsage("--format: expected jsonl or csv, found '" + o.format + "'");

  // By time with --until, else by steps.
  const bool by_time = o.until.has_value();
  Progress progress(!o.quiet && isatty(STDERR_FILENO), by_time ? info.start_time : 0,
                    by_time ? *o.until : static_cast<double>(plan.steps));
  std::optional<v1::Certificate> certificate;
  s = session.Stream(
      [&](const v1::Frame& frame) {
        writer->WriteFrame(frame);
        progress.Update(by_time ? frame.t() : static_cast<double>(frame.step() - info.start_step));
      },
      &certificate);
  progress.Done();
  // A failed run keeps its frames and its certificate line.
  if (certificate) writer->WriteCertificate(*certificate);
  if (!Flushed(*out, o.output ? *o.output : "standard output")) return kExitFailure;
  if (!s.ok()) return ReportFailure(s);
  if (certificate && !o.quiet) PrintCertificate(*certificate, std::cerr, o.summary_constraints);
  return kExitOk;
}

int ValidateCommand(const Options& o, Backend& backend) { return WithSpec<Validate>(o, backend); }
int EvaluateCommand(const Options& o, Backend& backend) { return WithSpec<Evaluate>(o, backend); }
int RunCommand(const Options& o, Backend& backend) { return WithSpec<Run>(o, backend); }

int ReportFailure(const BackendStatus& status) {
  if (status.kind == BackendStatus::Kind::kRunFailed) {
    std::cerr << "tether: simulation failed at " << status.message << "\n";
    return kExitRunFailed;
  }
  std::cerr << "tether: " << status.code << "\n";
  if (status.violations.empty()) std::cerr << "error: " << status.message << "\n";
  for (const FieldViolation& v : status.violations) {
    std::cerr << "error: " << v.field << ": " << v.description << "\n";
  }
  return ExitCode(status.kind);
}

std::ostream* OpenOutput(const Options& o, std::ofstream* file) {
  if (!o.output) return &std::cout;
  file->open(*o.output, std::ios::binary | std::ios::trunc);
  if (*file) return file;
  std::cerr << "tether: --output " << *o.output << ": cannot open for writing\n";
  return nullptr;
}

int BadUsage(const std::string& message) {
  std::cerr << "tether: " << message << "\n(see tether --help)\n";
  return kExitBadInput;
}

}  // namespace tether::cli
