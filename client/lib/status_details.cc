#include "tether/status_details.h"

#include <google/protobuf/unknown_field_set.h>

#include "tether/status_code_name.h"

namespace tether::client {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

constexpr char kBadRequestType[] = "BadRequest";

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

// Calls visit(type name, detail message) for every google.protobuf.Any in
// the status details whose type_url ends in "google.rpc.<name>" (any
// prefix is accepted, "type.googleapis.com/" being the usual one).
template <class Visit>
void ForEachDetail(const grpc::Status& status, Visit visit) {
  if (status.error_details().empty()) return;
  UnknownFieldSet rpc_status;
  if (!rpc_status.ParseFromString(status.error_details())) return;
  for (const std::string* any_bytes : Strings(rpc_status, 3)) {
    UnknownFieldSet any;
    if (!any.ParseFromString(*any_bytes)) continue;
    const std::string type_url = FirstString(any, 1);
    const std::string::size_type dot = type_url.rfind("google.rpc.");
    if (dot == std::string::npos) continue;
    UnknownFieldSet detail;
    if (!detail.ParseFromString(FirstString(any, 2))) continue;
    visit(type_url.substr(dot + 11), detail);
  }
}

// The parsed messages of the repeated message field `number`.
template <class Visit>
void ForEachMessage(const UnknownFieldSet& fields, int number, Visit visit) {
  for (const std::string* bytes : Strings(fields, number)) {
    UnknownFieldSet message;
    if (message.ParseFromString(*bytes)) visit(message);
  }
}

}  // namespace

const char* StatusCodeName(grpc::StatusCode code) { return GrpcStatusCodeName(code); }

std::vector<FieldViolation> FieldViolations(const grpc::Status& status) {
  std::vector<FieldViolation> violations;
  ForEachDetail(status, [&](const std::string& type, const UnknownFieldSet& detail) {
    if (type != kBadRequestType) return;
    ForEachMessage(detail, 1, [&](const UnknownFieldSet& v) {
      violations.push_back({FirstString(v, 1), FirstString(v, 2)});
    });
  });
  return violations;
}

std::vector<ErrorSubject> ErrorSubjects(const grpc::Status& status) {
  std::vector<ErrorSubject> subjects;
  ForEachDetail(status, [&](const std::string& type, const UnknownFieldSet& detail) {
    if (type == "ResourceInfo") {
      subjects.push_back(
          {type, FirstString(detail, 1), FirstString(detail, 2), FirstString(detail, 4)});
    } else if (type == "PreconditionFailure") {
      ForEachMessage(detail, 1, [&](const UnknownFieldSet& v) {
        subjects.push_back({type, FirstString(v, 1), FirstString(v, 2), FirstString(v, 3)});
      });
    } else if (type == "QuotaFailure") {
      ForEachMessage(detail, 1, [&](const UnknownFieldSet& v) {
        subjects.push_back({type, "", FirstString(v, 1), FirstString(v, 2)});
      });
    }
  });
  return subjects;
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
