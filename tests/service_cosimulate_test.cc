// tether-server's CoSimulate stream (lockstep steps, inputs, errors) through
// the client library's CoSimulation.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "service_test_fixture.h"

namespace tether::service_test {
namespace {

TEST_F(ServiceTest, CoSimulateLockstep) {
  std::string id = MustCreate(client_.get(), LoadSpec("pendulum_force_input.json"));
  auto stream = client_->CoSimulate(id);
  v1::Frame frame;
  v1::Certificate certificate;

  grpc::Status st = stream->DoStep(0.01, {}, &frame, &certificate);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(frame.t(), 0.0 + 0.01);
  EXPECT_EQ(frame.step(), 10u);
  EXPECT_EQ(certificate.steps(), 10u);
  const double x_free = frame.q(0);

  st = stream->DoStep(0.005, {{"Fx", 5.0}}, &frame, &certificate);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(frame.t(), 0.01 + 0.005);
  EXPECT_EQ(frame.step(), 15u);
  EXPECT_GT(frame.q(0), x_free);  // pushed by Fx

  // Half-close: no further response, and a clean end.
  st = stream->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();

  v1::Session s;
  ASSERT_TRUE(client_->GetSession(id, &s).ok());
  EXPECT_EQ(s.status(), v1::READY);
  EXPECT_EQ(s.step(), 15u);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

// Communication steps of 10 engine steps give the frames of a Run with
// every = 10, bit for bit but for the time (the stream's is t + H, an ulp
// from the run's grid time at most), over 300 communication steps.
TEST_F(ServiceTest, CoSimulateStepsOfKhGiveTheFramesOfARun) {
  v1::SimulationSpec spec = LoadSpec("pendulum_force_input.json");
  spec.mutable_initial()->set_q(0, 0.6);
  spec.mutable_initial()->set_q(1, -0.8);
  std::string run_id = MustCreate(client_.get(), spec);
  std::vector<v1::Frame> run;
  v1::RunRequest request = RunSteps(run_id, 3000);
  request.set_every(10);
  v1::Certificate ignored;
  ASSERT_TRUE(client_
                  ->Run(
                      request,
                      [&](const v1::Frame& f) {
                        run.push_back(f);
                        return true;
                      },
                      &ignored)
                  .ok());
  ASSERT_EQ(run.size(), 301u);

  std::string id = MustCreate(client_.get(), spec);
  auto stream = client_->CoSimulate(id);
  int differing = 0;
  for (size_t p = 1; p < run.size(); ++p) {
    v1::Frame frame;
    ASSERT_TRUE(stream->DoStep(0.01, {}, &frame).ok());
    EXPECT_EQ(frame.step(), run[p].step());
    EXPECT_NEAR(frame.t(), run[p].t(), 1e-15 * static_cast<double>(p));
    frame.set_t(run[p].t());
    if (frame.SerializeAsString() != run[p].SerializeAsString()) ++differing;
  }
  EXPECT_EQ(differing, 0);
  ASSERT_TRUE(stream->Finish().ok());
}

// One step of `communication_step` with `inputs` on a new stream on
// `session_id`: the step's status (the stream's final status on failure).
grpc::Status CoSimulateOnce(client::Client* client, const std::string& session_id,
                            double communication_step,
                            const std::map<std::string, double>& inputs = {}) {
  auto stream = client->CoSimulate(session_id);
  v1::Frame frame;
  grpc::Status status = stream->DoStep(communication_step, inputs, &frame);
  if (!status.ok()) return status;
  return stream->Finish();
}

TEST_F(ServiceTest, CoSimulateErrors) {
  std::string id = MustCreate(client_.get(), LoadSpec("pendulum_force_input.json"));
  EXPECT_EQ(CoSimulateOnce(client_.get(), "0123456789abcdef0123456789abcdef", 0.01).error_code(),
            grpc::StatusCode::NOT_FOUND);

  grpc::Status s = CoSimulateOnce(client_.get(), id, 0);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "communication_step"));

  s = CoSimulateOnce(client_.get(), id, 0.01, {{"torque", 1}});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("torque"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("Fx"), std::string::npos) << s.error_message();

  s = CoSimulateOnce(client_.get(), "", 0.01);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "session_id"));

  // None of that advanced or broke the session.
  v1::Session session;
  ASSERT_TRUE(client_->GetSession(id, &session).ok());
  EXPECT_EQ(session.status(), v1::READY);
  EXPECT_EQ(session.step(), 0u);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

}  // namespace
}  // namespace tether::service_test
