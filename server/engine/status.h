// Status values returned across the engine's boundary. Bad input is a
// Status (never an exception, never an abort); programming errors are
// assertions. The codes mirror gRPC's so the service maps them one to one.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tether {

enum class StatusCode {
  kOk = 0,
  kCancelled,           // the caller stopped the operation
  kInvalidArgument,     // the request or description is wrong
  kNotFound,            // no such session
  kFailedPrecondition,  // the target is not in a state that allows this
  kResourceExhausted,   // a configured limit was reached
  kAborted,             // a simulation failed numerically (non-finite value,
                        // dependent constraints); the message names step,
                        // time and cause
  kUnavailable,         // the server is shutting down
  kInternal,            // a bug
};

const char* StatusCodeName(StatusCode code);

// The shortest text that reads back as the same double ("10", "0.001",
// "1e-07", "nan", "inf"), for messages.
std::string FormatNumber(double value);

// One input field at fault: `field` is a path such as
// "system.constraints[1].expression".
struct FieldViolation {
  std::string field;
  std::string description;
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message,
         std::vector<FieldViolation> violations = {})
      : code_(code), message_(std::move(message)),
        violations_(std::move(violations)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::vector<FieldViolation>& violations() const { return violations_; }

  // "INVALID_ARGUMENT: message".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::vector<FieldViolation> violations_;
};

inline Status InvalidArgument(std::string message,
                              std::vector<FieldViolation> violations = {}) {
  return Status(StatusCode::kInvalidArgument, std::move(message),
                std::move(violations));
}

}  // namespace tether
