#include "service/logging.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <utility>

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "engine/status.h"

namespace tether::service {
namespace {

// {"time":"2024-01-01T12:00:00.123456Z","level":"info","msg":"..."}
class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    auto since = msg.time.time_since_epoch();
    std::time_t secs = duration_cast<seconds>(since).count();
    long micros = static_cast<long>(duration_cast<microseconds>(since).count() % 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
    auto level = spdlog::level::to_string_view(msg.level);
    std::string line = std::string("{\"time\":\"") + stamp + "\",\"level\":\"" +
                       std::string(level.data(), level.size()) + "\",\"msg\":\"" +
                       JsonEscape(std::string(msg.payload.data(), msg.payload.size())) + "\"}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// A foreign library's message: at most this many bytes of it.
constexpr std::size_t kMaxLibraryMessageBytes = 4096;

void ProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  const std::string text = "libprotobuf " + std::string(file ? file : "?") + ":" +
                           std::to_string(line) + ": " +
                           EscapeForMessage(message, kMaxLibraryMessageBytes);
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO: spdlog::info("{}", text); break;
    case google::protobuf::LOGLEVEL_WARNING: spdlog::warn("{}", text); break;
    case google::protobuf::LOGLEVEL_ERROR: spdlog::error("{}", text); break;
    case google::protobuf::LOGLEVEL_FATAL: spdlog::critical("{}", text); break;
  }
}

void GrpcLog(gpr_log_func_args* args) {
  const std::string text =
      "grpc " + std::string(args->file ? args->file : "?") + ":" + std::to_string(args->line) +
      ": " + EscapeForMessage(args->message ? args->message : "", kMaxLibraryMessageBytes);
  switch (args->severity) {
    case GPR_LOG_SEVERITY_DEBUG: spdlog::debug("{}", text); break;
    case GPR_LOG_SEVERITY_INFO: spdlog::info("{}", text); break;
    case GPR_LOG_SEVERITY_ERROR: spdlog::error("{}", text); break;
  }
}

// The length of the well-formed UTF-8 character at s[i] (1..4), or 0.
std::size_t CharLength(const std::string& s, std::size_t i) {
  const std::size_t n = s.size() - i;
  const std::size_t want = std::min<std::size_t>(n, 4);
  for (std::size_t len = 2; len <= want; ++len) {
    if (IsValidUtf8(std::string_view(s).substr(i, len))) return len;
  }
  return 0;
}

}  // namespace

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = CharLength(s, i);
      if (n == 0) {
        out += "\\ufffd";
        continue;
      }
      uint32_t cp = 0;
      if (n == 3) {
        cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
             (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
      }
      if (cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || cp == 0x2028 ||
          cp == 0x2029 || (cp >= 0x2066 && cp <= 0x2069)) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
        out += buf;
      } else {
        out.append(s, i, n);
      }
      i += n - 1;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

bool ConfigureLogging(const std::string& level, const std::string& format, std::string* error) {
  auto lvl = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept "off" when asked.
  if (lvl == spdlog::level::off && level != "off") {
    *error = "unknown log level '" + level +
             "' (expected trace, debug, info, warn, error, critical or off)";
    return false;
  }
  if (format != "text" && format != "json") {
    *error = "unknown log format '" + format + "' (expected text or json)";
    return false;
  }
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("tether", sink);
  if (format == "json") {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  google::protobuf::SetLogHandler(&ProtobufLog);
  gpr_set_log_function(&GrpcLog);
  return true;
}

bool LogThrottle::Admit(std::string_view kind, uint64_t* suppressed, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(kind);
  if (it == windows_.end()) it = windows_.emplace(std::string(kind), Window{now}).first;
  Window& w = it->second;
  if (now - w.start >= std::chrono::seconds(1)) {
    w.start = now;
    w.admitted = 0;
  }
  if (w.admitted >= per_second_) {
    ++w.suppressed;
    return false;
  }
  ++w.admitted;
  *suppressed = std::exchange(w.suppressed, 0);
  return true;
}

}  // namespace tether::service
