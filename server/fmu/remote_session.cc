#include "fmu/remote_session.h"

#if TETHER_FMU_REMOTE

#include <cstdlib>
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

Status OptionsFromEnvironment(client::ConnectOptions* options) {
  struct Variable {
    const char* name;
    std::string client::ConnectOptions::*field;
  };
  static constexpr Variable kVariables[] = {
      {"TETHER_TLS_CA", &client::ConnectOptions::tls_ca},
      {"TETHER_TLS_CERT", &client::ConnectOptions::tls_cert},
      {"TETHER_TLS_KEY", &client::ConnectOptions::tls_key},
      {"TETHER_TLS_SERVER_NAME", &client::ConnectOptions::tls_server_name},
      {"TETHER_TOKEN", &client::ConnectOptions::token},
      {"TETHER_TOKEN_FILE", &client::ConnectOptions::token_file},
  };
  for (const Variable& v : kVariables) {
    if (const char* value = Env(v.name)) options->*v.field = value;
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
                    std::unique_ptr<client::Client> streaming)
      : address_(std::move(address)), unary_(std::move(unary)), streaming_(std::move(streaming)) {}
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
              RemoteStep* out) override {
    v1::CoSimulateRequest request;
    request.set_communication_step(h);
    request.set_on_failure(v1::CoSimulateRequest::ON_FAILURE_DISCARD);
    for (const auto& [name, value] : inputs) (*request.mutable_inputs())[name] = value;
    v1::CoSimulateResponse response;
    if (Status s = Exchange("CoSimulate", std::move(request), &response); !s.ok()) return s;
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

  Status Import(const std::string& bytes, const std::string& display_name,
                RemoteMark* mark) override {
    v1::Session session;
    if (grpc::Status g = unary_->ImportSession(bytes, DisplayName(display_name), &session);
        !g.ok()) {
      return Failed("ImportSession", g);
    }
    created_.push_back(session.id());
    v1::Snapshot snapshot;
    if (grpc::Status g = unary_->CreateSnapshot(session.id(), "fmi2DeSerializeFMUstate", &snapshot);
        !g.ok()) {
      return Failed("CreateSnapshot", g);
    }
    mark->session_id = session.id();
    mark->snapshot_id = snapshot.snapshot_id();
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

  Status Exchange(const char* call, v1::CoSimulateRequest request,
                  v1::CoSimulateResponse* response) {
    if (!stream_) {
      return FailedPrecondition("server " + address_ + ": " + call +
                                ": no open stream (an earlier call on it failed)");
    }
    grpc::Status g = stream_->Exchange(std::move(request), response);
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
  std::string session_id_;
  std::vector<std::string> created_;  // deleted by Close
};

}  // namespace

StatusOr<std::unique_ptr<RemoteSession>> RemoteSession::Connect(const std::string& address) {
  client::ConnectOptions options;
  if (Status s = OptionsFromEnvironment(&options); !s.ok()) return s;
  std::unique_ptr<client::Client> streaming;
  if (grpc::Status g = client::Client::Create(address, options, &streaming); !g.ok()) {
    return InvalidArgument("server " + address + ": " + g.error_message());
  }
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kUnaryDeadline);
  std::unique_ptr<client::Client> unary;
  if (grpc::Status g = client::Client::Create(address, options, &unary); !g.ok()) {
    return InvalidArgument("server " + address + ": " + g.error_message());
  }
  return std::unique_ptr<RemoteSession>(
      new GrpcRemoteSession(address, std::move(unary), std::move(streaming)));
}

}  // namespace tether::fmu

#else  // !TETHER_FMU_REMOTE

namespace tether::fmu {

StatusOr<std::unique_ptr<RemoteSession>> RemoteSession::Connect(const std::string& address) {
  return Status(StatusCode::kUnavailable,
                "server " + address +
                    ": this FMU library was built without the gRPC client "
                    "(TETHER_BUILD_SERVICE=OFF): only the in-process mode is available");
}

}  // namespace tether::fmu

#endif
