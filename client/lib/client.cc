#include "tether/client.h"

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "credentials.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

namespace tether::client {

const char* HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kServing: return "SERVING";
    case HealthStatus::kNotServing: return "NOT_SERVING";
    case HealthStatus::kServiceUnknown: return "SERVICE_UNKNOWN";
    case HealthStatus::kUnknown: break;
  }
  return "UNKNOWN";
}

Client::Client(std::shared_ptr<grpc::Channel> channel, ConnectOptions options)
    : Client("", std::move(options), grpc::Status::OK, std::move(channel), "", false) {}

Client::Client(std::string address, ConnectOptions options, grpc::Status setup_status,
               std::shared_ptr<grpc::Channel> channel, std::string metadata_authorization, bool tls)
    : address_(std::move(address)),
      options_(std::move(options)),
      setup_status_(std::move(setup_status)),
      channel_(std::move(channel)),
      metadata_authorization_(std::move(metadata_authorization)),
      tls_(tls),
      stub_(channel_ ? v1::Simulator::NewStub(channel_) : nullptr) {}

grpc::Status Client::Create(const std::string& address, const ConnectOptions& options,
                            std::unique_ptr<Client>* client) {
  internal::Connection connection;
  grpc::Status status = internal::OpenConnection(address, options, &connection);
  if (!status.ok()) return status;
  client->reset(new Client(address, options, grpc::Status::OK, std::move(connection.channel),
                           std::move(connection.metadata_authorization), connection.tls));
  return grpc::Status::OK;
}

std::unique_ptr<Client> Client::Connect(const std::string& address, const ConnectOptions& options) {
  std::unique_ptr<Client> client;
  grpc::Status status = Create(address, options, &client);
  if (!status.ok()) client.reset(new Client(address, options, status, nullptr, "", false));
  return client;
}

void Client::Configure(grpc::ClientContext* context, const std::string& session_id) const {
  // Only an id that can be a header value (visible ASCII, at most 256
  // bytes; the server's are 32 hex digits): another one goes unrouted to
  // the server, which answers for it (NOT_FOUND, INVALID_ARGUMENT) as
  // without a proxy, where a header would fail the call in gRPC.
  const bool routable = !session_id.empty() && session_id.size() <= 256 &&
                        std::all_of(session_id.begin(), session_id.end(),
                                    [](char c) { return c >= 0x20 && c <= 0x7e; });
  if (routable) context->AddMetadata(kRoutingHeader, session_id);
  if (options_.timeout.count() > 0) {
    context->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  }
  context->set_wait_for_ready(options_.wait_for_ready);
  Authorize(context);
}

void Client::Authorize(grpc::ClientContext* context) const {
  if (!metadata_authorization_.empty()) {
    context->AddMetadata("authorization", metadata_authorization_);
  }
}

grpc::Status Client::Explained(const grpc::Status& status) const {
  // A Client made on the caller's channel knows nothing of its credentials.
  if (status.ok()) reached_.store(true, std::memory_order_relaxed);
  if (address_.empty()) return status;
  return internal::ExplainConnectFailure(status, address_, options_, tls_,
                                         reached_.load(std::memory_order_relaxed));
}

grpc::Status Client::Validate(const v1::SimulationSpec& spec, v1::ValidationReport* report) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context);
  v1::ValidateRequest request;
  *request.mutable_spec() = spec;
  v1::ValidateResponse response;
  grpc::Status status = Explained(stub_->Validate(&context, request, &response));
  if (status.ok()) *report = std::move(*response.mutable_report());
  return status;
}

grpc::Status Client::Evaluate(const v1::EvaluateRequest& request, v1::EvaluateResponse* response) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context);
  return Explained(stub_->Evaluate(&context, request, response));
}

grpc::Status Client::CreateSession(const v1::SimulationSpec& spec, const std::string& display_name,
                                   v1::Session* session) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context);
  v1::CreateSessionRequest request;
  *request.mutable_spec() = spec;
  request.set_display_name(display_name);
  return Explained(stub_->CreateSession(&context, request, session));
}

grpc::Status Client::GetSession(const std::string& session_id, v1::Session* session,
                                v1::SessionView view) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context, session_id);
  v1::GetSessionRequest request;
  request.set_session_id(session_id);
  request.set_view(view);
  return Explained(stub_->GetSession(&context, request, session));
}

grpc::Status Client::Resume(const std::string& session_id, std::chrono::milliseconds timeout,
                            v1::Session* session) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::milliseconds delay(20);
  while (true) {
    grpc::Status status = GetSession(session_id, session);
    const bool retry = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       status.error_code() == grpc::StatusCode::ABORTED;
    if (!retry || std::chrono::steady_clock::now() + delay > deadline) return status;
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(250));
  }
}

