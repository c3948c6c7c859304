// tether-server's stateless RPCs, Validate and Evaluate, through the client
// library.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "service_test_fixture.h"
#include "test_util.h"

namespace tether::service_test {
namespace {

TEST_F(ServiceTest, ValidateReportsWithoutRpcError) {
  v1::SimulationSpec spec = Pendulum();
  v1::ValidationReport report;
  grpc::Status s = client_->Validate(spec, &report);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(report.valid());

  // An invalid spec is a report, not an RPC error.
  spec.mutable_system()->clear_coordinates();
  s = client_->Validate(spec, &report);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(report.valid());
  EXPECT_GT(report.diagnostics_size(), 0);
}

// Named definitions (issue 23) through the service: the example validates
// and runs as a session; a definition's error is reported at its field in
// Validate's report and as CreateSession's violation under "spec.".
TEST_F(ServiceTest, DefinitionsThroughValidateAndCreateSession) {
  v1::SimulationSpec spec = LoadSpec("double_pendulum_definitions.json");
  ASSERT_GT(spec.system().definitions_size(), 0);
  v1::ValidationReport report;
  ASSERT_TRUE(client_->Validate(spec, &report).ok());
  EXPECT_TRUE(report.valid()) << report.ShortDebugString();
  EXPECT_EQ(report.diagnostics_size(), 0) << report.ShortDebugString();
  const std::string id = MustCreate(client_.get(), spec);
  ASSERT_FALSE(id.empty());
  RunResult run = RunToEnd(client_.get(), RunSteps(id, 10));
  ASSERT_TRUE(run.status.ok()) << run.status.error_message();
  ASSERT_FALSE(run.frames.empty());
  EXPECT_EQ(run.frames.back().outputs_size(), 3);
  EXPECT_TRUE(client_->DeleteSession(id).ok());

  spec.mutable_system()->mutable_definitions(2)->set_expression("x1 + l2*sin(th2) + y2");
  ASSERT_TRUE(client_->Validate(spec, &report).ok());
  EXPECT_FALSE(report.valid());
  ASSERT_EQ(report.diagnostics_size(), 1) << report.ShortDebugString();
  EXPECT_EQ(report.diagnostics(0).field(), "system.definitions[2].expression");
  EXPECT_NE(report.diagnostics(0).message().find(
                "column 20: definition 'y2' is used before it is defined"),
            std::string::npos)
      << report.diagnostics(0).message();
  v1::Session session;
  grpc::Status s = client_->CreateSession(spec, "", &session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "spec.system.definitions[2].expression")) << ViolationFields(s);
}

TEST_F(ServiceTest, EvaluateAndItsErrors) {
  {
    v1::EvaluateRequest req;
    *req.mutable_spec() = Pendulum();
    v1::EvaluateResponse resp;
    grpc::Status s = client_->Evaluate(req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.frame().q_size(), 2);
    EXPECT_EQ(resp.frame().q(0), 1.0);
    EXPECT_EQ(resp.frame().a_size(), 2);
  }
  {  // A bad expression: INVALID_ARGUMENT with the path under "spec.".
    v1::EvaluateRequest req;
    *req.mutable_spec() = Pendulum();
    req.mutable_spec()->mutable_system()->mutable_constraints(0)->set_expression(
        "(x^2 + y^2 - l^2)/2 + ?");
    v1::EvaluateResponse resp;
    grpc::Status s = client_->Evaluate(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(HasViolation(s, "spec.system.constraints[0].expression"))
        << ViolationFields(s) << s.error_message();
  }
  {  // An unknown input: INVALID_ARGUMENT naming it.
    v1::EvaluateRequest req;
    *req.mutable_spec() = LoadSpec("pendulum_force_input.json");
    (*req.mutable_inputs())["nope"] = 1;
    v1::EvaluateResponse resp;
    grpc::Status s = client_->Evaluate(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("nope"), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find("Fx"), std::string::npos) << s.error_message();
    EXPECT_TRUE(HasViolation(s, "inputs[nope]")) << ViolationFields(s);
  }
  {  // A state of the wrong length.
    v1::EvaluateRequest req;
    *req.mutable_spec() = Pendulum();
    req.mutable_state()->add_q(1);
    v1::EvaluateResponse resp;
    grpc::Status s = client_->Evaluate(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(HasViolation(s, "state")) << ViolationFields(s);
  }
}

namespace compile_limits {

using testing::SwellingKineticEnergy;

TEST_F(ServiceTest, HostileSpecIsResourceExhaustedNamingTheField) {
  v1::ValidationReport report;
  grpc::Status s = client_->Validate(SwellingKineticEnergy(1024), &report);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("max_nodes"), std::string::npos) << s.error_message();
  EXPECT_TRUE(HasViolation(s, "spec.system.kinetic_energy")) << ViolationFields(s);

  v1::Session session;
  s = client_->CreateSession(SwellingKineticEnergy(1024), "hostile", &session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
}

// One worker and limits that only a deadline reaches: the client's deadline
// stops the compile, and the worker is free for the next call.
TEST(ServiceCompileDeadlineTest, DeadlineStopsTheCompileAndFreesTheWorker) {
  auto server =
      StartServer({"--workers", "1", "--max-compile-nodes", "1000000000", "--max-derivative-nodes",
                   "10000000000", "--compile-time-budget", "0"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto hurried = ConnectClient(server->address(), 1s);
  v1::ValidationReport report;
  grpc::Status s = hurried->Validate(SwellingKineticEnergy(1536), &report);
  EXPECT_TRUE(s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
              s.error_code() == grpc::StatusCode::CANCELLED)
      << s.error_code() << " " << s.error_message();
  // Unstopped, that compile holds the only worker for about 20 s (measured
  // without limits on a loaded 2-core machine; minutes before the
  // compiler's reverse accumulation); stopped, a light call gets through
  // well within its deadline.
  auto next = ConnectClient(server->address(), 5s);
  s = next->Validate(Pendulum(), &report);
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  EXPECT_TRUE(report.valid());
}

}  // namespace compile_limits

}  // namespace
}  // namespace tether::service_test
