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
#include <tuple>
#include <utility>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include "engine/session_export.h"
#include "service/session_store.h"
#include "service/state_dir.h"
#include "service/tenant.h"
#include "service_test_fixture.h"
#include "tether/internal/v1/state_file.pb.h"

namespace tether::service_test {
namespace {

namespace fs = std::filesystem;

namespace state_file = tether::internal::v1;
using service::StateDir;

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

// Below: a file's bytes, and the sections of a file of format 4.
std::string ReadFile(const std::string& file);
std::vector<std::pair<std::string, std::string>> Sections(const std::string& bytes);

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
  EXPECT_EQ(server->Stop(), 0) << server->Log();

  // A damaged description (spec section 1, snapshot 1's) drops the
  // snapshots taken under it, said once; its bytes are not parsed or
  // compiled (they were, which logged a second, confusing "does not
  // compile"; found by an audit).
  {
    std::string bytes = ReadFile(file);
    bool found = false;
    for (const auto& [name, content] : Sections(bytes)) {
      if (name != "spec 1") continue;
      const std::size_t at = bytes.find(content);
      ASSERT_NE(at, std::string::npos);
      bytes[at + content.size() / 2] = static_cast<char>(bytes[at + content.size() / 2] ^ 0x20);
      found = true;
    }
    ASSERT_TRUE(found) << "snapshot 1's description is a section of its own";
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  }
  server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  client = ConnectClient(server->address());
  ASSERT_TRUE(client->ListSnapshots(id, &list).ok()) << server->Log();
  std::vector<uint64_t> ids;
  for (const v1::Snapshot& s : list.snapshots()) ids.push_back(s.snapshot_id());
  EXPECT_EQ(ids, (std::vector<uint64_t>{2, 4, 6}));
  EXPECT_NE(server->Log().find("the description of snapshots (spec section 1) does not match its "
                               "SHA-256: those snapshots are left out"),
            std::string::npos)
      << server->Log();
  EXPECT_EQ(server->Log().find("spec section 1 does not"), std::string::npos) << server->Log();
  EXPECT_EQ(RunFromEach(client.get(), id, {2}, 40), std::vector<std::string>{runs_before[1]});
  server->Stop();
  fs::remove_all(dir);
}

// The session files of format 3 in tests/data/state_dir_v3 (its README
// says how they were made), and what the server that wrote them gave for
// them then.
const std::string kFormat3Dir = std::string(TETHER_SOURCE_DIR) + "/tests/data/state_dir_v3";
const std::string kReadyId = "eda66d36318165d15cad5799407f2153";
const std::string kFailedId = "40552c920b890765c3d8350dde8f8020";
const std::string kReadyDisplayName =
    "fixture v3: \xc3\xbcn\xc3\xaf"
    "code label";
const std::string kFailedError =
    "step 223 (from t = 2.22): force F on coordinate 'x' is not finite";
const std::string kSnapshot2Label = std::string("label \n\x01 bytes", 15);

std::string ReadFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  std::string hex;
  for (unsigned char c : digest) {
    hex += "0123456789abcdef"[c >> 4];
    hex += "0123456789abcdef"[c & 15];
  }
  return hex;
}

// A copy of the format 3 files in a fresh directory.
std::string Format3Copy(const std::string& name) {
  const std::string dir = TempDir(name);
  fs::create_directories(dir);
  for (const std::string& id : {kReadyId, kFailedId}) {
    fs::copy_file(kFormat3Dir + "/" + id + ".session", dir + "/" + id + ".session");
  }
  return dir;
}

