#include "cli/remote_backend.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <grpc/support/log.h>

#include "cli/driver.h"
#include "tether/status_details.h"

namespace tether::cli {
namespace {

// "tether run" names its sessions so that `sessions list` shows who made them.
constexpr const char* kSessionDisplayName = "tether-cli";

class RemoteSession : public Session {
 public:
  // `client` outlives the session (both belong to one command). `owned`:
  // the command created the session, and Close deletes it.
  RemoteSession(client::Client* client, const v1::Session& session, bool owned)
      : client_(client), owned_(owned) {
    id_ = session.id();
    info_.names.coordinates.assign(session.coordinates().begin(), session.coordinates().end());
    info_.names.constraints.assign(session.constraints().begin(), session.constraints().end());
    info_.names.outputs.assign(session.outputs().begin(), session.outputs().end());
    info_.start_time = session.state().t();
    info_.start_step = session.step();
    info_.warnings.assign(session.warnings().begin(), session.warnings().end());
  }

  const Info& info() const override { return info_; }

  // The server checks the plan when the run starts (in Stream).
  BackendStatus Begin(const RunPlan& plan) override {
    request_.set_session_id(id_);
    request_.set_steps(plan.steps);
    if (plan.until) request_.set_until_time(*plan.until);
    request_.set_every(plan.every);
    if (plan.output_interval) request_.set_output_interval(*plan.output_interval);
    request_.set_include_certificate(plan.certificate);
    return {};
  }

  BackendStatus Stream(const FrameCallback& on_frame,
                       std::optional<v1::Certificate>* certificate) override {
    v1::Certificate received;
    grpc::Status status = client_->Run(
        request_,
        [&](const v1::Frame& frame) {
          on_frame(frame);
          return true;
        },
        &received);
    // The last message carries the certificate of the window, also when the
    // run failed (then ABORTED follows); an empty one means none was sent.
    certificate->reset();
    if (request_.include_certificate() && received.ByteSizeLong() > 0) {
      *certificate = std::move(received);
    }
    return FromGrpc(status);
  }

  BackendStatus Close() override {
    return owned_ ? FromGrpc(client_->DeleteSession(id_)) : BackendStatus{};
  }

 private:
  client::Client* client_;
  bool owned_;
  std::string id_;
  Info info_;
  v1::RunRequest request_;
};

class RemoteBackend : public Backend {
 public:
  explicit RemoteBackend(const Options& options) : client_(ConnectClient(options)) {}

  BackendStatus Validate(const v1::SimulationSpec& spec, v1::ValidationReport* report) override {
    return FromGrpc(client_->Validate(spec, report));
  }

  BackendStatus Evaluate(const v1::SimulationSpec& spec, v1::Frame* frame,
                         std::vector<v1::Diagnostic>* warnings) override {
    v1::EvaluateRequest request;
    *request.mutable_spec() = spec;
    v1::EvaluateResponse response;
    grpc::Status status = client_->Evaluate(request, &response);
    if (!status.ok()) return FromGrpc(status);
    warnings->assign(response.warnings().begin(), response.warnings().end());
    *frame = std::move(*response.mutable_frame());
    return {};
  }

  BackendStatus Open(const v1::SimulationSpec& spec, std::unique_ptr<Session>* session) override {
    v1::Session created;
    grpc::Status status = client_->CreateSession(spec, kSessionDisplayName, &created);
    if (!status.ok()) return FromGrpc(status);
    *session = std::make_unique<RemoteSession>(client_.get(), created, /*owned=*/true);
    return {};
  }

  BackendStatus RunEnsemble(const v1::SimulationSpec& spec, const EnsemblePlan& plan,
                            const ResultCallback& on_result,
                            v1::EnsembleReduction* reduction) override {
    v1::RunEnsembleRequest request;
    *request.mutable_spec() = spec;
    *request.mutable_ensemble() = plan.ensemble;
    request.set_until_time(plan.until);
    request.set_include_certificate(plan.certificate);
    if (plan.output_interval) request.set_output_interval(*plan.output_interval);
    request.set_reduce(plan.reduce);
    request.set_functions(plan.fast_functions ? v1::ENSEMBLE_FUNCTIONS_FAST
                                              : v1::ENSEMBLE_FUNCTIONS_EXACT);
    return FromGrpc(client_->RunEnsemble(request, [&](const v1::RunEnsembleResponse& response) {
      for (const auto& r : response.results()) on_result(r);
      if (response.has_reduction() && reduction != nullptr) *reduction = response.reduction();
      return true;
    }));
  }

