// Frame gaps of a Run while hostile compiles are in flight: starts a
// tether-server (tests/support's ServerProcess), streams a Run of the
// circle pendulum and records the time between consecutive messages, first
// alone, then while client threads keep sending the hostile shapes of
// issue 12 (a 1024-coordinate kinetic energy, a 99 KB potential, dense
// constraint sets of 100 and 250 constraints on 200 and 500 coordinates)
// as Validate and CreateSession. Prints the gaps (max, p99, median) of
// both phases and how each hostile shape was answered (code, slowest
// answer, which includes waiting for the compile lane). Every loop is
// bounded in time.
//
//   tether_frame_gap_bench --server build/bin/tether-server [--seconds 8]
//       [--hostile-clients 2] [--server-arg ARG]...  (ARGs go to the server)
//
// Exit code 0 when the hostile phase's largest gap is under 100 ms, else 1
// (so a regression is visible in scripts); figures in docs/benchmarks.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/hostile_specs.h"
#include "support/server_process.h"
#include "tether/client.h"
#include "tether/status_code_name.h"
#include "tether/v1/simulator.pb.h"

namespace {

namespace v1 = tether::v1;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "tether_frame_gap_bench: %s\n", message.c_str());
  std::exit(2);
}

v1::SimulationSpec Pendulum() {
  v1::SimulationSpec spec;
  auto* sys = spec.mutable_system();
  sys->add_coordinates("x");
  sys->add_coordinates("y");
  auto* l = sys->add_parameters();
  l->set_name("l");
  l->set_value(1);
  auto* g = sys->add_parameters();
  g->set_name("grav");
  g->set_value(9.81);
  sys->mutable_masses()->add_values(1);
  sys->mutable_masses()->add_values(1);
  sys->set_potential_energy("grav*y");
  auto* c = sys->add_constraints();
  c->set_name("rod");
  c->set_expression("(x^2 + y^2 - l^2)/2");
  sys->mutable_baumgarte()->set_alpha(10);
  sys->mutable_baumgarte()->set_beta(10);
  spec.mutable_initial()->add_q(1);
  spec.mutable_initial()->add_q(0);
  spec.mutable_initial()->add_v(0);
  spec.mutable_initial()->add_v(0);
  spec.mutable_integrator()->set_method(v1::IntegratorSpec::RK4);
  spec.mutable_integrator()->set_step_size(0.001);
  return spec;
}

std::string Q(int i) { return "q" + std::to_string(i); }

void Coordinates(v1::SimulationSpec* spec, int n) {
  for (int i = 0; i < n; ++i) {
    spec->mutable_system()->add_coordinates(Q(i));
    spec->mutable_initial()->add_q(0.1);
    spec->mutable_initial()->add_v(0);
  }
  spec->mutable_integrator()->set_method(v1::IntegratorSpec::RK4);
  spec->mutable_integrator()->set_step_size(0.001);
}

// A potential of about `bytes` over 20 coordinates (unit masses).
v1::SimulationSpec BigPotential(std::size_t bytes) {
  constexpr int n = 20;
  v1::SimulationSpec spec;
  Coordinates(&spec, n);
  for (int i = 0; i < n; ++i) spec.mutable_system()->mutable_masses()->add_values(1);
  std::string V;
  for (int k = 0; V.size() < bytes; ++k) {
    if (k) V += " + ";
    V += "sin(" + Q(k % n) + "*" + Q((k * 7 + 3) % n) + " + " + std::to_string(k % 97) + ")";
  }
  spec.mutable_system()->set_potential_energy(V);
  return spec;
}

// m constraints, each a dense linear form in all n coordinates.
v1::SimulationSpec DenseConstraints(int m, int n) {
  v1::SimulationSpec spec;
  Coordinates(&spec, n);
  for (int i = 0; i < n; ++i) spec.mutable_system()->mutable_masses()->add_values(1);
  for (int r = 0; r < m; ++r) {
    std::string e;
    for (int j = 0; j < n; ++j) {
      if (j) e += " + ";
      e += std::to_string(1 + (r * 31 + j * 17) % 13) + "*" + Q(j);
    }
    auto* c = spec.mutable_system()->add_constraints();
    c->set_name("c" + std::to_string(r));
    c->set_expression(e + " - " + std::to_string(r));
  }
  return spec;
}

