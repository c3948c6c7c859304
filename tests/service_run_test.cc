// tether-server's Run stream through the client library: batching, every,
// until_time, errors, one run per session, cancellation, flow control, a
// failing run, and a hundred sessions at once.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "service_test_fixture.h"
#include "support/raw_calls.h"

namespace tether::service_test {
namespace {

TEST_F(ServiceTest, RunStreamsConsecutiveFramesAndContinues) {
  std::string id = MustCreate(client_.get(), Pendulum());
  v1::RunRequest req = RunSteps(id, 1000);
  req.set_frames_per_message(100);
  RunResult r = RunToEnd(client_.get(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  // The first run emits the initial state: steps 0..1000.
  ASSERT_EQ(r.frames.size(), 1001u);
  EXPECT_TRUE(Consecutive(r.frames, 0));
  for (std::size_t i = 0; i < r.messages.size(); ++i) {
    EXPECT_LE(r.messages[i].frames_size(), 100);
    EXPECT_EQ(r.messages[i].has_certificate(), i + 1 == r.messages.size()) << i;
  }
  EXPECT_EQ(r.messages.back().certificate().steps(), 1000u);

  v1::Session s;
  ASSERT_TRUE(client_->GetSession(id, &s).ok());
  EXPECT_EQ(s.status(), v1::READY);
  EXPECT_EQ(s.step(), 1000u);
  EXPECT_EQ(s.state().t(), r.frames.back().t());
  EXPECT_EQ(s.state().q(0), r.frames.back().q(0));

  // A later run continues and does not repeat the last frame.
  r = RunToEnd(client_.get(), RunSteps(id, 10));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_EQ(r.frames.size(), 10u);
  EXPECT_TRUE(Consecutive(r.frames, 1001));
  ASSERT_EQ(r.messages.size(), 1u);  // default 256 frames per message

  // every = 3: run steps 3, 6, 9 and the last (10).
  req = RunSteps(id, 10);
  req.set_every(3);
  req.set_include_certificate(false);
  r = RunToEnd(client_.get(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  std::vector<uint64_t> steps;
  for (const auto& f : r.frames) steps.push_back(f.step());
  EXPECT_EQ(steps, (std::vector<uint64_t>{1013, 1016, 1019, 1020}));
  EXPECT_FALSE(r.messages.back().has_certificate());

  // until_time: lands exactly on it.
  ASSERT_TRUE(client_->GetSession(id, &s).ok());
  double until = s.state().t() + 0.0105;
  req = v1::RunRequest();
  req.set_session_id(id);
  req.set_until_time(until);
  r = RunToEnd(client_.get(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_FALSE(r.frames.empty());
  EXPECT_EQ(r.frames.back().t(), until);
  EXPECT_TRUE(Consecutive(r.frames, 1021));
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, RunErrors) {
  std::string id = MustCreate(client_.get(), Pendulum());
  RunResult r = RunToEnd(client_.get(), RunSteps("0123456789abcdef0123456789abcdef", 10));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::NOT_FOUND);

  v1::RunRequest req;
  req.set_session_id(id);
  r = RunToEnd(client_.get(), req);  // neither steps nor until_time
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(r.status, "steps")) << ViolationFields(r.status);

  req = RunSteps(id, 10);
  req.set_frames_per_message(70000);
  r = RunToEnd(client_.get(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(r.status, "frames_per_message"));

  req = v1::RunRequest();
  req.set_session_id(id);
  req.set_until_time(-1);  // earlier than the session's time
  r = RunToEnd(client_.get(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(r.status, "until_time")) << ViolationFields(r.status);
  EXPECT_TRUE(r.frames.empty());
  // A run refused before it began sends its status alone: an empty
  // certificate first looked like a finished run whose every judgement
  // failed (found by an audit).
  EXPECT_TRUE(r.messages.empty()) << r.messages.front().DebugString();
  req.set_until_time(1);
  req.set_output_interval(1e-300);
  r = RunToEnd(client_.get(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(r.messages.empty()) << r.messages.front().DebugString();

  // Run takes its request as bytes: bytes that are no RunRequest (a
  // truncated length-delimited field) are INVALID_ARGUMENT, not a crash.
  std::string ignored;
  grpc::Status raw = test_support::RawUnary(client_->channel(), "/tether.v1.Simulator/Run",
                                            std::string("\x0a\x20"
                                                        "0123",
                                                        6),
                                            &ignored);
  EXPECT_EQ(raw.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << raw.error_message();
  EXPECT_NE(raw.error_message().find("RunRequest"), std::string::npos) << raw.error_message();

  // The session is still usable.
  v1::Session s;
  ASSERT_TRUE(client_->GetSession(id, &s).ok());
  EXPECT_EQ(s.status(), v1::READY);
  r = RunToEnd(client_.get(), RunSteps(id, 5));
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, ConcurrentRunOnOneSessionIsFailedPrecondition) {
  std::string id = MustCreate(client_.get(), Pendulum());
  int messages = 0;
  // On the first message (it is running), try a second Run and a
  // CoSimulate on the same session, then cancel.
  grpc::Status first = client_->RunMessages(RunSteps(id, 1000000000), [&](const v1::RunResponse&) {
    ++messages;
    v1::Session s;
    EXPECT_TRUE(client_->GetSession(id, &s).ok());
    EXPECT_EQ(s.status(), v1::RUNNING);

    RunResult second = RunToEnd(client_.get(), RunSteps(id, 10));
    EXPECT_EQ(second.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
        << second.status.error_message();
    EXPECT_TRUE(second.frames.empty());

    auto cosim = client_->CoSimulate(id);
    v1::Frame frame;
    EXPECT_EQ(cosim->DoStep(0.01, {}, &frame).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    return false;
  });
  ASSERT_EQ(messages, 1);
  EXPECT_EQ(first.error_code(), grpc::StatusCode::CANCELLED);

  v1::Session s;
  ASSERT_TRUE(WaitSession(
      client_.get(), id, [](const v1::Session& x) { return x.status() == v1::READY; }, &s));
  // The next run continues from the last completed step.
  RunResult next = RunToEnd(client_.get(), RunSteps(id, 3));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  ASSERT_EQ(next.frames.size(), 3u);
  EXPECT_TRUE(Consecutive(next.frames, s.step() + 1));
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, CancelMidStreamStopsStepping) {
  std::string id = MustCreate(client_.get(), Pendulum());
  {
    v1::RunRequest req = RunSteps(id, 1000000000);
    req.set_frames_per_message(16);
    uint64_t expected = 0;
    int messages = 0;
    grpc::Status st = client_->RunMessages(req, [&](const v1::RunResponse& msg) {
      for (const auto& f : msg.frames()) EXPECT_EQ(f.step(), expected++);
      return ++messages < 5;
    });
    ASSERT_EQ(messages, 5);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED);
  }
  v1::Session s;
  ASSERT_TRUE(WaitSession(
      client_.get(), id, [](const v1::Session& x) { return x.status() == v1::READY; }, &s));
  EXPECT_LT(s.step(), 1000000000u);
  // Stepping stopped: the run's end is logged (before its lease is given
  // back) at the very step the session holds, and the step no longer moves.
  const std::string stopped = "run stopped: tenant=anonymous session=" + id + " step=";
  ASSERT_TRUE(WaitForLog(*server_, stopped)) << server_->Log();
  const std::string log = server_->Log();
  EXPECT_EQ(std::strtoull(log.c_str() + log.find(stopped) + stopped.size(), nullptr, 10), s.step())
      << log;
  v1::Session later;
  ASSERT_TRUE(client_->GetSession(id, &later).ok());
  EXPECT_EQ(later.step(), s.step());
  // The next run continues from there: nothing stepped in between.
  RunResult next = RunToEnd(client_.get(), RunSteps(id, 3));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  EXPECT_TRUE(Consecutive(next.frames, s.step() + 1));
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, SparseFramesStreamBeforeTheRunEnds) {
  // every = 100000 on a long run: a message holds far fewer than 256
  // frames, yet the first ones arrive while the session is still running.
  std::string id = MustCreate(client_.get(), Pendulum());
  auto patient = ConnectClient(server_->address(), 600s);
  v1::RunRequest req = RunSteps(id, 100000000);
  req.set_every(100000);
  int messages = 0;
  grpc::Status st = patient->RunMessages(req, [&](const v1::RunResponse& msg) {
    ++messages;
    EXPECT_GE(msg.frames_size(), 1);
    if (msg.frames_size() < 1) return false;
    if (messages == 1) {
      EXPECT_EQ(msg.frames(0).step(), 0u);
      // Not held back until 256 frames (25.6 million steps) had filled it.
      EXPECT_LT(msg.frames_size(), 256);
      EXPECT_FALSE(msg.has_certificate());
      return true;
    }
    // A later message, still mid-run.
    EXPECT_EQ(msg.frames(0).step() % 100000, 0u);
    EXPECT_LT(msg.frames(msg.frames_size() - 1).step(), 100000000u);
    v1::Session s;
    EXPECT_TRUE(client_->GetSession(id, &s).ok());
    EXPECT_EQ(s.status(), v1::RUNNING);
    return false;
  });
  ASSERT_EQ(messages, 2);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED);
  v1::Session s;
  EXPECT_TRUE(WaitSession(
      client_.get(), id, [](const v1::Session& x) { return x.status() == v1::READY; }, &s));
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, SlowReaderPausesSteppingAndLosesNothing) {
  std::string id = MustCreate(client_.get(), Pendulum());
  constexpr uint64_t kSteps = 400000;
  auto patient = ConnectClient(server_->address(), 600s);
  std::vector<v1::Frame> frames;
  bool first = true, paused = false;
  uint64_t stable = 0;
  grpc::Status st = patient->RunMessages(RunSteps(id, kSteps), [&](const v1::RunResponse& msg) {
    for (const auto& f : msg.frames()) frames.push_back(f);
    if (!first) return true;
    first = false;
    // The reader sleeps: the server fills a bounded buffer, then stops
    // stepping (the session's step stops moving well before the end).
    // The sleep is the test (a reader that does not read), not a wait for
    // something: the server logs nothing when it pauses, so the step is
    // polled until two readings 500 ms apart agree (bounded: 120 s).
    uint64_t previous = UINT64_MAX;
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(500ms);
      v1::Session s;
      if (!client_->GetSession(id, &s).ok()) {
        ADD_FAILURE() << "GetSession failed while the reader slept";
        return false;
      }
      if (s.step() == previous) {
        paused = true;
        stable = s.step();
        break;
      }
      previous = s.step();
    }
    return paused;  // then everything arrives, in order
  });
  ASSERT_TRUE(paused) << "stepping did not pause while the reader slept";
  EXPECT_LT(stable, kSteps / 2) << "the server ran ahead of a sleeping reader";
  std::printf("[ info ] server paused at step %llu of %llu while the reader slept\n",
              static_cast<unsigned long long>(stable), static_cast<unsigned long long>(kSteps));
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(frames.size(), kSteps + 1);
  EXPECT_TRUE(Consecutive(frames, 0));
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, DeleteDuringRunCancelsIt) {
  std::string id = MustCreate(client_.get(), Pendulum());
  int messages = 0;
  grpc::Status st = client_->RunMessages(RunSteps(id, 1000000000), [&](const v1::RunResponse&) {
    if (++messages == 1) {
      EXPECT_TRUE(client_->DeleteSession(id).ok());
    }
    return true;  // read on until the server ends the stream
  });
  ASSERT_GE(messages, 1);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED);
  v1::Session s;
  EXPECT_EQ(client_->GetSession(id, &s).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, FailingRunStreamsFramesAndMarksSessionFailed) {
  std::string id = MustCreate(client_.get(), BlowUp());
  v1::RunRequest req = RunSteps(id, 100000);
  req.set_frames_per_message(32);
  RunResult r = RunToEnd(client_.get(), req);
  ASSERT_EQ(r.status.error_code(), grpc::StatusCode::ABORTED) << r.status.error_message();
  EXPECT_NE(r.status.error_message().find("step"), std::string::npos) << r.status.error_message();
  ASSERT_FALSE(r.frames.empty());
  EXPECT_TRUE(Consecutive(r.frames, 0));
  EXPECT_LT(r.frames.size(), 100000u);
  for (const auto& f : r.frames) {
    for (double q : f.q()) EXPECT_TRUE(std::isfinite(q));
  }

  v1::Session s;
  ASSERT_TRUE(client_->GetSession(id, &s).ok());
  EXPECT_EQ(s.status(), v1::FAILED);
  EXPECT_FALSE(s.error().empty());
  EXPECT_NE(r.status.error_message().find(s.error()), std::string::npos)
      << r.status.error_message() << " vs " << s.error();
  EXPECT_EQ(s.step(), r.frames.back().step());

  // A FAILED session cannot run again.
  RunResult again = RunToEnd(client_.get(), RunSteps(id, 1));
  EXPECT_EQ(again.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

std::vector<std::string> SerializedFrames(const RunResult& r) {
  std::vector<std::string> out;
  for (const auto& f : r.frames) out.push_back(f.SerializeAsString());
  return out;
}

TEST_F(ServiceTest, HundredSessionsAtOnceAndDeterminismUnderLoad) {
  // Reference: one session alone.
  constexpr uint64_t kSteps = 1500;
  std::string alone = MustCreate(client_.get(), Pendulum());
  v1::RunRequest ref_req = RunSteps(alone, kSteps);
  ref_req.set_frames_per_message(64);
  RunResult reference = RunToEnd(client_.get(), ref_req);
  ASSERT_TRUE(reference.status.ok()) << reference.status.error_message();
  ASSERT_EQ(reference.frames.size(), kSteps + 1);

  // A hundred sessions, all running at once, plus the same spec again.
  constexpr int kSessions = 100;
  std::vector<std::string> ids;
  for (int i = 0; i < kSessions; ++i) ids.push_back(MustCreate(client_.get(), Pendulum()));
  std::string loaded = MustCreate(client_.get(), Pendulum());

  std::vector<RunResult> results(kSessions);
  std::vector<std::thread> threads;
  std::atomic<int> started{0};
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      auto c = ConnectClient(server_->address());  // a channel of its own
      started++;
      v1::RunRequest req = RunSteps(ids[i], 2 * kSteps);
      req.set_frames_per_message(100);
      results[i] = RunToEnd(c.get(), req);
    });
  }
  // Every thread has its channel and is calling Run (bounded: a thread
  // that never gets there is a failure below, not a hang here).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (started.load() < kSessions && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(started.load(), kSessions);
  v1::RunRequest req = RunSteps(loaded, kSteps);
  req.set_frames_per_message(64);
  RunResult under_load = RunToEnd(client_.get(), req);
  for (auto& t : threads) t.join();

  for (int i = 0; i < kSessions; ++i) {
    ASSERT_TRUE(results[i].status.ok()) << i << ": " << results[i].status.error_message();
    ASSERT_EQ(results[i].frames.size(), 2 * kSteps + 1) << i;
    EXPECT_TRUE(Consecutive(results[i].frames, 0)) << i;
  }
  ASSERT_TRUE(under_load.status.ok()) << under_load.status.error_message();
  // Bit-identical frames and certificate, idle or loaded.
  EXPECT_TRUE(SerializedFrames(under_load) == SerializedFrames(reference));
  EXPECT_EQ(under_load.messages.back().certificate().SerializeAsString(),
            reference.messages.back().certificate().SerializeAsString());
  // And the same 1500 steps of the 100 others match the reference too.
  for (int i = 0; i < kSessions; ++i) {
    for (uint64_t k = 0; k <= kSteps; k += 250) {
      ASSERT_EQ(results[i].frames[k].SerializeAsString(), reference.frames[k].SerializeAsString())
          << i << " step " << k;
    }
  }

  for (const auto& id : ids) EXPECT_TRUE(client_->DeleteSession(id).ok());
  EXPECT_TRUE(client_->DeleteSession(alone).ok());
  EXPECT_TRUE(client_->DeleteSession(loaded).ok());
}

}  // namespace
}  // namespace tether::service_test
