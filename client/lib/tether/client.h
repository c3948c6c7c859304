// A small C++ client for the Tether simulation service: a thin, synchronous
// wrapper over the generated tether.v1.Simulator stub plus the standard
// grpc.health.v1 Check.
//
// Every call returns a grpc::Status. Errors are the server's: the code
// (INVALID_ARGUMENT for a bad spec, NOT_FOUND for an unknown session,
// ABORTED for a run that failed numerically, ...) and its message; where a
// request field is at fault the status also carries google.rpc.BadRequest
// field violations, which FieldViolations() / FormatStatus() in
// "tether/status_details.h" decode. A server that cannot be reached is
// UNAVAILABLE (or DEADLINE_EXCEEDED when a deadline was set); a failed TLS
// handshake is UNAVAILABLE with a message that says so and names the CA
// file and the name checked.
//
// Threading: a Client may be used from several threads at once (each call
// makes its own grpc::ClientContext). A CoSimulation is one bidirectional
// stream and must be driven by one thread at a time.
//
// Example (plaintext to loopback; over TLS with a token, set
// options.tls_ca = "ca.crt" and options.token_file = "/run/secrets/token"
// and use Client::Create, which reports an unreadable file):
//   auto client = tether::client::Client::Connect("127.0.0.1:50051");
//   v1::Session session;
//   grpc::Status status = client->CreateSession(spec, "demo", &session);
//   v1::RunRequest run;
//   run.set_session_id(session.id());
//   run.set_steps(1000);
//   v1::Certificate certificate;
//   status = client->Run(run, [](const v1::Frame& f) { ...; return true; },
//                        &certificate);
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>
#include <grpcpp/support/sync_stream.h>

#include "tether/v1/simulator.grpc.pb.h"
#include "tether/v1/simulator.pb.h"

namespace tether::client {

struct ConnectOptions {
  // Largest message sent or received, bytes (a Run response carries up to
  // frames_per_message frames). Default 64 MiB.
  int max_message_bytes = 64 * 1024 * 1024;
  // Deadline of each unary call and of each whole stream (Run, CoSimulate);
  // zero means none.
  std::chrono::milliseconds timeout{0};
  // When true, calls wait for the channel to connect (up to the deadline)
  // instead of failing at once with UNAVAILABLE.
  bool wait_for_ready = false;

  // Transport security. When any of tls_ca, tls_cert, tls_key or
  // tls_server_name is set the channel uses TLS (grpc::SslCredentials);
  // when none is, plaintext.
  //
  // PEM file of the root certificates that sign the server's certificate;
  // empty: gRPC's default roots (the system's).
  std::string tls_ca;
  // PEM files of this client's certificate chain and its private key, for a
  // server that requires client certificates (mTLS); both or neither.
  std::string tls_cert;
  std::string tls_key;
  // The name checked against the server's certificate instead of the host
  // of the address (e.g. connecting to an IP address whose certificate
  // names a DNS name).
  std::string tls_server_name;

  // Bearer token: every call (Health included) carries the metadata
  // `authorization: Bearer <token>`. Over TLS it is the channel's call
  // credentials (grpc::AccessTokenCredentials); over plaintext, metadata
  // added to each call, and then only to a loopback address (localhost,
  // 127.0.0.0/8, ::1, a unix socket) unless allow_plaintext_token: a token
  // sent in plaintext can be read and replayed by anyone on the path.
  // Visible ASCII only (no spaces or control characters).
  std::string token;
  // The token read from this file instead (trailing CR/LF stripped), so it
  // does not show in a process listing; not both token and token_file.
  std::string token_file;
  // Allows a token over plaintext to a non-loopback address (say, behind a
  // service mesh that encrypts the hop).
  bool allow_plaintext_token = false;

  // HTTP/2 keepalive: when non-zero, the channel pings the server after
  // this long without activity, also between calls, and closes the
  // connection (failing its calls with UNAVAILABLE) when a ping is not
  // answered within keepalive_timeout: a host that vanished without closing
  // the connection is then found within keepalive_time + keepalive_timeout
  // instead of TCP's minutes. tether-server permits client pings every
  // second or slower (server.cc); faster ones get GOAWAY too_many_pings.
  std::chrono::milliseconds keepalive_time{0};
  std::chrono::milliseconds keepalive_timeout{20000};
};

// grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class HealthStatus {
  kUnknown = 0,
  kServing = 1,
  kNotServing = 2,
  kServiceUnknown = 3,
};
const char* HealthStatusName(HealthStatus status);

class CoSimulation;

// The request header a proxy in front of several replicas routes session
// calls on (deploy/README.md, "Routing"): every call of a session carries
// its id in it, so a proxy hashing consistently on it sends all of them to
// one replica. CreateSession, ImportSession, Validate, Evaluate and
// ListSessions carry none and may go to any replica.
inline constexpr char kRoutingHeader[] = "tether-session-id";

