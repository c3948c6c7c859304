// The robustness suite (the failpoint idea at this project's scale): one
// tether-server under a memory limit (RLIMIT_AS of 2,000,000 KiB, what
// `ulimit -v 2000000` sets: a 1 GiB container limit plus headroom) is driven
// by the hostile descriptions and clients the audit found, one after the
// other. After each the server must be alive, answer a light call within a
// bound, and still hold every session it acknowledged, at the step it
// reported.
//
// Skipped under AddressSanitizer, which reserves terabytes of address space
// and cannot run under RLIMIT_AS.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "engine/spec_json.h"
#include "large_models.h"
#include "sanitizers.h"
#include "service_test_fixture.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service_test {
namespace {

constexpr uint64_t kAddressSpace = 2000000ull * 1024;

v1::SimulationSpec FromJson(const std::string& json, const std::string& what) {
  v1::SimulationSpec spec;
  tether::Status s = tether::ParseSpecJson(json, &spec, what);
  EXPECT_TRUE(s.ok()) << s.message();
  return spec;
}

// n constraints each linear in all n coordinates, diagonal masses: the
// description that took 1.4 GiB in the sparse analysis (n = 400, 1 MB).
v1::SimulationSpec DenselyCoupled(int n) {
  std::string json = R"({"system":{"coordinates":[)";
  for (int j = 0; j < n; ++j) json += (j ? ",\"q" : "\"q") + std::to_string(j) + "\"";
  json += R"(],"masses":{"values":[)";
  for (int j = 0; j < n; ++j) json += j ? ",1" : "1";
  json += R"(]},"constraints":[)";
  for (int i = 0; i < n; ++i) {
    json += std::string(i ? "," : "") + R"({"name":"c)" + std::to_string(i) + R"(","expression":")";
    for (int j = 0; j < n; ++j) {
      json += (j ? "+" : "") + std::to_string((7 * i + 3 * j) % 11 + 1) + "*q" + std::to_string(j);
    }
    json += "\"}";
  }
  json += R"(],"baumgarte":{"alpha":1,"beta":1}},"initial":{"q":[)";
  for (int j = 0; j < n; ++j) json += j ? ",0" : "0";
  json += R"(],"v":[)";
  for (int j = 0; j < n; ++j) json += j ? ",0" : "0";
  json += R"(]},"integrator":{"method":"RK4","stepSize":0.001}})";
  return FromJson(json, "densely coupled");
}

// The audit's many-coordinate description (bench/large_models.h). Its
// 2,048 coordinates exceed the default --max-derivative-nodes in this form;
// 1,024 compile.
v1::SimulationSpec ManyCoordinates(int n) {
  return FromJson(tether_bench::KineticEnergyModel(n), "many coordinates");
}

class ServiceRobustnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef TETHER_UNDER_ASAN
    GTEST_SKIP() << "AddressSanitizer cannot run under RLIMIT_AS";
#endif
    std::vector<std::string> argv = {TETHER_SERVER_PATH};
    for (std::string& a : test_support::EphemeralLoopback()) argv.push_back(std::move(a));
    for (const char* a : {"--workers", "2", "--stream-stall-timeout", "1"}) argv.push_back(a);
    test_support::ServerProcessOptions options;
    options.address_space_bytes = kAddressSpace;
    server_ = std::make_unique<ServerProcess>(std::move(argv), options);
    ASSERT_TRUE(server_->ok()) << server_->error();
    client_ = ConnectClient(server_->address());
    // The acknowledged sessions: one run to a known step, one fresh.
    for (int i = 0; i < 2; ++i) {
      held_.push_back(MustCreate(client_.get(), Pendulum()));
    }
    RunResult r = RunToEnd(client_.get(), RunSteps(held_[0], 25));
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  }

  // Alive, a light call answered within 5 s, every acknowledged session
  // there at its step.
  void ExpectHealthy(const std::string& after) {
    SCOPED_TRACE(after);
    int code = 0;
    ASSERT_FALSE(server_->Reap(&code))
        << "the server exited with " << code << " after " << after << "\n"
        << server_->Log();
    auto light = ConnectClient(server_->address(), std::chrono::seconds(5));
    const auto start = std::chrono::steady_clock::now();
    std::vector<v1::Session> sessions;
    grpc::Status listed = light->ListSessions(&sessions);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(listed.ok()) << listed.error_message() << "\n" << server_->Log();
    EXPECT_LT(took, 5.0);
    for (std::size_t i = 0; i < held_.size(); ++i) {
      v1::Session s;
      grpc::Status got = light->GetSession(held_[i], &s);
      ASSERT_TRUE(got.ok()) << held_[i] << ": " << got.error_message();
      EXPECT_EQ(s.step(), i == 0 ? 25u : 0u) << held_[i];
    }
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Client> client_;
  std::vector<std::string> held_;
};

