#include "fmu/remote_session.h"

#if TETHER_FMU_REMOTE

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>

#include "tether/client.h"
#include "tether/status_code_name.h"

namespace tether::fmu {
namespace {

// `tether --server`'s connection variables (client/cli/main.cc's
// kConnectFlags), read the same way: an empty variable is unset.
const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

struct Variable {
  const char* name;
  const char* field_name;  // the client library's name of the option
  std::string client::ConnectOptions::*field;
};
constexpr Variable kVariables[] = {
    {"TETHER_TLS_CA", "tls_ca", &client::ConnectOptions::tls_ca},
    {"TETHER_CLIENT_TLS_CERT", "tls_cert", &client::ConnectOptions::tls_cert},
    {"TETHER_CLIENT_TLS_KEY", "tls_key", &client::ConnectOptions::tls_key},
    {"TETHER_TLS_SERVER_NAME", "tls_server_name", &client::ConnectOptions::tls_server_name},
    {"TETHER_TOKEN", "token", &client::ConnectOptions::token},
    {"TETHER_TOKEN_FILE", "token_file", &client::ConnectOptions::token_file},
};

// tether-server's own certificate and key, which clients once read as
// theirs (deprecated): read only when neither TETHER_CLIENT_TLS_* is set
// (a pair is never half the client's and half the server's).
struct DeprecatedVariable {
  const char* name;
  const char* replacement;
  const char* what;
};
constexpr DeprecatedVariable kDeprecatedVariables[] = {
    {"TETHER_TLS_CERT", "TETHER_CLIENT_TLS_CERT", "certificate"},
    {"TETHER_TLS_KEY", "TETHER_CLIENT_TLS_KEY", "private key"},
};

// The variable each option came from, keyed by its field_name.
using Sources = std::map<std::string, std::string>;

Status OptionsFromEnvironment(client::ConnectOptions* options, Sources* sources,
                              const RemoteSession::Warn& warn) {
  const char* winner = nullptr;  // a TETHER_CLIENT_TLS_* set
  for (const DeprecatedVariable& d : kDeprecatedVariables) {
    if (winner == nullptr && Env(d.replacement)) winner = d.replacement;
  }
  for (const Variable& v : kVariables) {
    const char* name = Env(v.name) ? v.name : nullptr;
    for (const DeprecatedVariable& d : kDeprecatedVariables) {
      if (std::strcmp(d.replacement, v.name) != 0 || !Env(d.name)) continue;
      std::string message = std::string(d.name) + " is deprecated for clients";
      if (winner != nullptr) {
        message += std::string(" and ignored: ") + (name ? name : winner) + " is set and wins";
      } else {
        message += std::string(": use ") + d.replacement;
        name = d.name;
      }
      warn(message + " (" + d.name + " is tether-server's own " + d.what + ")");
    }
    if (name != nullptr) {
      options->*v.field = Env(name);
      (*sources)[v.field_name] = name;
    }
  }
  if (Env("TETHER_TOKEN") && Env("TETHER_TOKEN_FILE")) {
    return InvalidArgument("TETHER_TOKEN, TETHER_TOKEN_FILE: set one, not both");
  }
  if (const char* allow = Env("TETHER_ALLOW_PLAINTEXT_TOKEN")) {
    const std::string_view a(allow);
    if (a != "true" && a != "false") {
      return InvalidArgument("TETHER_ALLOW_PLAINTEXT_TOKEN: expected true or false, found '" +
                             EscapeForMessage(a) + "'");
    }
    options->allow_plaintext_token = a == "true";
  }
  return Status::Ok();
}

// An instance name as a session's display name: at most the server's 256
// bytes, cut at a UTF-8 character boundary.
std::string DisplayName(const std::string& name) {
  constexpr std::size_t kMaxBytes = 256;
  if (name.size() <= kMaxBytes) return name;
  std::size_t n = kMaxBytes;
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  return name.substr(0, n);
}

class GrpcRemoteSession final : public RemoteSession {
 public:
  GrpcRemoteSession(std::string address, std::unique_ptr<client::Client> unary,
                    std::unique_ptr<client::Client> streaming, std::chrono::milliseconds ceiling)
      : address_(std::move(address)),
        unary_(std::move(unary)),
        streaming_(std::move(streaming)),
        ceiling_(ceiling) {}
  ~GrpcRemoteSession() override { static_cast<void>(Close()); }  // errors: nobody to tell

