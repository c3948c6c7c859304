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
// spec). The details (the `grpc-status-details-bin` trailer) are a
// serialized google.rpc.Status carrying, in this order:
//   - google.rpc.BadRequest with the field violations, when there are any;
//   - for NOT_FOUND always a google.rpc.ResourceInfo, for FAILED_PRECONDITION
//     always a google.rpc.PreconditionFailure, for RESOURCE_EXHAUSTED always
//     a google.rpc.QuotaFailure, filled from the status's ErrorSubject
//     (engine/status.h). Without one they still come, with the message as
//     their description; a RESOURCE_EXHAUSTED without a subject has one
//     QuotaFailure violation per field violation (the compile limits: the
//     subject is the expression's field path).
// Every other code carries details only when it has field violations.
grpc::Status ToGrpcStatus(const Status& status, std::string_view field_prefix = "");

// A gRPC error with optional field violations and subject, detailed as
// ToGrpcStatus says.
grpc::Status GrpcError(grpc::StatusCode code, std::string message,
                       const std::vector<FieldViolation>& violations = {},
                       const ErrorSubject& subject = {});

// Shorthand for INVALID_ARGUMENT about one field.
grpc::Status InvalidField(std::string field, std::string description);

}  // namespace tether::service
