// Sessions that survive a restart (issue 11 point 5): with --state-dir a
// server drained by SIGTERM writes every session, and a server started on
// the directory serves them under the same ids, runs continuing bit for
// bit; --checkpoint-interval bounds what a SIGKILL loses; damaged files are
// set aside, never served.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include "service_test_fixture.h"

namespace tether::service_test {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the test's temporary directory.
std::string TempDir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("tether-state-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

// Every frame and the certificate of a Run of `steps` steps, as bytes.
std::string RunBytes(client::Client* client, const std::string& id, uint64_t steps) {
  std::string bytes;
  v1::Certificate certificate;
  grpc::Status s = client->Run(
      RunSteps(id, steps),
      [&](const v1::Frame& f) {
        bytes += f.SerializeAsString();
        return true;
      },
      &certificate);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return bytes + certificate.SerializeAsString();
}

v1::SimulationSpec Spec(bool dopri) {
  v1::SimulationSpec spec = LoadSpec("pendulum_force_input.json");
  spec.mutable_initial()->set_q(0, 0.6);
  spec.mutable_initial()->set_q(1, -0.8);
  if (dopri) {
    spec.mutable_integrator()->set_method(v1::IntegratorSpec::DOPRI5);
    spec.mutable_integrator()->set_step_size(0);
  }
  return spec;
}

TEST(StateDirTest, DrainedSessionsAreServedAgainUnderTheirIdsAndContinueBitIdentically) {
  const std::string dir = TempDir("drain");
  std::string rk4, dopri, failed;
  {
    auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
    ASSERT_TRUE(server->ok());
    auto client = ConnectClient(server->address());
    rk4 = MustCreate(client.get(), Spec(false));
    dopri = MustCreate(client.get(), Spec(true));
    failed = MustCreate(client.get(), BlowUp());
    RunBytes(client.get(), rk4, 120);
    // An input set in a co-simulation step is part of the state.
    auto stream = client->CoSimulate(dopri);
    v1::Frame frame;
    ASSERT_TRUE(stream->DoStep(0.05, {{"Fx", 0.7}}, &frame).ok());
    ASSERT_TRUE(stream->Finish().ok());
    v1::Certificate ignored;
    EXPECT_EQ(client->Run(RunSteps(failed, 100000), nullptr, &ignored).error_code(),
              grpc::StatusCode::ABORTED);
    EXPECT_EQ(server->Stop(), 0) << server->Log();  // SIGTERM: drain, write
  }
  EXPECT_TRUE(fs::exists(dir + "/" + rk4 + ".session"));

  // The reference: the same history on a server without --state-dir.
  auto reference_server = StartServer({"--shutdown-grace", "0.2"});
  auto reference = ConnectClient(reference_server->address());
  std::string ref_rk4 = MustCreate(reference.get(), Spec(false));
  std::string ref_dopri = MustCreate(reference.get(), Spec(true));
  RunBytes(reference.get(), ref_rk4, 120);
  {
    auto stream = reference->CoSimulate(ref_dopri);
    v1::Frame frame;
    ASSERT_TRUE(stream->DoStep(0.05, {{"Fx", 0.7}}, &frame).ok());
    ASSERT_TRUE(stream->Finish().ok());
  }

  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  ASSERT_TRUE(client->GetSession(rk4, &s).ok()) << server->Log();
  EXPECT_EQ(s.step(), 120u);
  EXPECT_EQ(s.status(), v1::READY);
  ASSERT_TRUE(client->GetSession(failed, &s).ok());
  EXPECT_EQ(s.status(), v1::FAILED);
  EXPECT_FALSE(s.error().empty());
  EXPECT_EQ(RunBytes(client.get(), rk4, 80), RunBytes(reference.get(), ref_rk4, 80));
  EXPECT_EQ(RunBytes(client.get(), dopri, 80), RunBytes(reference.get(), ref_dopri, 80));

  // A deleted session's file goes with it; without --state-dir nothing is
  // written (the reference server's directory does not exist).
  ASSERT_TRUE(client->DeleteSession(rk4).ok());
  EXPECT_FALSE(fs::exists(dir + "/" + rk4 + ".session"));
  EXPECT_EQ(server->Stop(), 0) << server->Log();
  fs::remove_all(dir);
}

// What a session's snapshots give when restored and run: the frames and
// certificate of `steps` steps after each, in the order of `ids`.
std::vector<std::string> RunFromEach(client::Client* client, const std::string& id,
                                     const std::vector<uint64_t>& ids, uint64_t steps) {
  std::vector<std::string> out;
  for (uint64_t snapshot : ids) {
    v1::Session s;
    grpc::Status status = client->RestoreSnapshot(id, snapshot, &s);
    EXPECT_TRUE(status.ok()) << "snapshot " << snapshot << ": " << status.error_message();
    out.push_back(RunBytes(client, id, steps));
  }
  return out;
}

TEST(StateDirTest, SnapshotsAreWrittenAndServedAgainWithTheirIdsAndDescriptions) {
  const std::string dir = TempDir("snapshots");
  std::string id;
  std::vector<v1::Snapshot> before;
  std::vector<std::string> runs_before;
  {
    auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
    ASSERT_TRUE(server->ok());
    auto client = ConnectClient(server->address());
    id = MustCreate(client.get(), Spec(true));  // DOPRI5: its step controller is state too
    RunBytes(client.get(), id, 50);
    v1::Snapshot snap;
    ASSERT_TRUE(client->CreateSnapshot(id, "first", &snap).ok());
    RunBytes(client.get(), id, 30);
    // Snapshot 2 under another version of the description than snapshot 1.
    v1::UpdateSessionRequest update;
    update.set_session_id(id);
    (*update.mutable_parameters())["grav"] = 3.7;
    (*update.mutable_inputs())["Fx"] = 0.25;
    v1::Session session;
    ASSERT_TRUE(client->UpdateSession(update, &session).ok());
    ASSERT_TRUE(client->CreateSnapshot(id, std::string("label \n\x01 bytes", 15), &snap).ok());
    RunBytes(client.get(), id, 20);
    ASSERT_TRUE(client->CreateSnapshot(id, "deleted", &snap).ok());
    ASSERT_TRUE(client->DeleteSnapshot(id, snap.snapshot_id()).ok());
    ASSERT_TRUE(client->CreateSnapshot(id, "third", &snap).ok());
    v1::ListSnapshotsResponse list;
    ASSERT_TRUE(client->ListSnapshots(id, &list).ok());
    before.assign(list.snapshots().begin(), list.snapshots().end());
    ASSERT_EQ(before.size(), 3u);
    runs_before = RunFromEach(client.get(), id, {1, 2, 4}, 40);
    // The session ends at snapshot 4's state run on by 40 steps.
    EXPECT_EQ(server->Stop(), 0) << server->Log();
  }
  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::ListSnapshotsResponse list;
  ASSERT_TRUE(client->ListSnapshots(id, &list).ok()) << server->Log();
  ASSERT_EQ(list.snapshots_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(list.snapshots(i).SerializeAsString(),
              before[static_cast<size_t>(i)].SerializeAsString())
        << list.snapshots(i).DebugString() << " vs "
        << before[static_cast<size_t>(i)].DebugString();
  }
  // Each restores to the bits it had (snapshot 1 with the description
  // before the update), and ids go on without reuse.
  EXPECT_EQ(RunFromEach(client.get(), id, {1, 2, 4}, 40), runs_before);
  v1::Snapshot snap;
  ASSERT_TRUE(client->CreateSnapshot(id, "", &snap).ok());
  EXPECT_EQ(snap.snapshot_id(), 5u);
  // A checkpoint-free SIGTERM rewrote the file with the new snapshot.
  EXPECT_EQ(server->Stop(), 0) << server->Log();

  // A damaged snapshot is left out, the session and the others are served.
  const std::string file = dir + "/" + id + ".session";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);  // inside the last snapshot's state (5)
    f.put('\x7f');
  }
  server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  client = ConnectClient(server->address());
  ASSERT_TRUE(client->ListSnapshots(id, &list).ok()) << server->Log();
  ASSERT_EQ(list.snapshots_size(), 3);
  EXPECT_EQ(list.snapshots(2).snapshot_id(), 4u);
  EXPECT_NE(server->Log().find("snapshot 5 does not match its SHA-256"), std::string::npos)
      << server->Log();
  EXPECT_EQ(RunFromEach(client.get(), id, {2}, 40), std::vector<std::string>{runs_before[1]});
  // Ids are not reused after a lost snapshot either.
  ASSERT_TRUE(client->CreateSnapshot(id, "", &snap).ok());
  EXPECT_EQ(snap.snapshot_id(), 6u);
  server->Stop();
  fs::remove_all(dir);
}