  const std::string& address() const override { return address_; }
  const std::string& session_id() const override { return session_id_; }

  Status Start(const v1::SimulationSpec& spec, const std::string& display_name,
               const v1::State* state) override {
    if (Status s = Close(); !s.ok()) return s;
    v1::Session session;
    if (grpc::Status g = unary_->CreateSession(spec, DisplayName(display_name), &session);
        !g.ok()) {
      return Failed("CreateSession", g);
    }
    created_.push_back(session.id());
    if (state != nullptr) {
      v1::UpdateSessionRequest update;
      update.set_session_id(session.id());
      *update.mutable_state() = *state;
      if (grpc::Status g = unary_->UpdateSession(update, &session); !g.ok()) {
        return Failed("UpdateSession (startTime)", g);
      }
    }
    Open(session.id());
    return Status::Ok();
  }

  Status Step(double h, const std::vector<std::pair<std::string, double>>& inputs,
              const std::vector<std::pair<std::string, double>>& rates, RemoteStep* out) override {
    v1::CoSimulateRequest request;
    request.set_communication_step(h);
    request.set_on_failure(v1::CoSimulateRequest::ON_FAILURE_DISCARD);
    for (const auto& [name, value] : inputs) (*request.mutable_inputs())[name] = value;
    for (const auto& [name, rate] : rates) (*request.mutable_input_rates())[name] = rate;
    v1::CoSimulateResponse response;
    if (Status s = Exchange("CoSimulate", std::move(request), &response, h); !s.ok()) return s;
    out->discarded = response.discarded();
    out->last_successful_time = response.last_successful_time();
    out->discard_reason = response.discard_reason();
    StateOf(response.frame(), &out->state);
    out->max_position_residual = response.certificate().max_position_residual();
    out->position_bound = response.certificate().position_bound();
    return Status::Ok();
  }

  Status Save(RemoteMark* mark) override {
    v1::CoSimulateRequest request;
    request.set_save_snapshot(true);
    request.set_snapshot_label("fmi2GetFMUstate");
    v1::CoSimulateResponse response;
    if (Status s = Exchange("CoSimulate (save_snapshot)", std::move(request), &response); !s.ok())
      return s;
    mark->session_id = session_id_;
    mark->snapshot_id = response.snapshot().snapshot_id();
    return Status::Ok();
  }

  Status Restore(const RemoteMark& mark, v1::State* state) override {
    const std::string previous = session_id_;
    if (mark.session_id != session_id_) {
      // Another of this instance's sessions (an imported state): the
      // stream moves there.
      if (Status s = EndStream(); !s.ok()) {
        Open(previous);
        return s;
      }
      Open(mark.session_id);
    }
    v1::CoSimulateRequest request;
    request.set_restore_snapshot_id(mark.snapshot_id);
    v1::CoSimulateResponse response;
    Status s = Exchange("CoSimulate (restore_snapshot_id)", std::move(request), &response);
    if (!s.ok()) {
      // The stream is over; the session it was on (or the one before the
      // move) is unchanged by a failed restore: a new stream goes on from
      // where the instance was.
      if (s.code() == StatusCode::kNotFound) Open(previous);
      return s;
    }
    StateOf(response.frame(), state);
    return Status::Ok();
  }

  Status Free(const RemoteMark& mark) override {
    grpc::Status g = unary_->DeleteSnapshot(mark.session_id, mark.snapshot_id);
    if (g.ok() || g.error_code() == grpc::StatusCode::NOT_FOUND) return Status::Ok();
    return Failed("DeleteSnapshot", g);
  }

