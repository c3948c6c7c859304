// The canonical name of a gRPC status code ("INVALID_ARGUMENT", ...), shared
// by the server's logs and the client library's messages (the server does
// not link the client library; both link tether_grpc_proto).
#pragma once

#include <grpcpp/support/status.h>

namespace tether {

const char* GrpcStatusCodeName(grpc::StatusCode code);

}  // namespace tether