// A file of format 1 (written before snapshots were: seven header lines,
// then the export to the end of the file) is still served. Made from the
// format 3 fixture: its first six lines and its data section.
TEST(StateDirTest, FilesOfTheFirstFormatAreServed) {
  const std::string dir = TempDir("format1");
  fs::create_directories(dir);
  const std::string bytes = ReadFile(kFormat3Dir + "/" + kFailedId + ".session");
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
  header += "header-sha256 " + Sha256Hex(header) + "\n";
  WriteFile(dir + "/" + kFailedId + ".session", header + bytes.substr(at));

  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  ASSERT_TRUE(client->GetSession(kFailedId, &s).ok()) << server->Log();
  EXPECT_EQ(s.step(), 222u);
  EXPECT_EQ(s.status(), v1::FAILED);
  EXPECT_EQ(s.error(), kFailedError);
  v1::ExportSessionResponse exported;
  ASSERT_TRUE(client->ExportSession(kFailedId, &exported).ok());
  EXPECT_EQ(Sha256Hex(exported.data()),
            "cdb04dba53c785485bb2bd25f968aaafaf834fb13127845d0f366cf27f1e2991");
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
    f.seekp(-40, std::ios::end);  // inside the data section, the last one
    f.put('\x7f');
  }
  auto server = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(server->ok());
  auto client = ConnectClient(server->address());
  v1::Session s;
  EXPECT_EQ(client->GetSession(id, &s).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(server->Log().find(file + ": the data section (the session's description and state) "
                                      "does not match its SHA-256; not served (the file is kept)"),
            std::string::npos)
      << server->Log();
  server->Stop();
  EXPECT_TRUE(fs::exists(file));

  // A header flip (after the magic line and the section's tag and length,
  // inside its SHA-256): renamed to .corrupt.
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

// One server a directory: a second server on a directory another serves
// does not start (exit 1, naming --state-dir and the lock), where it used
// to serve the same sessions and write over the first one's files. Once
// the first has stopped (or was killed: the lock goes with the process),
// the directory is free again.
TEST(StateDirTest, ASecondServerOnTheSameDirectoryDoesNotStart) {
  const std::string dir = TempDir("shared");
  std::string id;
  auto first = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(first->ok()) << first->error();
  auto client = ConnectClient(first->address());
  id = MustCreate(client.get(), Spec(false));
  RunBytes(client.get(), id, 10);
  // (It logs "--state-dir DIR: in use by another server (it holds
  // DIR/lock); expected one server per directory".)
  EXPECT_EQ(RunServerExpectingExit({"--state-dir", dir}), 1);
  // The first still serves, and after it stops the directory is free.
  v1::Session s;
  ASSERT_TRUE(client->GetSession(id, &s).ok());
  EXPECT_EQ(first->Stop(), 0) << first->Log();
  auto third = StartServer({"--state-dir", dir, "--shutdown-grace", "0.2"});
  ASSERT_TRUE(third->ok()) << third->error();
  auto again = ConnectClient(third->address());
  ASSERT_TRUE(again->GetSession(id, &s).ok()) << third->Log();
  EXPECT_EQ(s.step(), 10u);
  EXPECT_EQ(third->Stop(), 0);
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

// --- The file format (issue 21): format 4, a protobuf record ---------------

// What ReadAll gives for a directory.
struct Loaded {
  std::vector<StateDir::Record> records;
  std::vector<std::string> problems;
  std::string Problems() const {
    std::string all;
    for (const auto& p : problems) all += p + "\n";
    return all;
  }
  bool Names(const std::string& text) const { return Problems().find(text) != std::string::npos; }
};

Loaded Load(const std::string& dir, std::size_t cap = 64 << 20) {
  std::string error;
  auto state = StateDir::Open(dir, cap, &error);
  EXPECT_TRUE(state) << error;
  Loaded out;
  if (state) out.records = state->ReadAll(&out.problems);
  return out;
}

// What ReadAll gives for `dir` holding only `file`, of `bytes`.
Loaded LoadAlone(const std::string& dir, const std::string& file, const std::string& bytes,
                 std::size_t cap = 64 << 20) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  WriteFile(file, bytes);
  return Load(dir, cap);
}

// The tenant of the sessions made in process.
const service::Tenant* TestTenant() {
  static const service::Tenant tenant("acme", 10, "--tenant-max-sessions", 10,
                                      "--tenant-max-streams");
  return &tenant;
}

// A session made in process as the RPCs make one: the pendulum (DOPRI5)
// run 30 steps; `snapshots` snapshots 10 steps apart, the first under the
// description before an update of the input Fx's default (so written as
// spec section 1), the others under the session's; 10 steps more; FAILED
// with a two-line error when `failed`.
std::unique_ptr<service::Session> MakeSession(int snapshots, bool failed) {
  auto created = Simulation::Create(Spec(true));
  EXPECT_TRUE(created.ok()) << created.status().message();
  const auto create_time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(1796482824018973529)));
  auto session = std::make_unique<service::Session>(
      service::NewSessionId(), 42, std::string("label \n\xc3\xbc\0 bytes", 16),
      std::move(created).value(), TestTenant(), service::SteadyClock{}, create_time);
  EXPECT_TRUE(session->Acquire("test").ok());
  auto advance = [&](uint64_t steps) {
    RunOptions run;
    run.steps = steps;
    EXPECT_TRUE(session->simulation()->BeginRun(run).ok());
    google::protobuf::RepeatedPtrField<v1::Frame> frames;
    EXPECT_TRUE(session->simulation()->Advance(steps, &frames).ok());
    session->Publish();
  };
  advance(30);
  v1::Snapshot meta;
  for (int k = 0; k < snapshots; ++k) {
    EXPECT_TRUE(session->SaveSnapshot("snapshot " + std::to_string(k), 100000, &meta).ok());
    if (k == 0) {
      Simulation* old = session->simulation();
      v1::SimulationSpec spec = old->spec();
      spec.mutable_system()->mutable_inputs(0)->set_default_value(0.25);
      auto next = Simulation::FromModel(spec, old->shared_model());
      v1::SimulationState carried;
      old->SaveState(&carried);
      EXPECT_TRUE(next->RestoreState(carried).ok());
      EXPECT_TRUE(session->ReplaceSimulation(std::move(next)).ok());
    }
    advance(10);
  }
  advance(10);
  session->Release(failed ? Status(StatusCode::kAborted, "step 91: not finite\nsecond line")
                          : Status::Ok());
  return session;
}

