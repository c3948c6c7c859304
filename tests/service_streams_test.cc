// Streams that cannot be held hostage, each test on a server of its own: a
// stalled reader loses its lease after --stream-stall-timeout; SIGTERM lets
// open streams run within --shutdown-grace, then ends a Run with every
// computed frame and the partial window's certificate; SIGTERM in the
// middle of a compile exits within the grace. No timing assertions beyond
// generous bounds (the machine may be loaded).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "service_test_fixture.h"
#include "test_util.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service_test {
namespace {

// A channel without BDP probing, so that a client that stops reading fills
// its flow-control window (64 KiB) quickly.
std::shared_ptr<grpc::Channel> SmallWindowChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// A stall timeout of 2 s: the stalled client below reads again within the
// second timeout, before the call would be cancelled.
TEST(ServiceStallTest, StalledReaderLosesItsLeaseAndTheSessionIsReadyAgain) {
  auto server = StartServer({"--stream-stall-timeout", "2"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  std::string id = MustCreate(client.get(), Pendulum());

  // A Run that never ends by itself, opened by a client that does not read.
  auto stub = v1::Simulator::NewStub(SmallWindowChannel(server->address()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  v1::RunRequest request = RunSteps(id, 1000000000000ull);
  auto reader = stub->Run(&context, request);

  // The run takes the lease; the server gives it back once the pending
  // write has waited for the stall timeout: the session is READY again,
  // not FAILED.
  v1::Session session;
  ASSERT_TRUE(WaitSession(client.get(), id, [](const v1::Session& s) {
    return s.status() == v1::RUNNING;
  })) << server->Log();
  ASSERT_TRUE(WaitSession(
      client.get(), id, [](const v1::Session& s) { return s.status() == v1::READY; }, &session))
      << "the session stayed " << v1::SessionStatus_Name(session.status()) << "\n"
      << server->Log();
  const uint64_t stopped_at = session.step();
  EXPECT_GT(stopped_at, 0u);
  EXPECT_NE(server->Log().find("--stream-stall-timeout"), std::string::npos) << server->Log();

  // The stalled client, reading at last: a consecutive prefix of the run's
  // frames, then the stall status naming the flag.
  v1::RunResponse message;
  uint64_t expected = 0;
  bool in_order = true;
  while (reader->Read(&message)) {
    for (const auto& f : message.frames()) in_order = in_order && f.step() == expected++;
  }
  grpc::Status status = reader->Finish();
  EXPECT_TRUE(in_order);
  EXPECT_GT(expected, 0u);
  EXPECT_LE(expected, stopped_at + 1);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_NE(status.error_message().find("--stream-stall-timeout"), std::string::npos)
      << status.error_message();

  // Another client can run it, from where it stopped.
  RunResult next = RunToEnd(client.get(), RunSteps(id, 10));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  ASSERT_EQ(next.frames.size(), 10u);
  EXPECT_EQ(next.frames.front().step(), stopped_at + 1);
}

// A client that never reads again: one more stall timeout after its session
// was given back, the call itself is cancelled, so that what it holds (its
// last message, the reactor) is freed and a client re-opening a Run after
// each stall cannot pile calls up. The tenant's one stream slot (the
// tenant's, --tenant-max-streams 1) is free again after each stall.
TEST(ServiceStallTest, AStalledCallIsCancelledOneTimeoutAfterItsSessionIsGivenBack) {
  auto server = StartServer({"--stream-stall-timeout", "1", "--tenant-max-streams", "1"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  std::string id = MustCreate(client.get(), Pendulum());

  auto stub = v1::Simulator::NewStub(SmallWindowChannel(server->address()));
  for (int round = 0; round < 2; ++round) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    auto reader = stub->Run(&context, RunSteps(id, 1000000000000ull));
    ASSERT_TRUE(WaitSession(client.get(), id, [](const v1::Session& s) {
      return s.status() == v1::RUNNING;
    })) << server->Log();
    const std::string cancelled = "stream cancelled: its client read nothing for two stall";
    WaitForLog(*server, cancelled, round + 1);
    ASSERT_EQ(Occurrences(server->Log(), cancelled), static_cast<std::size_t>(round + 1))
        << server->Log();
    // Reading now finds the call over: cancelled by the server, not the
    // stall status queued behind an unread message.
    v1::RunResponse message;
    while (reader->Read(&message)) {
    }
    grpc::Status status = reader->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  }
  // The session and the stream slot are free: a normal run works.
  RunResult next = RunToEnd(client.get(), RunSteps(id, 5));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  EXPECT_EQ(next.frames.size(), 5u);
}

// A slow but live reader of large messages keeps its stream: it reads one
// ~1.5 MB message every 0.5 s against a stall timeout of 1.5 s. gRPC's
// transport takes several such messages at once (its flow-control window,
// grown by BDP probing, reopened in chunks), so a write can wait behind
// them for several of the client's reads: it waited 6 s behind four, and
// the stream was ended as stalled while the client was reading. The
// watchdog now counts from where the client is (a timeout per message
// buffered ahead, up to 8).
TEST(ServiceStallTest, ASlowReaderOfLargeMessagesKeepsItsStream) {
  auto server = StartServer({"--stream-stall-timeout", "1.5"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  std::string id = MustCreate(client.get(), Pendulum());
  auto stub = v1::Simulator::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  v1::RunRequest request = RunSteps(id, 1000000000000ull);
  request.set_frames_per_message(20000);
  auto reader = stub->Run(&context, request);
  v1::RunResponse message;
  int read = 0;
  size_t largest = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(9)) {
    ASSERT_TRUE(reader->Read(&message))
        << "after " << read << " messages: " << reader->Finish().error_message();
    largest = std::max(largest, message.ByteSizeLong());
    ++read;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  // About 1.5 MB in a Release build; under the sanitizers a quantum makes
  // fewer frames, and the messages are smaller (0.68 MB seen).
  EXPECT_GT(largest, size_t{256} << 10);
  EXPECT_GE(read, 12);
  context.TryCancel();
  while (reader->Read(&message)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(server->Log().find("(--stream-stall-timeout"), std::string::npos) << server->Log();
}

// A master that keeps sending steps but never reads the responses: once
// its window and the socket buffers are full, the server's write stalls,
// and the lease comes back.
TEST(ServiceStallTest, StalledCoSimulationMasterLosesItsLease) {
  auto server = StartServer({"--stream-stall-timeout", "1"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  std::string id = MustCreate(client.get(), Pendulum());

  auto stub = v1::Simulator::NewStub(SmallWindowChannel(server->address()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  auto stream = stub->CoSimulate(&context);
  std::atomic<int> sent{0};
  std::thread master([&] {
    v1::CoSimulateRequest step;
    step.set_session_id(id);
    step.set_communication_step(0.001);
    // Blocks once the server stops reading; ends when the call does.
    for (int i = 0; i < 10000000 && stream->Write(step); ++i) sent.fetch_add(1);
  });
  ASSERT_TRUE(WaitSession(client.get(), id, [](const v1::Session& s) {
    return s.status() == v1::RUNNING;
  })) << server->Log();
  v1::Session session;
  const bool ready = WaitSession(
      client.get(), id, [](const v1::Session& s) { return s.status() == v1::READY; }, &session);
  context.TryCancel();
  master.join();
  ASSERT_TRUE(ready) << "the session stayed " << v1::SessionStatus_Name(session.status())
                     << " after " << sent.load() << " steps sent\n"
                     << server->Log();
  EXPECT_GT(session.step(), 0u);
  EXPECT_NE(server->Log().find("DEADLINE_EXCEEDED"), std::string::npos) << server->Log();

  // Another master can co-simulate it, from where it stopped.
  auto next = client->CoSimulate(id);
  v1::Frame frame;
  grpc::Status cs = next->DoStep(0.01, {}, &frame);
  ASSERT_TRUE(cs.ok()) << cs.error_message();
  EXPECT_EQ(frame.step(), session.step() + 10);
  EXPECT_TRUE(next->Finish().ok());
}

// --max-connection-idle: a connection without calls is closed by the
// server (GOAWAY), so the channel leaves READY; with the default (15 min)
// the control channel stays READY over the same wait.
TEST(ServiceConnectionTest, AnIdleConnectionIsClosedAfterMaxConnectionIdle) {
  auto server = StartServer({"--max-connection-idle", "0.5"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto control = StartServer({});
  ASSERT_TRUE(control->ok()) << control->error();
  auto list = [](const std::shared_ptr<grpc::Channel>& channel) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    v1::ListSessionsResponse response;
    return v1::Simulator::NewStub(channel)->ListSessions(&context, {}, &response);
  };
  auto idle = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  auto kept = grpc::CreateChannel(control->address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(list(idle).ok());
  ASSERT_TRUE(list(kept).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (idle->GetState(false) == GRPC_CHANNEL_READY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(idle->GetState(false), GRPC_CHANNEL_READY);
  EXPECT_EQ(kept->GetState(false), GRPC_CHANNEL_READY);
  // A closed idle connection is no error: the next call reconnects.
  EXPECT_TRUE(list(idle).ok());
}

// --max-streams-per-connection 1: while one Run is open on a connection, a
// second call on that connection waits (here until its deadline); on
// another connection it is served at once.
TEST(ServiceConnectionTest, OneConnectionRunsAtMostMaxStreamsPerConnectionCalls) {
  auto server = StartServer({"--max-streams-per-connection", "1"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  std::string id = MustCreate(client.get(), Pendulum());

  auto channel = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Simulator::NewStub(channel);
  grpc::ClientContext run_context;
  run_context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  auto reader = stub->Run(&run_context, RunSteps(id, 1000000000000ull));
  v1::RunResponse message;
  ASSERT_TRUE(reader->Read(&message));  // the Run's stream is open

  grpc::ClientContext second;
  second.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  v1::ListSessionsResponse response;
  grpc::Status waited = stub->ListSessions(&second, {}, &response);
  EXPECT_EQ(waited.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << waited.error_message();

  std::vector<v1::Session> other;
  ASSERT_TRUE(client->ListSessions(&other).ok());
  EXPECT_EQ(other.size(), 1u);

  run_context.TryCancel();
  while (reader->Read(&message)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST(ServiceShutdownTest, SigtermLetsStreamsRunThenFlushesFramesAndTheCertificate) {
  // A grace of 4 s: the streams go on for 3 s after SIGTERM, then the Run
  // ends with what it computed.
  auto server = StartServer({"--shutdown-grace", "4"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  std::string run_id = MustCreate(client.get(), Pendulum());
  std::string cosim_id = MustCreate(client.get(), Pendulum());

  // An idle CoSimulate stream (one step done, waiting for the next request).
  auto cosim = client->CoSimulate(cosim_id);
  v1::Frame frame;
  grpc::Status cs = cosim->DoStep(0.01, {}, &frame);
  ASSERT_TRUE(cs.ok()) << cs.error_message();

  // A Run that would take hours, being read: SIGTERM after three messages.
  v1::RunRequest req = RunSteps(run_id, 1000000000000ull);
  req.set_frames_per_message(64);
  uint64_t expected = 0;
  int messages = 0, after_sigterm = 0, certificates = 0;
  double last_t = -1;
  bool in_order = true;
  grpc::Status cosim_after_sigterm;
  v1::RunResponse last;
  grpc::Status st = client->RunMessages(req, [&](const v1::RunResponse& msg) {
    for (const auto& f : msg.frames()) {
      in_order = in_order && f.step() == expected++;
      last_t = f.t();
    }
    if (msg.has_certificate()) ++certificates;
    if (messages >= 3) ++after_sigterm;
    if (++messages == 3) {
      EXPECT_EQ(kill(server->pid(), SIGTERM), 0);
    }
    if (after_sigterm == 1) {
      // Open streams keep working within the grace.
      cosim_after_sigterm = cosim->DoStep(0.01, {}, &frame);
    }
    last = msg;
    return in_order;
  });
  ASSERT_TRUE(in_order);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_NE(st.error_message().find("--shutdown-grace"), std::string::npos) << st.error_message();
  EXPECT_TRUE(cosim_after_sigterm.ok()) << cosim_after_sigterm.error_message();
  // The stream went on after SIGTERM (for about 3 s; a cut stream gets at
  // most the messages already buffered, 8).
  EXPECT_GT(after_sigterm, 8) << server->Log();
  // Exactly one certificate, on the last message (which may hold no
  // frames), covering every frame sent: the partial window, from step 0 to
  // the last frame, which is the last step computed.
  EXPECT_EQ(certificates, 1);
  ASSERT_TRUE(last.has_certificate());
  ASSERT_GT(expected, 0u);
  EXPECT_EQ(last.certificate().steps(), expected - 1);
  EXPECT_EQ(last.certificate().t_start(), 0.0);
  EXPECT_EQ(last.certificate().t_end(), last_t);

  // The idle co-simulation ended too, and new calls are refused.
  EXPECT_EQ(cosim->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  v1::Session s;
  EXPECT_EQ(client->GetSession(run_id, &s).error_code(), grpc::StatusCode::UNAVAILABLE);

  EXPECT_EQ(server->WaitExit(60s), 0) << server->Log();
}

// Limits that only a deadline or shutdown reaches: the compile would run
// for a minute or more (at 1024 coordinates already 10 to 20 s here);
// SIGTERM stops it and the server exits within the grace.
TEST(ServiceShutdownTest, SigtermMidCompileExitsWithinTheGrace) {
  auto server = StartServer({"--shutdown-grace", "2", "--max-compile-nodes", "1000000000",
                             "--max-derivative-nodes", "10000000000", "--compile-time-budget", "0",
                             "--log-level", "debug"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  grpc::Status compiled;
  std::thread hostile([&] {
    v1::ValidationReport report;
    compiled = client->Validate(testing::SwellingKineticEnergy(1536), &report);
  });
  // The compile is under way (unstopped it takes about 20 s).
  ASSERT_TRUE(WaitForLog(*server, "compile started: rpc=Validate")) << server->Log();
  ASSERT_EQ(kill(server->pid(), SIGTERM), 0);
  // 2 s of grace and a generous margin for a loaded machine; without the
  // compile stopping, the exit would wait for it.
  EXPECT_EQ(server->WaitExit(10s), 0) << server->Log();
  hostile.join();
  EXPECT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.error_code(), grpc::StatusCode::UNAVAILABLE) << compiled.error_message();
}

}  // namespace
}  // namespace tether::service_test