 private:
  std::unique_ptr<client::Client> client_;
};

}  // namespace

namespace {

client::ConnectOptions ToConnectOptions(const Options& options) {
  client::ConnectOptions connect;
  connect.timeout = std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
  connect.tls_ca = options.tls_ca;
  connect.tls_cert = options.tls_cert;
  connect.tls_key = options.tls_key;
  connect.tls_server_name = options.tls_server_name;
  connect.token = options.token;
  connect.token_file = options.token_file;
  connect.allow_plaintext_token = options.allow_plaintext_token;
  return connect;
}

// The client library names the option at the start of its message
// ("tls_ca PATH: ..."); the CLI names the flag or the variable it came
// from, and for a refused plaintext token the flags that would allow it.
std::string InCliTerms(const Options& options, std::string message) {
  const std::size_t end = message.find_first_of(" :");
  const std::string field = message.substr(0, end);
  std::string source;
  if (auto it = options.sources.find(field); it != options.sources.end()) source = it->second;
  // A token read from a file is named by its file's flag.
  if (field == "token" && source.empty()) {
    if (auto it = options.sources.find("token_file"); it != options.sources.end()) {
      source = it->second;
    }
  }
  if (source.empty()) {
    // Not given: the flag's name (tls_key -> --tls-key).
    source = "--" + field;
    for (char& c : source) c = c == '_' ? '-' : c;
  }
  message.replace(0, end, source);
  if (field == "token") {
    for (auto [from, to] : {std::pair<std::string, std::string>{"(tls_ca)", "(--tls-ca FILE)"},
                            {"allow_plaintext_token", "--allow-plaintext-token"}}) {
      if (std::size_t at = message.find(from); at != std::string::npos) {
        message.replace(at, from.size(), to);
      }
    }
  }
  return message;
}

}  // namespace

std::unique_ptr<Session> AttachSession(client::Client* client, const v1::Session& session) {
  return std::make_unique<RemoteSession>(client, session, /*owned=*/false);
}

std::unique_ptr<client::Client> ConnectClient(const Options& options) {
  // gRPC core's own log lines (an "E... Handshake failed" line for every
  // reconnect attempt with a wrong CA) are off unless GRPC_VERBOSITY asks
  // for them: the CLI prints each failure once, explained, with gRPC's
  // last error in brackets. (Only the CLI: the client library leaves its
  // host process's logging alone.)
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }
  return client::Client::Connect(*options.server, ToConnectOptions(options));
}

int CheckConnectOptions(const Options& options) {
  std::unique_ptr<client::Client> client;
  grpc::Status status = client::Client::Create(*options.server, ToConnectOptions(options), &client);
  if (status.ok()) return kExitOk;
  return BadUsage(InCliTerms(options, status.error_message()));
}

BackendStatus FromGrpc(const grpc::Status& status) {
  BackendStatus out;
  switch (status.error_code()) {
    case grpc::StatusCode::OK: return out;
    case grpc::StatusCode::INVALID_ARGUMENT: out.kind = BackendStatus::Kind::kBadInput; break;
    case grpc::StatusCode::ABORTED: out.kind = BackendStatus::Kind::kRunFailed; break;
    default: out.kind = BackendStatus::Kind::kFailure; break;
  }
  out.code = client::StatusCodeName(status.error_code());
  out.message = status.error_message();
  for (client::FieldViolation& v : client::FieldViolations(status)) {
    // The server names fields of the request ("spec.system..."); the CLI
    // names them in the description file, as offline.
    constexpr std::string_view kSpec = "spec.";
    if (v.field.compare(0, kSpec.size(), kSpec) == 0) v.field.erase(0, kSpec.size());
    out.violations.push_back({std::move(v.field), std::move(v.description)});
  }
  // A compile limit names the expression that exceeds it (as offline: the
  // description's fault); the session cap names nothing.
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && !out.violations.empty()) {
    out.kind = BackendStatus::Kind::kBadInput;
  }
  return out;
}

std::unique_ptr<Backend> MakeRemoteBackend(const Options& options) {
  return std::make_unique<RemoteBackend>(options);
}

}  // namespace tether::cli
