// tether-server's session RPCs (CreateSession, GetSession, ListSessions,
// DeleteSession), idle expiry and the session log lines, through the client
// library.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "service_test_fixture.h"

namespace tether::service_test {
namespace {

TEST_F(ServiceTest, SessionLifecycle) {
  v1::Session created;
  grpc::Status s = client_->CreateSession(Pendulum(), "my pendulum", &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(created.id().size(), 32u);
  EXPECT_EQ(created.id().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(created.status(), v1::READY);
  EXPECT_EQ(created.step(), 0u);
  EXPECT_EQ(created.display_name(), "my pendulum");
  ASSERT_EQ(created.coordinates_size(), 2);
  EXPECT_EQ(created.coordinates(0), "x");
  ASSERT_EQ(created.constraints_size(), 1);
  EXPECT_EQ(created.constraints(0), "rod");
  EXPECT_EQ(created.state().q_size(), 2);
  EXPECT_GT(created.create_time().seconds(), 0);

  v1::Session got;
  ASSERT_TRUE(client_->GetSession(created.id(), &got).ok());
  EXPECT_EQ(got.id(), created.id());
  EXPECT_EQ(got.status(), v1::READY);

  // Ids differ.
  v1::Session other;
  ASSERT_TRUE(client_->CreateSession(Pendulum(), "", &other).ok());
  EXPECT_NE(other.id(), created.id());

  ASSERT_TRUE(client_->DeleteSession(created.id()).ok());
  EXPECT_EQ(client_->GetSession(created.id(), &got).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(client_->DeleteSession(created.id()).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(client_->GetSession("", &got).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client_->GetSession("0123456789abcdef0123456789abcdef", &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(client_->DeleteSession(other.id()).ok());
}

TEST_F(ServiceTest, CreateSessionErrors) {
  v1::Session s;
  v1::SimulationSpec bad = Pendulum();
  bad.mutable_system()->mutable_constraints(0)->set_expression("x +* y");
  grpc::Status st = client_->CreateSession(bad, "", &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(st, "spec.system.constraints[0].expression")) << ViolationFields(st);

  st = client_->CreateSession(Pendulum(), std::string(300, 'n'), &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(st, "display_name")) << ViolationFields(st);
}

TEST_F(ServiceTest, CreateSessionReturnsValidationWarnings) {
  v1::SimulationSpec spec = Pendulum();
  spec.mutable_system()->mutable_baumgarte()->set_alpha(0);
  v1::Session s;
  ASSERT_TRUE(client_->CreateSession(spec, "", &s).ok());
  bool alpha = false;
  for (const auto& w : s.warnings()) {
    EXPECT_EQ(w.severity(), v1::Diagnostic::WARNING) << w.ShortDebugString();
    alpha = alpha || w.field() == "system.baumgarte.alpha";
  }
  EXPECT_TRUE(alpha) << s.ShortDebugString();
  // A clean description has none; GetSession never repeats them.
  v1::Session clean;
  ASSERT_TRUE(client_->CreateSession(Pendulum(), "", &clean).ok());
  EXPECT_EQ(clean.warnings_size(), 0);
  v1::Session got;
  ASSERT_TRUE(client_->GetSession(s.id(), &got).ok());
  EXPECT_EQ(got.warnings_size(), 0);
  EXPECT_TRUE(client_->DeleteSession(s.id()).ok());
  EXPECT_TRUE(client_->DeleteSession(clean.id()).ok());
}

TEST_F(ServiceTest, ListSessionsPagesInCreationOrder) {
  std::vector<std::string> mine;
  for (int i = 0; i < 7; ++i) mine.push_back(MustCreate(client_.get(), Pendulum()));
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    v1::ListSessionsResponse resp;
    grpc::Status s = client_->ListSessionsPage(3, token, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LE(resp.sessions_size(), 3);
    for (const auto& session : resp.sessions()) seen.push_back(session.id());
    token = resp.next_page_token();
    ASSERT_LT(++pages, 1000);
  } while (!token.empty());
  // Ours appear, in creation order.
  std::vector<std::string> ours_seen;
  for (const auto& id : seen) {
    if (std::find(mine.begin(), mine.end(), id) != mine.end()) ours_seen.push_back(id);
  }
  EXPECT_EQ(ours_seen, mine);

  v1::ListSessionsResponse resp;
  EXPECT_EQ(client_->ListSessionsPage(-1, "", &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status s = client_->ListSessionsPage(10, "garbage", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "page_token"));
  for (const auto& id : mine) EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, LogsSessionLifecycle) {
  std::string id = MustCreate(client_.get(), Pendulum());
  ASSERT_TRUE(RunToEnd(client_.get(), RunSteps(id, 5)).status.ok());
  ASSERT_TRUE(client_->DeleteSession(id).ok());
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = server_->Log();
    if (log.find("session deleted: tenant=anonymous session=" + id) != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(log.find("session created: tenant=anonymous session=" + id), std::string::npos) << log;
  EXPECT_NE(log.find("run started: tenant=anonymous session=" + id), std::string::npos);
  EXPECT_NE(log.find("run finished: tenant=anonymous session=" + id), std::string::npos);
  EXPECT_NE(log.find("session deleted: tenant=anonymous session=" + id), std::string::npos);
}

// Client-supplied ids are echoed through QuoteForMessage: cut to 128 bytes
// and escaped.
TEST_F(ServiceTest, AHugeSessionIdGetsAShortNotFound) {
  const std::string id(3 << 20, 'a');
  v1::Session got;
  grpc::Status s = client_->GetSession(id, &got);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LT(s.error_message().size(), 300u) << s.error_message().substr(0, 300);
  EXPECT_NE(s.error_message().find("... (3145728 bytes)"), std::string::npos)
      << s.error_message().substr(0, 300);
}

TEST_F(ServiceTest, ASessionIdWithANewlineDoesNotForgeALogLine) {
  const std::string id = "forged\nFORGEDLINE info session deleted: session=x\r\x01";
  v1::Session got;
  grpc::Status s = client_->GetSession(id, &got);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message().find('\n'), std::string::npos) << s.error_message();
  const std::string escaped = "forged\\nFORGEDLINE info session deleted: session=x\\r\\x01";
  EXPECT_NE(s.error_message().find(escaped), std::string::npos) << s.error_message();
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = server_->Log();
    if (log.find("session=" + escaped) != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(log.find("rpc GetSession failed: tenant=anonymous session=" + escaped),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("\nFORGEDLINE"), std::string::npos) << log;
}

TEST(ServiceLogTest, JsonLogLinesStayValidJsonWithHostileIds) {
  auto server = StartServer({"--log-format", "json"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  const std::string id = "a\"b\\c\nd\x01e\x7f" + std::string(1000, 'z') + "\xc3\xa9";
  v1::Session got;
  EXPECT_EQ(client->GetSession(id, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = server->Log();
    if (log.find("GetSession failed") != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(log.find("GetSession failed"), std::string::npos) << log;
  std::size_t lines = 0, start = 0;
  for (std::size_t end; (end = log.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = log.substr(start, end - start);
    google::protobuf::Struct parsed;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &parsed).ok()) << line;
    ++lines;
  }
  EXPECT_GT(lines, 1u);
}

TEST(ServiceIdleTest, IdleSessionsExpire) {
  auto server = StartServer({"--session-idle-timeout", "1"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  std::string id = MustCreate(client.get(), Pendulum());
  // ListSessions does not count as use; poll it until the session is gone.
  bool gone = false;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    v1::ListSessionsResponse resp;
    ASSERT_TRUE(client->ListSessionsPage(100, "", &resp).ok());
    gone = true;
    for (const auto& s : resp.sessions()) gone &= s.id() != id;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(gone);
  v1::Session s;
  EXPECT_EQ(client->GetSession(id, &s).error_code(), grpc::StatusCode::NOT_FOUND);
  auto log_deadline = std::chrono::steady_clock::now() + 30s;
  while (server->Log().find("session expired: tenant=anonymous session=" + id) ==
             std::string::npos &&
         std::chrono::steady_clock::now() < log_deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(server->Log().find("session expired: tenant=anonymous session=" + id),
            std::string::npos);
}

}  // namespace
}  // namespace tether::service_test