// A file of format 1 (written before snapshots were: seven header lines,
// then the export to the end of the file) is still served.
TEST(StateDirTest, FilesOfTheFirstFormatAreServed) {
  const std::string dir = TempDir("format1");
  std::string id;
  {
    auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
    auto client = ConnectClient(server->address());
    id = MustCreate(client.get(), Spec(false));
    RunBytes(client.get(), id, 10);
    EXPECT_EQ(server->Stop(), 0);
  }
  const std::string file = dir + "/" + id + ".session";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // Format 3's header: magic, five lines, next_snapshot_id, seq,
  // create_time, data, header-sha256.
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (lines.size() < 11) {
    std::size_t nl = bytes.find('\n', at);
    ASSERT_NE(nl, std::string::npos);
    lines.push_back(bytes.substr(at, nl - at));
    at = nl + 1;
  }
  ASSERT_EQ(lines[0], "TETHER-SESSION-FILE 3");
  ASSERT_EQ(lines[10].rfind("header-sha256 ", 0), 0u) << lines[10];
  std::string header = "TETHER-SESSION-FILE 1\n";
  for (int k = 1; k < 6; ++k) header += lines[static_cast<std::size_t>(k)] + "\n";
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(header.data()), header.size(), digest);
  header += "header-sha256 ";
  for (unsigned char c : digest)
    header += "0123456789abcdef"[c >> 4], header += "0123456789abcdef"[c & 15];
  header += "\n";
  std::ofstream(file, std::ios::binary | std::ios::trunc) << header << bytes.substr(at);

  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  ASSERT_TRUE(client->GetSession(id, &s).ok()) << server->Log();
  EXPECT_EQ(s.step(), 10u);
  v1::Snapshot snap;
  ASSERT_TRUE(client->CreateSnapshot(id, "", &snap).ok());
  EXPECT_EQ(snap.snapshot_id(), 1u);
  server->Stop();
  fs::remove_all(dir);
}