// Writes `session` into a fresh directory: the directory and the file.
std::pair<std::string, std::string> WriteSession(const service::Session& session,
                                                 const std::string& name) {
  const std::string dir = TempDir(name);
  std::string error;
  auto state = StateDir::Open(dir, 64 << 20, &error);
  EXPECT_TRUE(state) << error;
  Status s = state->Write(session, session.PersistedForm());
  EXPECT_TRUE(s.ok()) << s.message();
  return {dir, dir + "/" + session.id() + ".session"};
}

// A session of MakeSession written into a fresh directory.
struct Written {
  std::unique_ptr<service::Session> session;
  std::string dir, file, bytes;  // the file and its bytes
};

Written WriteNew(const std::string& name, int snapshots, bool failed = false) {
  Written w;
  w.session = MakeSession(snapshots, failed);
  std::tie(w.dir, w.file) = WriteSession(*w.session, name);
  w.bytes = ReadFile(w.file);
  return w;
}

// That `r` is what `session` is.
void ExpectRecordOf(const StateDir::Record& r, const service::Session& session) {
  const service::Session::Persisted p = session.PersistedForm();
  EXPECT_EQ(r.id, session.id());
  EXPECT_EQ(r.tenant, session.owner().name());
  EXPECT_EQ(r.display_name, session.display_name());
  EXPECT_EQ(r.failed, p.status == v1::FAILED);
  EXPECT_EQ(r.error, p.error);
  EXPECT_EQ(r.seq, session.seq());
  EXPECT_EQ(r.create_time, session.create_time());
  EXPECT_EQ(r.next_snapshot_id, p.next_snapshot_id);
  v1::SessionExport payload;
  *payload.mutable_spec() = *p.spec;
  *payload.mutable_state() = p.state;
  payload.set_display_name(session.display_name());
  EXPECT_EQ(r.data, EncodeSessionExport(payload));
  ASSERT_EQ(r.snapshots.size(), p.snapshots.size());
  for (std::size_t i = 0; i < p.snapshots.size(); ++i) {
    const StateDir::SnapshotRecord& s = r.snapshots[i];
    EXPECT_EQ(s.meta.SerializeAsString(), p.snapshots[i].meta.SerializeAsString()) << i;
    EXPECT_EQ(s.state, p.snapshots[i].state.SerializeAsString()) << i;
    const std::string spec = s.spec == 0 ? p.spec->SerializeAsString() : r.specs.at(s.spec - 1);
    EXPECT_EQ(spec, p.snapshots[i].spec->SerializeAsString()) << i;
  }
}

