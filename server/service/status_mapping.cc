#include "service/status_mapping.h"

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace tether::service {

grpc::StatusCode ToGrpcCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return grpc::StatusCode::OK;
    case StatusCode::kCancelled: return grpc::StatusCode::CANCELLED;
    case StatusCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case StatusCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kAborted: return grpc::StatusCode::ABORTED;
    case StatusCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kUnauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
    case StatusCode::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

namespace {

// The detail that NOT_FOUND, FAILED_PRECONDITION and RESOURCE_EXHAUSTED
// always carry (status_mapping.h); false for every other code.
bool AddSubjectDetail(grpc::StatusCode code, const std::string& message,
                      const std::vector<FieldViolation>& violations, const ErrorSubject& subject,
                      google::rpc::Status* rich) {
  const std::string& description = subject.description.empty() ? message : subject.description;
  switch (code) {
    case grpc::StatusCode::NOT_FOUND: {
      google::rpc::ResourceInfo info;
      info.set_resource_type(subject.type);
      info.set_resource_name(subject.name);
      info.set_description(description);
      rich->add_details()->PackFrom(info);
      return true;
    }
    case grpc::StatusCode::FAILED_PRECONDITION: {
      google::rpc::PreconditionFailure failure;
      auto* v = failure.add_violations();
      v->set_type(subject.type);
      v->set_subject(subject.name);
      v->set_description(description);
      rich->add_details()->PackFrom(failure);
      return true;
    }
    case grpc::StatusCode::RESOURCE_EXHAUSTED: {
      google::rpc::QuotaFailure failure;
      if (!subject.empty() || violations.empty()) {
        auto* v = failure.add_violations();
        v->set_subject(subject.name);
        v->set_description(description);
      } else {
        for (const FieldViolation& fv : violations) {
          auto* v = failure.add_violations();
          v->set_subject(fv.field);
          v->set_description(fv.description);
        }
      }
      rich->add_details()->PackFrom(failure);
      return true;
    }
    default: return false;
  }
}

}  // namespace

grpc::Status GrpcError(grpc::StatusCode code, std::string message,
                       const std::vector<FieldViolation>& violations, const ErrorSubject& subject) {
  if (code == grpc::StatusCode::OK) return grpc::Status::OK;
  google::rpc::Status rich;
  rich.set_code(static_cast<int>(code));
  rich.set_message(message);
  if (!violations.empty()) {
    google::rpc::BadRequest bad_request;
    for (const FieldViolation& v : violations) {
      auto* fv = bad_request.add_field_violations();
      fv->set_field(v.field);
      fv->set_description(v.description);
    }
    rich.add_details()->PackFrom(bad_request);
  }
  const bool subject_detail = AddSubjectDetail(code, message, violations, subject, &rich);
  if (violations.empty() && !subject_detail) return grpc::Status(code, std::move(message));
  return grpc::Status(code, std::move(message), rich.SerializeAsString());
}

grpc::Status ToGrpcStatus(const Status& status, std::string_view field_prefix) {
  if (status.ok()) return grpc::Status::OK;
  std::vector<FieldViolation> violations = status.violations();
  std::string message = status.message();
  if (!field_prefix.empty()) {
    for (FieldViolation& v : violations) {
      v.field = std::string(field_prefix) + v.field;
    }
  }
  return GrpcError(ToGrpcCode(status.code()), std::move(message), violations, status.subject());
}

grpc::Status InvalidField(std::string field, std::string description) {
  std::string message = field + ": " + description;
  return GrpcError(grpc::StatusCode::INVALID_ARGUMENT, std::move(message),
                   {FieldViolation{std::move(field), std::move(description)}});
}

}  // namespace tether::service
