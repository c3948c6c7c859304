// Sessions that survive a restart (issue 11 point 5): with --state-dir a
// server drained by SIGTERM writes every session, and a server started on
// the directory serves them under the same ids, runs continuing bit for
// bit; --checkpoint-interval bounds what a SIGKILL loses; damaged files are
// set aside, never served.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "service_test_fixture.h"

namespace tether::service_test {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the test's temporary directory.
std::string TempDir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("tether-state-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

// Every frame and the certificate of a Run of `steps` steps, as bytes.
std::string RunBytes(client::Client* client, const std::string& id, uint64_t steps) {
  std::string bytes;
  v1::Certificate certificate;
  grpc::Status s = client->Run(
      RunSteps(id, steps),
      [&](const v1::Frame& f) {
        bytes += f.SerializeAsString();
        return true;
      },
      &certificate);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return bytes + certificate.SerializeAsString();
}

v1::SimulationSpec Spec(bool dopri) {
  v1::SimulationSpec spec = LoadSpec("pendulum_force_input.json");
  spec.mutable_initial()->set_q(0, 0.6);
  spec.mutable_initial()->set_q(1, -0.8);
  if (dopri) {
    spec.mutable_integrator()->set_method(v1::IntegratorSpec::DOPRI5);
    spec.mutable_integrator()->set_step_size(0);
  }
  return spec;
}

TEST(StateDirTest, DrainedSessionsAreServedAgainUnderTheirIdsAndContinueBitIdentically) {
  const std::string dir = TempDir("drain");
  std::string rk4, dopri, failed;
  {
    auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
    ASSERT_TRUE(server->ok());
    auto client = ConnectClient(server->address());
    rk4 = MustCreate(client.get(), Spec(false));
    dopri = MustCreate(client.get(), Spec(true));
    failed = MustCreate(client.get(), BlowUp());
    RunBytes(client.get(), rk4, 120);
    // An input set in a co-simulation step is part of the state.
    auto stream = client->CoSimulate(dopri);
    v1::Frame frame;
    ASSERT_TRUE(stream->DoStep(0.05, {{"Fx", 0.7}}, &frame).ok());
    ASSERT_TRUE(stream->Finish().ok());
    v1::Certificate ignored;
    EXPECT_EQ(client->Run(RunSteps(failed, 100000), nullptr, &ignored).error_code(),
              grpc::StatusCode::ABORTED);
    EXPECT_EQ(server->Stop(), 0) << server->Log();  // SIGTERM: drain, write
  }
  EXPECT_TRUE(fs::exists(dir + "/" + rk4 + ".session"));

  // The reference: the same history on a server without --state-dir.
  auto reference_server = StartServer({"--shutdown-grace", "0.2"});
  auto reference = ConnectClient(reference_server->address());
  std::string ref_rk4 = MustCreate(reference.get(), Spec(false));
  std::string ref_dopri = MustCreate(reference.get(), Spec(true));
  RunBytes(reference.get(), ref_rk4, 120);
  {
    auto stream = reference->CoSimulate(ref_dopri);
    v1::Frame frame;
    ASSERT_TRUE(stream->DoStep(0.05, {{"Fx", 0.7}}, &frame).ok());
    ASSERT_TRUE(stream->Finish().ok());
  }

  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  ASSERT_TRUE(client->GetSession(rk4, &s).ok()) << server->Log();
  EXPECT_EQ(s.step(), 120u);
  EXPECT_EQ(s.status(), v1::READY);
  ASSERT_TRUE(client->GetSession(failed, &s).ok());
  EXPECT_EQ(s.status(), v1::FAILED);
  EXPECT_FALSE(s.error().empty());
  EXPECT_EQ(RunBytes(client.get(), rk4, 80), RunBytes(reference.get(), ref_rk4, 80));
  EXPECT_EQ(RunBytes(client.get(), dopri, 80), RunBytes(reference.get(), ref_dopri, 80));

  // A deleted session's file goes with it; without --state-dir nothing is
  // written (the reference server's directory does not exist).
  ASSERT_TRUE(client->DeleteSession(rk4).ok());
  EXPECT_FALSE(fs::exists(dir + "/" + rk4 + ".session"));
  EXPECT_EQ(server->Stop(), 0) << server->Log();
  fs::remove_all(dir);
}

TEST(StateDirTest, CheckpointsBoundWhatAKillLoses) {
  const std::string dir = TempDir("kill");
  std::string id;
  {
    auto server = StartServer(
        {"--state-dir", dir, "--checkpoint-interval", "0.05", "--shutdown-grace", "0.2"});
    ASSERT_TRUE(server->ok());
    auto client = ConnectClient(server->address());
    id = MustCreate(client.get(), Spec(false));
    RunBytes(client.get(), id, 300);
    // Well over the interval: the checkpoint thread has written step 300.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(::kill(server->pid(), SIGKILL), 0);
    server->Stop();
  }
  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  ASSERT_TRUE(client->GetSession(id, &s).ok()) << server->Log();
  EXPECT_EQ(s.step(), 300u);
  auto reference_server = StartServer({"--shutdown-grace", "0.2"});
  auto reference = ConnectClient(reference_server->address());
  std::string ref = MustCreate(reference.get(), Spec(false));
  RunBytes(reference.get(), ref, 300);
  EXPECT_EQ(RunBytes(client.get(), id, 50), RunBytes(reference.get(), ref, 50));
  server->Stop();
  fs::remove_all(dir);
}

TEST(StateDirTest, DamagedFilesAreSetAsideAndBadFlagsStopTheServer) {
  const std::string dir = TempDir("damaged");
  std::string id;
  {
    auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
    auto client = ConnectClient(server->address());
    id = MustCreate(client.get(), Spec(false));
    RunBytes(client.get(), id, 10);
    EXPECT_EQ(server->Stop(), 0);
  }
  const std::string file = dir + "/" + id + ".session";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-40, std::ios::end);  // inside the export's payload
    f.put('\x7f');
  }
  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  EXPECT_EQ(client->GetSession(id, &s).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(server->Log().find("checksum"), std::string::npos) << server->Log();
  server->Stop();

  // A header flip: renamed to .corrupt.
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    f.put('X');
  }
  server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  EXPECT_TRUE(fs::exists(file + ".corrupt")) << server->Log();
  server->Stop();

  EXPECT_EQ(RunServerExpectingExit({"--checkpoint-interval", "1"}), 1);
  const std::string not_dir = dir + "/plain";
  std::ofstream(not_dir) << "x";
  EXPECT_EQ(RunServerExpectingExit({"--state-dir", not_dir}), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tether::service_test
