// Service benchmark: the real tether-server (a child process, started from
// this program) against minimal gRPC servers written here (in a second child
// process: this same binary with --serve-reference), on the same machine, the
// same channel type (insecure HTTP/2 over 127.0.0.1, ephemeral ports) and the
// same client code (tether_client), with every ratio computed in this run:
//
//   (1) Run on the circle pendulum, every = 1, default frames_per_message:
//       frames per second received by the client, against a reference
//       Simulator.Run that streams RunResponses of the same batching filled
//       with one precomputed realistic Frame (and the same certificate at the
//       end). Target ratio >= 0.5.
//   (2) One CoSimulate round trip of 10 internal steps (communication_step =
//       10 * step_size) against an empty bidirectional ping-pong (reference
//       CoSimulate answering each request with an empty response). A
//       ping-pong answering with a response of Tether's size is shown too.
//       Target <= 1.3x.
//   (3) 1000 sessions x 10000 steps run concurrently (Run with every =
//       10000, certificate on as by default): aggregate steps per second
//       against workers x the engine's single-thread speed on the same spec
//       (Simulation::Advance, measured in this process before and after).
//       Target >= 0.8.
//   (4) Server RSS (/proc/PID/status VmRSS) before and after creating 1000
//       idle circle-pendulum sessions, per session.
//
// Repetitions of Tether and its reference are interleaved (ABAB...) so that
// background load hits both alike; medians are reported. Every loop is
// bounded in count and in time. Progress goes to stderr, the table to stdout.
//
//   tether_service_bench [--server PATH] [--spec PATH] [--workers N]
//                        [--sessions N] [--session-steps N] [--idle-sessions N]
//                        [--parts 1234] [--quick]
// (defaults: tether-server next to this binary, examples/circle_pendulum.json,
// workers = nproc, 1000 sessions of 10000 steps, 1000 idle sessions, all
// four parts; --quick shortens (1) and (2) for a smoke test.)
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "tether/client.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace {

namespace v1 = tether::v1;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "tether_service_bench: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);  // children get SIGTERM through PR_SET_PDEATHSIG
}

