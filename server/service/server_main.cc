// tether-server: flags (with TETHER_* environment equivalents, see
// server_options.h), logging, signals. Prints "listening on HOST:PORT" on
// stdout once serving.
//
// Exit codes: 0 after a graceful shutdown (SIGINT/SIGTERM: every stream
// ended and every session drained), 1 when the address cannot be bound, 2
// for bad flags or environment values or a --tls-key / --tokens-file open to
// others (service/secret_files.h), 3 when the shutdown did not finish
// within --shutdown-grace plus kShutdownReserve (the process then exits at
// once: what was not persisted by then is lost, and the log says so), 4
// when the shutdown finished but its drain could not write every session
// to --state-dir (the log names each; those not written by an earlier
// checkpoint are lost).
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "service/logging.h"
#include "service/secret_files.h"
#include "service/server.h"
#include "service/server_options.h"

namespace {

[[noreturn]] void BadUsage(const std::string& message) {
  std::fprintf(stderr, "tether-server: %s\n(see tether-server --help)\n", message.c_str());
  std::exit(2);
}

double Seconds(std::chrono::milliseconds ms) { return std::chrono::duration<double>(ms).count(); }

// What a shutdown may take beyond its grace: the workers' last quanta (a
// stopped stream's step is abandoned within one evaluation), the drain's
// writes and persisting the sessions. Past it the process exits with 3.
constexpr std::chrono::milliseconds kShutdownReserve{5000};

}  // namespace

int main(int argc, char** argv) {
  tether::service::ServerOptions options;
  bool help = false;
  std::string error;
  if (!tether::service::ParseServerOptions(argc, argv, &options, &help, &error)) {
    BadUsage(error);
  }
  if (help) {
    std::fputs(tether::service::ServerUsage().c_str(), stdout);
    return 0;
  }
  if (!tether::service::ConfigureLogging(options.log_level, options.log_format, &error)) {
    BadUsage(error);
  }
  if (!tether::service::CheckSecretFileModes(options, &error)) BadUsage(error);

  // Signals are taken by sigwait in this thread; block them everywhere
  // (threads created from now on inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = tether::service::TetherServer::Start(options, &error);
  if (!server) {
    spdlog::critical("{}", error);
    std::fprintf(stderr, "tether-server: %s\n", error.c_str());
    return 1;
  }
  const auto& service = server->service_options();
  spdlog::info(
      "serving on {} (workers={} compile_workers={} worker_spin={}us max_sessions={} "
      "max_message_bytes={} session_idle_timeout={}s stream_stall_timeout={}s)",
      server->address(), service.workers, service.compile_workers, service.worker_spin.count(),
      service.max_sessions, service.max_message_bytes, Seconds(service.session_idle_timeout),
      Seconds(service.stream_stall_timeout));
  std::printf("listening on %s\n", server->address().c_str());
  std::fflush(stdout);

  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  spdlog::info("received {}; shutting down (grace {}s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
               Seconds(options.shutdown_grace));
  // The bound on the whole shutdown: a watchdog that ends the process when
  // the shutdown overruns (a compile or a factorisation that cannot be
  // interrupted, a persist that hangs on a dead disk).
  std::thread([limit = options.shutdown_grace + kShutdownReserve] {
    std::this_thread::sleep_for(limit);
    spdlog::critical(
        "shutdown did not finish within {}s (--shutdown-grace plus a {}s reserve); exiting "
        "with status 3: sessions not yet persisted are lost",
        Seconds(limit), Seconds(kShutdownReserve));
    spdlog::default_logger()->flush();
    std::_Exit(3);
  }).detach();
  server->Shutdown(options.shutdown_grace);
  const bool persisted = server->drain_persisted();
  spdlog::info("stopped");
  server.reset();
  if (!persisted) {
    spdlog::critical("exiting with status 4: the drain could not persist every session");
    spdlog::default_logger()->flush();
    return 4;
  }
  return 0;
}