const std::string kMagic4 = "TETHER-SESSION-FILE 4\n";

// The sections of a file of format 4, in file order: name and content.
std::vector<std::pair<std::string, std::string>> Sections(const std::string& bytes) {
  std::vector<std::pair<std::string, std::string>> out;
  state_file::SessionFile file;
  EXPECT_EQ(bytes.substr(0, kMagic4.size()), kMagic4);
  EXPECT_TRUE(file.ParseFromString(bytes.substr(kMagic4.size())));
  out.emplace_back("header", file.header().content());
  out.emplace_back("data", file.data().content());
  for (int k = 0; k < file.specs_size(); ++k) {
    out.emplace_back("spec " + std::to_string(k + 1), file.specs(k).content());
  }
  state_file::SessionHeader header;
  EXPECT_TRUE(header.ParseFromString(file.header().content()));
  for (int k = 0; k < file.snapshot_states_size(); ++k) {
    out.emplace_back("snapshot " + std::to_string(header.snapshots(k).meta().snapshot_id()),
                     file.snapshot_states(k).content());
  }
  return out;
}

TEST(StateDirTest, FormatFourHoldsEverythingASessionIsAndReadsItBack) {
  for (const bool failed : {false, true}) {
    const Written w = WriteNew("format4", 3, failed);
    EXPECT_EQ(w.bytes.substr(0, kMagic4.size()), kMagic4);
    // A SessionFile after the magic line, read by protobuf alone.
    ASSERT_EQ(Sections(w.bytes).size(), 6u);  // header, data, spec 1, snapshots 1 to 3
    Loaded loaded = Load(w.dir);
    EXPECT_TRUE(loaded.problems.empty()) << loaded.Problems();
    ASSERT_EQ(loaded.records.size(), 1u);
    const StateDir::Record& r = loaded.records[0];
    EXPECT_EQ(r.file, w.file);
    ExpectRecordOf(r, *w.session);
    // The error as it was, lines and all (format 3 made it one line).
    EXPECT_EQ(r.error, failed ? "step 91: not finite\nsecond line" : "");
    ASSERT_EQ(r.specs.size(), 1u);
    EXPECT_EQ(r.snapshots[0].spec, 1u);
    EXPECT_EQ(r.snapshots[1].spec, 0u);
    // Written again: the same bytes.
    auto [dir2, file2] = WriteSession(*w.session, "format4-again");
    EXPECT_EQ(ReadFile(file2), w.bytes);
    fs::remove_all(w.dir);
    fs::remove_all(dir2);
  }
}

// The smallest states make the most protobuf objects for their bytes:
// many snapshots of them are still within the reader's budget.
TEST(StateDirTest, ManySmallSnapshotsAreReadBack) {
  const Written w = WriteNew("many", 300);
  Loaded loaded = Load(w.dir);
  EXPECT_TRUE(loaded.problems.empty()) << loaded.Problems();
  ASSERT_EQ(loaded.records.size(), 1u);
  ExpectRecordOf(loaded.records[0], *w.session);
  EXPECT_EQ(loaded.records[0].snapshots.size(), 300u);
  fs::remove_all(w.dir);
}

