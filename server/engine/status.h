// Status values returned across the engine's boundary. Bad input is a
// Status (never an exception, never an abort); programming errors are
// assertions. The codes mirror gRPC's so the service maps them one to one.
#pragma once

#include <cassert>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  kUnauthenticated,     // no valid credentials (service/auth.h: bearer tokens)
  kInternal,            // a bug
};

const char* StatusCodeName(StatusCode code);

// The shortest text that reads back as the same double ("10", "0.001",
// "1e-07"), for messages; a NaN is "not a number (NaN)" (never "-nan") and
// an infinity "infinity" or "-infinity".
std::string FormatNumber(double value);

// The longest prefix of `text` of at most `max_bytes` bytes that does not
// end inside a UTF-8 character: the one way any string is cut (display
// names, labels, messages, log lines), so that a cut never leaves a partial
// UTF-8 sequence behind (proto3 strings must be valid UTF-8; a client's
// parser rejects the whole message otherwise). Only a trailing incomplete
// sequence is dropped; invalid bytes elsewhere are left as they are.
std::string_view Utf8Prefix(std::string_view text, std::size_t max_bytes);

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, at
// most U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Client-supplied text (a session id, an input name, a name from a
// description) as it may appear in a status message or a log line: at most
// `max_bytes` bytes of it, cut by Utf8Prefix and followed by
// "... (N bytes)" when longer, with backslash and every control
// character escaped (\\, \n, \r, \t, else \xNN; ESC is \x1b), bytes that
// are not valid UTF-8 escaped as \xNN, and the invisible direction and
// line-separator characters (U+200E, U+200F, U+202A..U+202E, U+2028,
// U+2029, U+2066..U+2069) escaped as \u{NNNN}, so that neither a 3 MB id nor
// a newline nor a right-to-left override reaches a status, its metadata or
// a log line unchanged. QuoteForMessage puts the result in single quotes
// ("'abc'").
std::string EscapeForMessage(std::string_view text, std::size_t max_bytes = 128);
std::string QuoteForMessage(std::string_view text, std::size_t max_bytes = 128);

// One input field at fault: `field` is a path such as
// "system.constraints[1].expression".
struct FieldViolation {
  std::string field;
  std::string description;
};

// What a NOT_FOUND, FAILED_PRECONDITION or RESOURCE_EXHAUSTED status is
// about, for programs rather than people. The service sends it as the
// status's google.rpc detail (service/status_mapping.h): NOT_FOUND as
// ResourceInfo {resource_type = type, resource_name = name, description},
// FAILED_PRECONDITION as PreconditionFailure.Violation {type, subject = name,
// description}, RESOURCE_EXHAUSTED as QuotaFailure.Violation {subject = name,
// description}. `name` is client-supplied text at most 128 bytes long
// (EscapeForMessage), never the raw bytes.
struct ErrorSubject {
  std::string type;         // "tether.v1.Session", "SESSION_RUNNING", ...
  std::string name;         // the session id, the flag or the field path
  std::string description;  // what is wrong with it, for people
  bool empty() const { return type.empty() && name.empty() && description.empty(); }
};

// Ok is a null pointer, so passing, returning and destroying Ok costs a
// compare in the step loop; an error carries its code, message and field
// violations. Must be used: a call whose Status is dropped does not compile
// without a warning (cast to void, with a comment, where ignoring it is right).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, std::vector<FieldViolation> violations = {},
         ErrorSubject subject = {})
      : rep_(code == StatusCode::kOk
                 ? nullptr
                 : new Rep{code, std::move(message), std::move(violations), std::move(subject)}) {}
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
    if (rep_) [[unlikely]]
      Destroy(rep_);
  }

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const { return rep_ ? rep_->message : EmptyString(); }
  const std::vector<FieldViolation>& violations() const {
    return rep_ ? rep_->violations : EmptyViolations();
  }
  const ErrorSubject& subject() const { return rep_ ? rep_->subject : EmptySubject(); }

  // "INVALID_ARGUMENT: message".
  std::string ToString() const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::vector<FieldViolation> violations;
    ErrorSubject subject;
  };
  static const std::string& EmptyString();
  static const ErrorSubject& EmptySubject();
  static const std::vector<FieldViolation>& EmptyViolations();
  static void Destroy(Rep* rep);  // out of line: the error path only
  void Reset(Rep* rep) {
    if (rep_) Destroy(rep_);
    rep_ = rep;
  }

  Rep* rep_ = nullptr;
};

// Factories, one per code the engine and the service return; the code says
// what the caller can do about it (status.h's StatusCode comments).
inline Status InvalidArgument(std::string message, std::vector<FieldViolation> violations = {}) {
  return Status(StatusCode::kInvalidArgument, std::move(message), std::move(violations));
}
inline Status NotFound(std::string message, ErrorSubject subject = {}) {
  return Status(StatusCode::kNotFound, std::move(message), {}, std::move(subject));
}
inline Status FailedPrecondition(std::string message, ErrorSubject subject = {}) {
  return Status(StatusCode::kFailedPrecondition, std::move(message), {}, std::move(subject));
}
inline Status ResourceExhausted(std::string message, ErrorSubject subject = {}) {
  return Status(StatusCode::kResourceExhausted, std::move(message), {}, std::move(subject));
}
inline Status Aborted(std::string message, std::vector<FieldViolation> violations = {}) {
  return Status(StatusCode::kAborted, std::move(message), std::move(violations));
}
inline Status Unauthenticated(std::string message) {
  return Status(StatusCode::kUnauthenticated, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// A T or the Status saying why there is none (Abseil's StatusOr): what a
// failable constructor returns. Holding an Ok status without a value is a
// bug; constructing one makes an INTERNAL error instead.
template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit, like absl
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "StatusOr built from an Ok status");
    if (status_.ok()) status_ = Internal("StatusOr built from an Ok status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  // Preconditions: ok().
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tether
