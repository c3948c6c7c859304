// Bytes per session: what tether-server reports and charges to its memory
// budget (Session.memory_bytes) against what the kernel counts (the growth
// of the server's VmRSS), for the model families of docs/ARCHITECTURE.md's
// "Memory" formula. One server per family; a first session of the family is
// created and kept before measuring (the process's lazily made parts, the
// compile lane's allocator arena), then `count` more.
//
//   tether_session_memory_bench [count]     (default 8)
//
// Prints one row per family: per session, reported and resident bytes and
// their ratio. Not a timing benchmark: the figures are byte counts.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "engine/spec_json.h"
#include "large_models.h"
#include "support/server_process.h"
#include "tether/client.h"

namespace {

namespace v1 = tether::v1;

struct Family {
  std::string name;
  std::string json;
};

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 8;
  const std::vector<Family> families = {
      {"circle pendulum", tether_bench::Chain(1).json},
      {"chain/64 (sparse KKT)", tether_bench::Chain(64).json},
      {"chain/1000 (sparse KKT)", tether_bench::Chain(1000).json},
      {"grid/16 (sparse KKT)", tether_bench::Grid(16).json},
      {"chain/12 (dense KKT)", tether_bench::Chain(12).json},
      {"kinetic, 256 coordinates", tether_bench::KineticEnergyModel(256)},
      {"kinetic, 1024 coordinates", tether_bench::KineticEnergyModel(1024)},
  };
  std::printf("%-28s %14s %14s %7s\n", "family", "reported/sess", "resident/sess", "ratio");
  for (const Family& f : families) {
    v1::SimulationSpec spec;
    if (tether::Status s = tether::ParseSpecJson(f.json, &spec); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", f.name.c_str(), s.ToString().c_str());
      return 1;
    }
    tether::test_support::ServerProcessOptions options;
    options.log = tether::test_support::ServerLog::kDiscard;
    tether::test_support::ServerProcess server(
        {TETHER_SERVER_PATH, "--listen", "127.0.0.1:0", "--memory-budget", "4398046511104"},
        options);
    if (!server.ok()) {
      std::fprintf(stderr, "tether-server did not start\n");
      return 1;
    }
    std::unique_ptr<tether::client::Client> client;
    tether::client::ConnectOptions connect;
    if (grpc::Status s = tether::client::Client::Create(server.address(), connect, &client);
        !s.ok()) {
      std::fprintf(stderr, "connect: %s\n", s.error_message().c_str());
      return 1;
    }
    v1::Session first;
    if (grpc::Status s = client->CreateSession(spec, "", &first); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", f.name.c_str(), s.error_message().c_str());
      return 1;
    }
    const int64_t rss0 = tether::test_support::ResidentKiB(server.pid()) * 1024;
    int64_t reported = 0;
    for (int i = 0; i < count; ++i) {
      v1::Session s;
      if (grpc::Status st = client->CreateSession(spec, "", &s); !st.ok()) {
        std::fprintf(stderr, "%s: %s\n", f.name.c_str(), st.error_message().c_str());
        return 1;
      }
      reported += static_cast<int64_t>(s.memory_bytes());
    }
    const int64_t resident = tether::test_support::ResidentKiB(server.pid()) * 1024 - rss0;
    std::printf("%-28s %14lld %14lld %7.2f\n", f.name.c_str(),
                static_cast<long long>(reported / count), static_cast<long long>(resident / count),
                static_cast<double>(resident) / static_cast<double>(reported));
  }
  return 0;
}
