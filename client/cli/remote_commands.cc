#include "cli/remote_commands.h"

#include <chrono>
#include <cstdint>
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

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) quoted += c;
  }
  return quoted + "\"";
}

// Prints the serving status; exit 0 only when SERVING.
int Health(const Options& options, client::Client& client) {
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

// list: {"sessions":[...]}; get: the Session as JSON; delete: {"deleted":ID}.
int Sessions(const Options& options, client::Client& client) {
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
  return BadUsage("usage: tether sessions list | get ID | delete ID --server ADDR");
}

}  // namespace

int RunRemoteCommand(const Options& options) {
  std::unique_ptr<client::Client> client = ConnectClient(options);
  if (options.command == "health") return Health(options, *client);
  return Sessions(options, *client);
}

}  // namespace tether::cli
