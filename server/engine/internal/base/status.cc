#include "engine/status.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
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

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s`, or 0
// when it does not start with one (RFC 3629 table 3-7).
std::size_t Utf8SequenceLength(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // at most U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// Invisible characters that change how the text around them reads: the
// bidirectional marks, embeddings, overrides and isolates, and the line and
// paragraph separators (which some viewers and JavaScript break lines at).
bool IsDeceptiveCodePoint(uint32_t cp) {
  return cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || cp == 0x2028 ||
         cp == 0x2029 || (cp >= 0x2066 && cp <= 0x2069);
}

uint32_t DecodeUtf8(std::string_view s, std::size_t n) {
  const auto b = [&](std::size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[i]));
  };
  switch (n) {
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    case 4:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    default: return b(0);
  }
}

}  // namespace

std::string_view Utf8Prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t keep = max_bytes;
  // A cut before a continuation byte (10xxxxxx) splits a character: back up
  // to its lead byte (at most 3 continuation bytes in well-formed UTF-8).
  for (int i = 0; i < 3 && keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80; ++i)
    --keep;
  return text.substr(0, keep);
}

bool IsValidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t n = Utf8SequenceLength(text.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string EscapeForMessage(std::string_view text, std::size_t max_bytes) {
  const std::string_view kept = Utf8Prefix(text, max_bytes);
  std::string out;
  out.reserve(kept.size() + 24);
  char buf[16];
  std::size_t i = 0;
  while (i < kept.size()) {
    const unsigned char c = static_cast<unsigned char>(kept[i]);
    if (c >= 0x80) {
      const std::size_t n = Utf8SequenceLength(kept.substr(i));
      if (n == 0) {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
        ++i;
        continue;
      }
      const uint32_t cp = DecodeUtf8(kept.substr(i), n);
      if (IsDeceptiveCodePoint(cp)) {
        std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
        out += buf;
      } else {
        out.append(kept.substr(i, n));
      }
      i += n;
      continue;
    }
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  if (kept.size() < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
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
