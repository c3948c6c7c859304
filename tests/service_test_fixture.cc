#include "service_test_fixture.h"

#include <fstream>
#include <sstream>
#include <thread>

#include "engine/spec_json.h"
#include "google/rpc/status.pb.h"

namespace tether::service_test {

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> args,
                                           std::vector<std::string> env) {
  std::vector<std::string> argv = {TETHER_SERVER_PATH};
  for (std::string& a : test_support::EphemeralLoopback()) argv.push_back(std::move(a));
  argv.insert(argv.end(), args.begin(), args.end());
  test_support::ServerProcessOptions options;
  options.environment = std::move(env);
  auto server = std::make_unique<ServerProcess>(std::move(argv), std::move(options));
  if (!server->ok()) ADD_FAILURE() << server->error();
  return server;
}

bool WaitForLog(const ServerProcess& server, const std::string& text, std::size_t times) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Occurrences(server.Log(), text) >= times) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::size_t Occurrences(const std::string& log, const std::string& text) {
  std::size_t n = 0;
  for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
  return n;
}

int RunServerExpectingExit(std::vector<std::string> args, std::vector<std::string> env) {
  std::vector<std::string> argv = {TETHER_SERVER_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return test_support::RunToExit(std::move(argv), std::move(env), 30s);
}

std::unique_ptr<client::Client> ConnectClient(const std::string& address,
                                              std::chrono::seconds deadline) {
  client::ConnectOptions options;
  options.timeout = deadline;
  return client::Client::Connect(address, options);
}

v1::SimulationSpec LoadSpec(const std::string& name) {
  std::ifstream in(std::string(TETHER_SOURCE_DIR) + "/examples/" + name);
  std::stringstream json;
  json << in.rdbuf();
  EXPECT_FALSE(json.str().empty()) << name;
  v1::SimulationSpec spec;
  tether::Status s = tether::ParseSpecJson(json.str(), &spec, name);
  EXPECT_TRUE(s.ok()) << s.message();
  return spec;
}

v1::SimulationSpec Pendulum() { return LoadSpec("circle_pendulum.json"); }

v1::SimulationSpec BlowUp() {
  v1::SimulationSpec spec;
  tether::Status s = tether::ParseSpecJson(
      R"json({"system":{"coordinates":["x"],"masses":{"values":[1]},
          "potentialEnergy":"-exp(x)"},
          "initial":{"q":[0],"v":[0]},
          "integrator":{"method":"RK4","stepSize":0.01}})json",
      &spec, "blowup");
  EXPECT_TRUE(s.ok()) << s.message();
  return spec;
}

std::vector<google::rpc::BadRequest::FieldViolation> Violations(const grpc::Status& s) {
  std::vector<google::rpc::BadRequest::FieldViolation> out;
  google::rpc::Status rich;
  if (s.error_details().empty() || !rich.ParseFromString(s.error_details())) return out;
  EXPECT_EQ(rich.code(), static_cast<int>(s.error_code()));
  for (const auto& any : rich.details()) {
    google::rpc::BadRequest br;
    if (any.UnpackTo(&br)) {
      for (const auto& v : br.field_violations()) out.push_back(v);
    }
  }
  return out;
}

std::string Quota(const grpc::Status& s) {
  google::rpc::Status rich;
  if (!rich.ParseFromString(s.error_details())) return "no details";
  for (const auto& any : rich.details()) {
    google::rpc::QuotaFailure failure;
    if (any.UnpackTo(&failure) && failure.violations_size() == 1) {
      return failure.violations(0).subject() + "|" + failure.violations(0).description();
    }
  }
  return "no QuotaFailure";
}

bool HasViolation(const grpc::Status& s, const std::string& field_prefix) {
  for (const auto& v : Violations(s)) {
    if (v.field().rfind(field_prefix, 0) == 0) return true;
  }
  return false;
}

std::string ViolationFields(const grpc::Status& s) {
  std::string out;
  for (const auto& v : Violations(s)) out += v.field() + "; ";
  return out;
}

std::string MustCreate(client::Client* client, const v1::SimulationSpec& spec) {
  v1::Session s;
  grpc::Status st = client->CreateSession(spec, "", &s);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return s.id();
}

bool WaitSession(client::Client* client, const std::string& id,
                 const std::function<bool(const v1::Session&)>& pred, v1::Session* out) {
  auto deadline = std::chrono::steady_clock::now() + 60s;
  v1::Session s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (client->GetSession(id, &s).ok() && pred(s)) {
      if (out) *out = s;
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

RunResult RunToEnd(client::Client* client, const v1::RunRequest& request) {
  RunResult r;
  r.status = client->RunMessages(request, [&r](const v1::RunResponse& msg) {
    for (const auto& f : msg.frames()) r.frames.push_back(f);
    r.messages.push_back(msg);
    return true;
  });
  return r;
}

v1::RunRequest RunSteps(const std::string& id, uint64_t steps) {
  v1::RunRequest r;
  r.set_session_id(id);
  r.set_steps(steps);
  return r;
}

::testing::AssertionResult Consecutive(const std::vector<v1::Frame>& frames, uint64_t first) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].step() != first + i) {
      return ::testing::AssertionFailure()
             << "frame " << i << " has step " << frames[i].step() << ", expected " << first + i;
    }
  }
  return ::testing::AssertionSuccess();
}

ServerProcess* ServiceTest::server_ = nullptr;

void ServiceTest::SetUpTestSuite() {
  server_ = StartServer({"--max-sessions", "1000", "--log-level", "debug"}).release();
}

void ServiceTest::TearDownTestSuite() {
  delete server_;
  server_ = nullptr;
}

void ServiceTest::SetUp() {
  ASSERT_TRUE(server_->ok());
  client_ = ConnectClient(server_->address());
}

}  // namespace tether::service_test
