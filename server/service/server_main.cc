// tether-server: flags (with TETHER_* environment equivalents), logging,
// signals. Prints "listening on HOST:PORT" on stdout once serving.
//
// Exit codes: 0 after a graceful shutdown (SIGINT/SIGTERM), 1 when the
// address cannot be bound, 2 for bad flags or environment values.
#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "service/logging.h"
#include "service/server.h"

namespace {

constexpr const char* kUsage = R"(Usage: tether-server [flags]

Serves tether.v1.Simulator (plus grpc.health.v1.Health and server reflection).
Every flag can also be given as an environment variable; flags win.

  --listen HOST:PORT            TETHER_LISTEN               default 127.0.0.1:50051
                                (port 0 picks a free port; use 0.0.0.0 to
                                listen on every interface)
  --workers N                   TETHER_WORKERS              default: hardware threads
  --worker-spin US              TETHER_WORKER_SPIN          default 1000: microseconds a worker
                                that just stepped a co-simulation polls for the next
                                step before it sleeps (0: sleep at once; saves CPU,
                                adds a wake-up to each co-simulation step)
  --max-sessions N              TETHER_MAX_SESSIONS         default 1000
  --max-message-bytes N         TETHER_MAX_MESSAGE_BYTES    default 4194304
  --session-idle-timeout S      TETHER_SESSION_IDLE_TIMEOUT default 3600 (0: never)
  --shutdown-grace S            TETHER_SHUTDOWN_GRACE       default 5
  --log-level LEVEL             TETHER_LOG_LEVEL            trace|debug|info|warn|error|off (info)
  --log-format text|json        TETHER_LOG_FORMAT           default text
  --help
)";

struct Flags {
  std::string listen = "127.0.0.1:50051";
  uint64_t workers = 0;
  uint64_t worker_spin_us = 1000;
  uint64_t max_sessions = 1000;
  uint64_t max_message_bytes = 4 * 1024 * 1024;
  double idle_timeout_s = 3600;
  double shutdown_grace_s = 5;
  std::string log_level = "info";
  std::string log_format = "text";
};

[[noreturn]] void BadUsage(const std::string& message) {
  std::fprintf(stderr, "tether-server: %s\n(see tether-server --help)\n", message.c_str());
  std::exit(2);
}

std::optional<uint64_t> ParseUint(const std::string& s) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ParseSeconds(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

bool ValidListen(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  auto port = ParseUint(s.substr(colon + 1));
  return port && *port <= 65535;
}

// Applies one setting; `name` is the flag or variable (for messages).
void Apply(Flags* f, const std::string& key, const std::string& value,
           const std::string& name) {
  auto bad = [&](const char* what) {
    BadUsage("invalid value '" + value + "' for " + name + ": " + what);
  };
  auto uint_in = [&](uint64_t lo, uint64_t hi, const char* what) {
    auto v = ParseUint(value);
    if (!v || *v < lo || *v > hi) bad(what);
    return *v;
  };
  if (key == "listen") {
    if (!ValidListen(value)) bad("expected HOST:PORT with PORT in 0..65535");
    f->listen = value;
  } else if (key == "workers") {
    f->workers = uint_in(1, 1024, "expected an integer in 1..1024");
  } else if (key == "worker-spin") {
    f->worker_spin_us = uint_in(0, 1000000, "expected microseconds in 0..1000000");
  } else if (key == "max-sessions") {
    f->max_sessions = uint_in(1, 10000000, "expected an integer in 1..10000000");
  } else if (key == "max-message-bytes") {
    f->max_message_bytes =
        uint_in(4096, 2147483647, "expected an integer in 4096..2147483647");
  } else if (key == "session-idle-timeout") {
    auto v = ParseSeconds(value);
    if (!v) bad("expected a non-negative number of seconds (0: never)");
    f->idle_timeout_s = *v;
  } else if (key == "shutdown-grace") {
    auto v = ParseSeconds(value);
    if (!v || *v > 3600) bad("expected seconds in 0..3600");
    f->shutdown_grace_s = *v;
  } else if (key == "log-level") {
    f->log_level = value;
  } else if (key == "log-format") {
    f->log_format = value;
  } else {
    BadUsage("unknown flag " + name);
  }
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  static const std::pair<const char*, const char*> kEnv[] = {
      {"TETHER_LISTEN", "listen"},
      {"TETHER_WORKERS", "workers"},
      {"TETHER_WORKER_SPIN", "worker-spin"},
      {"TETHER_MAX_SESSIONS", "max-sessions"},
      {"TETHER_MAX_MESSAGE_BYTES", "max-message-bytes"},
      {"TETHER_SESSION_IDLE_TIMEOUT", "session-idle-timeout"},
      {"TETHER_SHUTDOWN_GRACE", "shutdown-grace"},
      {"TETHER_LOG_LEVEL", "log-level"},
      {"TETHER_LOG_FORMAT", "log-format"},
  };
  for (const auto& [var, key] : kEnv) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') {
      Apply(&f, key, v, var);
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) BadUsage("unexpected argument '" + arg + "'");
    std::string key = arg.substr(2), value;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      if (i + 1 >= argc) BadUsage("flag --" + key + " needs a value");
      value = argv[++i];
    }
    Apply(&f, key, value, "--" + key);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);
  std::string error;
  if (!tether::service::ConfigureLogging(flags.log_level, flags.log_format, &error)) {
    BadUsage(error);
  }

  // Signals are taken by sigwait in this thread; block them everywhere
  // (threads created from now on inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  tether::service::ServerConfig config;
  config.listen = flags.listen;
  config.service.workers = flags.workers != 0
                               ? flags.workers
                               : std::max(1u, std::thread::hardware_concurrency());
  config.service.max_sessions = flags.max_sessions;
  config.service.max_message_bytes = flags.max_message_bytes;
  config.service.worker_spin = std::chrono::microseconds(flags.worker_spin_us);
  config.service.session_idle_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(flags.idle_timeout_s * 1000)));

  auto server = tether::service::TetherServer::Start(config, &error);
  if (!server) {
    spdlog::critical("{}", error);
    std::fprintf(stderr, "tether-server: %s\n", error.c_str());
    return 1;
  }
  spdlog::info("serving on {} (workers={} worker_spin={}us max_sessions={} max_message_bytes={} "
               "session_idle_timeout={}s)",
               server->address(), config.service.workers, flags.worker_spin_us,
               config.service.max_sessions,
               config.service.max_message_bytes, flags.idle_timeout_s);
  std::printf("listening on %s\n", server->address().c_str());
  std::fflush(stdout);

  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  spdlog::info("received {}; shutting down (grace {}s)",
               sig == SIGINT ? "SIGINT" : "SIGTERM", flags.shutdown_grace_s);
  server->Shutdown(std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(flags.shutdown_grace_s * 1000))));
  spdlog::info("stopped");
  server.reset();
  return 0;
}
