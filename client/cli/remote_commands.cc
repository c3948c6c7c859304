#include "cli/remote_commands.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/driver.h"
#include "cli/remote_backend.h"
#include "engine/spec_json.h"
#include "tether/client.h"
#include "tether/status_details.h"

namespace tether::cli {
namespace {

// `health` without --timeout still gives up soon on an unreachable server.
constexpr std::chrono::milliseconds kDefaultHealthDeadline{3000};
// The largest session export `sessions import` reads: what one request of
// the client carries (ConnectOptions::max_message_bytes' default).
const int64_t kMaxImportBytes = client::ConnectOptions{}.max_message_bytes;

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) quoted += c;
  }
  return quoted + "\"";
}

// Prints the serving status; exit 0 only when SERVING.
int Health(const Command&, const Options& options, client::Client& client) {
  std::string service = options.args.empty() ? "" : options.args[0];
  if (options.args.size() > 1) return BadUsage("health takes at most one SERVICE");
  auto deadline =
      options.timeout_seconds > 0
          ? std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000))
          : kDefaultHealthDeadline;
  client::HealthStatus health;
  grpc::Status status = client.Health(service, deadline, &health);
  if (!status.ok()) {
    std::cerr << "tether: health check of " << *options.server
              << " failed: " << client::FormatStatus(status) << "\n";
    return kExitFailure;
  }
  std::cout << client::HealthStatusName(health) << "\n";
  return health == client::HealthStatus::kServing ? kExitOk : kExitFailure;
}

// list: {"sessions":[...]}; get, create, import: the Session as JSON;
// delete: {"deleted":ID}; export: the bytes into --output.
// sessions update ID: the flags' changes in one UpdateSessionRequest; the
// Session after it, as JSON. The server checks the names (an unknown
// parameter is INVALID_ARGUMENT naming parameters[NAME]).
int UpdateSession(const std::string& id, const Options& options, client::Client& client) {
  v1::UpdateSessionRequest request;
  request.set_session_id(id);
  for (const auto& [name, value] : options.parameters)
    (*request.mutable_parameters())[name] = value;
  for (const auto& [name, value] : options.inputs) {
    (*request.mutable_input_defaults())[name] = value;
  }
  if (options.gains) {
    request.mutable_baumgarte()->set_alpha(options.gains->first);
    request.mutable_baumgarte()->set_beta(options.gains->second);
  }
  if (options.certificate_mode) {
    v1::CertificateOptions* c = request.mutable_certificate();
    if (*options.certificate_mode == "off") {
      c->set_disabled(true);
    } else {
      c->set_mode(*options.certificate_mode == "enclosed" ? v1::CertificateOptions::ENCLOSED
                                                          : v1::CertificateOptions::SAMPLED);
    }
  }
  if (options.parameters.empty() && options.inputs.empty() && !options.gains &&
      !options.certificate_mode) {
    return BadUsage(
        "sessions update: nothing to change; expected --parameter NAME=VALUE, --input "
        "NAME=VALUE, --gains ALPHA,BETA or --certificate sampled|enclosed|off");
  }
  v1::Session session;
  grpc::Status status = client.UpdateSession(request, &session);
  if (!status.ok()) return ReportFailure(FromGrpc(status));
  std::cout << ToJson(session) << "\n";
  return kExitOk;
}

