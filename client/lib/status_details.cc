#include "tether/status_details.h"

#include <google/protobuf/unknown_field_set.h>

#include "tether/status_code_name.h"

namespace tether::client {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

constexpr char kBadRequestType[] = "google.rpc.BadRequest";

// The length-delimited fields numbered `number` of a parsed message.
std::vector<const std::string*> Strings(const UnknownFieldSet& fields, int number) {
  std::vector<const std::string*> out;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& field = fields.field(i);
    if (field.number() == number && field.type() == UnknownField::TYPE_LENGTH_DELIMITED) {
      out.push_back(&field.length_delimited());
    }
  }
  return out;
}

std::string FirstString(const UnknownFieldSet& fields, int number) {
  auto strings = Strings(fields, number);
  return strings.empty() ? std::string() : *strings.front();
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const char* StatusCodeName(grpc::StatusCode code) { return GrpcStatusCodeName(code); }

std::vector<FieldViolation> FieldViolations(const grpc::Status& status) {
  std::vector<FieldViolation> violations;
  if (status.error_details().empty()) return violations;
  UnknownFieldSet rpc_status;
  if (!rpc_status.ParseFromString(status.error_details())) return violations;
  for (const std::string* any_bytes : Strings(rpc_status, 3)) {
    UnknownFieldSet any;
    if (!any.ParseFromString(*any_bytes)) continue;
    // type_url is "type.googleapis.com/google.rpc.BadRequest"; accept any
    // prefix.
    if (!EndsWith(FirstString(any, 1), kBadRequestType)) continue;
    UnknownFieldSet bad_request;
    if (!bad_request.ParseFromString(FirstString(any, 2))) continue;
    for (const std::string* violation_bytes : Strings(bad_request, 1)) {
      UnknownFieldSet violation;
      if (!violation.ParseFromString(*violation_bytes)) continue;
      violations.push_back({FirstString(violation, 1), FirstString(violation, 2)});
    }
  }
  return violations;
}

std::string FormatStatus(const grpc::Status& status) {
  std::string text = StatusCodeName(status.error_code());
  if (!status.error_message().empty()) {
    text += ": ";
    text += status.error_message();
  }
  for (const FieldViolation& violation : FieldViolations(status)) {
    std::string line = violation.field + ": " + violation.description;
    if (status.error_message().find(line) != std::string::npos) continue;
    text += "\n  ";
    text += line;
  }
  return text;
}

}  // namespace tether::client
