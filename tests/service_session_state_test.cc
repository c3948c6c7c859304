// Snapshots, portable state, idle-session updates and FMI step semantics
// through a real tether-server and the client library (issue 11 points
// 1-4): rollback and import continue bit for bit; damaged bytes, unknown
// names and bad values are refused naming the field; a discarded
// co-simulation step leaves the session where it was.
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "service_test_fixture.h"
#include "tether/status_details.h"

namespace tether::service_test {
namespace {

// Every frame and the certificate of a Run, as bytes to compare bit for bit.
struct Window {
  grpc::Status status;
  std::string frames, certificate;
  uint64_t last_step = 0;
};

Window RunWindow(client::Client* client, const std::string& id, uint64_t steps) {
  Window w;
  v1::RunRequest request = RunSteps(id, steps);
  v1::Certificate certificate;
  w.status = client->Run(
      request,
      [&](const v1::Frame& f) {
        w.frames += f.SerializeAsString();
        w.last_step = f.step();
        return true;
      },
      &certificate);
  w.certificate = certificate.SerializeAsString();
  return w;
}

void ExpectSame(const Window& a, const Window& b) {
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  ASSERT_TRUE(b.status.ok()) << b.status.error_message();
  EXPECT_EQ(a.last_step, b.last_step);
  EXPECT_FALSE(a.frames.empty());
  EXPECT_TRUE(a.frames == b.frames) << "frames differ";
  EXPECT_FALSE(a.certificate.empty());
  EXPECT_TRUE(a.certificate == b.certificate) << "certificates differ";
}

v1::SimulationSpec ForcedPendulum(const std::string& method) {
  v1::SimulationSpec spec = LoadSpec("pendulum_force_input.json");
  spec.mutable_initial()->set_q(0, 0.6);
  spec.mutable_initial()->set_q(1, -0.8);
  if (method == "DOPRI5") {
    spec.mutable_integrator()->set_method(v1::IntegratorSpec::DOPRI5);
    spec.mutable_integrator()->set_step_size(0);
  }
  return spec;
}

TEST_F(ServiceTest, SnapshotRestoreThenRunIsBitIdentical) {
  for (const char* method : {"RK4", "DOPRI5"}) {
    std::string id = MustCreate(client_.get(), ForcedPendulum(method));
    ASSERT_TRUE(RunWindow(client_.get(), id, 100).status.ok());
    v1::Snapshot snap;
    ASSERT_TRUE(client_->CreateSnapshot(id, "after 100", &snap).ok());
    EXPECT_EQ(snap.session_id(), id);
    EXPECT_EQ(snap.snapshot_id(), 1u);
    EXPECT_EQ(snap.step(), 100u);
    EXPECT_EQ(snap.label(), "after 100");
    const Window first = RunWindow(client_.get(), id, 200);
    // The session goes on elsewhere: another input, more steps.
    {
      auto stream = client_->CoSimulate(id);
      v1::Frame frame;
      ASSERT_TRUE(stream->DoStep(0.05, {{"Fx", 2.0}}, &frame).ok());
      ASSERT_TRUE(stream->Finish().ok());
    }
    v1::Session session;
    ASSERT_TRUE(client_->RestoreSnapshot(id, snap.snapshot_id(), &session).ok());
    EXPECT_EQ(session.id(), id);
    EXPECT_EQ(session.step(), 100u);
    EXPECT_EQ(session.status(), v1::READY);
    EXPECT_EQ(session.snapshot_count(), 1u);
    ExpectSame(first, RunWindow(client_.get(), id, 200));
    EXPECT_TRUE(client_->DeleteSession(id).ok());
  }
}

TEST_F(ServiceTest, SnapshotsAreBoundedListedAndDeleted) {
  std::string id = MustCreate(client_.get(), ForcedPendulum("RK4"));
  // The shared server keeps the default --max-snapshots (64).
  for (int k = 0; k < 70; ++k) {
    v1::Snapshot snap;
    ASSERT_TRUE(client_->CreateSnapshot(id, "", &snap).ok());
    ASSERT_TRUE(RunWindow(client_.get(), id, 1).status.ok());
  }
  v1::ListSnapshotsResponse list;
  ASSERT_TRUE(client_->ListSnapshots(id, &list).ok());
  EXPECT_EQ(list.max_snapshots(), 64u);
  ASSERT_EQ(list.snapshots_size(), 64);
  EXPECT_EQ(list.snapshots(0).snapshot_id(), 7u);  // 1..6 dropped, oldest first
  EXPECT_EQ(list.snapshots(63).snapshot_id(), 70u);
  v1::Session session;
  grpc::Status s = client_->RestoreSnapshot(id, 1, &session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_NE(s.error_message().find("--max-snapshots"), std::string::npos) << s.error_message();
  ASSERT_TRUE(client_->DeleteSnapshot(id, 70).ok());
  EXPECT_EQ(client_->DeleteSnapshot(id, 70).error_code(), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(client_->ListSnapshots(id, &list).ok());
  EXPECT_EQ(list.snapshots_size(), 63);
  // Another tenant's or an unknown session: NOT_FOUND.
  EXPECT_EQ(client_->ListSnapshots("0123456789abcdef0123456789abcdef", &list).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, RestoringASnapshotRecoversAFailedSession) {
  std::string id = MustCreate(client_.get(), BlowUp());
  v1::Snapshot snap;
  ASSERT_TRUE(client_->CreateSnapshot(id, "start", &snap).ok());
  Window w = RunWindow(client_.get(), id, 100000);
  ASSERT_EQ(w.status.error_code(), grpc::StatusCode::ABORTED) << w.status.error_message();
  v1::Session session;
  ASSERT_TRUE(client_->GetSession(id, &session).ok());
  ASSERT_EQ(session.status(), v1::FAILED);
  // Snapshots of a FAILED session are allowed (its last completed step)...
  v1::Snapshot failed_snap;
  ASSERT_TRUE(client_->CreateSnapshot(id, "failed", &failed_snap).ok());
  ASSERT_TRUE(client_->GetSession(id, &session).ok());
  EXPECT_EQ(session.status(), v1::FAILED);
  // ...and restoring a good one makes it READY at step 0.
  ASSERT_TRUE(client_->RestoreSnapshot(id, snap.snapshot_id(), &session).ok());
  EXPECT_EQ(session.status(), v1::READY);
  EXPECT_EQ(session.step(), 0u);
  EXPECT_TRUE(session.error().empty());
  EXPECT_TRUE(RunWindow(client_.get(), id, 5).status.ok());
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, ExportImportContinuesBitIdenticallyAndDamageIsRefused) {
  std::string id = MustCreate(client_.get(), ForcedPendulum("DOPRI5"));
  ASSERT_TRUE(RunWindow(client_.get(), id, 50).status.ok());
  v1::ExportSessionResponse exported;
  ASSERT_TRUE(client_->ExportSession(id, &exported).ok());
  EXPECT_EQ(exported.step(), 50u);
  v1::Session imported;
  ASSERT_TRUE(client_->ImportSession(exported.data(), "copy", &imported).ok());
  EXPECT_NE(imported.id(), id);
  EXPECT_EQ(imported.step(), 50u);
  EXPECT_EQ(imported.display_name(), "copy");
  EXPECT_EQ(imported.status(), v1::READY);
  ExpectSame(RunWindow(client_.get(), id, 120), RunWindow(client_.get(), imported.id(), 120));

  // Damaged bytes: flipped anywhere, truncated, or not an export at all.
  const std::string& bytes = exported.data();
  for (std::size_t i :
       {std::size_t{0}, std::size_t{9}, std::size_t{14}, bytes.size() / 2, bytes.size() - 1}) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    grpc::Status s = client_->ImportSession(damaged, "", &imported);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "byte " << i;
    EXPECT_TRUE(HasViolation(s, "data")) << ViolationFields(s);
  }
  grpc::Status s = client_->ImportSession(bytes.substr(0, bytes.size() - 5), "", &imported);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("truncated"), std::string::npos) << s.error_message();
  s = client_->ImportSession("{\"system\":{}}", "", &imported);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // None of that created a session.
  std::vector<v1::Session> sessions;
  ASSERT_TRUE(client_->ListSessions(&sessions).ok());
  int ours = 0;
  for (const auto& x : sessions) ours += x.id() == id || x.display_name() == "copy";
  EXPECT_EQ(ours, 2);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, ExportOfASnapshotWorksWhileAStreamRunsAndContinuesFromTheSnapshot) {
  std::string id = MustCreate(client_.get(), ForcedPendulum("DOPRI5"));
  ASSERT_TRUE(RunWindow(client_.get(), id, 30).status.ok());
  v1::Snapshot snap;
  ASSERT_TRUE(client_->CreateSnapshot(id, "at 30", &snap).ok());
  // The snapshot's bytes, while a stream holds the session and has moved it on.
  auto stream = client_->CoSimulate(id);
  v1::Frame frame;
  ASSERT_TRUE(stream->DoStep(0.05, {{"Fx", 2.0}}, &frame).ok());
  v1::ExportSessionResponse exported;
  grpc::Status s = client_->ExportSession(id, &exported, snap.snapshot_id());
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(exported.step(), 30u);
  EXPECT_EQ(exported.t(), snap.t());
  // Unknown snapshot: NOT_FOUND naming it; the current state still needs
  // the session idle.
  s = client_->ExportSession(id, &exported, snap.snapshot_id() + 100);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("no snapshot " + std::to_string(snap.snapshot_id() + 100)),
            std::string::npos)
      << s.error_message();
  v1::ExportSessionResponse current;
  EXPECT_EQ(client_->ExportSession(id, &current).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(stream->Finish().ok());
  // Imported, the snapshot continues as the session restored to it does.
  v1::Session imported;
  ASSERT_TRUE(client_->ImportSession(exported.data(), "from snapshot", &imported).ok());
  EXPECT_EQ(imported.step(), 30u);
  v1::Session restored;
  ASSERT_TRUE(client_->RestoreSnapshot(id, snap.snapshot_id(), &restored).ok());
  ExpectSame(RunWindow(client_.get(), id, 60), RunWindow(client_.get(), imported.id(), 60));
  EXPECT_TRUE(client_->DeleteSession(id).ok());
  EXPECT_TRUE(client_->DeleteSession(imported.id()).ok());
}

TEST_F(ServiceTest, UpdateSessionKeepsIdStepAndSnapshotsAndNamesBadFields) {
  std::string id = MustCreate(client_.get(), ForcedPendulum("RK4"));
  ASSERT_TRUE(RunWindow(client_.get(), id, 40).status.ok());
  v1::Snapshot snap;
  ASSERT_TRUE(client_->CreateSnapshot(id, "", &snap).ok());
  const Window before = RunWindow(client_.get(), id, 30);
  v1::Session session;
  ASSERT_TRUE(client_->RestoreSnapshot(id, snap.snapshot_id(), &session).ok());

  // Bad updates: each refused naming its field, the session unchanged.
  struct Bad {
    std::function<void(v1::UpdateSessionRequest*)> set;
    std::string field;
  };
  const std::vector<Bad> bad = {
      {[](v1::UpdateSessionRequest* r) { (*r->mutable_parameters())["nope"] = 1; },
       "parameters[nope]"},
      {[](v1::UpdateSessionRequest* r) { (*r->mutable_parameters())["grav"] = NAN; },
       "parameters[grav]"},
      {[](v1::UpdateSessionRequest* r) { (*r->mutable_constraint_gains())["rod"].set_alpha(-1); },
       "constraint_gains[rod].alpha"},
      {[](v1::UpdateSessionRequest* r) { r->mutable_baumgarte()->set_beta(INFINITY); },
       "baumgarte.beta"},
      {[](v1::UpdateSessionRequest* r) { (*r->mutable_input_defaults())["Fy"] = 1; },
       "input_defaults[Fy]"},
      {[](v1::UpdateSessionRequest* r) { (*r->mutable_inputs())["Fx"] = NAN; }, "inputs[Fx]"},
      {[](v1::UpdateSessionRequest* r) { r->mutable_state()->add_q(1); }, "state.q"},
      // Many unknown names: counted first, the first 64 listed.
      {[](v1::UpdateSessionRequest* r) {
         for (int k = 0; k < 100000; ++k) (*r->mutable_parameters())["p" + std::to_string(k)] = 1;
       },
       "parameters"},
  };
  for (const auto& b : bad) {
    v1::UpdateSessionRequest request;
    request.set_session_id(id);
    b.set(&request);
    grpc::Status s = client_->UpdateSession(request, &session);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << b.field;
    EXPECT_TRUE(HasViolation(s, b.field)) << b.field << " vs " << ViolationFields(s);
    // The message names the request's fields as the details do, not the
    // description's (it said system.parameters[0].value where the details
    // said parameters[grav]; found by an audit).
    for (const char* spec_path :
         {"system.parameters[", "system.constraints[", "system.baumgarte", "system.inputs["}) {
      EXPECT_EQ(s.error_message().find(spec_path), std::string::npos) << s.error_message();
    }
  }
  ExpectSame(before, RunWindow(client_.get(), id, 30));  // unchanged by the refusals
  ASSERT_TRUE(client_->RestoreSnapshot(id, snap.snapshot_id(), &session).ok());

  // A good update: new gravity and gains; id, step counter and snapshots stay.
  v1::UpdateSessionRequest request;
  request.set_session_id(id);
  (*request.mutable_parameters())["grav"] = 1.62;
  (*request.mutable_constraint_gains())["rod"].set_alpha(20);
  (*request.mutable_constraint_gains())["rod"].set_beta(20);
  ASSERT_TRUE(client_->UpdateSession(request, &session).ok());
  EXPECT_EQ(session.id(), id);
  EXPECT_EQ(session.step(), 40u);
  EXPECT_EQ(session.snapshot_count(), 1u);
  const Window moon = RunWindow(client_.get(), id, 30);
  ASSERT_TRUE(moon.status.ok());
  EXPECT_FALSE(moon.frames == before.frames);
  // The snapshot belongs to the earlier description: restoring it brings
  // that back too, and the run is the one before the update.
  ASSERT_TRUE(client_->RestoreSnapshot(id, snap.snapshot_id(), &session).ok());
  ExpectSame(before, RunWindow(client_.get(), id, 30));

  // The state and an input, without recompiling.
  v1::UpdateSessionRequest move;
  move.set_session_id(id);
  move.mutable_state()->set_t(5);
  move.mutable_state()->add_q(0);
  move.mutable_state()->add_q(-1);
  (*move.mutable_inputs())["Fx"] = 0.5;
  ASSERT_TRUE(client_->UpdateSession(move, &session).ok());
  EXPECT_EQ(session.state().t(), 5);
  EXPECT_EQ(session.step(), 70u);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

// UpdateSession's certificate options choose the certificate of every
// later step, and so of a CoSimulate stream opened after it: off (none,
// the same frames), ENCLOSED (charged its larger memory); bad options are
// refused on certificate.*.
TEST_F(ServiceTest, UpdateSessionChoosesTheCertificateOfLaterCoSimulateSteps) {
  const std::string plain = MustCreate(client_.get(), ForcedPendulum("RK4"));
  const std::string chosen = MustCreate(client_.get(), ForcedPendulum("RK4"));
  auto steps = [&](const std::string& id, int n, std::vector<v1::CoSimulateResponse>* out) {
    auto stream = client_->CoSimulate(id);
    v1::CoSimulateRequest step;
    step.set_communication_step(0.01);
    for (int k = 0; k < n; ++k) {
      v1::CoSimulateResponse r;
      ASSERT_TRUE(stream->Exchange(step, &r).ok());
      out->push_back(r);
    }
    ASSERT_TRUE(stream->Finish().ok());
  };
  v1::Session session;
  {
    v1::UpdateSessionRequest bad;
    bad.set_session_id(chosen);
    bad.mutable_certificate()->set_samples_per_step(65);
    grpc::Status s = client_->UpdateSession(bad, &session);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(HasViolation(s, "certificate.samples_per_step")) << ViolationFields(s);
  }
  v1::UpdateSessionRequest off;
  off.set_session_id(chosen);
  off.mutable_certificate()->set_disabled(true);
  ASSERT_TRUE(client_->UpdateSession(off, &session).ok());
  std::vector<v1::CoSimulateResponse> with, without;
  steps(plain, 5, &with);
  steps(chosen, 5, &without);
  ASSERT_EQ(with.size(), without.size());
  for (size_t k = 0; k < with.size(); ++k) {
    EXPECT_EQ(with[k].frame().SerializeAsString(), without[k].frame().SerializeAsString());
    EXPECT_GT(with[k].certificate().steps(), 0u);
    EXPECT_GT(with[k].certificate().position_bound(), 0);
    EXPECT_EQ(without[k].certificate().steps(), 0u);  // none recorded
    EXPECT_EQ(without[k].certificate().constraints_size(), 0);
  }
  const uint64_t sampled_bytes = session.memory_bytes();
  v1::UpdateSessionRequest enclosed;
  enclosed.set_session_id(chosen);
  enclosed.mutable_certificate()->set_mode(v1::CertificateOptions::ENCLOSED);
  ASSERT_TRUE(client_->UpdateSession(enclosed, &session).ok());
  EXPECT_GT(session.memory_bytes(), sampled_bytes);  // the encloser is charged
  std::vector<v1::CoSimulateResponse> proven;
  steps(chosen, 2, &proven);
  for (const auto& r : proven) {
    EXPECT_EQ(r.certificate().mode(), v1::CertificateOptions::ENCLOSED);
    EXPECT_GT(r.certificate().enclosure_pieces(), 0u);
  }
  EXPECT_TRUE(client_->DeleteSession(plain).ok());
  EXPECT_TRUE(client_->DeleteSession(chosen).ok());
}

TEST_F(ServiceTest, CoSimulateDiscardLeavesTheSessionAtItsLastGoodState) {
  std::string id = MustCreate(client_.get(), ForcedPendulum("RK4"));
  auto stream = client_->CoSimulate(id);
  v1::CoSimulateRequest step;
  step.set_communication_step(0.01);
  step.set_on_failure(v1::CoSimulateRequest::ON_FAILURE_DISCARD);
  v1::CoSimulateResponse good;
  ASSERT_TRUE(stream->Exchange(step, &good).ok());
  EXPECT_FALSE(good.discarded());
  // A force that overflows the state: the step fails and is undone.
  v1::CoSimulateRequest bad = step;
  bad.set_communication_step(0.02);  // variable communication steps are fine
  (*bad.mutable_inputs())["Fx"] = 1e308;
  v1::CoSimulateResponse discarded;
  ASSERT_TRUE(stream->Exchange(bad, &discarded).ok());
  EXPECT_TRUE(discarded.discarded());
  EXPECT_EQ(discarded.last_successful_time(), good.frame().t());
  EXPECT_FALSE(discarded.discard_reason().empty());
  EXPECT_TRUE(discarded.has_certificate());
  EXPECT_EQ(discarded.frame().SerializeAsString().size() > 0, true);
  EXPECT_EQ(discarded.frame().q(0), good.frame().q(0));
  EXPECT_EQ(discarded.frame().step(), good.frame().step());
  // The retry with a sane input continues exactly as if the failure had not
  // happened: compare with a second session stepped without it.
  (*step.mutable_inputs())["Fx"] = 0.0;
  v1::CoSimulateResponse retried;
  ASSERT_TRUE(stream->Exchange(step, &retried).ok());
  EXPECT_FALSE(retried.discarded());
  ASSERT_TRUE(stream->Finish().ok());

  std::string other = MustCreate(client_.get(), ForcedPendulum("RK4"));
  auto clean = client_->CoSimulate(other);
  v1::Frame f1, f2;
  ASSERT_TRUE(clean->DoStep(0.01, {}, &f1).ok());
  ASSERT_TRUE(clean->DoStep(0.01, {{"Fx", 0.0}}, &f2).ok());
  ASSERT_TRUE(clean->Finish().ok());
  EXPECT_EQ(f2.SerializeAsString(), retried.frame().SerializeAsString());
  v1::Session session;
  ASSERT_TRUE(client_->GetSession(id, &session).ok());
  EXPECT_EQ(session.status(), v1::READY);

  // Without ON_FAILURE_DISCARD the old contract holds: ABORTED, FAILED.
  auto abort_stream = client_->CoSimulate(id);
  v1::Frame frame;
  grpc::Status s = abort_stream->DoStep(0.01, {{"Fx", 1e308}}, &frame);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED) << s.error_message();
  ASSERT_TRUE(client_->GetSession(id, &session).ok());
  EXPECT_EQ(session.status(), v1::FAILED);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
  EXPECT_TRUE(client_->DeleteSession(other).ok());
}

TEST_F(ServiceTest, CoSimulateSnapshotCommandsRollBackInsideTheStream) {
  std::string id = MustCreate(client_.get(), ForcedPendulum("DOPRI5"));
  auto stream = client_->CoSimulate(id);
  v1::Frame frame;
  ASSERT_TRUE(stream->DoStep(0.02, {{"Fx", 0.3}}, &frame).ok());
  v1::CoSimulateRequest save;
  save.set_save_snapshot(true);
  save.set_snapshot_label("fmi2GetFMUstate");
  v1::CoSimulateResponse saved;
  ASSERT_TRUE(stream->Exchange(save, &saved).ok());
  ASSERT_GT(saved.snapshot().snapshot_id(), 0u);
  EXPECT_EQ(saved.frame().t(), frame.t());
  v1::Frame a1, a2, b1, b2;
  v1::Certificate ca, cb;
  ASSERT_TRUE(stream->DoStep(0.03, {{"Fx", -1.0}}, &a1).ok());
  ASSERT_TRUE(stream->DoStep(0.01, {}, &a2, &ca).ok());
  v1::CoSimulateRequest restore;
  restore.set_restore_snapshot_id(saved.snapshot().snapshot_id());
  v1::CoSimulateResponse restored;
  ASSERT_TRUE(stream->Exchange(restore, &restored).ok());
  EXPECT_EQ(restored.frame().SerializeAsString(), saved.frame().SerializeAsString());
  ASSERT_TRUE(stream->DoStep(0.03, {{"Fx", -1.0}}, &b1).ok());
  ASSERT_TRUE(stream->DoStep(0.01, {}, &b2, &cb).ok());
  EXPECT_EQ(a1.SerializeAsString(), b1.SerializeAsString());
  EXPECT_EQ(a2.SerializeAsString(), b2.SerializeAsString());
  EXPECT_EQ(ca.SerializeAsString(), cb.SerializeAsString());
  // Bad commands end the stream naming the field.
  v1::CoSimulateRequest both = save;
  both.set_restore_snapshot_id(1);
  v1::CoSimulateResponse ignored;
  grpc::Status s = stream->Exchange(both, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "restore_snapshot_id")) << ViolationFields(s);
  auto again = client_->CoSimulate(id);
  v1::CoSimulateRequest unknown;
  unknown.set_restore_snapshot_id(999);
  s = again->Exchange(unknown, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, SessionStateCallsOnARunningSessionAreFailedPrecondition) {
  std::string id = MustCreate(client_.get(), ForcedPendulum("RK4"));
  auto stream = client_->CoSimulate(id);
  v1::Frame frame;
  ASSERT_TRUE(stream->DoStep(0.01, {}, &frame).ok());  // the stream holds the session
  v1::Snapshot snap;
  EXPECT_EQ(client_->CreateSnapshot(id, "", &snap).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::ExportSessionResponse exported;
  EXPECT_EQ(client_->ExportSession(id, &exported).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::UpdateSessionRequest update;
  update.set_session_id(id);
  (*update.mutable_parameters())["grav"] = 1;
  v1::Session session;
  EXPECT_EQ(client_->UpdateSession(update, &session).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(client_->CreateSnapshot(id, "", &snap).ok());
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

// GetSession with SESSION_VIEW_FULL: the frame at the session's state, the
// same bits as the last frame a Run emitted there; none by default;
// refused while a stream holds the session; a read that changes nothing.
TEST_F(ServiceTest, GetSessionWithTheFullViewHasTheCurrentFrame) {
  const std::string id = MustCreate(client_.get(), ForcedPendulum("RK4"));
  v1::Session basic;
  ASSERT_TRUE(client_->GetSession(id, &basic).ok());
  EXPECT_FALSE(basic.has_frame());

  v1::RunRequest run;
  run.set_session_id(id);
  run.set_steps(37);
  run.set_every(100);
  v1::Frame last;
  ASSERT_TRUE(client_
                  ->Run(run,
                        [&](const v1::Frame& f) {
                          last = f;
                          return true;
                        })
                  .ok());
  ASSERT_EQ(last.step(), 37u);

  v1::Session full, before;
  ASSERT_TRUE(client_->GetSession(id, &before).ok());
  ASSERT_TRUE(client_->GetSession(id, &full, v1::SESSION_VIEW_FULL).ok());
  ASSERT_TRUE(full.has_frame());
  EXPECT_EQ(full.frame().SerializeAsString(), last.SerializeAsString());
  EXPECT_EQ(full.step(), 37u);
  EXPECT_EQ(full.status(), v1::READY);
  // Nothing changed: the update time is the one before the call.
  v1::Session after;
  ASSERT_TRUE(client_->GetSession(id, &after).ok());
  EXPECT_EQ(after.update_time().SerializeAsString(), before.update_time().SerializeAsString());

  auto stream = client_->CoSimulate(id);
  v1::Frame stepped;
  ASSERT_TRUE(stream->DoStep(0.01, {}, &stepped).ok());  // the stream holds the session
  grpc::Status held = client_->GetSession(id, &full, v1::SESSION_VIEW_FULL);
  EXPECT_EQ(held.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(held.error_message().find("SESSION_VIEW_FULL"), std::string::npos)
      << held.error_message();
  EXPECT_TRUE(client_->GetSession(id, &basic).ok());  // the basic view still answers
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_TRUE(client_->GetSession(id, &full, v1::SESSION_VIEW_FULL).ok());
  EXPECT_EQ(full.frame().SerializeAsString(), stepped.SerializeAsString());
  // A view this server does not know is a bad field, not BASIC (found by
  // an audit).
  grpc::Status unknown = client_->GetSession(id, &full, static_cast<v1::SessionView>(7));
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(unknown.error_message().find("view"), std::string::npos) << unknown.error_message();
  EXPECT_EQ(client::FieldViolations(unknown).size(), 1u);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

// A session export re-encoded after `edit` changed its payload (a hand-made
// export: the checksum is only against damage, anyone can compute it).
std::string Reencoded(const std::string& data,
                      const std::function<void(v1::SessionExport*)>& edit) {
  v1::SessionExport payload;
  EXPECT_TRUE(DecodeSessionExport(data, &payload, "data").ok());
  edit(&payload);
  return EncodeSessionExport(std::move(payload));
}

TEST_F(ServiceTest, ImportCutsALongDisplayNameAtACharacterBoundary) {
  std::string id = MustCreate(client_.get(), Pendulum());
  v1::ExportSessionResponse exported;
  ASSERT_TRUE(client_->ExportSession(id, &exported).ok());
  // 'a' then 200 two-byte characters: byte 256 is the first byte of the
  // 128th, so a plain cut at 256 bytes would keep half a character.
  std::string long_name = "a";
  for (int i = 0; i < 200; ++i) long_name += "\xc3\xa9";  // U+00E9
  const std::string data =
      Reencoded(exported.data(), [&](v1::SessionExport* p) { p->set_display_name(long_name); });
  v1::Session imported;
  grpc::Status s = client_->ImportSession(data, "", &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(imported.display_name(), long_name.substr(0, 255));
  // Every later response carrying the name still parses.
  std::vector<v1::Session> sessions;
  s = client_->ListSessions(&sessions);
  ASSERT_TRUE(s.ok()) << s.error_message();
  bool found = false;
  for (const v1::Session& listed : sessions) {
    if (listed.id() == imported.id()) {
      found = true;
      EXPECT_EQ(listed.display_name(), long_name.substr(0, 255));
    }
  }
  EXPECT_TRUE(found);
  // Invalid UTF-8 inside the export's name never gets that far: protobuf's
  // parser refuses the payload (proto3 strings are checked).
  const std::string invalid = Reencoded(
      exported.data(), [&](v1::SessionExport* p) { p->set_display_name("bad \xff\xfe name"); });
  s = client_->ImportSession(invalid, "", &imported);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, ImportRefusesAStepCounterThatWouldWrap) {
  std::string id = MustCreate(client_.get(), Pendulum());
  v1::ExportSessionResponse exported;
  ASSERT_TRUE(client_->ExportSession(id, &exported).ok());
  v1::Session imported;
  for (uint64_t step : {UINT64_MAX, Simulation::kMaxStep + 1}) {
    const std::string data = Reencoded(
        exported.data(), [&](v1::SessionExport* p) { p->mutable_state()->set_step(step); });
    grpc::Status s = client_->ImportSession(data, "", &imported);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << step;
    EXPECT_TRUE(HasViolation(s, "data.state.step")) << ViolationFields(s);
  }
  const std::string anchored = Reencoded(exported.data(), [&](v1::SessionExport* p) {
    p->mutable_state()->set_anchor_steps(UINT64_MAX);
  });
  grpc::Status s = client_->ImportSession(anchored, "", &imported);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "data.state.anchor_steps")) << ViolationFields(s);

  // At the limit the import is accepted and a run stops before the
  // counter passes it, however many steps it asks for.
  const std::string at_limit = Reencoded(exported.data(), [&](v1::SessionExport* p) {
    p->mutable_state()->set_step(Simulation::kMaxStep - 2);
  });
  s = client_->ImportSession(at_limit, "", &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  RunResult run = RunToEnd(client_.get(), RunSteps(imported.id(), UINT64_MAX));
  EXPECT_EQ(run.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << run.status.error_message();
  EXPECT_NE(run.status.error_message().find("step counter"), std::string::npos)
      << run.status.error_message();
  v1::Session after;
  ASSERT_TRUE(client_->GetSession(imported.id(), &after).ok());
  EXPECT_EQ(after.step(), Simulation::kMaxStep);
  EXPECT_TRUE(client_->DeleteSession(imported.id()).ok());
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

}  // namespace
}  // namespace tether::service_test
