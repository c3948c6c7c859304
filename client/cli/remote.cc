// `tether --server ADDR validate|evaluate|run SPEC.json`, `tether health` and
// `tether sessions list|get|delete`: the same commands as offline, carried
// out by a tether-server through the client library. stdout is written with
// the same FrameWriter / printers as offline so both paths give the same
// bytes; errors go to stderr and map to the same exit codes.
#include "cli/remote.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/output.h"
#include "engine/spec_json.h"
#include "engine/status.h"
#include "tether/client.h"
#include "tether/status_details.h"

namespace tether::cli {
namespace {

using client::Client;
using client::FormatStatus;

constexpr std::chrono::milliseconds kDefaultHealthDeadline{3000};

// gRPC status -> exit code: the server's INVALID_ARGUMENT is bad input and
// ABORTED a failed run, as offline; anything else (unreachable, NOT_FOUND,
// FAILED_PRECONDITION, ...) is a plain failure.
int ExitCode(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK: return kExitOk;
    case grpc::StatusCode::INVALID_ARGUMENT: return kExitBadInput;
    case grpc::StatusCode::ABORTED: return kExitRunFailed;
    default: return kExitFailure;
  }
}

// Errors in the offline path's layout ("tether: CODE", then one
// "error: field: description" line per violation, or "error: message"); a
// failed run as "tether: simulation failed at ...". Field paths are the
// server's (relative to the request, e.g. "spec.system...").
int Fail(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::ABORTED) {
    std::cerr << "tether: simulation failed at " << status.error_message()
              << "\n";
    return ExitCode(status);
  }
  std::cerr << "tether: " << client::StatusCodeName(status.error_code())
            << "\n";
  std::vector<client::FieldViolation> violations =
      client::FieldViolations(status);
  if (violations.empty()) {
    std::cerr << "error: " << status.error_message() << "\n";
  }
  for (const client::FieldViolation& v : violations) {
    std::cerr << "error: " << v.field << ": " << v.description << "\n";
  }
  return ExitCode(status);
}

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) quoted += c;
  }
  return quoted + "\"";
}

int Usage(const std::string& message) {
  std::cerr << "tether: " << message << "\n(see tether --help)\n";
  return kExitBadInput;
}

// Reads the description exactly as the offline path does (same parser, same
// message, same exit code).
bool LoadSpec(const Options& options, v1::SimulationSpec* spec, int* exit_code) {
  if (options.args.size() != 1) {
    *exit_code = Usage(options.command +
                       ": expected exactly one description file, found " +
                       std::to_string(options.args.size()));
    return false;
  }
  Status status = LoadSpecFile(options.args[0], spec);
  if (!status.ok()) {
    std::cerr << "tether: " << status.message() << "\n";
    *exit_code = status.code() == StatusCode::kNotFound ? kExitFailure
                                                        : kExitBadInput;
    return false;
  }
  return true;
}

void PrintWarnings(const google::protobuf::RepeatedPtrField<v1::Diagnostic>&
                       warnings) {
  for (const v1::Diagnostic& w : warnings) {
    std::cerr << "warning: " << w.field() << ": " << w.message() << "\n";
  }
}

client::ConnectOptions MakeConnectOptions(const Options& options) {
  client::ConnectOptions connect;
  connect.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(options.timeout_seconds * 1000));
  return connect;
}

// As offline: the report on stdout, exit 2 when not valid.
int Validate(const Options& options, Client& client) {
  v1::SimulationSpec spec;
  int code = kExitOk;
  if (!LoadSpec(options, &spec, &code)) return code;
  v1::ValidationReport report;
  grpc::Status status = client.Validate(spec, &report);
  if (!status.ok()) return Fail(status);
  PrintValidationReport(report, std::cout);
  std::cout.flush();
  return report.valid() ? kExitOk : kExitBadInput;
}

// As offline: warnings on stderr, the frame as one JSON line on stdout.
int Evaluate(const Options& options, Client& client) {
  v1::EvaluateRequest request;
  int code = kExitOk;
  if (!LoadSpec(options, request.mutable_spec(), &code)) return code;
  v1::EvaluateResponse response;
  grpc::Status status = client.Evaluate(request, &response);
  if (!status.ok()) return Fail(status);
  PrintWarnings(response.warnings());
  std::cout << ToJson(response.frame()) << "\n";
  std::cout.flush();
  return kExitOk;
}

