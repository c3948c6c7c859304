#include "support/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

extern char** environ;

namespace tether::test_support {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kListeningOn[] = "listening on ";

// This process's environment without TETHER_*, plus `extra`.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TETHER_", 7) != 0) out.push_back(*e);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int ExitCode(int wait_status) { return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1; }

// fork + execve with stdout on `stdout_fd` (or /dev/null when -1) and stderr
// on `stderr_fd` (-1: /dev/null, -2: inherited). Everything the child needs
// is prepared before fork(): between fork and exec only async-signal-safe
// calls, since the parent may have gRPC threads.
pid_t Spawn(std::vector<std::string> argv, std::vector<std::string> environment, int stdout_fd,
            int stderr_fd, bool terminate_with_parent, uint64_t address_space_bytes) {
  std::vector<char*> args = Pointers(argv);
  std::vector<char*> envp = Pointers(environment);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  if (terminate_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
  }
  if (address_space_bytes > 0) {
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = address_space_bytes;
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(127);
  }
  int null_fd = open("/dev/null", O_RDWR);
  dup2(stdout_fd >= 0 ? stdout_fd : null_fd, STDOUT_FILENO);
  if (stderr_fd != -2) dup2(stderr_fd >= 0 ? stderr_fd : null_fd, STDERR_FILENO);
  execve(args[0], args.data(), envp.data());
  _exit(127);
}

}  // namespace

ServerProcess::ServerProcess(std::vector<std::string> argv, ServerProcessOptions options)
    : program_(argv.empty() ? std::string() : argv[0]) {
  if (argv.empty()) {
    error_ = "no program to start";
    return;
  }
  int stderr_fd = options.log == ServerLog::kInherit ? -2 : -1;
  if (options.log == ServerLog::kFile) {
    char log_template[] = "/tmp/tether-server-log-XXXXXX";
    stderr_fd = mkostemp(log_template, O_CLOEXEC);
    if (stderr_fd < 0) {
      error_ = "cannot create a log file in /tmp";
      return;
    }
    log_path_ = log_template;
  }
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    error_ = "pipe2 failed";
    if (stderr_fd >= 0) close(stderr_fd);
    return;
  }
  pid_ = Spawn(std::move(argv), ChildEnvironment(options.environment), out[1], stderr_fd,
               options.terminate_with_parent, options.address_space_bytes);
  close(out[1]);
  if (stderr_fd >= 0) close(stderr_fd);
  stdout_fd_ = out[0];
  if (pid_ < 0) {
    error_ = "fork failed";
    return;
  }
  ReadAddress(options.listen_timeout);
  if (!ok()) {
    // A child that closed its stdout is exiting: reap it for its code.
    if (exited_early_) early_exit_code_ = WaitExit(std::chrono::seconds(10));
    Stop(std::chrono::seconds(0));
    if (!log_path_.empty()) error_ += "; its log:\n" + Log();
  }
}

ServerProcess::~ServerProcess() {
  Stop();
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

void ServerProcess::ReadAddress(std::chrono::milliseconds timeout) {
  std::string got;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    auto at = got.find(kListeningOn);
    auto eol = at == std::string::npos ? at : got.find('\n', at);
    if (eol != std::string::npos) {
      at += std::strlen(kListeningOn);
      address_ = got.substr(at, eol - at);
      while (!address_.empty() && (address_.back() == '\r' || address_.back() == ' ')) {
        address_.pop_back();
      }
      if (address_.empty()) error_ = program_ + " printed an empty address";
      return;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      error_ = program_ + " printed no 'listening on' line within " +
               std::to_string(timeout.count()) + " ms; its output: " + got;
      return;
    }
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[256];
    ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n <= 0) {
      exited_early_ = true;
      error_ = program_ + " exited before printing 'listening on'; its output: " + got;
      return;
    }
    got.append(buffer, static_cast<std::size_t>(n));
  }
}

bool ServerProcess::Reap(int* exit_code) {
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    *exit_code = ExitCode(status);
    return true;
  }
  return false;
}

int ServerProcess::WaitExit(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  int code = -1;
  while (pid_ > 0) {
    if (Reap(&code)) return code;
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

int ServerProcess::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int code = WaitExit(grace);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    code = -1;
  }
  return code;
}

std::string ServerProcess::Log() const {
  if (log_path_.empty()) return "";
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int RunToExit(std::vector<std::string> argv, std::vector<std::string> environment,
              std::chrono::milliseconds timeout) {
  if (argv.empty()) return -100;
  pid_t pid = Spawn(std::move(argv), ChildEnvironment(environment), -1, -1, false, 0);
  if (pid < 0) return -100;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      // 127: execve failed in the child.
      return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -100 : ExitCode(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -2;
}

long ResidentKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

bool StopAndWait(pid_t pid, std::chrono::milliseconds limit) {
  if (kill(pid, SIGSTOP) != 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
      std::ifstream in(task.path() / "stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
      const std::size_t close = stat.rfind(')');
      if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'T') {
        all = false;
        break;
      }
    }
    if (!ec && all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace tether::test_support
