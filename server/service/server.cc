#include "service/server.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>

#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "grpc/health/v1/health.pb.h"

namespace tether::service {

std::string BoundAddress(const std::string& listen, int port) {
  auto colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  return host + ":" + std::to_string(port);
}

namespace {

// The shortest interval between a client's pings the server accepts
// (GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, below).
constexpr int kMinClientPingIntervalMs = 1000;

// The whole of the file at `path`; false (with `*error`) if it cannot be read.
bool ReadPem(const std::string& flag, const std::string& path, std::string* out,
             std::string* error) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty()) {
    *error = flag + " " + path + ": cannot read the file (expected a PEM file)";
    return false;
  }
  *out = text.str();
  return true;
}

// Plaintext, or gRPC's TLS credentials from the PEM files of `options`.
std::shared_ptr<grpc::ServerCredentials> Credentials(const ServerOptions& options,
                                                     std::string* error) {
  if (options.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (!ReadPem("--tls-cert", options.tls_cert, &pair.cert_chain, error) ||
      !ReadPem("--tls-key", options.tls_key, &pair.private_key, error)) {
    return nullptr;
  }
  ssl.pem_key_cert_pairs.push_back(pair);
  if (!options.tls_client_ca.empty()) {
    if (!ReadPem("--tls-client-ca", options.tls_client_ca, &ssl.pem_root_certs, error)) {
      return nullptr;
    }
    // A certificate is verified when presented but not required at the
    // handshake: health and reflection stay open to probes without one,
    // and every tether.v1 call without one is refused with UNAUTHENTICATED
    // (Authenticator::AuthenticateCall).
    ssl.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

std::unique_ptr<TetherServer> TetherServer::Start(const ServerOptions& options,
                                                  std::string* error) {
  if (!CheckTransport(options, error)) return nullptr;
  auto credentials = Credentials(options, error);
  if (!credentials) return nullptr;
  auto auth = Authenticator::Load(options, error);
  if (!auth) return nullptr;
  if (auth->enabled()) {
    spdlog::info("bearer tokens: {} tenant(s) from {}", auth->tenant_count(),
                 options.tokens_file.empty() ? std::string(kTokensEnv)
                                             : "--tokens-file " + options.tokens_file);
  }
  std::unique_ptr<TetherServer> server(new TetherServer());
  Authenticator* reloadable = auth.get();
  server->core_ = std::make_unique<ServiceCore>(options.service, std::move(auth));
  if (!server->core_->RestoreSessions(error)) {
    server->core_->StopWorkers();
    server->shut_down_ = true;  // nothing is serving: the destructor has nothing to stop
    return nullptr;
  }
  server->service_ = std::make_unique<SimulatorService>(server->core_.get());

  grpc::EnableDefaultHealthCheckService(true);
  // Reflection answers from the generated descriptor pool; naming the health
  // messages' descriptor here links grpc/health/v1/health.pb.cc (a static
  // library member nothing else references) so that a client discovering
  // the API by reflection can resolve and call grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, credentials, &port);
  builder.RegisterService(server->service_.get());
  const int max_bytes =
      static_cast<int>(std::min<std::size_t>(options.service.max_message_bytes, INT32_MAX));
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  // gRPC sets SO_REUSEPORT on Linux by default, so a second server on a
  // port already in use would "start" and share (or steal) the first one's
  // connections; without it binding a used port fails here.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Connections are budgets too (ServerOptions): keepalive pings end a
  // vanished client's calls, idle connections are closed, and one
  // connection runs a bounded number of calls at once.
  auto ms = [](std::chrono::milliseconds d) {
    return static_cast<int>(std::min<int64_t>(d.count(), INT32_MAX));
  };
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ms(options.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ms(options.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Clients' keepalive pings (the remote FMU's, ConnectOptions::keepalive_time)
  // are permitted once a second, without calls too. gRPC documents its
  // default (one ping per 5 minutes without data, else a strike, GOAWAY
  // too_many_pings after two) as the server's policy; Debian's gRPC 1.51
  // did not send that GOAWAY in tests/fmu3_test.cc's keepalive test even
  // without this line, but the policy is stated here rather than left to
  // a version's counting. A ping costs a 17-byte frame and its answer.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kMinClientPingIntervalMs);
  builder.AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_IDLE_MS,
      options.max_connection_idle.count() == 0 ? INT32_MAX : ms(options.max_connection_idle));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(options.max_streams_per_connection));
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || port == 0) {
    *error = "cannot listen on " + options.listen +
             ": the address is in use or cannot be bound (another server on the port?)";
    if (server->server_) server->server_->Shutdown();
    server->core_->StopWorkers();
    server->shut_down_ = true;  // the destructor has nothing left to stop
    return nullptr;
  }
  server->port_ = port;
  server->address_ = BoundAddress(options.listen, port);
  if (!options.tokens_file.empty() && options.tokens_reload_interval.count() > 0) {
    server->tokens_watcher_ = std::make_unique<TokensWatcher>(reloadable, options);
  }
  if (auto* health = server->server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    // NOT_SERVING while --state-dir cannot be written (ServiceCore's
    // checkpoints), SERVING again once a checkpoint succeeds.
    server->core_->WatchPersistence(
        [health](bool writable) { health->SetServingStatus("tether.v1.Simulator", writable); });
  }
  return server;
}

TetherServer::~TetherServer() { Shutdown(std::chrono::milliseconds(0)); }

void TetherServer::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_) return;
  shut_down_ = true;
  using Clock = std::chrono::steady_clock;
  // No checkpoint sets the health any more, then every service is
  // NOT_SERVING.
  core_->WatchPersistence(nullptr);
  if (auto* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(false);
  }
  // New calls are refused and compiles in progress stop; open streams go on.
  core_->BeginShutdown();
  const auto start = Clock::now();
  const auto deadline = start + grace;
  // The last quarter of the grace (at most 1 s) is kept for the drain:
  // streams still open then end with what they computed (a Run's frames
  // and the partial window's certificate), and those last messages are
  // written.
  const auto drain_at =
      deadline - std::min<std::chrono::milliseconds>(grace / 4, std::chrono::milliseconds(1000));
  // Keep refusing (UNAVAILABLE, health NOT_SERVING) for at least 1 s, and
  // after a drain until the deadline (at most 1 s more), so that clients
  // and load balancers see a clean refusal rather than a call cancelled by
  // the transport going away.
  auto refuse_until = std::min(deadline, start + std::chrono::milliseconds(1000));
  if (!core_->WaitForStreams(drain_at)) {
    spdlog::info("shutdown: ending the streams still open, with what they computed");
    core_->DrainStreams();
    if (!core_->WaitForStreams(deadline)) {
      spdlog::warn("shutdown: streams still open after the grace period; cancelling them");
    }
    refuse_until = deadline;
  }
  std::this_thread::sleep_until(refuse_until);
  // Then the calls' ends: each stream's last messages and status written,
  // each unary call answered. Once all are, nothing is left to wait for
  // but connections with no call, which grpc::Server::Shutdown would keep
  // until its deadline (a client's channel left open after the GOAWAY):
  // shut down at once then, else at the deadline.
  const bool calls_done = core_->WaitForCalls(deadline);
  // Stops accepting; calls still open at the deadline (a stalled reader's,
  // a unary call's) are cancelled.
  const auto left = calls_done ? Clock::duration::zero()
                               : std::max(deadline - Clock::now(), Clock::duration::zero());
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
  core_->StopWorkers();
  drain_persisted_ = core_->PersistSessions();
}

}  // namespace tether::service