// Each section has its own SHA-256: a byte flipped in one is named with
// the file and the section, and costs only what depends on it (as format
// 3): the header sets the file aside (*.corrupt), the data keeps the
// session from being served (the file kept), a description drops the
// snapshots taken under it, a snapshot's state that snapshot.
TEST(StateDirTest, AFlippedByteInEachSectionIsNamedAndCostsOnlyWhatNeedsIt) {
  const Written w = WriteNew("flip", 3);
  const std::string& good = w.bytes;
  const std::string& file = w.file;
  const auto sections = Sections(good);
  ASSERT_EQ(sections.size(), 6u);
  for (const auto& [name, content] : sections) {
    SCOPED_TRACE(name);
    const std::size_t at = good.find(content);
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(at, good.rfind(content)) << "the content is found in one place";
    for (const std::size_t offset : {std::size_t{0}, content.size() / 2, content.size() - 1}) {
      std::string bad = good;
      bad[at + offset] = static_cast<char>(bad[at + offset] ^ 0x20);
      Loaded loaded = LoadAlone(w.dir, file, bad);
      if (name == "header") {
        EXPECT_TRUE(loaded.records.empty());
        EXPECT_TRUE(loaded.Names(file + ": the header section does not match its SHA-256 "
                                        "(renamed to .corrupt)"))
            << loaded.Problems();
        EXPECT_TRUE(fs::exists(file + ".corrupt"));
      } else if (name == "data") {
        EXPECT_TRUE(loaded.records.empty());
        EXPECT_TRUE(loaded.Names(file +
                                 ": the data section (the session's description and state) does "
                                 "not match its SHA-256; not served (the file is kept)"))
            << loaded.Problems();
        EXPECT_EQ(ReadFile(file), bad) << "kept as it is";
      } else {
        ASSERT_EQ(loaded.records.size(), 1u) << loaded.Problems();
        std::vector<uint64_t> ids;
        for (const auto& s : loaded.records[0].snapshots) ids.push_back(s.meta.snapshot_id());
        if (name == "spec 1") {
          EXPECT_TRUE(loaded.Names(file +
                                   ": the description of snapshots (spec section 1) does not "
                                   "match its SHA-256: those snapshots are left out"))
              << loaded.Problems();
          EXPECT_EQ(ids, (std::vector<uint64_t>{2, 3}));
        } else {
          EXPECT_TRUE(loaded.Names(file + ": " + name + " does not match its SHA-256: left out"))
              << loaded.Problems();
          std::vector<uint64_t> want = {1, 2, 3};
          want.erase(std::find(want.begin(), want.end(), std::stoull(name.substr(9))));
          EXPECT_EQ(ids, want);
        }
        EXPECT_EQ(loaded.problems.size(), 1u) << loaded.Problems();
      }
    }
  }
  fs::remove_all(w.dir);
}

// A file cut short (e.g. copied onto a full disk) loses its last sections
// only, each named, as format 3 did: a cut header sets the file aside, a
// cut data section keeps the session from being served, a cut description
// or snapshot costs the snapshots that need it.
TEST(StateDirTest, ATruncatedFileLosesOnlyTheSectionsCut) {
  const Written w = WriteNew("truncated", 3);
  const std::string& good = w.bytes;
  const auto sections = Sections(good);
  auto end_of = [&](std::size_t k) {
    return good.find(sections[k].second) + sections[k].second.size();
  };
  struct Cut {
    std::size_t size;
    std::string named;     // in the problems
    int served_snapshots;  // -1: not served
    bool set_aside;
  };
  const std::vector<Cut> cuts = {
      {0, "not a Tether session file", -1, true},
      {kMagic4.size() - 1, "not a Tether session file", -1, true},
      {kMagic4.size() + 10, "the header section is cut short (the file ends inside it)", -1, true},
      {end_of(0), "the data section (the session's description and state) is missing", -1, false},
      {end_of(1) - 5, "the data section (the session's description and state) is cut short", -1,
       false},
      {end_of(1), "snapshot 1: its description (spec section 1) is missing", 0, false},
      {end_of(2) - 1, "the description of snapshots (spec section 1) is cut short", 0, false},
      {end_of(3), "snapshot 2 is missing (the file is cut short): left out", 1, false},
      {end_of(5) - 1, "snapshot 3 is cut short (the file ends inside it): left out", 2, false},
      {good.size(), "", 3, false},
  };
  for (const Cut& cut : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(cut.size) + " of " + std::to_string(good.size()));
    Loaded loaded = LoadAlone(w.dir, w.file, good.substr(0, cut.size));
    EXPECT_TRUE(loaded.Names(cut.named)) << loaded.Problems();
    EXPECT_EQ(fs::exists(w.file + ".corrupt"), cut.set_aside);
    if (cut.served_snapshots < 0) {
      EXPECT_TRUE(loaded.records.empty());
    } else {
      ASSERT_EQ(loaded.records.size(), 1u) << loaded.Problems();
      EXPECT_EQ(loaded.records[0].snapshots.size(), static_cast<std::size_t>(cut.served_snapshots));
      EXPECT_EQ(loaded.records[0].data, sections[1].second);
    }
  }
  fs::remove_all(w.dir);
}