void Progress(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Progress(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("# ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  va_end(ap);
}

double Median(std::vector<double> xs) {
  if (xs.empty()) return NAN;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

double Percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return NAN;
  std::sort(xs.begin(), xs.end());
  size_t i = static_cast<size_t>(std::llround(p * static_cast<double>(xs.size() - 1)));
  return xs[std::min(i, xs.size() - 1)];
}

double Mean(const std::vector<double>& xs) {
  if (xs.empty()) return NAN;
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

// 1234567 -> "1.23M", 12345 -> "12.3k".
std::string Si(double x) {
  char buf[32];
  if (!std::isfinite(x)) return "n/a";
  if (x >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.3gM", x / 1e6);
  } else if (x >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.3gk", x / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", x);
  }
  return buf;
}

std::string Fmt(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

// --- /proc readers ----------------------------------------------------------

// VmRSS of `pid`, KiB (-1 when unreadable).
long VmRssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

// User + system CPU seconds of `pid` (all its threads).
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return NAN;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Fields after the name start at 3 (state); utime is 14, stime 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Machine-wide busy CPU seconds (all cores, /proc/stat: everything but idle
// and iowait).
double MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  unsigned long long v[10] = {};
  for (auto& x : v) in >> x;
  unsigned long long total = 0;
  for (int i = 0; i < 8; ++i) total += v[i];  // guest time is inside user
  const unsigned long long busy = total - v[3] - v[4];
  return static_cast<double>(busy) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      std::string m = line.substr(colon + 1);
      m.erase(0, m.find_first_not_of(' '));
      return m;
    }
  }
  return "unknown";
}

// --- Child processes ----------------------------------------------------------

// A server started by this program; it prints "listening on HOST:PORT" on
// stdout. Only this pid is ever signalled.
class ChildServer {
 public:
  ChildServer(const std::string& what, std::vector<std::string> argv) : what_(what) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) Die("pipe2 failed");
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) Die("fork failed");
    if (pid_ == 0) {
      // Only async-signal-safe calls until exec.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      dup2(fds[1], STDOUT_FILENO);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
    // Read "listening on ..." within 20 s.
    std::string got;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (got.find('\n') == std::string::npos) {
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
              .count());
      if (left <= 0) Die(what_ + ": no 'listening on' line within 20 s");
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) continue;
      char buf[256];
      ssize_t n = read(out_, buf, sizeof buf);
      if (n <= 0) Die(what_ + " (" + argv[0] + ") exited before listening");
      got.append(buf, static_cast<size_t>(n));
    }
    const std::string prefix = "listening on ";
    auto at = got.find(prefix);
    if (at == std::string::npos) Die(what_ + ": unexpected output: " + got);
    address_ = got.substr(at + prefix.size());
    address_ = address_.substr(0, address_.find('\n'));
  }

  ~ChildServer() { Stop(); }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        Progress("%s did not exit 10 s after SIGTERM; SIGKILL", what_.c_str());
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    close(out_);
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }

 private:
  std::string what_;
  pid_t pid_ = -1;
  int out_ = -1;
  std::string address_;
};

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) Die("cannot read /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// --- Realistic payloads (from the engine, on the benchmark's spec) -----------

struct Payloads {
  v1::Frame frame;                  // a frame at step ~50000
  v1::Certificate run_certificate;  // certificate of a Run window
  v1::CoSimulateResponse cosim;     // a CoSimulate response (10 steps)
};

// One communication step of `comm` seconds, as CoSimulate does it: a run
// to t + comm emitting only its last frame, with the certificate on.
void EngineCommunicationStep(tether::Simulation* sim, double comm,
                             google::protobuf::RepeatedPtrField<v1::Frame>* frames,
                             v1::Certificate* certificate) {
  tether::RunOptions co;
  co.until_time = sim->time() + comm;
  co.every = UINT64_MAX;
  co.emit_start = false;
  co.certificate = true;
  frames->Clear();
  if (auto s = sim->BeginRun(co); !s.ok()) Die(s.message());
  while (!sim->run_done()) {
    if (auto s = sim->Advance(100, frames); !s.ok()) Die(s.message());
  }
  sim->GetCertificate(certificate);
}

Payloads MakePayloads(const v1::SimulationSpec& spec) {
  Payloads p;
  auto created = tether::Simulation::Create(spec);
  if (!created.ok()) Die(created.status().message());
  std::unique_ptr<tether::Simulation> sim = std::move(created).value();
  tether::RunOptions run;
  run.steps = 50000;
  run.every = 50000;
  run.emit_start = false;
  run.certificate = true;
  if (auto s = sim->BeginRun(run); !s.ok()) Die(s.message());
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  while (!sim->run_done()) {
    if (auto s = sim->Advance(10000, &frames); !s.ok()) Die(s.message());
  }
  if (frames.empty()) Die("engine emitted no frame");
  p.frame = frames.Get(frames.size() - 1);
  sim->GetCertificate(&p.run_certificate);
  // One communication step of 10 steps.
  EngineCommunicationStep(sim.get(), 10 * spec.integrator().step_size(), &frames,
                          p.cosim.mutable_certificate());
  if (!frames.empty()) *p.cosim.mutable_frame() = frames.Get(frames.size() - 1);
  return p;
}

// --- The reference servers (child process: --serve-reference) ----------------

// Run: streams the frames a session's first Run of the request would emit
// (steps / every + 1, plus the last step) in RunResponses of frames_per_message
// copies of one frame, the last one with the remaining frames and the
// certificate.
class RefRunReactor final : public grpc::ServerWriteReactor<v1::RunResponse> {
 public:
  RefRunReactor(const Payloads* p, const v1::RunRequest& r) {
    const uint64_t every = r.every() == 0 ? 1 : r.every();
    remaining_ = r.steps() / every + 1 + (r.steps() % every != 0 ? 1 : 0);
    per_message_ = r.frames_per_message() == 0 ? 256 : r.frames_per_message();
    certificate_ = r.has_include_certificate() ? r.include_certificate() : true;
    p_ = p;
    full_.mutable_frames()->Reserve(static_cast<int>(per_message_));
    for (uint32_t i = 0; i < per_message_; ++i) *full_.add_frames() = p->frame;
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    } else if (wrote_last_) {
      Finish(grpc::Status::OK);
    } else {
      Next();
    }
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (remaining_ > per_message_) {
      remaining_ -= per_message_;
      StartWrite(&full_);
      return;
    }
    for (uint64_t i = 0; i < remaining_; ++i) *last_.add_frames() = p_->frame;
    if (certificate_) *last_.mutable_certificate() = p_->run_certificate;
    remaining_ = 0;
    wrote_last_ = true;
    StartWrite(&last_);
  }

  const Payloads* p_;
  uint64_t remaining_ = 0;
  uint32_t per_message_ = 256;
  bool certificate_ = true;
  bool wrote_last_ = false;
  v1::RunResponse full_, last_;
};

