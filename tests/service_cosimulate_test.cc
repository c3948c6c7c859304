// tether-server's CoSimulate stream (lockstep steps, inputs, errors) through
// the client library's CoSimulation.
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
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

// The frames of a Run of `steps` steps, one every `every` (none when the
// run fails).
std::vector<v1::Frame> RunFrames(client::Client* client, const std::string& session_id,
                                 uint64_t steps, uint64_t every) {
  std::vector<v1::Frame> run;
  v1::RunRequest request = RunSteps(session_id, steps);
  request.set_every(every);
  v1::Certificate ignored;
  grpc::Status s = client->Run(
      request,
      [&](const v1::Frame& f) {
        run.push_back(f);
        return true;
      },
      &ignored);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return s.ok() ? run : std::vector<v1::Frame>{};
}

// Communication steps of 10 engine steps give the frames of a Run with
// every = 10, bit for bit but for the time (the stream's is t + H, an ulp
// from the run's grid time at most), over 300 communication steps.
TEST_F(ServiceTest, CoSimulateStepsOfKhGiveTheFramesOfARun) {
  v1::SimulationSpec spec = LoadSpec("pendulum_force_input.json");
  spec.mutable_initial()->set_q(0, 0.6);
  spec.mutable_initial()->set_q(1, -0.8);
  std::string run_id = MustCreate(client_.get(), spec);
  const std::vector<v1::Frame> run = RunFrames(client_.get(), run_id, 3000, 10);
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

  // A step the fixed-step grid cannot count (1e300 s at h = 1e-3, 1e303
  // steps against the step counter's 2^62): refused before any step (it
  // computed until the client's deadline, an FMU's doStep never returned).
  {
    std::string big = MustCreate(client_.get(), LoadSpec("pendulum_force_input.json"));
    s = CoSimulateOnce(client_.get(), big, 1e300);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(HasViolation(s, "communication_step")) << s.error_message();
    EXPECT_EQ(s.error_message().rfind("communication_step: ", 0), 0u) << s.error_message();
    EXPECT_NE(s.error_message().find("2^62"), std::string::npos) << s.error_message();
    ASSERT_TRUE(client_->GetSession(big, &session).ok());
    EXPECT_EQ(session.status(), v1::READY);
    EXPECT_EQ(session.step(), 0u);
    EXPECT_TRUE(client_->DeleteSession(big).ok());
  }

  // An adaptive method far from t = 0, where a small step rounds away
  // (10^17 + 1 == 10^17): the error names communication_step, the field
  // the client sent, not BeginRun's until_time.
  v1::SimulationSpec late = LoadSpec("pendulum_force_input.json");
  late.mutable_integrator()->set_method(v1::IntegratorSpec::DOPRI5);
  late.mutable_initial()->set_t(1e17);
  const std::string late_id = MustCreate(client_.get(), late);
  s = CoSimulateOnce(client_.get(), late_id, 1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "communication_step")) << s.error_message();
  EXPECT_EQ(s.error_message().find("until_time"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("rounds away"), std::string::npos) << s.error_message();
  ASSERT_TRUE(client_->GetSession(late_id, &session).ok());
  EXPECT_EQ(session.status(), v1::READY);
  EXPECT_TRUE(client_->DeleteSession(late_id).ok());
}

