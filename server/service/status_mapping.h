// The one place where engine statuses become gRPC statuses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/support/status.h>

#include "engine/status.h"

namespace tether::service {

// Engine code -> gRPC code (one to one; see engine/status.h).
grpc::StatusCode ToGrpcCode(StatusCode code);

// Converts an engine status. Every field violation's path is prefixed with
// `field_prefix` (e.g. "spec." for paths the engine reports relative to the
// spec). Violations go into the status details as a serialized
// google.rpc.Status carrying one google.rpc.BadRequest.
grpc::Status ToGrpcStatus(const Status& status, std::string_view field_prefix = "");

// A gRPC error with optional BadRequest field violations.
grpc::Status GrpcError(grpc::StatusCode code, std::string message,
                       const std::vector<FieldViolation>& violations = {});

// Shorthand for INVALID_ARGUMENT about one field.
grpc::Status InvalidField(std::string field, std::string description);

}  // namespace tether::service