// CoSimulate as a ping-pong: one response per request, empty when the first
// request's session_id is "empty", else a precomputed response of Tether's
// size.
class RefEchoReactor final
    : public grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse> {
 public:
  explicit RefEchoReactor(const Payloads* p) : p_(p) { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    if (first_) {
      first_ = false;
      if (request_.session_id() != "empty") response_ = p_->cosim;
    }
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  const Payloads* p_;
  bool first_ = true;
  v1::CoSimulateRequest request_;
  v1::CoSimulateResponse response_;
};

class ReferenceService final : public v1::Simulator::CallbackService {
 public:
  explicit ReferenceService(Payloads p) : p_(std::move(p)) {}
  grpc::ServerWriteReactor<v1::RunResponse>* Run(grpc::CallbackServerContext*,
                                                 const v1::RunRequest* r) override {
    return new RefRunReactor(&p_, *r);
  }
  grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>* CoSimulate(
      grpc::CallbackServerContext*) override {
    return new RefEchoReactor(&p_);
  }

 private:
  const Payloads p_;
};

int ServeReference(const std::string& spec_path) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  v1::SimulationSpec spec;
  if (auto s = tether::LoadSpecFile(spec_path, &spec); !s.ok()) Die(s.message());
  ReferenceService service(MakePayloads(spec));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(4 * 1024 * 1024);
  builder.SetMaxSendMessageSize(4 * 1024 * 1024);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) Die("reference server cannot listen on 127.0.0.1:0");
  std::printf("listening on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  return 0;
}

// --- Benchmark parts ----------------------------------------------------------

struct Options {
  std::string server;
  std::string spec_path;
  unsigned workers = 0;
  int sessions = 1000;
  uint64_t session_steps = 10000;
  int idle_sessions = 1000;
  bool quick = false;
  std::string parts = "1234";  // which of (1)-(4) to run (for profiling)
};

struct Row {
  std::string what, tether, reference, ratio, target, met;
};

std::unique_ptr<tether::client::Client> Connect(const std::string& address) {
  tether::client::ConnectOptions o;
  o.wait_for_ready = true;
  o.timeout = std::chrono::seconds(120);
  return tether::client::Client::Connect(address, o);
}

std::string CreateSession(tether::client::Client* c, const v1::SimulationSpec& spec) {
  v1::Session s;
  grpc::Status st = c->CreateSession(spec, "bench", &s);
  if (!st.ok()) Die("CreateSession: " + st.error_message());
  return s.id();
}

// (1) Run frames/s.
struct RunResult {
  uint64_t frames = 0;
  double seconds = 0;
  size_t frame_bytes = 0;  // serialized size of a frame from the middle
};

RunResult TimedRun(tether::client::Client* c, const std::string& session_id,
                   uint64_t steps) {
  v1::RunRequest r;
  r.set_session_id(session_id);
  r.set_steps(steps);
  r.set_every(1);
  RunResult out;
  const uint64_t sample = steps / 2;
  auto t0 = Clock::now();
  grpc::Status st = c->Run(
      r,
      [&](const v1::Frame& f) {
        if (out.frames == sample) out.frame_bytes = f.ByteSizeLong();
        ++out.frames;
        return true;
      },
      nullptr);
  out.seconds = Seconds(Clock::now() - t0);
  if (!st.ok()) Die("Run: " + st.error_message());
  if (out.frames != steps + 1) {
    Die("Run delivered " + std::to_string(out.frames) + " frames, expected " +
        std::to_string(steps + 1));
  }
  return out;
}

// The engine alone emitting every step (frames appended in batches of 256,
// as the server builds its messages), one thread. Returns frames per second
// (wall); *cpu_us receives thread CPU us per frame.
double EngineFramesPerSecond(const v1::SimulationSpec& spec, uint64_t steps,
                             double* cpu_us) {
  auto created = tether::Simulation::Create(spec);
  if (!created.ok()) Die(created.status().message());
  std::unique_ptr<tether::Simulation> sim = std::move(created).value();
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  tether::RunOptions run;
  run.steps = steps;
  run.every = 1;
  run.emit_start = true;
  run.certificate = true;
  uint64_t n = 0;
  const double c0 = ThreadCpuSeconds();
  const auto t0 = Clock::now();
  if (auto s = sim->BeginRun(run); !s.ok()) Die(s.message());
  while (!sim->run_done()) {
    frames.Clear();
    if (auto s = sim->Advance(256, &frames); !s.ok()) Die(s.message());
    n += static_cast<uint64_t>(frames.size());
  }
  const double wall = Seconds(Clock::now() - t0);
  *cpu_us = (ThreadCpuSeconds() - c0) / static_cast<double>(n) * 1e6;
  return static_cast<double>(n) / wall;
}

