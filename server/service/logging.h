// spdlog setup for tether-server: level and text|json lines on stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace tether::service {

// Installs the default logger (stderr). `level`: trace, debug, info, warn,
// error, critical, off. `format`: text or json. Returns false (and leaves
// the logger untouched) for an unknown level or format. Also routes
// libprotobuf's log (google::protobuf::SetLogHandler) and gRPC core's
// (gpr_set_log_function) through it, so that in json every line on stderr is
// JSON; their messages are escaped as client text (EscapeForMessage).
bool ConfigureLogging(const std::string& level, const std::string& format, std::string* error);

// JSON string escaping (for the json log format and tests): quotes,
// backslashes and control characters, and U+2028, U+2029 and the bidi
// marks, embeddings, overrides and isolates (U+200E, U+200F,
// U+202A..U+202E, U+2066..U+2069) as \uNNNN; a byte that is not UTF-8 becomes
// \ufffd, so a line is always valid JSON.
std::string JsonEscape(const std::string& s);

// At most `per_second` admitted lines per kind in each one-second window,
// for log lines a client can cause at will before it is known (refused
// authentication): a flood from one client costs a few lines a second, not
// megabytes. Admit returns whether to log, and in *suppressed how many
// lines of that kind were dropped since the last admitted one (to be said
// in the line). Thread-safe (one mutex); kinds are a small fixed set.
class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(uint64_t per_second) : per_second_(per_second) {}
  bool Admit(std::string_view kind, uint64_t* suppressed, Clock::time_point now = Clock::now());

 private:
  struct Window {
    Clock::time_point start;
    uint64_t admitted = 0;
    uint64_t suppressed = 0;
  };
  const uint64_t per_second_;
  std::mutex mu_;
  std::map<std::string, Window, std::less<>> windows_;
};

}  // namespace tether::service
