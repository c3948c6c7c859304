// How a Client reaches its server (private to the client library): the
// channel for ConnectOptions' TLS and token settings, their checks, and the
// explanation added to a failed TLS handshake.
//
// The token never appears in a message made here.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/support/status.h>

#include "tether/client.h"

namespace tether::client::internal {

struct Connection {
  std::shared_ptr<grpc::Channel> channel;
  // "Bearer <token>" to add as `authorization` metadata to every call: set
  // on a plaintext channel only (over TLS the channel's call credentials
  // carry the token).
  std::string metadata_authorization;
  // True when the channel uses TLS.
  bool tls = false;
};

// Checks `options`, reads its files and makes the channel to `address`.
// INVALID_ARGUMENT when an option is wrong, its message starting with the
// option's name ("tls_ca /path: cannot read it: No such file or directory").
grpc::Status OpenConnection(const std::string& address, const ConnectOptions& options,
                            Connection* connection);

// True when `address` (a gRPC target) is a loopback address: localhost,
// 127.0.0.0/8, ::1, or a unix socket.
bool IsLoopback(const std::string& address);

// `status` with an explanation when it is an UNAVAILABLE that a failed TLS
// handshake with `address` (on a `tls` channel), or a plaintext client
// talking to a TLS server, would give; else `status` unchanged. The
// explanation names what was checked: the CA file, the server name, the
// client certificate; gRPC's own message follows it. `reached`: a call has
// succeeded on the channel, so a plaintext connection dropped is the server
// going away, not TLS (no hint then).
grpc::Status ExplainConnectFailure(const grpc::Status& status, const std::string& address,
                                   const ConnectOptions& options, bool tls, bool reached);

}  // namespace tether::client::internal