TEST_F(ServiceRobustnessTest, HostileDescriptionsAndClientsLeaveItServingUnderAMemoryLimit) {
  // 1. Densely coupled constraints (the 1 MB request that aborted the
  // server): answered, valid or refused, never fatal.
  for (int n : {256, 400}) {
    v1::ValidationReport report;
    grpc::Status s = client_->Validate(DenselyCoupled(n), &report);
    EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
        << n << ": " << s.error_message();
    ExpectHealthy("Validate of " + std::to_string(n) + " densely coupled constraints");
  }

  // 2. Many coordinates with a kinetic energy: sixteen sessions of about
  // 50 MiB each, more than the automatic memory budget under this limit
  // (4/5 of half the address space less room for the process and the
  // compile lane's two compiles, about 218 MiB): the first ones created, the rest refused by the
  // budget before the process would run out, never fatal.
  const v1::SimulationSpec big = ManyCoordinates(1024);
  std::vector<std::string> big_ids;
  int refused = 0;
  for (int i = 0; i < 16; ++i) {
    v1::Session s;
    grpc::Status created = client_->CreateSession(big, "", &s);
    if (created.ok()) {
      big_ids.push_back(s.id());
    } else {
      EXPECT_EQ(created.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << created.error_message();
      EXPECT_NE(created.error_message().find("--memory-budget"), std::string::npos)
          << created.error_message();
      if (refused == 0) std::printf("refused: %s\n", created.error_message().c_str());
      ++refused;
    }
  }
  std::printf("big sessions: %zu created, %d refused\n", big_ids.size(), refused);
  EXPECT_GE(big_ids.size(), 4u);
  EXPECT_GE(refused, 1) << "sixteen 50 MiB sessions fit the budget under a 2 GB address space";
  ExpectHealthy("16 CreateSession of a 1,024-coordinate kinetic energy (" +
                std::to_string(big_ids.size()) + " created, " + std::to_string(refused) +
                " refused)");

  // 3. Runs nobody reads on the big sessions, more than the workers: the
  // server stays healthy while they step. Each Run reserves its outbox
  // before it begins; with one frame a message (25 KiB) the four fit in
  // what the big sessions left, where the default 3 MiB messages would
  // fit one (ServiceMemoryTest refuses the rest). (They step too slowly,
  // about a second a step, to fill a stream's window and stall within the
  // test: the stall timeout's two phases are ServiceStallTest's.) A thread
  // a stream reads its first message and no more, so that a refused Run
  // (its status alone) is told from a started one without waiting for it.
  {
    auto stub = v1::Simulator::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    const std::size_t n = big_ids.size();
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<std::unique_ptr<grpc::ClientReader<v1::RunResponse>>> readers;
    std::vector<grpc::Status> refusals(n);
    std::unique_ptr<std::atomic<bool>[]> ended(new std::atomic<bool>[n]);
    std::vector<std::thread> waiting;
    for (std::size_t i = 0; i < n; ++i) {
      ended[i] = false;
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      contexts.back()->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
      v1::RunRequest request = RunSteps(big_ids[i], 1000000000ull);
      request.set_frames_per_message(1);
      readers.push_back(stub->Run(contexts.back().get(), request));
      waiting.emplace_back([&, i] {
        v1::RunResponse first;
        if (!readers[i]->Read(&first)) {
          refusals[i] = readers[i]->Finish();
          ended[i] = true;
        }
      });
    }
    // Every run is either refused or stepping its session (a refused Run
    // holds its session for a moment too, so RUNNING alone would not tell).
    std::vector<std::string> started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (std::size_t i = 0; i < n; ++i) {
      bool stepping = false;
      while (!ended[i] && !stepping && std::chrono::steady_clock::now() < deadline) {
        v1::Session s;
        stepping = client_->GetSession(big_ids[i], &s).ok() && s.step() > 0;
        if (!stepping) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (stepping) {
        started.push_back(big_ids[i]);
      } else {
        EXPECT_TRUE(ended[i]) << big_ids[i] << ": neither stepping nor refused\n" << server_->Log();
      }
    }
    std::printf("unread runs: %zu stepping, %zu refused\n", started.size(), n - started.size());
    bool shown = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!ended[i]) continue;
      if (!shown) std::printf("refused: %s\n", refusals[i].error_message().c_str());
      shown = true;
      EXPECT_EQ(refusals[i].error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << big_ids[i] << ": " << refusals[i].error_message();
      EXPECT_NE(refusals[i].error_message().find("outbox"), std::string::npos)
          << refusals[i].error_message();
    }
    EXPECT_EQ(started.size(), n) << server_->Log();
    ExpectHealthy("Runs nobody reads on the big sessions (" + std::to_string(started.size()) +
                  " started, " + std::to_string(n - started.size()) + " refused)");
    for (auto& c : contexts) c->TryCancel();
    for (auto& t : waiting) t.join();
    for (std::size_t i = 0; i < n; ++i) {
      if (!ended[i]) readers[i]->Finish();
    }
  }

  // 4. The acknowledged sessions still run.
  RunResult more = RunToEnd(client_.get(), RunSteps(held_[1], 10));
  ASSERT_TRUE(more.status.ok()) << more.status.error_message();
  EXPECT_EQ(more.frames.size(), 11u);  // its first run: step 0 and 10 steps
}

}  // namespace
}  // namespace tether::service_test