TEST(StateDirTest, CheckpointsBoundWhatAKillLoses) {
  const std::string dir = TempDir("kill");
  std::string id;
  {
    auto server = StartServer(
        {"--state-dir", dir, "--checkpoint-interval", "0.05", "--shutdown-grace", "0.2"});
    ASSERT_TRUE(server->ok());
    auto client = ConnectClient(server->address());
    id = MustCreate(client.get(), Spec(false));
    RunBytes(client.get(), id, 300);
    // Well over the interval: the checkpoint thread has written step 300.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(::kill(server->pid(), SIGKILL), 0);
    server->Stop();
  }
  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  ASSERT_TRUE(client->GetSession(id, &s).ok()) << server->Log();
  EXPECT_EQ(s.step(), 300u);
  auto reference_server = StartServer({"--shutdown-grace", "0.2"});
  auto reference = ConnectClient(reference_server->address());
  std::string ref = MustCreate(reference.get(), Spec(false));
  RunBytes(reference.get(), ref, 300);
  EXPECT_EQ(RunBytes(client.get(), id, 50), RunBytes(reference.get(), ref, 50));
  server->Stop();
  fs::remove_all(dir);
}

TEST(StateDirTest, DamagedFilesAreSetAsideAndBadFlagsStopTheServer) {
  const std::string dir = TempDir("damaged");
  std::string id;
  {
    auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
    auto client = ConnectClient(server->address());
    id = MustCreate(client.get(), Spec(false));
    RunBytes(client.get(), id, 10);
    EXPECT_EQ(server->Stop(), 0);
  }
  const std::string file = dir + "/" + id + ".session";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-40, std::ios::end);  // inside the export's payload
    f.put('\x7f');
  }
  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  EXPECT_EQ(client->GetSession(id, &s).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(server->Log().find("checksum"), std::string::npos) << server->Log();
  server->Stop();

  // A header flip: renamed to .corrupt.
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    f.put('X');
  }
  server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  EXPECT_TRUE(fs::exists(file + ".corrupt")) << server->Log();
  server->Stop();

  EXPECT_EQ(RunServerExpectingExit({"--checkpoint-interval", "1"}), 1);
  const std::string not_dir = dir + "/plain";
  std::ofstream(not_dir) << "x";
  EXPECT_EQ(RunServerExpectingExit({"--state-dir", not_dir}), 1);
  fs::remove_all(dir);
}