class Client {
 public:
  // A client on a channel the caller made: `options` gives the deadline,
  // wait_for_ready and nothing else (the TLS and token fields are not used;
  // the channel's credentials are the caller's).
  Client(std::shared_ptr<grpc::Channel> channel, ConnectOptions options = {});

  // A client for `address` ("host:port", or any gRPC target) with
  // `options`: message size limits, TLS, the token. Reads the options'
  // files now; connecting is lazy (the first call connects). A bad option
  // is INVALID_ARGUMENT whose message starts with the option's name and
  // names the file ("tls_ca /etc/tether/ca.crt: cannot read it: No such
  // file or directory", "tls_key: missing; ...", "token: refusing
  // to send a bearer token in plaintext to ..."); then *client is not set.
  // The token is never part of a message.
  static grpc::Status Create(const std::string& address, const ConnectOptions& options,
                             std::unique_ptr<Client>* client);
  // As Create, but never null: with a bad option every call of the client
  // returns Create's status (see setup_status()).
  static std::unique_ptr<Client> Connect(const std::string& address,
                                         const ConnectOptions& options = {});

  // OK, or the error of the options this client was connected with.
  const grpc::Status& setup_status() const { return setup_status_; }

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  const ConnectOptions& options() const { return options_; }

  // Validate: diagnostics and judgements (a), (c). An invalid spec is a
  // report with valid() == false, not an error status.
  grpc::Status Validate(const v1::SimulationSpec& spec, v1::ValidationReport* report);

  // One evaluation at request.state (or the spec's initial state).
  grpc::Status Evaluate(const v1::EvaluateRequest& request, v1::EvaluateResponse* response);

  // Compiles `spec` into a session positioned at its initial state.
  grpc::Status CreateSession(const v1::SimulationSpec& spec, const std::string& display_name,
                             v1::Session* session);
  // SESSION_VIEW_FULL adds the frame at the session's current state
  // (session->frame(): one evaluation on the server; FAILED_PRECONDITION
  // while a stream holds the session).
  grpc::Status GetSession(const std::string& session_id, v1::Session* session,
                          v1::SessionView view = v1::SESSION_VIEW_BASIC);
  // The session once it is served again after its replica went away
  // (deploy/README.md, "Several replicas"): GetSession retried while the
  // answer is UNAVAILABLE (no replica or store reachable, a replica
  // draining) or ABORTED (another replica's lease has not expired yet),
  // backing off from 20 ms to 250 ms, for at most `timeout`; then the last
  // answer. session->step() and state() are the durable state, where a new
  // Run or CoSimulate continues bit for bit.
  grpc::Status Resume(const std::string& session_id, std::chrono::milliseconds timeout,
                      v1::Session* session);
  // Every session, following next_page_token until the last page.
  grpc::Status ListSessions(std::vector<v1::Session>* sessions, int page_size = 100);
  // One page: at most `page_size` sessions after `page_token` ("" = the
  // first page); response->next_page_token() is "" on the last page.
  grpc::Status ListSessionsPage(int page_size, const std::string& page_token,
                                v1::ListSessionsResponse* response);
  grpc::Status DeleteSession(const std::string& session_id);

  // Called once per frame in order; return false to cancel the run (Run then
  // returns CANCELLED).
  using FrameCallback = std::function<bool(const v1::Frame&)>;

  // Streams a Run: `on_frame` sees every frame; `certificate` (optional)
  // receives the certificate of the last message, or is cleared when the
  // server sent none. A run that fails numerically delivers every frame it
  // computed and returns ABORTED.
  grpc::Status Run(const v1::RunRequest& request, const FrameCallback& on_frame,
                   v1::Certificate* certificate = nullptr);

  // Called once per RunResponse in order (its frames and, on the last one,
  // the certificate); return false to cancel the run.
  using MessageCallback = std::function<bool(const v1::RunResponse&)>;

  // Streams a Run message by message, for callers that need the batching
  // itself (frames per message, where the certificate is, message sizes).
  // The callback runs on the calling thread between reads, so it may make
  // other calls (including on the same session) while the run goes on.
  // Returns the server's final status, CANCELLED after a false.
  grpc::Status RunMessages(const v1::RunRequest& request, const MessageCallback& on_message);

  // Streams a RunEnsemble: `on_message` sees every response (its results,
  // in index order, and the progress); return false to cancel. Returns the
  // server's final status, CANCELLED after a false.
  using EnsembleCallback = std::function<bool(const v1::RunEnsembleResponse&)>;
  grpc::Status RunEnsemble(const v1::RunEnsembleRequest& request,
                           const EnsembleCallback& on_message);