int Sessions(const Command& self, const Options& options, client::Client& client) {
  const std::vector<std::string>& args = options.args;
  std::string verb = args.empty() ? "" : args[0];
  if (verb == "list" && args.size() == 1) {
    std::vector<v1::Session> sessions;
    grpc::Status status = client.ListSessions(&sessions);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
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
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::cout << ToJson(session) << "\n";
    return kExitOk;
  }
  if (verb == "delete" && args.size() == 2) {
    grpc::Status status = client.DeleteSession(args[1]);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::cout << "{\"deleted\":" << JsonString(args[1]) << "}\n";
    return kExitOk;
  }
  if (verb == "create" && (args.size() == 2 || args.size() == 3)) {
    v1::SimulationSpec spec;
    if (Status s = LoadSpecFile(args[1], &spec); !s.ok()) {
      std::cerr << "tether: " << s.message() << "\n";
      return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
    }
    v1::Session session;
    grpc::Status status = client.CreateSession(spec, args.size() == 3 ? args[2] : "", &session);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::cout << ToJson(session) << "\n";
    return kExitOk;
  }
  if (verb == "export" && args.size() == 2) {
    if (!options.output) return BadUsage("sessions export: needs --output FILE for the bytes");
    v1::ExportSessionResponse exported;
    grpc::Status status = client.ExportSession(args[1], &exported);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::ofstream file(*options.output, std::ios::binary | std::ios::trunc);
    file.write(exported.data().data(), static_cast<std::streamsize>(exported.data().size()));
    file.close();
    if (!file) {
      std::cerr << "tether: --output " << *options.output << ": cannot write\n";
      return kExitFailure;
    }
    std::cout << "{\"exported\":" << JsonString(args[1]) << ",\"step\":" << exported.step()
              << ",\"bytes\":" << exported.data().size() << "}\n";
    return kExitOk;
  }
  if (verb == "import" && (args.size() == 2 || args.size() == 3)) {
    // At most what one request carries (the client's message limit).
    std::string data;
    if (Status s =
            ReadFileBounded(args[1], static_cast<std::size_t>(kMaxImportBytes),
                            "a session export (what `tether sessions export` writes)", &data);
        !s.ok()) {
      std::cerr << "tether: sessions import: " << s.message() << "\n";
      return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
    }
    v1::Session session;
    grpc::Status status = client.ImportSession(data, args.size() == 3 ? args[2] : "", &session);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::cout << ToJson(session) << "\n";
    return kExitOk;
  }
  if (verb == "run" && args.size() == 2) {
    v1::Session session;
    grpc::Status status = client.GetSession(args[1], &session);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::unique_ptr<Session> attached = AttachSession(&client, session);
    return RunSession(options, *attached);
  }
  if (verb == "update" && args.size() == 2) return UpdateSession(args[1], options, client);
  return BadUsage("usage: " + UsageLine(self));
}

bool ParseSnapshotId(const std::string& text, uint64_t* id) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  *id = std::stoull(text);
  return *id > 0;
}

// create: the Snapshot; list: {"snapshots":[...],"maxSnapshots":N};
// restore: the Session; delete: {"deleted":N}.
int Snapshots(const Command& self, const Options& options, client::Client& client) {
  const std::vector<std::string>& args = options.args;
  const std::string verb = args.empty() ? "" : args[0];
  uint64_t id = 0;
  if (verb == "create" && (args.size() == 2 || args.size() == 3)) {
    v1::Snapshot snapshot;
    grpc::Status status =
        client.CreateSnapshot(args[1], args.size() == 3 ? args[2] : "", &snapshot);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::cout << ToJson(snapshot) << "\n";
    return kExitOk;
  }
  if (verb == "list" && args.size() == 2) {
    v1::ListSnapshotsResponse list;
    grpc::Status status = client.ListSnapshots(args[1], &list);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::cout << ToJson(list) << "\n";
    return kExitOk;
  }
  if ((verb == "restore" || verb == "delete") && args.size() == 3) {
    if (!ParseSnapshotId(args[2], &id)) {
      return BadUsage("snapshots " + verb +
                      ": expected a snapshot id (a positive integer), found '" + args[2] + "'");
    }
    if (verb == "delete") {
      grpc::Status status = client.DeleteSnapshot(args[1], id);
      if (!status.ok()) return ReportFailure(FromGrpc(status));
      std::cout << "{\"deleted\":" << id << "}\n";
      return kExitOk;
    }
    v1::Session session;
    grpc::Status status = client.RestoreSnapshot(args[1], id, &session);
    if (!status.ok()) return ReportFailure(FromGrpc(status));
    std::cout << ToJson(session) << "\n";
    return kExitOk;
  }
  return BadUsage("usage: " + UsageLine(self));
}

// Checks the connect options, then runs `command` with a client.
template <int (*kCommand)(const Command&, const Options&, client::Client&)>
int Connected(const Command& self, const Options& options) {
  if (int code = CheckConnectOptions(options); code != kExitOk) return code;
  return kCommand(self, options, *ConnectClient(options));
}

}  // namespace

int HealthCommand(const Command& self, const Options& o) { return Connected<Health>(self, o); }
int SessionsCommand(const Command& self, const Options& o) { return Connected<Sessions>(self, o); }
int SnapshotsCommand(const Command& self, const Options& o) {
  return Connected<Snapshots>(self, o);
}

int OnServer(const Options& options, int (*command)(const Options&, Backend&)) {
  if (int code = CheckConnectOptions(options); code != kExitOk) return code;
  return command(options, *MakeRemoteBackend(options));
}

}  // namespace tether::cli
