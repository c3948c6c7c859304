// The remote backend: a tether-server reached through the C++ client library
// (tether/client.h), and what the remote-only commands (remote_commands.h)
// share with it: the client for --server, --timeout, --tls-* and --token*,
// and the status mapping.
#pragma once

#include <memory>

#include <grpcpp/support/status.h>

#include "cli/backend.h"
#include "cli/options.h"
#include "tether/client.h"

namespace tether::cli {

// A client for *options.server with --timeout as the deadline of every call
// and the TLS and token options. Connecting is lazy: the first call
// connects.
std::unique_ptr<client::Client> ConnectClient(const Options& options);

// Checks the TLS and token options (reading their files) before anything
// is sent: 0, or a usage error (exit 2) naming the flag or environment
// variable and the file.
int CheckConnectOptions(const Options& options);

// The server's status in the driver's terms: INVALID_ARGUMENT is bad input,
// ABORTED a failed run, anything else a failure; the field violations are
// those of the status's google.rpc.BadRequest details.
BackendStatus FromGrpc(const grpc::Status& status);

// validate, evaluate and run carried out by the server at *options.server
// (run: CreateSession, Run, DeleteSession).
std::unique_ptr<Backend> MakeRemoteBackend(const Options& options);

// A Session (backend.h) over an existing server-side session (`sessions
// run ID`): its runs go on from the session's state, and Close leaves the
// session on the server. `client` outlives it.
std::unique_ptr<Session> AttachSession(client::Client* client, const v1::Session& session);

}  // namespace tether::cli