  Status Export(const RemoteMark& mark, std::string* bytes) override {
    v1::ExportSessionResponse response;
    grpc::Status g = unary_->ExportSession(mark.session_id, &response, mark.snapshot_id);
    if (!g.ok()) return Failed("ExportSession", g);
    *bytes = std::move(*response.mutable_data());
    return Status::Ok();
  }

  Status RestoreState(const v1::SimulationState& state, v1::State* out) override {
    v1::CoSimulateRequest request;
    *request.mutable_restore_state() = state;
    v1::CoSimulateResponse response;
    if (Status s = Exchange("CoSimulate (restore_state)", std::move(request), &response); !s.ok())
      return s;
    StateOf(response.frame(), out);
    return Status::Ok();
  }

  Status Close() override {
    Status first = EndStream();
    for (const std::string& id : created_) {
      grpc::Status g = unary_->DeleteSession(id);
      if (!g.ok() && g.error_code() != grpc::StatusCode::NOT_FOUND && first.ok()) {
        first = Failed("DeleteSession", g);
      }
    }
    created_.clear();
    session_id_.clear();
    return first;
  }

 private:
  Status Failed(const char* call, const grpc::Status& g) const {
    const StatusCode code = g.error_code() == grpc::StatusCode::NOT_FOUND
                                ? StatusCode::kNotFound
                                : StatusCode::kUnavailable;
    return Status(code, "server " + address_ + ": " + call + ": " +
                            GrpcStatusCodeName(g.error_code()) + ": " + g.error_message());
  }

  void Open(const std::string& session_id) {
    session_id_ = session_id;
    stream_ = streaming_->CoSimulate(session_id);
  }

  Status EndStream() {
    if (!stream_) return Status::Ok();
    grpc::Status g = stream_->Finish();
    stream_.reset();
    if (!g.ok()) return Failed("CoSimulate", g);
    return Status::Ok();
  }

  // One exchange, within StepDeadline(h) (h = 0: a snapshot command).
  Status Exchange(const char* call, v1::CoSimulateRequest request, v1::CoSimulateResponse* response,
                  double h = 0) {
    if (!stream_) {
      return FailedPrecondition("server " + address_ + ": " + call +
                                ": no open stream (an earlier call on it failed)");
    }
    grpc::Status g = stream_->Exchange(std::move(request), response, StepDeadline(h, ceiling_));
    if (!g.ok()) {
      stream_.reset();  // over: `g` is its final status
      return Failed(call, g);
    }
    return Status::Ok();
  }

  static void StateOf(const v1::Frame& frame, v1::State* state) {
    state->Clear();
    state->set_t(frame.t());
    *state->mutable_q() = frame.q();
    *state->mutable_v() = frame.v();
  }