struct Gaps {
  std::vector<double> ms;  // between consecutive messages
  uint64_t frames = 0;
  double seconds = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

// Reads a Run of `session` for `seconds`, recording the gaps.
Gaps StreamFor(tether::client::Client* client, const std::string& session, double seconds) {
  v1::RunRequest req;
  req.set_session_id(session);
  req.set_steps(1000000000000ull);
  Gaps g;
  const auto start = Clock::now();
  auto last = start;
  bool first = true;
  grpc::Status s = client->RunMessages(req, [&](const v1::RunResponse& m) {
    const auto now = Clock::now();
    if (!first) g.ms.push_back(std::chrono::duration<double, std::milli>(now - last).count());
    first = false;
    last = now;
    g.frames += m.frames_size();
    return std::chrono::duration<double>(now - start).count() < seconds;
  });
  g.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (g.ms.size() < 10) {
    Die("the run delivered " + std::to_string(g.ms.size() + 1) + " messages (" + s.error_message() +
        ")");
  }
  return g;
}

void PrintGaps(const char* phase, const Gaps& g) {
  std::printf(
      "%-24s messages %7zu  frames/s %10.0f  gap max %7.1f ms  p99 %6.2f ms  median %6.3f ms\n",
      phase, g.ms.size() + 1, g.frames / g.seconds, *std::max_element(g.ms.begin(), g.ms.end()),
      Percentile(g.ms, 0.99), Percentile(g.ms, 0.5));
}

struct Answers {
  std::map<std::string, int> codes;            // "Validate OK" -> count
  std::map<std::string, std::string> message;  // code -> the first message
  double slowest = 0;
  int count = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string server_path;
  double seconds = 8;
  int hostile_clients = 2;
  std::vector<std::string> server_args = tether::test_support::EphemeralLoopback();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--server") {
      server_path = value();
    } else if (a == "--seconds") {
      seconds = std::atof(value().c_str());
    } else if (a == "--hostile-clients") {
      hostile_clients = std::atoi(value().c_str());
    } else if (a == "--server-arg") {
      server_args.push_back(value());
    } else {
      Die("unknown argument " + a);
    }
  }
  if (server_path.empty()) Die("--server PATH is required");
  if (seconds <= 0 || seconds > 120) Die("--seconds must be in (0, 120]");
  if (hostile_clients < 1 || hostile_clients > 16) Die("--hostile-clients must be in 1..16");

  std::vector<std::string> argv_server = {server_path};
  argv_server.insert(argv_server.end(), server_args.begin(), server_args.end());
  tether::test_support::ServerProcessOptions options;
  options.log = tether::test_support::ServerLog::kDiscard;
  options.terminate_with_parent = true;
  tether::test_support::ServerProcess server(argv_server, options);
  if (!server.ok()) Die(server.error());

  tether::client::ConnectOptions connect;
  connect.timeout = std::chrono::seconds(60);
  auto client = tether::client::Client::Connect(server.address(), connect);
  v1::Session session;
  if (grpc::Status s = client->CreateSession(Pendulum(), "frame-gap", &session); !s.ok()) {
    Die("CreateSession: " + s.error_message());
  }

  const std::vector<std::pair<std::string, v1::SimulationSpec>> shapes = {
      {"kinetic energy, 1024 coordinates", tether::testing::SwellingKineticEnergy(1024)},
      // Just under the parser's 100,000-character cap, so that it compiles.
      {"potential, 99 KB", BigPotential(99 * 1000)},
      // d coordinates x m constraints (m <= d, or it is refused at once).
      {"constraints, dense 200 x 100", DenseConstraints(100, 200)},
      {"constraints, dense 500 x 250", DenseConstraints(250, 500)},
  };

  std::printf("server: %s", server_path.c_str());
  for (std::size_t i = 1; i < argv_server.size(); ++i) std::printf(" %s", argv_server[i].c_str());
  std::printf("\nhostile shapes (request bytes):");
  for (const auto& [name, spec] : shapes)
    std::printf(" %s %zu;", name.c_str(), spec.ByteSizeLong());
  std::printf("\n");

  Gaps alone = StreamFor(client.get(), session.id(), seconds);

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, Answers> answers;  // by shape
  std::vector<std::thread> threads;
  for (int t = 0; t < hostile_clients; ++t) {
    threads.emplace_back([&, t] {
      auto hostile = tether::client::Client::Connect(server.address(), connect);
      for (std::size_t k = t; !stop.load(); ++k) {
        const auto& [name, spec] = shapes[k % shapes.size()];
        const bool create = (k / shapes.size()) % 2 == 1;
        const auto start = Clock::now();
        grpc::Status s;
        std::string outcome;
        if (create) {
          v1::Session created;
          s = hostile->CreateSession(spec, "hostile", &created);
          if (s.ok()) hostile->DeleteSession(created.id());
        } else {
          v1::ValidationReport report;
          s = hostile->Validate(spec, &report);
          if (s.ok()) outcome = report.valid() ? " (valid)" : " (invalid)";
        }
        const double took = std::chrono::duration<double>(Clock::now() - start).count();
        std::lock_guard<std::mutex> lock(mu);
        Answers& a = answers[name];
        const std::string code = std::string(create ? "CreateSession " : "Validate ") +
                                 tether::GrpcStatusCodeName(s.error_code()) + outcome;
        a.codes[code]++;
        if (!s.ok() && !a.message.count(code)) a.message[code] = s.error_message().substr(0, 160);
        a.slowest = std::max(a.slowest, took);
        ++a.count;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // compiles under way
  Gaps hostile = StreamFor(client.get(), session.id(), seconds);
  stop.store(true);
  for (auto& t : threads) t.join();

  PrintGaps("run alone:", alone);
  PrintGaps("run + hostile compiles:", hostile);
  for (const auto& [name, spec] : shapes) {
    const Answers& a = answers[name];
    std::printf("  %-34s %3d answers, slowest %6.2f s:", name.c_str(), a.count, a.slowest);
    for (const auto& [code, n] : a.codes) std::printf(" %s x%d;", code.c_str(), n);
    std::printf("\n");
    for (const auto& [code, m] : a.message) std::printf("      %s: %s\n", code.c_str(), m.c_str());
  }
  const double worst = *std::max_element(hostile.ms.begin(), hostile.ms.end());
  std::printf("largest gap with hostile compiles in flight: %.1f ms (target < 100 ms): %s\n", worst,
              worst < 100 ? "met" : "NOT met");
  return worst < 100 ? 0 : 1;
}