grpc::Status Client::ListSessions(std::vector<v1::Session>* sessions, int page_size) {
  sessions->clear();
  std::string page_token;
  while (true) {
    v1::ListSessionsResponse response;
    grpc::Status status = ListSessionsPage(page_size, page_token, &response);
    if (!status.ok()) return status;
    for (v1::Session& session : *response.mutable_sessions()) {
      sessions->push_back(std::move(session));
    }
    if (response.next_page_token().empty()) return grpc::Status::OK;
    page_token = response.next_page_token();
  }
}

grpc::Status Client::ListSessionsPage(int page_size, const std::string& page_token,
                                      v1::ListSessionsResponse* response) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context);
  v1::ListSessionsRequest request;
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  return Explained(stub_->ListSessions(&context, request, response));
}

grpc::Status Client::DeleteSession(const std::string& session_id) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context, session_id);
  v1::DeleteSessionRequest request;
  request.set_session_id(session_id);
  v1::DeleteSessionResponse response;
  return Explained(stub_->DeleteSession(&context, request, &response));
}

namespace {
// The session a request is about (empty: none), for the routing header.
template <typename Request>
std::string SessionIdOf(const Request& request) {
  if constexpr (requires { request.session_id(); }) {
    return request.session_id();
  } else {
    return {};
  }
}
}  // namespace

// A unary call of the stub's `method` with the configured context.
#define TETHER_CLIENT_UNARY(method, request, response)            \
  do {                                                            \
    if (!setup_status_.ok()) return setup_status_;                \
    grpc::ClientContext context;                                  \
    Configure(&context, SessionIdOf(request));                    \
    return Explained(stub_->method(&context, request, response)); \
  } while (0)

grpc::Status Client::CreateSnapshot(const std::string& session_id, const std::string& label,
                                    v1::Snapshot* snapshot) {
  v1::CreateSnapshotRequest request;
  request.set_session_id(session_id);
  request.set_label(label);
  TETHER_CLIENT_UNARY(CreateSnapshot, request, snapshot);
}

grpc::Status Client::ListSnapshots(const std::string& session_id,
                                   v1::ListSnapshotsResponse* response) {
  v1::ListSnapshotsRequest request;
  request.set_session_id(session_id);
  TETHER_CLIENT_UNARY(ListSnapshots, request, response);
}

grpc::Status Client::RestoreSnapshot(const std::string& session_id, uint64_t snapshot_id,
                                     v1::Session* session) {
  v1::RestoreSnapshotRequest request;
  request.set_session_id(session_id);
  request.set_snapshot_id(snapshot_id);
  TETHER_CLIENT_UNARY(RestoreSnapshot, request, session);
}

grpc::Status Client::DeleteSnapshot(const std::string& session_id, uint64_t snapshot_id) {
  v1::DeleteSnapshotRequest request;
  request.set_session_id(session_id);
  request.set_snapshot_id(snapshot_id);
  v1::DeleteSnapshotResponse response;
  TETHER_CLIENT_UNARY(DeleteSnapshot, request, &response);
}

grpc::Status Client::ExportSession(const std::string& session_id,
                                   v1::ExportSessionResponse* response, uint64_t snapshot_id) {
  v1::ExportSessionRequest request;
  request.set_session_id(session_id);
  request.set_snapshot_id(snapshot_id);
  TETHER_CLIENT_UNARY(ExportSession, request, response);
}

grpc::Status Client::ImportSession(const std::string& data, const std::string& display_name,
                                   v1::Session* session) {
  v1::ImportSessionRequest request;
  request.set_data(data);
  request.set_display_name(display_name);
  TETHER_CLIENT_UNARY(ImportSession, request, session);
}

grpc::Status Client::UpdateSession(const v1::UpdateSessionRequest& request, v1::Session* session) {
  TETHER_CLIENT_UNARY(UpdateSession, request, session);
}

#undef TETHER_CLIENT_UNARY

grpc::Status Client::Run(const v1::RunRequest& request, const FrameCallback& on_frame,
                         v1::Certificate* certificate) {
  if (certificate != nullptr) certificate->Clear();
  return RunMessages(request, [&](const v1::RunResponse& response) {
    for (const v1::Frame& frame : response.frames()) {
      if (on_frame && !on_frame(frame)) return false;
    }
    if (certificate != nullptr && response.has_certificate()) {
      *certificate = response.certificate();
    }
    return true;
  });
}

namespace {

// Reads a server stream to its end, handing each message to `on_message`
// (a false cancels the call and drains it); the call's final status.
template <typename Response, typename Callback>
grpc::Status ReadStream(grpc::ClientContext* context, grpc::ClientReader<Response>* reader,
                        const Callback& on_message) {
  Response response;
  bool cancelled = false;
  while (!cancelled && reader->Read(&response)) {
    cancelled = on_message && !on_message(response);
  }
  if (cancelled) {
    context->TryCancel();
    while (reader->Read(&response)) {
    }
  }
  return reader->Finish();
}

}  // namespace

grpc::Status Client::RunMessages(const v1::RunRequest& request, const MessageCallback& on_message) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context, request.session_id());
  auto reader = stub_->Run(&context, request);
  return Explained(ReadStream(&context, reader.get(), on_message));
}