  const std::string address_;
  // Unary calls with kUnaryDeadline; the stream without a deadline.
  std::unique_ptr<client::Client> unary_;
  std::unique_ptr<client::Client> streaming_;
  std::unique_ptr<client::CoSimulation> stream_;
  const std::chrono::milliseconds ceiling_;  // of StepDeadline
  std::string session_id_;
  std::vector<std::string> created_;  // deleted by Close
};

// The client library's message about a bad option ("tls_cert PATH: ...",
// "tls_key: missing; ...") in terms of the variables: the one the option
// came from, else the one that would give it.
std::string InEnvironmentTerms(const Sources& sources, std::string message) {
  const std::size_t end = message.find_first_of(" :");
  const std::string field = message.substr(0, end);
  std::string source;
  if (auto it = sources.find(field); it != sources.end()) source = it->second;
  // A token read from a file is named by its file's variable.
  if (field == "token" && source.empty()) {
    if (auto it = sources.find("token_file"); it != sources.end()) source = it->second;
  }
  for (const Variable& v : kVariables) {
    if (source.empty() && field == v.field_name) source = v.name;
  }
  if (source.empty()) return message;
  message.replace(0, end, source);
  if (field == "token") {
    for (auto [from, to] : {std::pair<std::string, std::string>{"(tls_ca)", "(TETHER_TLS_CA)"},
                            {"allow_plaintext_token", "TETHER_ALLOW_PLAINTEXT_TOKEN=true"}}) {
      if (std::size_t at = message.find(from); at != std::string::npos) {
        message.replace(at, from.size(), to);
      }
    }
  }
  return message;
}

}  // namespace

std::chrono::milliseconds StepDeadline(double h, std::chrono::milliseconds ceiling) {
  const double ms = 1000.0 * (static_cast<double>(kStepDeadlineFloor.count()) +
                              kStepDeadlinePerSecond * std::max(0.0, h));
  if (!(ms < static_cast<double>(ceiling.count()))) return ceiling;
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

namespace {

// The environment variable `name`, seconds in (low, high] (or [low, high]),
// into *out when set; INVALID_ARGUMENT naming it otherwise.
Status SecondsFromEnvironment(const char* name, double low, double high, const char* range,
                              std::chrono::milliseconds* out, bool low_inclusive = false) {
  const char* e = std::getenv(name);
  if (e == nullptr || *e == '\0') return Status::Ok();
  char* end = nullptr;
  const double seconds = std::strtod(e, &end);
  const bool above = low_inclusive ? seconds >= low : seconds > low;
  if (*end != '\0' || !(above && seconds <= high)) {
    return InvalidArgument(std::string(name) + ": expected a number of seconds in " + range +
                           ", found \"" + std::string(e).substr(0, 32) + "\"");
  }
  *out = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<RemoteSession>> RemoteSession::Connect(const std::string& address,
                                                                const Warn& warn) {
  client::ConnectOptions options;
  Sources sources;
  const Warn to_stderr = [](const std::string& message) {
    std::fprintf(stderr, "tether-fmi2: %s\n", message.c_str());
  };
  if (Status s = OptionsFromEnvironment(&options, &sources, warn ? warn : to_stderr); !s.ok())
    return s;
  std::chrono::milliseconds ceiling = kDefaultStepTimeout;
  if (Status s = SecondsFromEnvironment(kStepTimeoutEnvironment, 0, 86400, "(0, 86400]", &ceiling);
      !s.ok())
    return s;
  options.keepalive_time = kDefaultKeepalive;
  if (Status s = SecondsFromEnvironment(kKeepaliveEnvironment, 1, 3600, "[1, 3600]",
                                        &options.keepalive_time, /*low_inclusive=*/true);
      !s.ok())
    return s;
  options.keepalive_timeout = kDefaultKeepaliveTimeout;
  if (Status s = SecondsFromEnvironment(kKeepaliveTimeoutEnvironment, 0, 3600, "(0, 3600]",
                                        &options.keepalive_timeout);
      !s.ok())
    return s;
  std::unique_ptr<client::Client> streaming;
  if (grpc::Status g = client::Client::Create(address, options, &streaming); !g.ok()) {
    return InvalidArgument("server " + address + ": " +
                           InEnvironmentTerms(sources, g.error_message()));
  }
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kUnaryDeadline);
  std::unique_ptr<client::Client> unary;
  if (grpc::Status g = client::Client::Create(address, options, &unary); !g.ok()) {
    return InvalidArgument("server " + address + ": " +
                           InEnvironmentTerms(sources, g.error_message()));
  }
  return std::unique_ptr<RemoteSession>(
      new GrpcRemoteSession(address, std::move(unary), std::move(streaming), ceiling));
}

}  // namespace tether::fmu

#else  // !TETHER_FMU_REMOTE

namespace tether::fmu {

StatusOr<std::unique_ptr<RemoteSession>> RemoteSession::Connect(const std::string& address,
                                                                const Warn&) {
  return Status(StatusCode::kUnavailable,
                "server " + address +
                    ": this FMU library was built without the gRPC client "
                    "(TETHER_BUILD_SERVICE=OFF): only the in-process mode is available");
}

}  // namespace tether::fmu

#endif