Row PartRunStream(const Options& o, const v1::SimulationSpec& spec, ChildServer& tether_srv,
                  ChildServer& ref_srv, std::vector<std::string>* notes) {
  Progress("(1) Run stream, every=1: calibrating");
  auto tc = Connect(tether_srv.address());
  auto rc = Connect(ref_srv.address());
  // Warm-up (both servers), then calibration: ~0.7 s per Tether run.
  {
    std::string id = CreateSession(tc.get(), spec);
    TimedRun(tc.get(), id, 20000);
    tc->DeleteSession(id);
    TimedRun(rc.get(), "ref", 20000);
  }
  std::string id0 = CreateSession(tc.get(), spec);
  RunResult cal = TimedRun(tc.get(), id0, 50000);
  tc->DeleteSession(id0);
  const double cal_fps = static_cast<double>(cal.frames) / cal.seconds;
  const uint64_t steps = std::clamp<uint64_t>(
      static_cast<uint64_t>(cal_fps * (o.quick ? 0.2 : 0.7)), 20000, 1000000);
  const int reps = o.quick ? 2 : 7;
  Progress("(1) %d interleaved repetitions of %" PRIu64 " steps each (Tether ~%s frames/s)",
           reps, steps, Si(cal_fps).c_str());

  std::vector<double> t_fps, r_fps;
  size_t t_bytes = 0, r_bytes = 0;
  double t_srv_cpu = 0, r_srv_cpu = 0, t_cli_cpu = 0, r_cli_cpu = 0;
  uint64_t t_frames = 0, r_frames = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(o.quick ? 20 : 75);
  for (int i = 0; i < reps && Clock::now() < deadline; ++i) {
    std::string id = CreateSession(tc.get(), spec);
    double s0 = ProcessCpuSeconds(tether_srv.pid()), c0 = SelfCpuSeconds();
    RunResult t = TimedRun(tc.get(), id, steps);
    t_srv_cpu += ProcessCpuSeconds(tether_srv.pid()) - s0;
    t_cli_cpu += SelfCpuSeconds() - c0;
    tc->DeleteSession(id);
    s0 = ProcessCpuSeconds(ref_srv.pid());
    c0 = SelfCpuSeconds();
    RunResult r = TimedRun(rc.get(), "ref", steps);
    r_srv_cpu += ProcessCpuSeconds(ref_srv.pid()) - s0;
    r_cli_cpu += SelfCpuSeconds() - c0;
    t_fps.push_back(static_cast<double>(t.frames) / t.seconds);
    r_fps.push_back(static_cast<double>(r.frames) / r.seconds);
    t_frames += t.frames;
    r_frames += r.frames;
    t_bytes = t.frame_bytes;
    r_bytes = r.frame_bytes;
    Progress("(1) rep %d: Tether %s frames/s, reference %s frames/s", i + 1,
             Si(t_fps.back()).c_str(), Si(r_fps.back()).c_str());
  }
  double eng_cpu_us = 0;
  const double eng_fps = EngineFramesPerSecond(spec, steps, &eng_cpu_us);
  const double tm = Median(t_fps), rm = Median(r_fps), ratio = tm / rm;
  notes->push_back(
      "(1) the engine alone, emitting every step into frames (no gRPC, one thread, "
      "this process): " + Si(eng_fps) + " frames/s (" + Fmt("%.2f", eng_cpu_us) +
      " us CPU per frame), i.e. " + Fmt("%.2f", eng_fps / rm) +
      " of the reference: the most a service adding zero cost could reach here");
  notes->push_back(
      "(1) " + std::to_string(t_fps.size()) + " interleaved runs of " +
      std::to_string(steps) + " steps each; frame " + std::to_string(t_bytes) +
      " B (Tether) vs " + std::to_string(r_bytes) +
      " B (reference), 256 frames per RunResponse; Tether min/max " + Si(*std::min_element(
      t_fps.begin(), t_fps.end())) + "/" + Si(*std::max_element(t_fps.begin(), t_fps.end())) +
      ", reference min/max " + Si(*std::min_element(r_fps.begin(), r_fps.end())) + "/" +
      Si(*std::max_element(r_fps.begin(), r_fps.end())) + " frames/s");
  notes->push_back("(1) CPU per 1M frames: tether-server " +
                   Fmt("%.2f", t_srv_cpu / static_cast<double>(t_frames) * 1e6) +
                   " s, reference server " +
                   Fmt("%.2f", r_srv_cpu / static_cast<double>(r_frames) * 1e6) +
                   " s; client " + Fmt("%.2f", t_cli_cpu / static_cast<double>(t_frames) * 1e6) +
                   " s (Tether) vs " +
                   Fmt("%.2f", r_cli_cpu / static_cast<double>(r_frames) * 1e6) +
                   " s (reference)");
  return {"(1) Run stream, circle pendulum, every=1, 256 frames/msg: frames/s received",
          Si(tm), Si(rm) + " (precomputed frames)", Fmt("%.2f", ratio), ">= 0.5",
          ratio >= 0.5 ? "yes" : "no"};
}