  // Snapshots of a session's complete state, server-side (at most
  // --max-snapshots per session, the oldest dropped), and rollback to one.
  grpc::Status CreateSnapshot(const std::string& session_id, const std::string& label,
                              v1::Snapshot* snapshot);
  grpc::Status ListSnapshots(const std::string& session_id, v1::ListSnapshotsResponse* response);
  grpc::Status RestoreSnapshot(const std::string& session_id, uint64_t snapshot_id,
                               v1::Session* session);
  grpc::Status DeleteSnapshot(const std::string& session_id, uint64_t snapshot_id);
  // A session's description and state as portable bytes, and a new session
  // from such bytes (on this or another server of the same major version).
  // With a snapshot_id, that snapshot's bytes (allowed while a stream holds
  // the session).
  grpc::Status ExportSession(const std::string& session_id, v1::ExportSessionResponse* response,
                             uint64_t snapshot_id = 0);
  grpc::Status ImportSession(const std::string& data, const std::string& display_name,
                             v1::Session* session);
  // Changes parameters, gains, inputs or the state of an idle session.
  grpc::Status UpdateSession(const v1::UpdateSessionRequest& request, v1::Session* session);

  // Opens a lockstep co-simulation stream on a session. Never null; a
  // failure to open shows in the first DoStep.
  std::unique_ptr<CoSimulation> CoSimulate(const std::string& session_id);

  // grpc.health.v1.Health/Check for `service` ("" = the whole server) with
  // its own deadline (the channel is not waited for beyond it).
  grpc::Status Health(const std::string& service, std::chrono::milliseconds deadline,
                      HealthStatus* status);

 private:
  friend class CoSimulation;
  Client(std::string address, ConnectOptions options, grpc::Status setup_status,
         std::shared_ptr<grpc::Channel> channel, std::string metadata_authorization, bool tls);

  // A context with the configured deadline and wait_for_ready (and on a
  // plaintext channel the token's metadata). A call of session
  // `session_id` also carries it in kRoutingHeader.
  void Configure(grpc::ClientContext* context, const std::string& session_id = {}) const;
  // The token's metadata alone (for Health, which has its own deadline).
  void Authorize(grpc::ClientContext* context) const;
  // `status` of a finished call, a failed TLS handshake (or plaintext to a
  // TLS server) explained.
  grpc::Status Explained(const grpc::Status& status) const;

  std::string address_;
  ConnectOptions options_;
  grpc::Status setup_status_;
  std::shared_ptr<grpc::Channel> channel_;
  // "Bearer <token>" on a plaintext channel with a token, else empty.
  std::string metadata_authorization_;
  bool tls_ = false;
  // A call has succeeded on the channel (the server speaks its protocol):
  // a dropped connection is then not explained as TLS (Explained).
  mutable std::atomic<bool> reached_{false};
  std::unique_ptr<v1::Simulator::Stub> stub_;
};

// A CoSimulate stream: each DoStep advances the session by exactly
// `communication_step` with `inputs` held constant (inputs not named keep
// their last value) and waits for the frame at the new time and the step's
// certificate. After a failed DoStep the stream is over: the returned status
// is the server's final status.
class CoSimulation {
 public:
  ~CoSimulation();
  CoSimulation(const CoSimulation&) = delete;
  CoSimulation& operator=(const CoSimulation&) = delete;

  grpc::Status DoStep(double communication_step, const std::map<std::string, double>& inputs,
                      v1::Frame* frame, v1::Certificate* certificate = nullptr);

  // One request and its response as they are: a step with on_failure =
  // ON_FAILURE_DISCARD (response->discarded() says whether it was undone),
  // or a snapshot command (save_snapshot, restore_snapshot_id). The
  // session_id is filled in on the first request.
  grpc::Status Exchange(v1::CoSimulateRequest request, v1::CoSimulateResponse* response);
  // The same with a deadline for this exchange alone (a stream's own
  // deadline would bound all its exchanges together): when no response
  // has come within `deadline`, the stream is cancelled and ended, and the
  // result is DEADLINE_EXCEEDED saying so (a stopped or vanished server
  // cannot block the caller longer). A watchdog thread per exchange.
  grpc::Status Exchange(v1::CoSimulateRequest request, v1::CoSimulateResponse* response,
                        std::chrono::milliseconds deadline);

  // Half-closes the stream and returns the server's final status (OK after
  // a normal end). Called by the destructor when not called before.
  grpc::Status Finish();

  const std::string& session_id() const { return session_id_; }

 private:
  friend class Client;
  // `client` outlives the stream.
  CoSimulation(std::string session_id, const Client* client);

  const Client* client_;
  std::string session_id_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::CoSimulateRequest, v1::CoSimulateResponse>> stream_;
  bool first_ = true;
  bool finished_ = false;
  grpc::Status final_status_;
};

}  // namespace tether::client
