#include "service/logging.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

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

}  // namespace

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (unsigned char c : s) {
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
  return true;
}

}  // namespace tether::service
