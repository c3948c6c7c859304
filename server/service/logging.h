// spdlog setup for tether-server: level and text|json lines on stderr.
#pragma once

#include <string>

namespace tether::service {

// Installs the default logger (stderr). `level`: trace, debug, info, warn,
// error, critical, off. `format`: text or json. Returns false (and leaves
// the logger untouched) for an unknown level or format.
bool ConfigureLogging(const std::string& level, const std::string& format, std::string* error);

// JSON string escaping (for the json log format and tests).
std::string JsonEscape(const std::string& s);

}  // namespace tether::service
