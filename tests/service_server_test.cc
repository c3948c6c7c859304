// tether-server as a process, each test on a server of its own: flags and
// environment, --max-sessions and --max-message-bytes, a port in use (SIGTERM
// and stalled streams: service_streams_test.cc).
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "service_test_fixture.h"

namespace tether::service_test {
namespace {

TEST(ServiceLimitsTest, MaxSessionsAndMessageSize) {
  auto server =
      StartServer({"--max-sessions", "2", "--max-message-bytes", "65536", "--log-format", "json"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  std::string a = MustCreate(client.get(), Pendulum());
  std::string b = MustCreate(client.get(), Pendulum());
  v1::Session s;
  EXPECT_EQ(client->CreateSession(Pendulum(), "", &s).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(client->DeleteSession(a).ok());
  std::string c = MustCreate(client.get(), Pendulum());

  // A request larger than --max-message-bytes.
  v1::SimulationSpec huge = Pendulum();
  huge.mutable_system()->set_potential_energy("grav*y" + std::string(100000, ' '));
  EXPECT_EQ(client->CreateSession(huge, "", &s).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // Frames are split so no response exceeds the limit; nothing is lost.
  v1::RunRequest req = RunSteps(b, 5000);
  req.set_frames_per_message(65536);
  RunResult r = RunToEnd(client.get(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_EQ(r.frames.size(), 5001u);
  EXPECT_TRUE(Consecutive(r.frames, 0));
  EXPECT_GT(r.messages.size(), 1u);
  for (const auto& m : r.messages) EXPECT_LE(m.ByteSizeLong(), 65536u);

  // json log lines.
  std::string log = server->Log();
  EXPECT_NE(log.find("\"msg\":\"session created: tenant=anonymous session=" + c), std::string::npos)
      << log;
}

TEST(ServiceFlagsTest, BadFlagValuesExitTwo) {
  EXPECT_EQ(RunServerExpectingExit({"--workers", "0"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--workers", "many"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--listen", "nonsense"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--listen", "127.0.0.1:99999"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--max-sessions", "-3"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--worker-spin", "-1"}), 2);
  EXPECT_EQ(RunServerExpectingExit({}, {"TETHER_WORKER_SPIN=2000000"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--session-idle-timeout", "soon"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--log-level", "loud"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--log-format", "xml"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--no-such-flag", "1"}), 2);
  EXPECT_EQ(RunServerExpectingExit({}, {"TETHER_WORKERS=abc"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--help"}), 0);
}

TEST(ServiceStartupTest, PortInUseFailsWithAMessageNamingTheAddress) {
  auto first = StartServer({});
  ASSERT_TRUE(first->ok());
  // Without SO_REUSEPORT disabled the second server would start and share
  // the port.
  test_support::ServerProcessOptions options;
  options.listen_timeout = 30s;
  ServerProcess second({TETHER_SERVER_PATH, "--listen", first->address()}, options);
  EXPECT_FALSE(second.ok()) << "a second server started on " << first->address();
  EXPECT_EQ(second.early_exit_code(), 1) << second.error();
  EXPECT_NE(second.error().find("cannot listen on " + first->address()), std::string::npos)
      << second.error();
  // The first one still serves.
  auto client = ConnectClient(first->address());
  MustCreate(client.get(), Pendulum());
}

TEST(ServiceFlagsTest, EnvironmentConfiguresTheServer) {
  auto server = StartServer({}, {"TETHER_MAX_SESSIONS=1", "TETHER_LOG_FORMAT=json"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  MustCreate(client.get(), Pendulum());
  v1::Session s;
  EXPECT_EQ(client->CreateSession(Pendulum(), "", &s).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace
}  // namespace tether::service_test
