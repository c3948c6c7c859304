// The C++ client library (client/lib) against a real tether-server started
// on a free loopback port.
//
// Usage: client_test --server-binary PATH --source-dir DIR [gtest flags]
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/spec_json.h"
#include "support/server_process.h"
#include "tether/client.h"
#include "tether/status_details.h"

namespace tether {
namespace {

std::string g_server_binary;
std::string g_source_dir;

// tether-server on 127.0.0.1:0 as a child process (its log discarded).
std::unique_ptr<test_support::ServerProcess> StartServer() {
  std::vector<std::string> argv = {g_server_binary};
  for (std::string& a : test_support::EphemeralLoopback()) argv.push_back(std::move(a));
  test_support::ServerProcessOptions options;
  options.log = test_support::ServerLog::kDiscard;
  return std::make_unique<test_support::ServerProcess>(std::move(argv), options);
}

class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartServer().release();
    ASSERT_TRUE(server_->ok()) << server_->error();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    client::ConnectOptions options;
    options.timeout = std::chrono::seconds(60);
    client_ = client::Client::Connect(server_->address(), options);
  }

  static v1::SimulationSpec Load(const std::string& name) {
    v1::SimulationSpec spec;
    Status status = LoadSpecFile(g_source_dir + "/examples/" + name, &spec);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return spec;
  }

  static test_support::ServerProcess* server_;
  std::unique_ptr<client::Client> client_;
};

test_support::ServerProcess* ClientTest::server_ = nullptr;

TEST_F(ClientTest, HealthIsServing) {
  client::HealthStatus health;
  grpc::Status status = client_->Health("", std::chrono::seconds(3), &health);
  ASSERT_TRUE(status.ok()) << client::FormatStatus(status);
  EXPECT_EQ(health, client::HealthStatus::kServing);
}

