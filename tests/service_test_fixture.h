// What the service tests (tests/service_*_test.cc, one service_test binary)
// share: a tether-server started once per test suite on 127.0.0.1:0, driven
// through the project's own client library (tether_client), and helpers to
// load specs, run to the end and read field violations. No timing
// assertions: every wait has a generous deadline.
//
// TETHER_SERVER_PATH and TETHER_SOURCE_DIR come from tests/CMakeLists.txt.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>
#include <gtest/gtest.h>

#include "google/rpc/error_details.pb.h"
#include "support/server_process.h"
#include "tether/client.h"

namespace tether::service_test {

using namespace std::chrono_literals;
namespace v1 = tether::v1;
using test_support::ServerProcess;

// A file in /tmp holding `text` (mode 0600, from mkstemp: a tokens file
// the server accepts), removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/tether-tokens-XXXXXX";
    int fd = mkstemp(tmpl);
    path_ = tmpl;
    if (fd >= 0) close(fd);
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The deadline of every call and stream unless a test says otherwise.
constexpr std::chrono::seconds kCallDeadline = 120s;

// tether-server with `args` (after --listen 127.0.0.1:0) and `env`
// ("NAME=value", added to this process's environment without TETHER_*),
// its stderr kept for ServerProcess::Log().
std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> args,
                                           std::vector<std::string> env = {});

// tether-server with `args` expected to exit at once: its exit code (-2
// when it kept running, i.e. accepted the flags).
int RunServerExpectingExit(std::vector<std::string> args, std::vector<std::string> env = {});

// Waits until the server's log has `text`, at least `times` times
// (deadline 60 s): a condition to wait on instead of a sleep.
bool WaitForLog(const ServerProcess& server, const std::string& text, std::size_t times = 1);
// How many times `text` occurs in `log`.
std::size_t Occurrences(const std::string& log, const std::string& text);

// A client whose every call and stream has `deadline`.
std::unique_ptr<client::Client> ConnectClient(const std::string& address,
                                              std::chrono::seconds deadline = kCallDeadline);

// examples/<name>, parsed.
v1::SimulationSpec LoadSpec(const std::string& name);
v1::SimulationSpec Pendulum();  // examples/circle_pendulum.json
// x'' = exp(x): the trajectory overflows in finite time (t ~ 2.2).
v1::SimulationSpec BlowUp();

// The google.rpc.BadRequest field violations of `s`, decoded with
// protobuf's own generated code (independently of the client library's
// decoder); checks the rich status carries the same code.
std::vector<google::rpc::BadRequest::FieldViolation> Violations(const grpc::Status& s);
// The one google.rpc.QuotaFailure violation of a RESOURCE_EXHAUSTED status,
// as "subject|description" (decoded with protobuf's generated code), or
// "no details" / "no QuotaFailure".
std::string Quota(const grpc::Status& s);
// Whether a violation's field starts with `field_prefix`.
bool HasViolation(const grpc::Status& s, const std::string& field_prefix);
// "field; field; " for failure messages.
std::string ViolationFields(const grpc::Status& s);

// A session of `spec`; a test failure (and "") when it cannot be created.
std::string MustCreate(client::Client* client, const v1::SimulationSpec& spec);

// Polls GetSession until `pred` holds (deadline 60 s); the session then.
bool WaitSession(client::Client* client, const std::string& id,
                 const std::function<bool(const v1::Session&)>& pred, v1::Session* out = nullptr);

struct RunResult {
  grpc::Status status;
  std::vector<v1::RunResponse> messages;
  std::vector<v1::Frame> frames;
};

// A whole Run, every message kept.
RunResult RunToEnd(client::Client* client, const v1::RunRequest& request);

v1::RunRequest RunSteps(const std::string& id, uint64_t steps);

// Checks frames are consecutive steps first..first+n-1.
::testing::AssertionResult Consecutive(const std::vector<v1::Frame>& frames, uint64_t first);

// A suite sharing one tether-server (--max-sessions 1000, debug log); each
// test gets its own client.
class ServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static ServerProcess* server_;
  std::unique_ptr<client::Client> client_;
};

}  // namespace tether::service_test
