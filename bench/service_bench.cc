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
// The parts: service_bench_cases.* (the four measurements),
// service_bench_reference.* (the reference servers), service_bench_statistics.*
// and service_bench_process_stats.* (medians, /proc readers),
// service_bench_common.* (clock, Die, Progress); the child processes are
// tests/support/server_process.h's ServerProcess.
//
//   tether_service_bench [--server PATH] [--spec PATH] [--workers N]
//                        [--sessions N] [--session-steps N] [--idle-sessions N]
//                        [--parts 1234] [--quick]
// (defaults: tether-server next to this binary, examples/circle_pendulum.json,
// workers = nproc, 1000 sessions of 10000 steps, 1000 idle sessions, all
// four parts; --quick shortens (1) and (2) for a smoke test.)
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine/spec_json.h"
#include "service_bench_cases.h"
#include "service_bench_common.h"
#include "service_bench_process_stats.h"
#include "service_bench_reference.h"
#include "support/server_process.h"

namespace tether::service_bench {
namespace {

// A server child of this process: its stderr is ours, it gets SIGTERM when
// this process dies, and it has 20 s to print its address.
test_support::ServerProcessOptions ChildOptions() {
  test_support::ServerProcessOptions options;
  options.log = test_support::ServerLog::kInherit;
  options.terminate_with_parent = true;
  options.listen_timeout = std::chrono::seconds(20);
  return options;
}

void MustListen(const test_support::ServerProcess& server, const std::string& what) {
  if (!server.ok()) Die(what + ": " + server.error());
}

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

int Main(int argc, char** argv) {
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
    return std::vector<std::string>{o.server,
                                    "--listen",
                                    "127.0.0.1:0",
                                    "--workers",
                                    std::to_string(workers),
                                    "--log-level",
                                    "warn",
                                    "--shutdown-grace",
                                    "1",
                                    "--session-idle-timeout",
                                    "0"};
  };
  auto part = [&](char c) { return o.parts.find(c) != std::string::npos; };
  if (part('1') || part('2')) {
    test_support::ServerProcess ref({exe, "--serve-reference", o.spec_path}, ChildOptions());
    MustListen(ref, "reference server");
    test_support::ServerProcess srv(server_argv(), ChildOptions());
    MustListen(srv, "tether-server");
    Progress("tether-server %s (pid %d), reference %s (pid %d)", srv.address().c_str(), srv.pid(),
             ref.address().c_str(), ref.pid());
    if (part('1')) rows.push_back(PartRunStream(o, spec, srv, ref, &notes));
    if (part('2')) rows.push_back(PartCoSimulate(o, spec, srv, ref, &notes));
  }
  if (part('3')) {
    test_support::ServerProcess srv(server_argv(), ChildOptions());
    MustListen(srv, "tether-server");
    rows.push_back(PartConcurrent(o, spec, srv, workers, &notes));
  }
  if (part('4')) {
    test_support::ServerProcess srv(server_argv(), ChildOptions());
    MustListen(srv, "tether-server");
    rows.push_back(PartIdleMemory(o, spec, srv, &notes));
  }
  const double total = Seconds(Clock::now() - t_start);

  std::printf("Tether service benchmark (one run; every ratio from this run)\n");
  std::printf("machine: %u cores (nproc), %s; load average %s at start, %s at end\n", cores,
              CpuModel().c_str(), load_start.c_str(), LoadAverage().c_str());
  std::printf(
      "server: %s --workers %u --log-level warn (own process); references: "
      "minimal gRPC callback servers in bench/service_bench_reference.cc (own process); "
      "client: this process; all on 127.0.0.1, insecure channels, ephemeral ports; "
      "spec %s; %.0f s in all\n",
      o.server.c_str(), workers, o.spec_path.c_str(), total);
  if (cores <= 2) {
    std::printf(
        "note: the client, tether-server and the reference share these %u cores "
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

}  // namespace tether::service_bench

int main(int argc, char** argv) { return tether::service_bench::Main(argc, argv); }