TEST_F(ClientTest, HealthOfAClosedPortFailsQuickly) {
  auto other = StartServer();
  ASSERT_TRUE(other->ok()) << other->error();
  std::string address = other->address();
  other->Stop();
  auto closed = client::Client::Connect(address);
  client::HealthStatus health;
  auto start = std::chrono::steady_clock::now();
  grpc::Status status = closed->Health("", std::chrono::seconds(3), &health);
  EXPECT_FALSE(status.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ClientTest, ValidateAndEvaluate) {
  v1::ValidationReport report;
  grpc::Status status = client_->Validate(Load("circle_pendulum.json"), &report);
  ASSERT_TRUE(status.ok()) << client::FormatStatus(status);
  EXPECT_TRUE(report.valid());
  EXPECT_TRUE(report.initial_consistent());

  v1::EvaluateRequest request;
  *request.mutable_spec() = Load("circle_pendulum.json");
  v1::EvaluateResponse response;
  status = client_->Evaluate(request, &response);
  ASSERT_TRUE(status.ok()) << client::FormatStatus(status);
  // At rest at (1, 0) with gravity along -y: a = (0, -9.81), no tension.
  ASSERT_EQ(response.frame().a_size(), 2);
  EXPECT_NEAR(response.frame().a(0), 0.0, 1e-12);
  EXPECT_NEAR(response.frame().a(1), -9.81, 1e-12);
}

TEST_F(ClientTest, InvalidArgumentCarriesFieldViolations) {
  v1::EvaluateRequest request;
  *request.mutable_spec() = Load("circle_pendulum.json");
  request.mutable_spec()->mutable_system()->mutable_constraints(0)->set_expression(
      "(x^2 + y^2 - 1");
  v1::EvaluateResponse response;
  grpc::Status status = client_->Evaluate(request, &response);
  ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::vector<client::FieldViolation> violations = client::FieldViolations(status);
  ASSERT_FALSE(violations.empty());
  EXPECT_EQ(violations[0].field, "spec.system.constraints[0].expression");
  EXPECT_FALSE(violations[0].description.empty());
  EXPECT_NE(client::FormatStatus(status).find("INVALID_ARGUMENT: "), std::string::npos);
  EXPECT_NE(client::FormatStatus(status).find("spec.system.constraints[0].expression"),
            std::string::npos);
}

TEST_F(ClientTest, SessionLifecycleAndRun) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    v1::Session session;
    grpc::Status status =
        client_->CreateSession(Load("circle_pendulum.json"), "client_test", &session);
    ASSERT_TRUE(status.ok()) << client::FormatStatus(status);
    EXPECT_EQ(session.coordinates_size(), 2);
    EXPECT_EQ(session.constraints(0), "rod");
    ids.push_back(session.id());
  }
  // Pages of one: ListSessions follows the tokens.
  std::vector<v1::Session> sessions;
  ASSERT_TRUE(client_->ListSessions(&sessions, 1).ok());
  int found = 0;
  for (const v1::Session& s : sessions) {
    for (const std::string& id : ids) found += s.id() == id;
  }
  EXPECT_EQ(found, 3);

  v1::RunRequest run;
  run.set_session_id(ids[0]);
  run.set_steps(100);
  run.set_every(10);
  run.set_frames_per_message(3);
  std::vector<uint64_t> steps;
  v1::Certificate certificate;
  grpc::Status status = client_->Run(
      run,
      [&steps](const v1::Frame& f) {
        steps.push_back(f.step());
        return true;
      },
      &certificate);
  ASSERT_TRUE(status.ok()) << client::FormatStatus(status);
  EXPECT_EQ(steps, (std::vector<uint64_t>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(certificate.steps(), 100u);
  EXPECT_TRUE(certificate.feedback_verified());
  EXPECT_LE(certificate.max_position_residual(), certificate.position_bound());

  // Returning false from the callback cancels the run.
  run.set_session_id(ids[1]);
  int seen = 0;
  status = client_->Run(
      run, [&seen](const v1::Frame&) { return ++seen < 2; }, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(seen, 2);

  v1::Session session;
  ASSERT_TRUE(client_->GetSession(ids[0], &session).ok());
  EXPECT_EQ(session.step(), 100u);
  for (const std::string& id : ids) {
    EXPECT_TRUE(client_->DeleteSession(id).ok());
  }
  status = client_->GetSession(ids[0], &session);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ClientTest, CoSimulateInLockstep) {
  v1::Session session;
  ASSERT_TRUE(client_->CreateSession(Load("pendulum_force_input.json"), "", &session).ok());
  {
    std::unique_ptr<client::CoSimulation> cosim = client_->CoSimulate(session.id());
    v1::Frame frame;
    v1::Certificate certificate;
    for (int k = 1; k <= 5; ++k) {
      grpc::Status status = cosim->DoStep(0.01, {{"Fx", 5.0}}, &frame, &certificate);
      ASSERT_TRUE(status.ok()) << client::FormatStatus(status);
      EXPECT_NEAR(frame.t(), 0.01 * k, 1e-12);
      EXPECT_NEAR(certificate.t_end(), frame.t(), 1e-12);
    }
    EXPECT_GT(frame.q(0), 0.0);  // pushed in +x
    EXPECT_TRUE(cosim->Finish().ok());
  }
  {
    std::unique_ptr<client::CoSimulation> cosim = client_->CoSimulate(session.id());
    v1::Frame frame;
    grpc::Status status = cosim->DoStep(0.01, {{"no_such_input", 1.0}}, &frame);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(client::FormatStatus(status).find("no_such_input"), std::string::npos);
    // The stream is over; later steps report the same error.
    EXPECT_EQ(cosim->DoStep(0.01, {}, &frame).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_TRUE(client_->DeleteSession(session.id()).ok());
}

// A server SIGKILLed and started again on the same port: the calls the
// retry policy covers succeed at once, on the old client and on a new one
// (three trials: a restart is a race between the server's bind and the
// channel's reconnect), and an error is not blamed on TLS once the channel
// has reached the server.
TEST_F(ClientTest, TheFirstCallAfterARestartSucceeds) {
  const v1::SimulationSpec spec = Load("circle_pendulum.json");
  for (int trial = 0; trial < 3; ++trial) {
    auto first = StartServer();
    ASSERT_TRUE(first->ok()) << first->error();
    const std::string address = first->address();
    client::ConnectOptions options;
    options.timeout = std::chrono::seconds(30);
    auto old_client = client::Client::Connect(address, options);
    v1::Session session;
    ASSERT_TRUE(old_client->CreateSession(spec, "", &session).ok());
    ::kill(first->pid(), SIGKILL);
    first->Stop();
    // The same port, now free again.
    std::vector<std::string> argv = {g_server_binary, "--listen", address};
    test_support::ServerProcessOptions quiet;
    quiet.log = test_support::ServerLog::kDiscard;
    test_support::ServerProcess second(std::move(argv), quiet);
    ASSERT_TRUE(second.ok()) << second.error();
    v1::ValidationReport report;
    grpc::Status status = old_client->Validate(spec, &report);
    EXPECT_TRUE(status.ok()) << "trial " << trial << ": " << client::FormatStatus(status);
    v1::Session fresh;
    status = client::Client::Connect(address, options)->CreateSession(spec, "", &fresh);
    EXPECT_TRUE(status.ok()) << "trial " << trial << ": " << client::FormatStatus(status);
    // The old session died with the first server.
    EXPECT_EQ(old_client->GetSession(session.id(), &fresh).error_code(),
              grpc::StatusCode::NOT_FOUND);
    ::kill(second.pid(), SIGKILL);
    second.Stop();
    status = old_client->Validate(spec, &report);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(status.error_message().find("TLS"), std::string::npos) << status.error_message();
  }
}

}  // namespace
}  // namespace tether

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--server-binary") == 0)
      tether::g_server_binary = argv[++i];
    else if (std::strcmp(argv[i], "--source-dir") == 0)
      tether::g_source_dir = argv[++i];
  }
  if (tether::g_server_binary.empty() || tether::g_source_dir.empty()) {
    std::fprintf(stderr, "usage: client_test --server-binary PATH --source-dir DIR\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  return RUN_ALL_TESTS();
}
