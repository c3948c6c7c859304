// Status values returned across the engine's boundary. Bad input is a
// Status (never an exception, never an abort); programming errors are
// assertions. The codes mirror gRPC's so the service maps them one to one.
#pragma once

#include <memory>
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

// Ok is a null pointer, so passing, returning and destroying Ok costs a
// compare in the step loop; an error carries its code, message and field
// violations.
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::vector<FieldViolation> violations = {})
      : rep_(code == StatusCode::kOk ? nullptr
                                     : new Rep{code, std::move(message), std::move(violations)}) {}
  Status(const Status& other) : rep_(other.rep_ ? new Rep(*other.rep_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) {
      Rep* copy = other.rep_ ? new Rep(*other.rep_) : nullptr;
      Reset(copy);
    }
    return *this;
  }
  Status(Status&& other) noexcept : rep_(std::exchange(other.rep_, nullptr)) {}
  Status& operator=(Status&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.rep_, nullptr));
    return *this;
  }
  ~Status() {
    if (rep_) [[unlikely]] Destroy(rep_);
  }

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const { return rep_ ? rep_->message : EmptyString(); }
  const std::vector<FieldViolation>& violations() const {
    return rep_ ? rep_->violations : EmptyViolations();
  }

  // "INVALID_ARGUMENT: message".
  std::string ToString() const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::vector<FieldViolation> violations;
  };
  static const std::string& EmptyString();
  static const std::vector<FieldViolation>& EmptyViolations();
  static void Destroy(Rep* rep);  // out of line: the error path only
  void Reset(Rep* rep) {
    if (rep_) Destroy(rep_);
    rep_ = rep;
  }

  Rep* rep_ = nullptr;
};

inline Status InvalidArgument(std::string message,
                              std::vector<FieldViolation> violations = {}) {
  return Status(StatusCode::kInvalidArgument, std::move(message),
                std::move(violations));
}

}  // namespace tether