// restore_state with a state that passes the state checks (finite, on the
// grid) but cannot be evaluated (q = (1e200, 0): the rod's g overflows) is
// INVALID_ARGUMENT naming restore_state.state, and the session stays where
// it was and can go on: the evaluation after the restore used to fail the
// session at the bogus state and lose the one before it.
TEST_F(ServiceTest, CoSimulateRestoreStateThatCannotBeEvaluatedLeavesTheSessionAlone) {
  std::string id = MustCreate(client_.get(), LoadSpec("pendulum_force_input.json"));
  {
    auto stream = client_->CoSimulate(id);
    v1::Frame frame;
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(stream->DoStep(0.01, {}, &frame).ok());
    ASSERT_TRUE(stream->Finish().ok());
  }
  v1::Session before;
  ASSERT_TRUE(client_->GetSession(id, &before).ok());
  ASSERT_EQ(before.step(), 30u);
  for (auto on_failure :
       {v1::CoSimulateRequest::ON_FAILURE_ABORT, v1::CoSimulateRequest::ON_FAILURE_DISCARD}) {
    auto stream = client_->CoSimulate(id);
    v1::CoSimulateRequest restore;
    restore.set_on_failure(on_failure);
    v1::SimulationState* bad = restore.mutable_restore_state();
    bad->mutable_state()->set_t(before.state().t());
    bad->mutable_state()->add_q(1e200);
    bad->mutable_state()->add_q(0);
    bad->mutable_state()->add_v(0);
    bad->mutable_state()->add_v(0);
    bad->set_step(30);
    bad->add_inputs(0);
    bad->set_time_anchor(0);
    bad->set_anchor_steps(30);
    v1::CoSimulateResponse response;
    grpc::Status s = stream->Exchange(restore, &response);
    if (s.ok()) s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_TRUE(HasViolation(s, "restore_state.state")) << s.error_message();
    EXPECT_NE(s.error_message().find("cannot be evaluated"), std::string::npos)
        << s.error_message();
    v1::Session after;
    ASSERT_TRUE(client_->GetSession(id, &after).ok());
    EXPECT_EQ(after.status(), v1::READY);
    EXPECT_EQ(after.step(), 30u);
    EXPECT_EQ(after.state().SerializeAsString(), before.state().SerializeAsString());
  }
  // And it goes on from there.
  auto stream = client_->CoSimulate(id);
  v1::Frame frame;
  ASSERT_TRUE(stream->DoStep(0.01, {}, &frame).ok());
  EXPECT_NEAR(frame.t(), 0.04, 1e-12);
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

// CoSimulateRequest.input_rates ramps the named inputs over that step
// only: a step of 50 engine steps with Fx = 0.5 rising at 1.5/s gives the
// frame (bits) of a Run of the description whose force is the ramp written
// out, `p0 + r*(t - t0)`; the next step holds Fx again. Bad rates are
// INVALID_ARGUMENT naming the field, and leave the session where it was.
TEST_F(ServiceTest, CoSimulateInputRatesRampTheInputsOverThatStepOnly) {
  v1::SimulationSpec ramp = LoadSpec("pendulum_force_input.json");
  ramp.mutable_system()->set_generalized_forces(0, "p0 + r*(t - t0)");
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, double>>{{"p0", 0.5}, {"r", 1.5}, {"t0", 0}}) {
    v1::Parameter* p = ramp.mutable_system()->add_parameters();
    p->set_name(name);
    p->set_value(value);
  }
  std::string run_id = MustCreate(client_.get(), ramp);
  const std::vector<v1::Frame> run = RunFrames(client_.get(), run_id, 50, 50);
  ASSERT_EQ(run.size(), 2u);

  std::string id = MustCreate(client_.get(), LoadSpec("pendulum_force_input.json"));
  auto stream = client_->CoSimulate(id);
  v1::CoSimulateRequest step;
  step.set_communication_step(0.05);
  (*step.mutable_inputs())["Fx"] = 0.5;
  (*step.mutable_input_rates())["Fx"] = 1.5;
  v1::CoSimulateResponse ramped;
  ASSERT_TRUE(stream->Exchange(step, &ramped).ok());
  ASSERT_FALSE(ramped.discarded());
  EXPECT_NEAR(ramped.frame().t(), run[1].t(), 1e-15);
  ramped.mutable_frame()->set_t(run[1].t());
  EXPECT_EQ(ramped.frame().SerializeAsString(), run[1].SerializeAsString());

  // The next step holds Fx = 0.5 (the rates were for that step only): its
  // frame is that of a step with a zero rate from the same state, and not
  // that of a step that goes on ramping.
  v1::CoSimulateRequest save;
  save.set_save_snapshot(true);
  v1::CoSimulateResponse saved;
  ASSERT_TRUE(stream->Exchange(save, &saved).ok());
  auto step_from_saved = [&](const std::map<std::string, double>& rates, bool restore) {
    if (restore) {
      v1::CoSimulateRequest back;
      back.set_restore_snapshot_id(saved.snapshot().snapshot_id());
      v1::CoSimulateResponse restored;
      EXPECT_TRUE(stream->Exchange(back, &restored).ok());
    }
    v1::CoSimulateRequest next;
    next.set_communication_step(0.001);
    for (const auto& [name, rate] : rates) (*next.mutable_input_rates())[name] = rate;
    v1::CoSimulateResponse response;
    EXPECT_TRUE(stream->Exchange(next, &response).ok());
    return response.frame().SerializeAsString();
  };
  const std::string held = step_from_saved({}, false);
  EXPECT_EQ(step_from_saved({{"Fx", 0.0}}, true), held);
  EXPECT_NE(step_from_saved({{"Fx", 1.5}}, true), held);

  ASSERT_TRUE(stream->Finish().ok());

  // Errors, each ending its own stream; the session stays READY.
  for (const auto& [name, rate, field] : std::vector<std::tuple<std::string, double, std::string>>{
           {"torque", 1.0, "input_rates[torque]"}, {"Fx", NAN, "input_rates[Fx]"}}) {
    auto bad_stream = client_->CoSimulate(id);
    v1::CoSimulateRequest bad;
    bad.set_communication_step(0.01);
    (*bad.mutable_input_rates())[name] = rate;
    v1::CoSimulateResponse response;
    grpc::Status s = bad_stream->Exchange(bad, &response);
    if (s.ok()) s = bad_stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field;
    EXPECT_TRUE(HasViolation(s, field)) << s.error_message();
  }
  v1::Session session;
  ASSERT_TRUE(client_->GetSession(id, &session).ok());
  EXPECT_EQ(session.status(), v1::READY);
  EXPECT_EQ(session.step(), 51u);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
  EXPECT_TRUE(client_->DeleteSession(run_id).ok());
}

}  // namespace
}  // namespace tether::service_test