// (2) CoSimulate round trips.
Row PartCoSimulate(const Options& o, const v1::SimulationSpec& spec, ChildServer& tether_srv,
                   ChildServer& ref_srv, std::vector<std::string>* notes) {
  Progress("(2) CoSimulate round trips");
  auto tc = Connect(tether_srv.address());
  auto rc = Connect(ref_srv.address());
  const double h = spec.integrator().step_size();
  const double comm = 10 * h;
  std::string id = CreateSession(tc.get(), spec);
  auto t_stream = tc->CoSimulate(id);
  auto e_stream = rc->CoSimulate("empty");
  auto s_stream = rc->CoSimulate("sized");
  std::map<std::string, double> no_inputs;
  v1::Frame frame;
  v1::Certificate cert;
  size_t t_resp_bytes = 0, s_resp_bytes = 0;
  uint64_t steps_per_trip = 0;
  auto step = [&](tether::client::CoSimulation* s, const char* what) {
    auto t0 = Clock::now();
    grpc::Status st = s->DoStep(comm, no_inputs, &frame, &cert);
    double us = Seconds(Clock::now() - t0) * 1e6;
    if (!st.ok()) Die(std::string("CoSimulate (") + what + "): " + st.error_message());
    return us;
  };
  const int warm = o.quick ? 50 : 300;
  for (int i = 0; i < warm; ++i) {
    step(t_stream.get(), "tether");
    if (i == warm - 1) {
      steps_per_trip = cert.steps();
      v1::CoSimulateResponse resp;
      *resp.mutable_frame() = frame;
      *resp.mutable_certificate() = cert;
      t_resp_bytes = resp.ByteSizeLong();
    }
    step(e_stream.get(), "empty");
    step(s_stream.get(), "sized");
    if (i == warm - 1) {
      v1::CoSimulateResponse resp;
      *resp.mutable_frame() = frame;
      *resp.mutable_certificate() = cert;
      s_resp_bytes = resp.ByteSizeLong();
    }
  }
  std::vector<double> t_us, e_us, s_us;
  const int blocks = o.quick ? 2 : 10, per_block = o.quick ? 100 : 500;
  const auto deadline = Clock::now() + std::chrono::seconds(o.quick ? 15 : 60);
  double t_srv_cpu = 0, e_srv_cpu = 0;
  for (int b = 0; b < blocks && Clock::now() < deadline; ++b) {
    double c0 = ProcessCpuSeconds(tether_srv.pid());
    for (int i = 0; i < per_block; ++i) t_us.push_back(step(t_stream.get(), "tether"));
    t_srv_cpu += ProcessCpuSeconds(tether_srv.pid()) - c0;
    c0 = ProcessCpuSeconds(ref_srv.pid());
    for (int i = 0; i < per_block; ++i) e_us.push_back(step(e_stream.get(), "empty"));
    e_srv_cpu += ProcessCpuSeconds(ref_srv.pid()) - c0;
    for (int i = 0; i < per_block; ++i) s_us.push_back(step(s_stream.get(), "sized"));
  }
  t_stream->Finish();
  e_stream->Finish();
  s_stream->Finish();
  tc->DeleteSession(id);

  // The engine alone: the same 10-step communication step, in this process.
  std::vector<double> eng_us;
  {
    auto created = tether::Simulation::Create(spec);
    if (!created.ok()) Die(created.status().message());
    std::unique_ptr<tether::Simulation> sim = std::move(created).value();
    google::protobuf::RepeatedPtrField<v1::Frame> frames;
    for (int i = 0; i < 2000; ++i) {
      auto t0 = Clock::now();
      v1::Certificate c;
      EngineCommunicationStep(sim.get(), comm, &frames, &c);
      eng_us.push_back(Seconds(Clock::now() - t0) * 1e6);
    }
  }

  const double tm = Median(t_us), em = Median(e_us), sm = Median(s_us);
  const double ratio = tm / em;
  notes->push_back(
      "(2) " + std::to_string(t_us.size()) + " round trips each, interleaved in blocks of " +
      std::to_string(per_block) + "; communication_step = " + Fmt("%g", comm) + " s = " +
      std::to_string(steps_per_trip) + " RK4 steps (certificate.steps); Tether response " +
      std::to_string(t_resp_bytes) + " B. Medians: Tether " + Fmt("%.1f", tm) +
      " us (mean " + Fmt("%.1f", Mean(t_us)) + ", p90 " + Fmt("%.1f", Percentile(t_us, 0.9)) +
      "), empty ping-pong " + Fmt("%.1f", em) + " us (mean " + Fmt("%.1f", Mean(e_us)) +
      ", p90 " + Fmt("%.1f", Percentile(e_us, 0.9)) + "), ping-pong with a " +
      std::to_string(s_resp_bytes) + " B response " + Fmt("%.1f", sm) + " us (ratio " +
      Fmt("%.2f", tm / sm) + "x); the engine alone takes " + Fmt("%.1f", Median(eng_us)) +
      " us for the same 10-step window (median, this process)");
  notes->push_back("(2) server CPU per round trip: tether-server " +
                   Fmt("%.1f", t_srv_cpu / static_cast<double>(t_us.size()) * 1e6) +
                   " us, empty ping-pong server " +
                   Fmt("%.1f", e_srv_cpu / static_cast<double>(e_us.size()) * 1e6) + " us");
  return {"(2) CoSimulate round trip, 10 RK4 steps: median latency", Fmt("%.1f us", tm),
          Fmt("%.1f us (empty ping-pong)", em), Fmt("%.2fx", ratio), "<= 1.3x",
          ratio <= 1.3 ? "yes" : "no"};
}

