// The offline path: the engine runs in this process.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/options.h"
#include "cli/output.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"

namespace tether::cli {

namespace {

void PrintStatus(const Status& s) {
  std::cerr << "tether: " << StatusCodeName(s.code()) << "\n";
  if (!s.violations().empty()) {
    for (const auto& v : s.violations()) std::cerr << "error: " << v.field << ": " << v.description << "\n";
  } else {
    std::cerr << "error: " << s.message() << "\n";
  }
}

void PrintWarnings(const std::vector<v1::Diagnostic>& warnings) {
  for (const auto& w : warnings) std::cerr << "warning: " << w.field() << ": " << w.message() << "\n";
}

int ExitFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument: return kExitBadInput;
    case StatusCode::kAborted: return kExitRunFailed;
    default: return kExitFailure;
  }
}

int Validate(const v1::SimulationSpec& spec) {
  v1::ValidationReport report = tether::Validate(spec);
  PrintValidationReport(report, std::cout);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "tether: write error on standard output\n";
    return kExitFailure;
  }
  return report.valid() ? kExitOk : kExitBadInput;
}

int Evaluate(const v1::SimulationSpec& spec) {
  std::vector<v1::Diagnostic> warnings;
  auto created = Simulation::Create(spec, &warnings);
  if (!created.ok()) {
    PrintStatus(created.status());
    return ExitFor(created.status());
  }
  std::unique_ptr<Simulation> sim = std::move(created).value();
  Status s;
  PrintWarnings(warnings);
  v1::Frame frame;
  s = sim->Evaluate(&frame);
  if (!s.ok()) {
    PrintStatus(s);
    return ExitFor(s);
  }
  std::cout << ToJson(frame) << "\n";
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "tether: write error on standard output\n";
    return kExitFailure;
  }
  return kExitOk;
}

int Run(const v1::SimulationSpec& spec, const Options& o) {
  std::vector<v1::Diagnostic> warnings;
  auto created = Simulation::Create(spec, &warnings);
  if (!created.ok()) {
    PrintStatus(created.status());
    return ExitFor(created.status());
  }
  std::unique_ptr<Simulation> sim = std::move(created).value();
  Status s;
  if (!o.quiet) PrintWarnings(warnings);

  RunOptions run;
  run.steps = o.steps.value_or(o.until ? 0 : 1000);
  run.until_time = o.until;
  run.every = o.every;
  run.certificate = o.certificate;
  s = sim->BeginRun(run);
  if (!s.ok()) {
    if (s.code() == StatusCode::kInvalidArgument && o.until) {
      std::cerr << "tether: --until " << *o.until << ": expected a time later than the initial time "
                << sim->time() << "\n";
      return kExitBadInput;
    }
    PrintStatus(s);
    return ExitFor(s);
  }

  std::ofstream file;
  std::ostream* out = &std::cout;
  if (o.output) {
    file.open(*o.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "tether: --output " << *o.output << ": cannot open for writing\n";
      return kExitFailure;
    }
    out = &file;
  }
  ColumnNames names{sim->coordinate_names(), sim->constraint_names(), sim->output_names()};
  std::unique_ptr<FrameWriter> writer = FrameWriter::Create(o.format, names, out);

  const double t0 = sim->time();
  const bool by_time = o.until.has_value();
  Progress progress(!o.quiet && isatty(STDERR_FILENO), by_time ? t0 : 0,
                    by_time ? *o.until : static_cast<double>(run.steps));
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  const uint64_t first_step = sim->step();
  Status failure;
  while (sim->run_active()) {
    failure = sim->Advance(1024, &frames);
    for (const auto& f : frames) writer->WriteFrame(f);
    frames.Clear();
    if (!failure.ok()) break;
    progress.Update(by_time ? sim->time() : static_cast<double>(sim->step() - first_step));
  }
  progress.Done();
  v1::Certificate certificate;
  sim->GetCertificate(&certificate);
  if (o.certificate) writer->WriteCertificate(certificate);
  out->flush();
  if (!*out) {
    std::cerr << "tether: write error on " << (o.output ? *o.output : "standard output") << "\n";
    return kExitFailure;
  }
  if (!failure.ok()) {
    std::cerr << "tether: simulation failed at " << failure.message() << "\n";
    return kExitRunFailed;
  }
  if (o.certificate && !o.quiet) PrintCertificate(certificate, std::cerr);
  return kExitOk;
}

}  // namespace

int RunOffline(const Options& o) {
  v1::SimulationSpec spec;
  Status s = LoadSpecFile(o.args[0], &spec);
  if (!s.ok()) {
    std::cerr << "tether: " << s.message() << "\n";
    return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
  }
  if (o.command == "validate") return Validate(spec);
  if (o.command == "evaluate") return Evaluate(spec);
  return Run(spec, o);
}

}  // namespace tether::cli
