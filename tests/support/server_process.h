// A gRPC server run as a child process of a test or benchmark: started on an
// ephemeral loopback port, its address read back from the "listening on
// HOST:PORT" line it prints on stdout, stopped with SIGTERM (SIGKILL when it
// does not exit in time). Used by the service tests, the client tests and
// the service benchmark (tether_test_support).
//
// Threading: a ServerProcess belongs to one thread (the test's or the
// benchmark's main thread); only its own pid is ever signalled.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tether::test_support {

// Where the child's stderr goes.
enum class ServerLog {
  kFile,     // a temporary file, read back with Log(), removed afterwards
  kDiscard,  // /dev/null
  kInherit,  // this process's stderr
};

struct ServerProcessOptions {
  // Environment: this process's, without any TETHER_* variable (so a
  // developer's settings do not leak into a test), plus `environment`
  // ("NAME=value" entries).
  std::vector<std::string> environment;
  ServerLog log = ServerLog::kFile;
  // When true the child gets SIGTERM if this process dies first
  // (PR_SET_PDEATHSIG), so an aborted benchmark leaves no server behind.
  bool terminate_with_parent = false;
  // When non-zero, the child's address space is limited to this many bytes
  // (RLIMIT_AS, as `ulimit -v` does): allocations beyond it fail, as under
  // a container's memory limit.
  uint64_t address_space_bytes = 0;
  // How long to wait for the "listening on" line.
  std::chrono::milliseconds listen_timeout{60000};
};

// tether-server's arguments for an ephemeral loopback port.
inline std::vector<std::string> EphemeralLoopback() { return {"--listen", "127.0.0.1:0"}; }

class ServerProcess {
 public:
  // Starts argv[0] with argv (argv[0] is the executable's path) and waits
  // for its address. On failure ok() is false and error() says why (with
  // the log when it went to a file); the child, if any, is killed.
  explicit ServerProcess(std::vector<std::string> argv, ServerProcessOptions options = {});
  // Stop(), then the log file is removed.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool ok() const { return !address_.empty(); }
  const std::string& error() const { return error_; }
  // "HOST:PORT" as printed by the server; empty unless ok().
  const std::string& address() const { return address_; }
  // When the child exited by itself before printing its address (ok() is
  // false): its exit code; else -1 (running, killed, or died by a signal).
  int early_exit_code() const { return early_exit_code_; }
  // The child's pid while it runs, -1 after it was reaped.
  pid_t pid() const { return pid_; }

  // Waits up to `timeout` for the child to exit by itself: its exit code,
  // or -1 on timeout or death by a signal.
  int WaitExit(std::chrono::milliseconds timeout);
  // SIGTERM, then waits up to `grace` and SIGKILLs it if still running.
  // Returns its exit code, or -1 when it died by a signal (SIGKILL included)
  // or had already been reaped. Idempotent.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

  // The child's stderr so far (ServerLog::kFile), else "".
  std::string Log() const;
  // Reaps the child without blocking; true when it has exited (its exit
  // code, or -1 after a signal, in *exit_code).
  bool Reap(int* exit_code);

 private:
  void ReadAddress(std::chrono::milliseconds timeout);

  std::string program_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string address_;
  std::string error_;
  std::string log_path_;
  bool exited_early_ = false;  // stdout closed before the address
  int early_exit_code_ = -1;
};

// Runs argv (argv[0] is the executable's path) with the environment of
// ServerProcessOptions and stdout/stderr discarded, expecting it to exit by
// itself within `timeout`: its exit code, -1 when it died by a signal, -2
// when it was still running (it is then killed), -100 when it could not be
// started.
int RunToExit(std::vector<std::string> argv, std::vector<std::string> environment = {},
              std::chrono::milliseconds timeout = std::chrono::seconds(30));

// The resident memory of process `pid` (VmRSS of /proc/PID/status), KiB;
// -1 when unreadable.
long ResidentKiB(pid_t pid);

// Sends SIGSTOP to `pid` and waits (at most `limit`) until every thread of
// it is stopped (state T in /proc/PID/task/*/stat): kill() returns before
// the signal takes effect, and a thread already handling a request may
// still answer it. False when it did not stop in time.
bool StopAndWait(pid_t pid, std::chrono::milliseconds limit = std::chrono::seconds(5));

}  // namespace tether::test_support
