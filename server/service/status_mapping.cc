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

// Bounds on what a status carries, far below gRPC's limit on metadata (8 KiB
// by default in clients; the message travels percent-encoded in
// grpc-message and the details base64-encoded in grpc-status-details-bin).
// The engine and the service already cut and escape client text
// (EscapeForMessage); these bounds make sure that no message, however many
// diagnostics it joins, can push a status over the limit.
constexpr std::size_t kMaxMessageBytes = 1024;
constexpr std::size_t kMaxFieldBytes = 256;
constexpr std::size_t kMaxDescriptionBytes = 512;
// The field violations' fields and descriptions together, at most (the
// first violation is always sent).
constexpr std::size_t kMaxViolationBytes = 1536;

// `text` cut by Utf8Prefix to `max_bytes` ("... (N bytes)" after a cut),
// with control characters and bytes that are not UTF-8 escaped as \xNN.
// Text the engine wrote is left as it is (backslashes included): this is a
// bound, not the escaping of client text (EscapeForMessage does that).
std::string Bounded(std::string_view text, std::size_t max_bytes) {
  const std::string_view kept = Utf8Prefix(text, max_bytes);
  bool clean = IsValidUtf8(kept);
  for (unsigned char c : kept) clean = clean && c >= 0x20 && c != 0x7f;
  std::string out;
  if (clean) {
    out = std::string(kept);
  } else {
    // Escape with backslashes kept as they are: only control and invalid bytes change.
    std::string escaped = EscapeForMessage(kept, kept.size());
    for (std::size_t i = 0; i < escaped.size(); ++i) {
      if (escaped[i] == '\\' && i + 1 < escaped.size() && escaped[i + 1] == '\\') ++i;
      out += escaped[i];
    }
  }
  if (kept.size() < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

// The detail that NOT_FOUND, FAILED_PRECONDITION and RESOURCE_EXHAUSTED
// always carry (status_mapping.h); false for every other code.
bool AddSubjectDetail(grpc::StatusCode code, const std::string& message,
                      const std::vector<FieldViolation>& violations, const ErrorSubject& subject,
                      google::rpc::Status* rich) {
  const std::string& description = subject.description.empty() ? message : subject.description;
  switch (code) {
    case grpc::StatusCode::NOT_FOUND: {
      google::rpc::ResourceInfo info;
      info.set_resource_type(Bounded(subject.type, kMaxFieldBytes));
      info.set_resource_name(Bounded(subject.name, kMaxFieldBytes));
      info.set_description(Bounded(description, kMaxDescriptionBytes));
      rich->add_details()->PackFrom(info);
      return true;
    }
    case grpc::StatusCode::FAILED_PRECONDITION: {
      google::rpc::PreconditionFailure failure;
      auto* v = failure.add_violations();
      v->set_type(Bounded(subject.type, kMaxFieldBytes));
      v->set_subject(Bounded(subject.name, kMaxFieldBytes));
      v->set_description(Bounded(description, kMaxDescriptionBytes));
      rich->add_details()->PackFrom(failure);
      return true;
    }
    case grpc::StatusCode::RESOURCE_EXHAUSTED: {
      google::rpc::QuotaFailure failure;
      if (!subject.empty() || violations.empty()) {
        auto* v = failure.add_violations();
        v->set_subject(Bounded(subject.name, kMaxFieldBytes));
        v->set_description(Bounded(description, kMaxDescriptionBytes));
      } else {
        std::size_t bytes = 0;
        for (const FieldViolation& fv : violations) {
          if (bytes >= kMaxViolationBytes) break;
          auto* v = failure.add_violations();
          v->set_subject(Bounded(fv.field, kMaxFieldBytes));
          v->set_description(Bounded(fv.description, kMaxDescriptionBytes));
          bytes += v->subject().size() + v->description().size();
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
  message = Bounded(message, kMaxMessageBytes);
  google::rpc::Status rich;
  rich.set_code(static_cast<int>(code));
  rich.set_message(message);
  if (!violations.empty()) {
    google::rpc::BadRequest bad_request;
    std::size_t bytes = 0;
    for (const FieldViolation& v : violations) {
      // Beyond the bound the message (which joins them all, cut) says the rest.
      if (bytes >= kMaxViolationBytes) break;
      auto* fv = bad_request.add_field_violations();
      fv->set_field(Bounded(v.field, kMaxFieldBytes));
      fv->set_description(Bounded(v.description, kMaxDescriptionBytes));
      bytes += fv->field().size() + fv->description().size();
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
