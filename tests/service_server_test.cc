// tether-server as a process, each test on a server of its own: flags and
// environment, --max-sessions and --max-message-bytes, a port in use (SIGTERM
// and stalled streams: service_streams_test.cc).
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <gtest/gtest.h>

#include "service_test_fixture.h"
#include "support/raw_calls.h"

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

// A request is counted before it is parsed (engine/wire_walk.h): 300,000
// empty constraints (600 KB on the wire, some 30 MB once parsed) are
// RESOURCE_EXHAUSTED with nothing parsed, where 2.1 million in a 4 MiB
// request held 328 MiB; the server goes on, and a valid request of 100,000
// map entries is parsed as before (its own error names the field).
TEST(ServiceLimitsTest, ARequestOfTooManyObjectsIsRefusedBeforeItIsParsed) {
  auto server = StartServer({});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::SimulationSpec many = Pendulum();
  for (int k = 0; k < 300000; ++k) many.mutable_system()->add_constraints();
  v1::Session s;
  grpc::Status refused = client->CreateSession(many, "", &s);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("more than 262144 messages, list elements"),
            std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("tether.v1.CreateSessionRequest"), std::string::npos);
  // 200,000 is within the count and reaches the description's own check.
  v1::SimulationSpec fewer = Pendulum();
  for (int k = 0; k < 200000; ++k) fewer.mutable_system()->add_constraints();
  grpc::Status checked = client->CreateSession(fewer, "", &s);
  EXPECT_EQ(checked.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << checked.error_message();
  EXPECT_NE(checked.error_message().find("constraints"), std::string::npos);
  MustCreate(client.get(), Pendulum());
}

// ListSessions' pages end early when their sessions would pass ¾ of the
// message limit (a session's names alone may take about 1.5 MB), always
// with one session; every session is listed once, in creation order.
TEST(ServiceLimitsTest, ListSessionsPagesStayWithinTheMessageLimit) {
  auto server = StartServer({"--max-message-bytes", "65536"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::SimulationSpec wide = Pendulum();
  auto* sys = wide.mutable_system();
  for (int k = 0; k < 100; ++k) {
    sys->add_coordinates("c" + std::to_string(k) + "_" + std::string(110, 'x'));
    sys->mutable_masses()->add_values(1);
    wide.mutable_initial()->add_q(0);
    wide.mutable_initial()->add_v(0);
  }
  std::vector<std::string> made;
  for (int i = 0; i < 10; ++i) made.push_back(MustCreate(client.get(), wide));
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    v1::ListSessionsResponse page;
    ASSERT_TRUE(client->ListSessionsPage(1000, token, &page).ok());
    EXPECT_GE(page.sessions_size(), 1);
    EXPECT_LE(page.ByteSizeLong(), 65536u);
    for (const auto& session : page.sessions()) seen.push_back(session.id());
    token = page.next_page_token();
    ASSERT_LT(++pages, 100);
  } while (!token.empty());
  EXPECT_EQ(seen, made);
  EXPECT_GE(pages, 3);  // each session takes about 24 KB
}

// Whether `line` is one JSON log line as the json format writes it: an
// object of string fields with no raw control or separator character.
bool IsJsonLogLine(const std::string& line) {
  if (line.rfind("{\"time\":\"", 0) != 0 || line.size() < 2 ||
      line.substr(line.size() - 2) != "\"}")
    return false;
  for (unsigned char c : line) {
    if (c < 0x20) return false;
  }
  return line.find("\xe2\x80\xa8") == std::string::npos &&
         line.find("\xe2\x80\xae") == std::string::npos;
}

TEST(ServiceLoggingTest, EveryJsonLogLineIsJsonIncludingProtobufsAndGrpcs) {
  // GRPC_VERBOSITY=debug: gRPC core writes its own lines (through spdlog now).
  auto server =
      StartServer({"--log-format", "json", "--log-level", "debug"}, {"GRPC_VERBOSITY=debug"});
  ASSERT_TRUE(server->ok());
  // A request with bytes that are not UTF-8 in a string field: libprotobuf
  // logs the refusal itself.
  v1::CreateSessionRequest request;
  *request.mutable_spec() = Pendulum();
  request.set_display_name("PLACEHOLDER-NAME");
  std::string bytes = request.SerializeAsString();
  bytes.replace(bytes.find("PLACEHOLDER-NAME"), 16, "bad\xff\xfe\n\xe2\x80\xae-name-xx");
  auto channel = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  std::string response;
  grpc::Status s =
      test_support::RawUnary(channel, "/tether.v1.Simulator/CreateSession", bytes, &response);
  EXPECT_FALSE(s.ok());
  // A session id with a newline, a line separator and a bidi override.
  auto client = ConnectClient(server->address());
  v1::Session got;
  EXPECT_EQ(client->GetSession("id\n{\"forged\":1}\xe2\x80\xa8\xe2\x80\xae", &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
  MustCreate(client.get(), Pendulum());
  const std::string log = server->Log();
  EXPECT_NE(log.find("libprotobuf"), std::string::npos) << log;
  std::istringstream lines(log);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_TRUE(IsJsonLogLine(line)) << line;
  }
  EXPECT_GT(count, 2);
}

TEST(ServiceLoggingTest, RefusedCallsAreLoggedAtAThrottledRate) {
  auto server = StartServer({}, {"TETHER_TOKENS=acme 0123456789abcdef-secret"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());  // no token
  const auto start = std::chrono::steady_clock::now();
  constexpr int kCalls = 400;
  for (int i = 0; i < kCalls; ++i) {
    v1::Session got;
    ASSERT_EQ(client->GetSession("x", &got).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = server->Log();
  std::istringstream lines(log);
  std::string line;
  int refused = 0;
  while (std::getline(lines, line))
    refused += line.find("code=UNAUTHENTICATED") != std::string::npos;
  // At most 10 a second in each one-second window the calls spanned.
  EXPECT_GE(refused, 1) << log;
  EXPECT_LE(refused, 10 * (static_cast<int>(seconds) + 2)) << seconds << " s\n" << log;
  EXPECT_LT(refused, kCalls);
}

// Quota refusals (here the memory budget, full after a few dozen circle
// sessions) are throttled alike, per tenant.
TEST(ServiceLoggingTest, QuotaRefusalsAreLoggedAtAThrottledRate) {
  auto server = StartServer({"--memory-budget", "1048576"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  const auto start = std::chrono::steady_clock::now();
  constexpr int kCalls = 400;
  int exhausted = 0;
  for (int i = 0; i < kCalls; ++i) {
    v1::Session s;
    exhausted += client->CreateSession(Pendulum(), "", &s).error_code() ==
                 grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_GT(exhausted, 100) << "the 1 MiB budget took more than 300 circle sessions";
  const std::string log = server->Log();
  std::istringstream lines(log);
  std::string line;
  int logged = 0;
  while (std::getline(lines, line))
    logged += line.find("code=RESOURCE_EXHAUSTED") != std::string::npos;
  EXPECT_GE(logged, 1) << log;
  EXPECT_LE(logged, 10 * (static_cast<int>(seconds) + 2)) << seconds << " s\n" << log;
  EXPECT_LT(logged, exhausted);
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
  EXPECT_EQ(RunServerExpectingExit({"--memory-budget", "1000"}), 2);  // below 1 MiB
  EXPECT_EQ(RunServerExpectingExit({"--tenant-max-memory", "lots"}), 2);
  EXPECT_EQ(RunServerExpectingExit({}, {"TETHER_MEMORY_BUDGET=-1"}), 2);
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