grpc::Status Client::RunEnsemble(const v1::RunEnsembleRequest& request,
                                 const EnsembleCallback& on_message) {
  if (!setup_status_.ok()) return setup_status_;
  grpc::ClientContext context;
  Configure(&context, request.session_id());  // "" unless the template is a session
  auto reader = stub_->RunEnsemble(&context, request);
  return Explained(ReadStream(&context, reader.get(), on_message));
}

std::unique_ptr<CoSimulation> Client::CoSimulate(const std::string& session_id) {
  return std::unique_ptr<CoSimulation>(new CoSimulation(session_id, this));
}

grpc::Status Client::Health(const std::string& service, std::chrono::milliseconds deadline,
                            HealthStatus* health) {
  *health = HealthStatus::kUnknown;
  if (!setup_status_.ok()) return setup_status_;
  // HealthCheckRequest { string service = 1; }, encoded by hand: Debian's
  // libgrpc++ ships no generated code for grpc/health/v1/health.proto.
  std::string request_bytes;
  {
    google::protobuf::io::StringOutputStream raw(&request_bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    if (!service.empty()) {
      out.WriteTag((1 << 3) | 2);
      out.WriteVarint32(static_cast<uint32_t>(service.size()));
      out.WriteString(service);
    }
  }
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  Authorize(&context);
  grpc::GenericStub stub(channel_);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(status); });
  grpc::Status status = Explained(done.get_future().get());
  if (!status.ok()) return status;

  // HealthCheckResponse { ServingStatus status = 1; }
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "unreadable health check response");
  }
  std::string response_bytes;
  for (const grpc::Slice& s : slices) {
    response_bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  google::protobuf::UnknownFieldSet fields;
  if (!fields.ParseFromString(response_bytes)) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "malformed health check response");
  }
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    if (field.number() == 1 && field.type() == google::protobuf::UnknownField::TYPE_VARINT) {
      uint64_t value = field.varint();
      *health = value <= 3 ? static_cast<HealthStatus>(value) : HealthStatus::kUnknown;
    }
  }
  return grpc::Status::OK;
}

CoSimulation::CoSimulation(std::string session_id, const Client* client)
    : client_(client), session_id_(std::move(session_id)) {
  if (!client_->setup_status_.ok()) {
    // Nothing to open: every DoStep and Finish reports the options' error.
    finished_ = true;
    final_status_ = client_->setup_status_;
    return;
  }
  client_->Configure(&context_, session_id_);
  stream_ = client_->stub_->CoSimulate(&context_);
}

CoSimulation::~CoSimulation() {
  if (!finished_) Finish();
}

grpc::Status CoSimulation::Exchange(v1::CoSimulateRequest request,
                                    v1::CoSimulateResponse* response) {
  if (finished_) {
    return final_status_.ok() ? grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                             "the co-simulation stream is finished")
                              : final_status_;
  }
  if (first_) request.set_session_id(session_id_);
  first_ = false;
  if (!stream_->Write(request) || !stream_->Read(response)) {
    // The server ended the stream: its status says why.
    grpc::Status status = Finish();
    return status.ok() ? grpc::Status(grpc::StatusCode::INTERNAL,
                                      "the server ended the co-simulation "
                                      "stream without a response")
                       : status;
  }
  return grpc::Status::OK;
}

grpc::Status CoSimulation::Exchange(v1::CoSimulateRequest request, v1::CoSimulateResponse* response,
                                    std::chrono::milliseconds deadline) {
  if (finished_) return Exchange(std::move(request), response);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false, fired = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, deadline, [&] { return done; })) {
      fired = true;
      context_.TryCancel();  // Write/Read below then return false
    }
  });
  grpc::Status status = Exchange(std::move(request), response);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_one();
  watchdog.join();
  if (fired) {
    final_status_ = grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        "no response within " + std::to_string(deadline.count()) +
            " ms (the server may be stopped, overloaded or unreachable); the stream is ended");
    finished_ = true;
    return final_status_;
  }
  return status;
}

grpc::Status CoSimulation::DoStep(double communication_step,
                                  const std::map<std::string, double>& inputs, v1::Frame* frame,
                                  v1::Certificate* certificate) {
  v1::CoSimulateRequest request;
  request.set_communication_step(communication_step);
  for (const auto& [name, value] : inputs) (*request.mutable_inputs())[name] = value;
  v1::CoSimulateResponse response;
  if (grpc::Status s = Exchange(std::move(request), &response); !s.ok()) return s;
  if (frame != nullptr) *frame = std::move(*response.mutable_frame());
  if (certificate != nullptr) {
    *certificate = std::move(*response.mutable_certificate());
  }
  return grpc::Status::OK;
}

grpc::Status CoSimulation::Finish() {
  if (finished_) return final_status_;
  finished_ = true;
  stream_->WritesDone();
  v1::CoSimulateResponse ignored;
  while (stream_->Read(&ignored)) {
  }
  final_status_ = client_->Explained(stream_->Finish());
  return final_status_;
}

}  // namespace tether::client
