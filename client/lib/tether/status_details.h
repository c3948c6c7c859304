// Reading the details of a gRPC error status: the google.rpc.Status carried
// in grpc::Status::error_details() (the `grpc-status-details-bin` trailer)
// and the google.rpc.BadRequest field violations inside it.
//
// Debian's gRPC and protobuf packages do not ship google/rpc/*.proto, so the
// few fields needed are decoded from the wire format directly:
//   google.rpc.Status  { int32 code = 1; string message = 2;
//                        repeated google.protobuf.Any details = 3; }
//   google.protobuf.Any { string type_url = 1; bytes value = 2; }
//   google.rpc.BadRequest { repeated FieldViolation field_violations = 1; }
//   FieldViolation      { string field = 1; string description = 2; }
//   google.rpc.ResourceInfo { string resource_type = 1; string resource_name = 2;
//                             string owner = 3; string description = 4; }
//   google.rpc.PreconditionFailure { repeated Violation violations = 1; }
//     Violation { string type = 1; string subject = 2; string description = 3; }
//   google.rpc.QuotaFailure { repeated Violation violations = 1; }
//     Violation { string subject = 1; string description = 2; }
#pragma once

#include <string>
#include <vector>

#include <grpcpp/support/status.h>

namespace tether::client {

struct FieldViolation {
  // Path in the request, e.g. "spec.system.constraints[1].expression".
  std::string field;
  std::string description;
};

// What a NOT_FOUND (google.rpc.ResourceInfo), FAILED_PRECONDITION
// (google.rpc.PreconditionFailure) or RESOURCE_EXHAUSTED
// (google.rpc.QuotaFailure) status is about. The server sends one detail
// with every status of these codes.
struct ErrorSubject {
  // "ResourceInfo", "PreconditionFailure" or "QuotaFailure".
  std::string detail;
  // ResourceInfo.resource_type ("tether.v1.Session") or
  // PreconditionFailure.Violation.type ("SESSION_RUNNING", "SESSION_FAILED");
  // empty for QuotaFailure.
  std::string type;
  // resource_name (the session id) or the violation's subject (a session
  // id, a limit such as "--max-sessions", an expression's field path).
  std::string name;
  std::string description;
};

// "INVALID_ARGUMENT", "ABORTED", ... for a gRPC status code.
const char* StatusCodeName(grpc::StatusCode code);

// The BadRequest field violations of `status` (empty when there are none
// or the details cannot be decoded).
std::vector<FieldViolation> FieldViolations(const grpc::Status& status);

// The ResourceInfo, PreconditionFailure and QuotaFailure details of
// `status`, one entry per resource or violation, in the order sent (empty
// when there are none or the details cannot be decoded).
std::vector<ErrorSubject> ErrorSubjects(const grpc::Status& status);

// "CODE: message", then one "  field: description" line per field
// violation that the message does not already contain. No trailing newline.
std::string FormatStatus(const grpc::Status& status);

}  // namespace tether::client
