#include "engine/status.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tether {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string FormatNumber(double value) {
  // In words: to_chars spells these "nan", "-nan" and "inf".
  if (std::isnan(value)) return "not a number (NaN)";
  if (std::isinf(value)) return value > 0 ? "infinity" : "-infinity";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, result.ptr);
}

std::string EscapeForMessage(std::string_view text, std::size_t max_bytes) {
  std::size_t keep = std::min(text.size(), max_bytes);
  // Do not split a multi-byte UTF-8 character (continuation bytes are
  // 10xxxxxx): status details are protobuf strings, which must be UTF-8.
  if (keep < text.size()) {
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  }
  std::string out;
  out.reserve(keep + 24);
  for (unsigned char c : text.substr(0, keep)) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  if (keep < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string QuoteForMessage(std::string_view text, std::size_t max_bytes) {
  return "'" + EscapeForMessage(text, max_bytes) + "'";
}

const std::string& Status::EmptyString() {
  static const std::string empty;
  return empty;
}

const std::vector<FieldViolation>& Status::EmptyViolations() {
  static const std::vector<FieldViolation> empty;
  return empty;
}

const ErrorSubject& Status::EmptySubject() {
  static const ErrorSubject empty;
  return empty;
}

void Status::Destroy(Rep* rep) { delete rep; }

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code())) + ": " + message();
}

}  // namespace tether