// A file that does not start with the magic line of a format read (4, or
// 1 to 3), or whose header names another id, is set aside.
TEST(StateDirTest, AWrongMagicOrIdSetsTheFileAside) {
  const Written w = WriteNew("magic", 1);
  const std::string& file = w.file;
  const std::string record = w.bytes.substr(kMagic4.size());
  for (const std::string& bad :
       {"TETHER-SESSION-FILE 5\n" + record, "TETHER-SESSION-FILE 4\r\n" + record, record,
        "tether-session-file 4\n" + record, std::string("\0\0\0\0", 4)}) {
    Loaded loaded = LoadAlone(w.dir, file, bad);
    EXPECT_TRUE(loaded.records.empty());
    EXPECT_TRUE(loaded.Names(file + ": not a Tether session file (expected the line "
                                    "'TETHER-SESSION-FILE 4', or 1 to 3 of earlier servers) "
                                    "(renamed to .corrupt)"))
        << loaded.Problems();
    EXPECT_TRUE(fs::exists(file + ".corrupt"));
  }
  // A good file under another session's name.
  const std::string other = w.dir + "/" + std::string(32, 'e') + ".session";
  Loaded loaded = LoadAlone(w.dir, other, w.bytes);
  EXPECT_TRUE(loaded.records.empty());
  EXPECT_TRUE(loaded.Names(other + ": the id in the header does not match the file name"))
      << loaded.Problems();
  fs::remove_all(w.dir);
}

// A file of format 4 of a header section of `content` and its SHA-256,
// and `unknown_fields` unknown fields in that section.
std::string HeaderOnly(const std::string& content, int unknown_fields = 0) {
  state_file::SessionFile file;
  state_file::Section* section = file.mutable_header();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(content.data()), content.size(), digest);
  section->set_sha256(std::string(reinterpret_cast<const char*>(digest), sizeof digest));
  section->set_content(content);
  auto* unknown = section->GetReflection()->MutableUnknownFields(section);
  for (int k = 0; k < unknown_fields; ++k) unknown->AddVarint(15, 1);
  return kMagic4 + file.SerializeAsString();
}

// Hostile files cannot make start-up allocate much more than they hold:
// the size is checked before a byte is read, no length is trusted beyond
// the bytes there, and fields that would each become an object (an empty
// snapshot entry: 2 bytes, some 100 bytes of objects) are counted before
// protobuf parses them. Each file here is set aside at once.
TEST(StateDirTest, HostileFilesAreRefusedWithinTheirSize) {
  const std::string dir = TempDir("hostile");
  const std::string file = dir + "/" + std::string(32, 'f') + ".session";
  struct Hostile {
    std::string what, bytes, named;
  };
  state_file::SessionHeader header;
  header.set_id(std::string(32, 'f'));
  header.set_tenant("anonymous");
  header.set_status(v1::READY);
  header.set_seq(1);
  header.set_create_time_unix_nanos(1);
  // 1M empty snapshot entries: 2 MiB, ~100 MiB of objects once parsed.
  std::string entries;
  for (int k = 0; k < (1 << 20); ++k) entries += std::string("\x4a\x00", 2);
  const std::vector<Hostile> files = {
      {"a header length of 2^62 bytes",
       kMagic4 + std::string("\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x40", 10) + "xyz",
       "the header section is cut short (the file ends inside it)"},
      {"a million snapshot entries", HeaderOnly(header.SerializeAsString() + entries),
       "the header section holds more fields than a session file of its size can"},
      {"a million unknown fields in the header section",
       HeaderOnly(header.SerializeAsString(), 1 << 20),
       "the header section holds more fields than a session file of its size can"},
      {"format 3 with a million header lines",
       "TETHER-SESSION-FILE 3\n" + std::string(1 << 20, '\n'),
       "more header lines than a session file of its size holds"},
  };
  for (const Hostile& h : files) {
    SCOPED_TRACE(h.what);
    const auto start = std::chrono::steady_clock::now();
    Loaded loaded = LoadAlone(dir, file, h.bytes);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    EXPECT_TRUE(loaded.records.empty());
    EXPECT_TRUE(loaded.Names(file + ": " + h.named)) << loaded.Problems();
    EXPECT_TRUE(fs::exists(file + ".corrupt"));
  }
  // Larger than the cap: skipped by its size, never read, kept.
  Loaded loaded = LoadAlone(dir, file, kMagic4 + std::string(5000, 'x'), 4096);
  EXPECT_TRUE(loaded.Names(file + ": 5022 bytes, more than the cap of 4096; skipped"))
      << loaded.Problems();
  EXPECT_TRUE(fs::exists(file));
  fs::remove_all(dir);
}