// Polls the health of `service` until it is `want` (deadline 60 s).
bool WaitHealth(client::Client* client, const std::string& service, client::HealthStatus want) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  client::HealthStatus health = client::HealthStatus::kUnknown;
  while (std::chrono::steady_clock::now() < deadline) {
    if (client->Health(service, 10s, &health).ok() && health == want) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Polls until `file` exists (deadline `limit`).
bool WaitFile(const std::string& file, std::chrono::milliseconds limit = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(file)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// The directory replaced by a regular file: no write in it can succeed,
// for root too.
void MakeUnwritable(const std::string& dir) {
  // The server may be writing a checkpoint into it meanwhile (a file that
  // vanishes under remove_all's walk is an error): retried, bounded.
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (!ec && !fs::exists(dir)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ofstream(dir) << "not a directory";
}

// Issue 20 point 5: a state directory that cannot be written makes
// tether.v1.Simulator NOT_SERVING; each checkpoint tries again and SERVING
// comes back with the directory (the session's file rewritten, though the
// session did not change); a drain that cannot write exits with 4.
TEST(StateDirTest, AnUnwritableDirectoryIsNotServingRetriedAndFailsTheDrainWithStatus4) {
  const std::string dir = TempDir("unwritable");
  auto server =
      StartServer({"--state-dir", dir, "--checkpoint-interval", "0.05", "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  const std::string id = MustCreate(client.get(), Spec(false));
  const std::string file = dir + "/" + id + ".session";
  ASSERT_TRUE(WaitFile(file)) << server->Log();
  EXPECT_TRUE(WaitHealth(client.get(), "tether.v1.Simulator", client::HealthStatus::kServing));

  MakeUnwritable(dir);
  EXPECT_TRUE(WaitHealth(client.get(), "tether.v1.Simulator", client::HealthStatus::kNotServing))
      << server->Log();
  EXPECT_NE(server->Log().find("NOT_SERVING"), std::string::npos) << server->Log();
  // The server as a whole still answers (the simulation calls work).
  client::HealthStatus whole = client::HealthStatus::kUnknown;
  ASSERT_TRUE(client->Health("", 10s, &whole).ok());
  EXPECT_EQ(whole, client::HealthStatus::kServing);

  fs::remove(dir);
  fs::create_directory(dir);
  EXPECT_TRUE(WaitHealth(client.get(), "tether.v1.Simulator", client::HealthStatus::kServing))
      << server->Log();
  EXPECT_TRUE(WaitFile(file)) << "an unchanged session whose file went is written again";

  MakeUnwritable(dir);
  EXPECT_TRUE(WaitHealth(client.get(), "tether.v1.Simulator", client::HealthStatus::kNotServing));
  EXPECT_EQ(server->Stop(), 4) << server->Log();
  EXPECT_NE(server->Log().find("could not persist every session"), std::string::npos)
      << server->Log();
  fs::remove_all(dir);

  // Without a checkpoint thread the drain alone finds it out.
  const std::string dir2 = TempDir("unwritable-drain");
  server = StartServer({"--state-dir", dir2, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok()) << server->error();
  client = ConnectClient(server->address());
  MustCreate(client.get(), Spec(false));
  MakeUnwritable(dir2);
  EXPECT_EQ(server->Stop(), 4) << server->Log();
  fs::remove_all(dir2);
}

// Issue 20 point 5: start-up reads only regular files of at most the cap,
// names what it skips, and serves the rest (it used to abort on a
// directory and read a symlink to /dev/zero forever).
TEST(StateDirTest, StartUpSkipsNonRegularAndOversizedFilesNamingThem) {
  const std::string dir = TempDir("skip");
  const std::vector<std::string> flags = {"--state-dir",         dir,     "--shutdown-grace", "0.2",
                                          "--max-message-bytes", "65536", "--max-snapshots",  "4"};
  std::string id;
  {
    auto server = StartServer(flags);
    ASSERT_TRUE(server->ok()) << server->error();
    auto client = ConnectClient(server->address());
    id = MustCreate(client.get(), Spec(false));
    RunBytes(client.get(), id, 10);
    ASSERT_EQ(server->Stop(), 0) << server->Log();
  }
  fs::create_directory(dir + "/" + std::string(32, 'a') + ".session");
  fs::create_symlink("/dev/zero", dir + "/" + std::string(32, 'b') + ".session");
  ASSERT_EQ(::mkfifo((dir + "/" + std::string(32, 'c') + ".session").c_str(), 0600), 0);
  // Over the cap: 65536 * (1 + 2 * 4) + 1 MiB = 1638400 bytes.
  const std::string big = dir + "/" + std::string(32, 'd') + ".session";
  std::ofstream(big, std::ios::binary) << std::string(2 * 1024 * 1024, 'x');

  auto server = StartServer(flags);
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  v1::Session s;
  ASSERT_TRUE(client->GetSession(id, &s).ok()) << server->Log();
  EXPECT_EQ(s.step(), 10u);
  const std::string log = server->Log();
  EXPECT_NE(log.find(std::string(32, 'a') + ".session: not a regular file (found a directory)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(std::string(32, 'b') + ".session: not a regular file (found a character"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(std::string(32, 'c') + ".session: not a regular file (found a fifo)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(big + ": 2097152 bytes, more than the cap of 1638400"), std::string::npos)
      << log;
  EXPECT_TRUE(fs::exists(big)) << "a skipped file is kept";
  EXPECT_EQ(server->Stop(), 0) << server->Log();
  fs::remove_all(dir);
}

// Issue 20 point 8: a restart keeps each session's create_time and the
// ListSessions order (creation order), sessions created after a restart
// coming after the restored ones.
TEST(StateDirTest, ARestartKeepsCreateTimesAndTheListOrder) {
  const std::string dir = TempDir("order");
  const std::vector<std::string> flags = {"--state-dir", dir, "--shutdown-grace", "0.2"};
  auto listing = [](client::Client* client) {
    std::vector<v1::Session> sessions;
    EXPECT_TRUE(client->ListSessions(&sessions).ok());
    std::vector<std::string> out;
    for (const auto& s : sessions) {
      out.push_back(s.id() + " " + std::to_string(s.create_time().seconds()) + "." +
                    std::to_string(s.create_time().nanos()));
    }
    return out;
  };
  std::vector<std::string> before;
  {
    auto server = StartServer(flags);
    ASSERT_TRUE(server->ok()) << server->error();
    auto client = ConnectClient(server->address());
    for (int k = 0; k < 6; ++k) MustCreate(client.get(), Spec(k % 2 == 1));
    before = listing(client.get());
    ASSERT_EQ(before.size(), 6u);
    ASSERT_EQ(server->Stop(), 0) << server->Log();
  }
  {
    auto server = StartServer(flags);
    ASSERT_TRUE(server->ok()) << server->error();
    auto client = ConnectClient(server->address());
    EXPECT_EQ(listing(client.get()), before) << server->Log();
    MustCreate(client.get(), Spec(false));
    before = listing(client.get());
    ASSERT_EQ(before.size(), 7u);
    ASSERT_EQ(server->Stop(), 0) << server->Log();
  }
  auto server = StartServer(flags);
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  EXPECT_EQ(listing(client.get()), before) << server->Log();
  server->Stop();
  fs::remove_all(dir);
}

// Issue 20 point 5: the checkpoint schedule goes on from the last
// checkpoint written (DIR/checkpoint-time), so a restart does not postpone
// it: with the last checkpoint 30 s ago and an interval of 40 s, a session
// created at start-up is written within about 10 s, not 40 s.
TEST(StateDirTest, TheCheckpointScheduleSurvivesARestart) {
  const std::string dir = TempDir("schedule");
  fs::create_directory(dir);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      (std::chrono::system_clock::now() - 30s).time_since_epoch())
                      .count();
  std::ofstream(dir + "/checkpoint-time") << "TETHER-CHECKPOINT-TIME 1\n" << ms << "\n";
  auto server =
      StartServer({"--state-dir", dir, "--checkpoint-interval", "40", "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok()) << server->error();
  const auto started = std::chrono::steady_clock::now();
  auto client = ConnectClient(server->address());
  const std::string id = MustCreate(client.get(), Spec(false));
  // Due 10 s after the start; 40 s when the schedule restarts at start-up.
  EXPECT_TRUE(WaitFile(dir + "/" + id + ".session", 28s)) << server->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
  EXPECT_EQ(server->Stop(), 0) << server->Log();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tether::service_test