// (3) The engine alone, one thread: sessions of `steps` steps as the server
// runs them (fresh simulation, first run emits step 0 and the last step,
// certificate on). Returns steps/s.
double EngineStepsPerSecond(const v1::SimulationSpec& spec, uint64_t steps, double budget_s,
                            double* cpu_us_per_step) {
  std::unique_ptr<tether::Simulation> sim;
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  uint64_t total = 0;
  double timed = 0, cpu = 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(budget_s);
  for (int i = 0; i < 1000 && (i < 2 || Clock::now() < deadline); ++i) {
    auto created = tether::Simulation::Create(spec);
    if (!created.ok()) Die(created.status().message());
    sim = std::move(created).value();
    tether::RunOptions run;
    run.steps = steps;
    run.every = steps;
    run.emit_start = true;
    run.certificate = true;
    frames.Clear();
    const double c0 = ThreadCpuSeconds();
    auto t0 = Clock::now();
    if (auto s = sim->BeginRun(run); !s.ok()) Die(s.message());
    while (!sim->run_done()) {
      if (auto s = sim->Advance(steps, &frames); !s.ok()) Die(s.message());
    }
    v1::Certificate c;
    sim->GetCertificate(&c);
    timed += Seconds(Clock::now() - t0);
    cpu += ThreadCpuSeconds() - c0;
    total += sim->step();
  }
  *cpu_us_per_step = cpu / static_cast<double>(total) * 1e6;
  return static_cast<double>(total) / timed;
}