// Files of format 3, written before format 4 (tests/data/state_dir_v3),
// are read as they were written: every field, and each section's bytes
// (their SHA-256, as the files' headers give them).
TEST(StateDirTest, FilesOfFormatThreeAreReadAsWritten) {
  const std::string dir = Format3Copy("format3-read");
  Loaded loaded = Load(dir);
  EXPECT_TRUE(loaded.problems.empty()) << loaded.Problems();
  ASSERT_EQ(loaded.records.size(), 2u);
  const StateDir::Record& ready = loaded.records[0];
  EXPECT_EQ(ready.file, dir + "/" + kReadyId + ".session");
  EXPECT_EQ(ready.id, kReadyId);
  EXPECT_EQ(ready.tenant, "anonymous");
  EXPECT_FALSE(ready.failed);
  EXPECT_EQ(ready.error, "");
  EXPECT_EQ(ready.display_name, kReadyDisplayName);
  EXPECT_EQ(ready.next_snapshot_id, 5u);
  EXPECT_EQ(ready.seq, 1u);
  EXPECT_EQ(
      std::chrono::duration_cast<std::chrono::nanoseconds>(ready.create_time.time_since_epoch())
          .count(),
      1796482824018973528);
  EXPECT_EQ(Sha256Hex(ready.data),
            "347b834f55a38e1dc5eca8250f87a475171238af14d3e40d025c4e7855783695");
  ASSERT_EQ(ready.specs.size(), 1u);
  EXPECT_EQ(Sha256Hex(ready.specs[0]),
            "7af70ca4dfb86f88e9dc1676bd9b276d3a0de6c30a734cfb49aba869976df464");
  ASSERT_EQ(ready.snapshots.size(), 3u);
  const std::vector<std::tuple<uint64_t, uint64_t, std::string, std::size_t, std::string>> want = {
      {1, 50, "first", 1, "13904c419f7168ad09479fa49b580caa4b36d2c37a721850859a0e70278a757f"},
      {2, 80, kSnapshot2Label, 0,
       "5e7a3834888d9f196561f1b0cbc5752858109956f77e461f4bf3a0683278bca4"},
      {4, 100, "third", 0, "3e0555393806761f12435e65d4dc88efd3c1de5a132c2f236f84491abc49a38a"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    const StateDir::SnapshotRecord& s = ready.snapshots[i];
    EXPECT_EQ(s.meta.session_id(), kReadyId);
    EXPECT_EQ(s.meta.snapshot_id(), std::get<0>(want[i]));
    EXPECT_EQ(s.meta.step(), std::get<1>(want[i]));
    EXPECT_EQ(s.meta.label(), std::get<2>(want[i]));
    EXPECT_EQ(s.spec, std::get<3>(want[i]));
    EXPECT_EQ(Sha256Hex(s.state), std::get<4>(want[i]));
  }
  const StateDir::Record& failed = loaded.records[1];
  EXPECT_EQ(failed.id, kFailedId);
  EXPECT_TRUE(failed.failed);
  EXPECT_EQ(failed.error, kFailedError);
  EXPECT_EQ(failed.display_name, "");
  EXPECT_EQ(failed.next_snapshot_id, 1u);
  EXPECT_EQ(failed.seq, 2u);
  EXPECT_EQ(Sha256Hex(failed.data),
            "cdb04dba53c785485bb2bd25f968aaafaf834fb13127845d0f366cf27f1e2991");
  EXPECT_TRUE(failed.snapshots.empty());
  // Read, not rewritten.
  EXPECT_EQ(ReadFile(ready.file), ReadFile(kFormat3Dir + "/" + kReadyId + ".session"));
  fs::remove_all(dir);
}

// What a server serves of the session of the format 3 fixture: its fields,
// the SHA-256 of its export and of each snapshot's (the bytes the server
// that wrote the file gave).
std::string Served(client::Client* client, const std::string& id) {
  std::string out;
  v1::Session s;
  grpc::Status status = client->GetSession(id, &s);
  if (!status.ok()) return "GetSession: " + status.error_message();
  out += "step " + std::to_string(s.step()) + " status " + std::to_string(s.status()) +
         " display_name " + s.display_name() + " error " + s.error() + " create_time " +
         std::to_string(s.create_time().seconds()) + "." + std::to_string(s.create_time().nanos());
  v1::ExportSessionResponse exported;
  if (!client->ExportSession(id, &exported).ok()) return out + " ExportSession failed";
  out += "\nexport " + Sha256Hex(exported.data());
  v1::ListSnapshotsResponse list;
  if (!client->ListSnapshots(id, &list).ok()) return out + " ListSnapshots failed";
  for (const auto& snap : list.snapshots()) {
    if (!client->ExportSession(id, &exported, snap.snapshot_id()).ok()) return out + " failed";
    out += "\nsnapshot " + std::to_string(snap.snapshot_id()) + " step " +
           std::to_string(snap.step()) + " label " + snap.label() + " export " +
           Sha256Hex(exported.data());
  }
  return out;
}

// Upgrading keeps the sessions: a server started on a directory of format
// 3 files serves them as the server that wrote them did (the same export
// bytes for the session and each snapshot), writes a session in format 4
// when it next writes it (after a change), and a restart serves it the
// same again.
TEST(StateDirTest, SessionsOfFormatThreeAreServedAsBeforeAndRewrittenInFormatFour) {
  const std::string dir = Format3Copy("format3-served");
  const std::string ready_before =
      "step 140 status 1 display_name " + kReadyDisplayName +
      " error  create_time 1796482824.18973528"
      "\nexport 347b834f55a38e1dc5eca8250f87a475171238af14d3e40d025c4e7855783695"
      "\nsnapshot 1 step 50 label first export "
      "42517255031984fec0542dbd1580151f8040f25ac49dd034447656f575dc8471"
      "\nsnapshot 2 step 80 label " +
      kSnapshot2Label +
      " export 57739d407521b61779b81e99fedaf9c3409f3b6eb75a97718919464cd589facc"
      "\nsnapshot 4 step 100 label third export "
      "5627438196a42f2f8198f8412ed7dd6cd98cd66cecae1490e020ad6527903e9a";
  const std::string failed_before =
      "step 222 status 3 display_name  error " + kFailedError +
      " create_time 1796482824.25775983"
      "\nexport cdb04dba53c785485bb2bd25f968aaafaf834fb13127845d0f366cf27f1e2991";
  const std::vector<std::string> flags = {"--state-dir", dir, "--shutdown-grace", "0.2"};
  std::string ready_after;
  {
    auto server = StartServer(flags);
    ASSERT_TRUE(server->ok()) << server->error();
    auto client = ConnectClient(server->address());
    EXPECT_EQ(Served(client.get(), kReadyId), ready_before) << server->Log();
    EXPECT_EQ(Served(client.get(), kFailedId), failed_before) << server->Log();
    // A change: the session is written again, in format 4.
    v1::Snapshot snap;
    ASSERT_TRUE(client->CreateSnapshot(kReadyId, "after the upgrade", &snap).ok());
    EXPECT_EQ(snap.snapshot_id(), 5u);
    ready_after = Served(client.get(), kReadyId);
    EXPECT_EQ(ready_after.substr(0, ready_before.size()), ready_before);
    EXPECT_EQ(server->Stop(), 0) << server->Log();
  }
  EXPECT_EQ(ReadFile(dir + "/" + kReadyId + ".session").substr(0, kMagic4.size()), kMagic4);
  auto server = StartServer(flags);
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  EXPECT_EQ(Served(client.get(), kReadyId), ready_after) << server->Log();
  EXPECT_EQ(Served(client.get(), kFailedId), failed_before) << server->Log();
  std::vector<v1::Session> sessions;
  ASSERT_TRUE(client->ListSessions(&sessions).ok());
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].id(), kReadyId);  // the creation order (seq 1, 2) kept
  EXPECT_EQ(server->Stop(), 0) << server->Log();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tether::service_test
