// A running tether-server: the Simulator service, the standard health
// service and server reflection on one listening address.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "service/server_options.h"
#include "service/service_core.h"
#include "service/simulator_service.h"
#include "service/tokens_watcher.h"

namespace tether::service {

class TetherServer {
 public:
  // Builds and starts the server from `options.listen` and
  // `options.service` (the caller applies the logging and the shutdown
  // grace); nullptr with `error` set when the address cannot be bound.
  static std::unique_ptr<TetherServer> Start(const ServerOptions& options, std::string* error);
  ~TetherServer();  // Shutdown(0) unless done.

  // The bound address, e.g. "127.0.0.1:43817".
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // The service's options in force (workers resolved to a count).
  const ServiceOptions& service_options() const { return core_->options(); }

  // Graceful shutdown: health NOT_SERVING, new calls UNAVAILABLE, compiles
  // in progress stopped; open streams go on for up to `grace` less a
  // drain reserve (a quarter of it, at most 1 s), then end with what they
  // computed (ServiceCore::DrainStreams: a Run sends its frames and the
  // partial window's certificate, then UNAVAILABLE); keeps refusing for up
  // to 1 s (within `grace`), then cancels what is left at `grace` and
  // stops the workers.
  // With --state-dir the sessions are then written (the drain).
  void Shutdown(std::chrono::milliseconds grace);
  // After Shutdown: whether the drain wrote every session (true without
  // --state-dir); tether-server exits with 4 when not.
  bool drain_persisted() const { return drain_persisted_; }

 private:
  TetherServer() = default;
  // Destroyed in reverse: the tokens watcher, the gRPC server, then the
  // service, then the core.
  std::unique_ptr<ServiceCore> core_;
  std::unique_ptr<SimulatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  // Reloads --tokens-file into core_'s Authenticator (destroyed before it).
  std::unique_ptr<TokensWatcher> tokens_watcher_;
  std::string address_;
  int port_ = 0;
  bool shut_down_ = false;
  bool drain_persisted_ = true;
};

// "127.0.0.1:0" + 43817 -> "127.0.0.1:43817".
std::string BoundAddress(const std::string& listen, int port);

}  // namespace tether::service