int RunSession(const Options& options, Client& client,
               const v1::Session& session) {
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (options.output) {
    file.open(*options.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "tether: --output " << *options.output
                << ": cannot open for writing\n";
      return kExitFailure;
    }
    out = &file;
  }
  ColumnNames names;
  names.coordinates.assign(session.coordinates().begin(),
                           session.coordinates().end());
  names.constraints.assign(session.constraints().begin(),
                           session.constraints().end());
  names.outputs.assign(session.outputs().begin(), session.outputs().end());
  std::unique_ptr<FrameWriter> writer =
      FrameWriter::Create(options.format, names, out);
  if (writer == nullptr) {
    return Usage("--format: expected jsonl or csv, found '" + options.format +
                 "'");
  }

  v1::RunRequest request;
  request.set_session_id(session.id());
  // As offline: neither --steps nor --until means 1000 steps.
  request.set_steps(options.steps.value_or(options.until ? 0 : 1000));
  if (options.until) request.set_until_time(*options.until);
  request.set_every(options.every);
  request.set_include_certificate(options.certificate);
  // As offline: a progress bar on a terminal, by steps or by time.
  const bool by_time = options.until.has_value();
  const double t0 = session.state().t();
  const uint64_t first_step = session.step();
  Progress progress(!options.quiet && isatty(STDERR_FILENO), by_time ? t0 : 0,
                    by_time ? *options.until : static_cast<double>(request.steps()));
  v1::Certificate certificate;
  grpc::Status status = client.Run(
      request,
      [&](const v1::Frame& frame) {
        writer->WriteFrame(frame);
        progress.Update(by_time ? frame.t() : static_cast<double>(frame.step() - first_step));
        return true;
      },
      &certificate);
  progress.Done();
  // The last message carries the certificate of the window, also when the
  // run failed (then ABORTED follows): written as offline, after the frames.
  const bool have_certificate =
      options.certificate && certificate.ByteSizeLong() > 0;
  if (have_certificate) writer->WriteCertificate(certificate);
  out->flush();
  if (!*out) {
    std::cerr << "tether: write error on "
              << (options.output ? *options.output : "standard output")
              << "\n";
    return kExitFailure;
  }
  if (!status.ok()) return Fail(status);
  if (have_certificate && !options.quiet) {
    PrintCertificate(certificate, std::cerr);
  }
  return kExitOk;
}

// CreateSession + Run (+ DeleteSession): frames through the same
// FrameWriter as offline, the certificate line last, its summary on stderr.
int Run(const Options& options, Client& client) {
  v1::SimulationSpec spec;
  int code = kExitOk;
  if (!LoadSpec(options, &spec, &code)) return code;

  v1::Session session;
  grpc::Status status = client.CreateSession(spec, "tether-cli", &session);
  if (!status.ok()) return Fail(status);
  if (!options.quiet) PrintWarnings(session.warnings());  // as offline
  int exit_code = RunSession(options, client, session);
  grpc::Status deleted = client.DeleteSession(session.id());
  if (!deleted.ok() && exit_code == kExitOk) exit_code = Fail(deleted);
  return exit_code;
}

int Health(const Options& options, Client& client) {
  std::string service = options.args.empty() ? "" : options.args[0];
  if (options.args.size() > 1) return Usage("health takes at most one SERVICE");
  auto deadline = options.timeout_seconds > 0
                      ? std::chrono::milliseconds(static_cast<int64_t>(
                            options.timeout_seconds * 1000))
                      : kDefaultHealthDeadline;
  client::HealthStatus health;
  grpc::Status status = client.Health(service, deadline, &health);
  if (!status.ok()) {
    std::cerr << "tether: health check of " << *options.server
              << " failed: " << FormatStatus(status) << "\n";
    return kExitFailure;
  }
  std::cout << client::HealthStatusName(health) << "\n";
  return health == client::HealthStatus::kServing ? kExitOk : kExitFailure;
}

int Sessions(const Options& options, Client& client) {
  const std::vector<std::string>& args = options.args;
  std::string verb = args.empty() ? "" : args[0];
  if (verb == "list" && args.size() == 1) {
    std::vector<v1::Session> sessions;
    grpc::Status status = client.ListSessions(&sessions);
    if (!status.ok()) return Fail(status);
    std::string json = "{\"sessions\":[";
    for (size_t i = 0; i < sessions.size(); ++i) {
      if (i > 0) json += ",";
      json += ToJson(sessions[i]);
    }
    json += "]}";
    std::cout << json << "\n";
    return kExitOk;
  }
  if (verb == "get" && args.size() == 2) {
    v1::Session session;
    grpc::Status status = client.GetSession(args[1], &session);
    if (!status.ok()) return Fail(status);
    std::cout << ToJson(session) << "\n";
    return kExitOk;
  }
  if (verb == "delete" && args.size() == 2) {
    grpc::Status status = client.DeleteSession(args[1]);
    if (!status.ok()) return Fail(status);
    std::cout << "{\"deleted\":" << JsonString(args[1]) << "}\n";
    return kExitOk;
  }
  return Usage("usage: tether sessions list | get ID | delete ID --server ADDR");
}

}  // namespace

int RunRemote(const Options& options) {
  if (!options.server || options.server->empty()) {
    return Usage(options.command + " needs --server ADDR");
  }
  Client client(client::Connect(*options.server, MakeConnectOptions(options)),
                MakeConnectOptions(options));
  const std::string& command = options.command;
  if (command == "validate") return Validate(options, client);
  if (command == "evaluate") return Evaluate(options, client);
  if (command == "run") return Run(options, client);
  if (command == "health") return Health(options, client);
  if (command == "sessions") return Sessions(options, client);
  return Usage("unknown command " + command);
}

}  // namespace tether::cli