class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void CountDown() {
    std::lock_guard<std::mutex> l(mu_);
    if (--n_ == 0) cv_.notify_all();
  }
  bool WaitUntil(Clock::time_point deadline) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_until(l, deadline, [this] { return n_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

// One Run on the callback client API (1000 of them in flight at once).
class AsyncRun final : public grpc::ClientReadReactor<v1::RunResponse> {
 public:
  AsyncRun(v1::Simulator::Stub* stub, const std::string& id, uint64_t steps, Latch* latch)
      : stub_(stub), latch_(latch) {
    request_.set_session_id(id);
    request_.set_steps(steps);
    request_.set_every(steps);
  }
  void Start() {
    stub_->async()->Run(&context_, &request_, this);
    StartRead(&response_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    frames_ += static_cast<uint64_t>(response_.frames_size());
    if (response_.has_certificate()) certificate_steps_ = response_.certificate().steps();
    StartRead(&response_);
  }
  void OnDone(const grpc::Status& s) override {
    status_ = s;
    end_ = Clock::now();
    latch_->CountDown();
  }
  const grpc::Status& status() const { return status_; }
  uint64_t frames() const { return frames_; }
  uint64_t certificate_steps() const { return certificate_steps_; }
  Clock::time_point end() const { return end_; }

 private:
  v1::Simulator::Stub* stub_;
  Latch* latch_;
  grpc::ClientContext context_;
  v1::RunRequest request_;
  v1::RunResponse response_;
  uint64_t frames_ = 0, certificate_steps_ = 0;
  grpc::Status status_;
  Clock::time_point end_;
};

Row PartConcurrent(const Options& o, const v1::SimulationSpec& spec, ChildServer& srv,
                   unsigned workers, std::vector<std::string>* notes) {
  const int n = o.sessions;
  uint64_t steps = o.session_steps;
  Progress("(3) engine alone, one thread, %" PRIu64 "-step sessions", steps);
  double cpu_before = 0, cpu_after = 0;
  const double eng_before =
      EngineStepsPerSecond(spec, steps, o.quick ? 0.5 : 2.0, &cpu_before);
  Progress("(3) engine: %s steps/s", Si(eng_before).c_str());
  const double predicted =
      static_cast<double>(n) * static_cast<double>(steps) / (workers * eng_before);
  Progress("(3) %d sessions x %" PRIu64 " steps; ideal time on %u workers %.1f s", n, steps,
           workers, predicted);

  auto c = Connect(srv.address());
  std::vector<std::string> ids;
  ids.reserve(static_cast<size_t>(n));
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) ids.push_back(CreateSession(c.get(), spec));
  const double create_s = Seconds(Clock::now() - t0);
  Progress("(3) created %d sessions in %.2f s; running them", n, create_s);

  auto stub = v1::Simulator::NewStub(c->channel());
  Latch latch(n);
  std::vector<std::unique_ptr<AsyncRun>> runs;
  for (int i = 0; i < n; ++i) {
    runs.push_back(std::make_unique<AsyncRun>(stub.get(), ids[static_cast<size_t>(i)],
                                              steps, &latch));
  }
  const double srv_cpu0 = ProcessCpuSeconds(srv.pid()), cli_cpu0 = SelfCpuSeconds();
  const double busy0 = MachineBusySeconds();
  const auto start = Clock::now();
  for (auto& r : runs) r->Start();
  const int budget = o.quick ? 60 : 200;
  bool all = latch.WaitUntil(start + std::chrono::seconds(budget));
  if (!all) {
    Progress("(3) not finished after %d s: cancelling", budget);
    for (auto& r : runs) r->Cancel();
    if (!latch.WaitUntil(Clock::now() + std::chrono::seconds(30))) {
      Die("(3) runs did not end 30 s after cancelling");
    }
  }
  Clock::time_point last = start;
  uint64_t done_steps = 0;
  int ok = 0;
  for (auto& r : runs) {
    last = std::max(last, r->end());
    if (r->status().ok()) {
      ++ok;
      done_steps += r->certificate_steps();
    }
  }
  const double wall = Seconds(last - start);
  const double srv_cpu = ProcessCpuSeconds(srv.pid()) - srv_cpu0;
  const double cli_cpu = SelfCpuSeconds() - cli_cpu0;
  const double busy = MachineBusySeconds() - busy0;
  const double machine_wall = Seconds(Clock::now() - start);
  if (ok != n) Progress("(3) only %d of %d runs finished OK", ok, n);
  const double aggregate = static_cast<double>(done_steps) / wall;
  Progress("(3) %d runs, %" PRIu64 " steps in %.2f s: %s steps/s", ok, done_steps, wall,
           Si(aggregate).c_str());
  for (const auto& id : ids) c->DeleteSession(id);

  const double eng_after = EngineStepsPerSecond(spec, steps, o.quick ? 0.5 : 2.0, &cpu_after);
  const double eng_cpu_us = 0.5 * (cpu_before + cpu_after);
  const double eng = 0.5 * (eng_before + eng_after);
  const double reference = workers * eng;
  const double ratio = aggregate / reference;
  notes->push_back(
      "(3) " + std::to_string(ok) + "/" + std::to_string(n) + " concurrent Runs (callback "
      "client, one channel) of " + std::to_string(steps) + " steps, every=" +
      std::to_string(steps) + ", certificate on: " + std::to_string(done_steps) +
      " steps in " + Fmt("%.2f", wall) + " s wall (creating the sessions, not timed: " +
      Fmt("%.2f", create_s) + " s). Engine alone (same spec, certificate on, fresh " +
      std::to_string(steps) + "-step sessions, one thread, this process): " +
      Si(eng_before) + " steps/s before, " + Si(eng_after) + " after; reference = " +
      std::to_string(workers) + " workers x " + Si(eng) + ". CPU during the runs: "
      "tether-server " + Fmt("%.1f", srv_cpu) + " s (" + Fmt("%.2f", srv_cpu / wall) +
      " cores; " + Fmt("%.2f", srv_cpu / static_cast<double>(done_steps) * 1e6) +
      " us CPU/step vs the engine's " + Fmt("%.2f", eng_cpu_us) +
      " us thread CPU/step alone), client " + Fmt("%.1f", cli_cpu) +
      " s; the whole machine was busy " + Fmt("%.2f", busy / machine_wall) + " of " +
      std::to_string(std::thread::hardware_concurrency()) +
      " cores, so other processes took " +
      Fmt("%.2f", std::max(0.0, busy - srv_cpu - cli_cpu) / machine_wall) +
      " cores. CPU-normalized (engine CPU/step over server CPU/step, i.e. the ratio if "
      "tether-server had its " + std::to_string(workers) + " cores to itself): " +
      Fmt("%.2f", eng_cpu_us / (srv_cpu / static_cast<double>(done_steps) * 1e6)));
  return {"(3) " + std::to_string(n) + " sessions x " + std::to_string(steps) +
              " steps concurrently: aggregate steps/s",
          Si(aggregate),
          std::to_string(workers) + " workers x " + Si(eng) + " = " + Si(reference),
          Fmt("%.2f", ratio), ">= 0.8", ratio >= 0.8 ? "yes" : "no"};
}

// (4) RSS per idle session.
Row PartIdleMemory(const Options& o, const v1::SimulationSpec& spec, ChildServer& srv,
                   std::vector<std::string>* notes) {
  const int n = o.idle_sessions;
  Progress("(4) RSS of %d idle sessions", n);
  auto c = Connect(srv.address());
  // Warm-up: one session created and deleted, so that first-call
  // allocations (connection, threads, protobuf/gRPC statics) are in the
  // baseline.
  c->DeleteSession(CreateSession(c.get(), spec));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long before = VmRssKiB(srv.pid());
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(CreateSession(c.get(), spec));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long after = VmRssKiB(srv.pid());
  for (const auto& id : ids) c->DeleteSession(id);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long deleted = VmRssKiB(srv.pid());
  if (before < 0 || after < 0) Die("cannot read VmRSS of the server");
  const double per = static_cast<double>(after - before) / n;
  notes->push_back("(4) tether-server VmRSS " + std::to_string(before) + " KiB before, " +
                   std::to_string(after) + " KiB with " + std::to_string(n) +
                   " idle sessions, " + std::to_string(deleted) +
                   " KiB after deleting them (glibc keeps freed memory)");
  return {"(4) server RSS per idle session (circle pendulum)", Fmt("%.1f KiB", per), "-", "-",
          "(report)", "-"};
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die("flag " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--server") {
      o.server = value();
    } else if (a == "--spec") {
      o.spec_path = value();
    } else if (a == "--workers") {
      o.workers = static_cast<unsigned>(std::stoul(value()));
    } else if (a == "--sessions") {
      o.sessions = std::stoi(value());
    } else if (a == "--session-steps") {
      o.session_steps = std::stoull(value());
    } else if (a == "--idle-sessions") {
      o.idle_sessions = std::stoi(value());
    } else if (a == "--parts") {
      o.parts = value();
    } else if (a == "--quick") {
      o.quick = true;
    } else {
      Die("unknown argument " + a);
    }
  }
  if (o.sessions < 1 || o.sessions > 1000 || o.idle_sessions < 1 || o.idle_sessions > 1000) {
    Die("--sessions and --idle-sessions must be in 1..1000 (the server's --max-sessions)");
  }
  if (o.session_steps < 1 || o.session_steps > 10000000) Die("--session-steps out of range");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--serve-reference") {
    if (argc != 3) Die("usage: --serve-reference SPEC");
    return ServeReference(argv[2]);
  }
  Options o = ParseOptions(argc, argv);
  const std::string exe = SelfExe();
  if (o.server.empty()) o.server = DirName(exe) + "/tether-server";
  if (o.spec_path.empty()) {
    o.spec_path = "examples/circle_pendulum.json";
    if (access(o.spec_path.c_str(), R_OK) != 0) {
      o.spec_path = DirName(exe) + "/../../examples/circle_pendulum.json";
    }
  }
  if (access(o.server.c_str(), X_OK) != 0) Die("no executable tether-server at " + o.server);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned workers = o.workers ? o.workers : cores;
  v1::SimulationSpec spec;
  if (auto s = tether::LoadSpecFile(o.spec_path, &spec); !s.ok()) Die(s.message());
  signal(SIGPIPE, SIG_IGN);

  const std::string load_start = LoadAverage();
  const auto t_start = Clock::now();
  std::vector<Row> rows;
  std::vector<std::string> notes;
  auto server_argv = [&]() {
    return std::vector<std::string>{o.server,        "--listen",         "127.0.0.1:0",
                                    "--workers",     std::to_string(workers),
                                    "--log-level",   "warn",
                                    "--shutdown-grace", "1",
                                    "--session-idle-timeout", "0"};
  };
  auto part = [&](char c) { return o.parts.find(c) != std::string::npos; };
  if (part('1') || part('2')) {
    ChildServer ref("reference server", {exe, "--serve-reference", o.spec_path});
    ChildServer srv("tether-server", server_argv());
    Progress("tether-server %s (pid %d), reference %s (pid %d)", srv.address().c_str(),
             srv.pid(), ref.address().c_str(), ref.pid());
    if (part('1')) rows.push_back(PartRunStream(o, spec, srv, ref, &notes));
    if (part('2')) rows.push_back(PartCoSimulate(o, spec, srv, ref, &notes));
  }
  if (part('3')) {
    ChildServer srv("tether-server", server_argv());
    rows.push_back(PartConcurrent(o, spec, srv, workers, &notes));
  }
  if (part('4')) {
    ChildServer srv("tether-server", server_argv());
    rows.push_back(PartIdleMemory(o, spec, srv, &notes));
  }
  const double total = Seconds(Clock::now() - t_start);

  std::printf("Tether service benchmark (one run; every ratio from this run)\n");
  std::printf("machine: %u cores (nproc), %s; load average %s at start, %s at end\n", cores,
              CpuModel().c_str(), load_start.c_str(), LoadAverage().c_str());
  std::printf("server: %s --workers %u --log-level warn (own process); references: "
              "minimal gRPC callback servers in bench/service_bench.cc (own process); "
              "client: this process; all on 127.0.0.1, insecure channels, ephemeral ports; "
              "spec %s; %.0f s in all\n",
              o.server.c_str(), workers, o.spec_path.c_str(), total);
  if (cores <= 2) {
    std::printf("note: the client, tether-server and the reference share these %u cores "
                "(and with any other load on the machine)\n",
                cores);
  }
  std::printf("\n| measurement | Tether | reference | ratio | target | met |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s | %s | %s | %s | %s |\n", r.what.c_str(), r.tether.c_str(),
                r.reference.c_str(), r.ratio.c_str(), r.target.c_str(), r.met.c_str());
  }
  std::printf("\n");
  for (const auto& n : notes) std::printf("- %s\n", n.c_str());
  std::fflush(stdout);
  return 0;
}
