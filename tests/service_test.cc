// Integration tests of tether-server: the real binary is started on
// 127.0.0.1:0 and driven through the generated tether.v1.Simulator stub.
// No timing assertions: every wait has a generous deadline.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "engine/spec_json.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "tether/v1/simulator.grpc.pb.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using tether::v1::Simulator;
namespace v1 = tether::v1;

constexpr auto kCallDeadline = 120s;

// --- The server process ----------------------------------------------------

class ServerProcess {
 public:
  // Starts tether-server with `args` (plus --listen 127.0.0.1:0) and waits
  // for its "listening on" line.
  explicit ServerProcess(std::vector<std::string> args,
                         std::vector<std::string> env = {}) {
    char log_template[] = "/tmp/tether-server-log-XXXXXX";
    int log_fd = mkstemp(log_template);
    log_path_ = log_template;
    int out[2];
    if (pipe(out) != 0) std::abort();

    std::vector<std::string> argv_s = {TETHER_SERVER_PATH, "--listen", "127.0.0.1:0"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "TETHER_", 7) != 0) env_s.push_back(*e);
    }
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) {
      ADD_FAILURE() << "cannot start " << TETHER_SERVER_PATH;
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(log_fd);
    out_fd_ = out[0];
    if (pid_ > 0) ReadAddress();
  }

  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (!log_path_.empty()) unlink(log_path_.c_str());
  }

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  bool ok() const { return !address_.empty(); }

  // Waits for the process to exit; its exit code, or -1 on timeout or
  // signal.
  int WaitExit(std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  void ReadAddress() {
    std::string buf;
    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char c[256];
        ssize_t n = read(out_fd_, c, sizeof c);
        if (n <= 0) break;
        buf.append(c, static_cast<std::size_t>(n));
        auto pos = buf.find("listening on ");
        auto eol = pos == std::string::npos ? pos : buf.find('\n', pos);
        if (eol != std::string::npos) {
          address_ = buf.substr(pos + 13, eol - pos - 13);
          return;
        }
      }
    }
    ADD_FAILURE() << "tether-server did not print its address; log:\n" << Log();
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool exited_ = false;
  std::string address_;
  std::string log_path_;
};

// Runs tether-server with `args` expecting it to exit at once; its code.
int RunServerExpectingExit(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> argv_s = {TETHER_SERVER_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -100;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(20ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -2;  // still running: it did not reject the flags
}

// --- Helpers ---------------------------------------------------------------

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

v1::SimulationSpec LoadSpec(const std::string& name) {
  v1::SimulationSpec spec;
  std::string json = ReadFile(std::string(TETHER_SOURCE_DIR) + "/examples/" + name);
  EXPECT_FALSE(json.empty()) << name;
  tether::Status s = tether::ParseSpecJson(json, &spec, name);
  EXPECT_TRUE(s.ok()) << s.message();
  return spec;
}

v1::SimulationSpec Pendulum() { return LoadSpec("circle_pendulum.json"); }

// x'' = exp(x): the trajectory overflows in finite time (t ~ 2.2).
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

void SetDeadline(grpc::ClientContext* ctx, std::chrono::seconds d = kCallDeadline) {
  ctx->set_deadline(std::chrono::system_clock::now() + d);
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

struct RunResult {
  grpc::Status status;
  std::vector<v1::RunResponse> messages;
  std::vector<v1::Frame> frames;
};

RunResult RunToEnd(Simulator::Stub* stub, const v1::RunRequest& request) {
  RunResult r;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto reader = stub->Run(&ctx, request);
  v1::RunResponse msg;
  while (reader->Read(&msg)) {
    for (const auto& f : msg.frames()) r.frames.push_back(f);
    r.messages.push_back(std::move(msg));
    msg.Clear();
  }
  r.status = reader->Finish();
  return r;
}

v1::RunRequest RunSteps(const std::string& id, uint64_t steps) {
  v1::RunRequest r;
  r.set_session_id(id);
  r.set_steps(steps);
  return r;
}

// Checks frames are consecutive steps first..first+n-1.
::testing::AssertionResult Consecutive(const std::vector<v1::Frame>& frames,
                                       uint64_t first) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].step() != first + i) {
      return ::testing::AssertionFailure()
             << "frame " << i << " has step " << frames[i].step() << ", expected "
             << first + i;
    }
  }
  return ::testing::AssertionSuccess();
}

class Client {
 public:
  explicit Client(const std::string& address) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
    channel_ = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    stub_ = Simulator::NewStub(channel_);
  }
  Simulator::Stub* operator->() { return stub_.get(); }
  Simulator::Stub* get() { return stub_.get(); }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

  grpc::Status Create(const v1::SimulationSpec& spec, v1::Session* session,
                      const std::string& display_name = "") {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::CreateSessionRequest req;
    *req.mutable_spec() = spec;
    req.set_display_name(display_name);
    return stub_->CreateSession(&ctx, req, session);
  }
  std::string MustCreate(const v1::SimulationSpec& spec) {
    v1::Session s;
    grpc::Status st = Create(spec, &s);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return s.id();
  }
  grpc::Status Get(const std::string& id, v1::Session* session) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::GetSessionRequest req;
    req.set_session_id(id);
    return stub_->GetSession(&ctx, req, session);
  }
  grpc::Status Delete(const std::string& id) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::DeleteSessionRequest req;
    req.set_session_id(id);
    v1::DeleteSessionResponse resp;
    return stub_->DeleteSession(&ctx, req, &resp);
  }
  grpc::Status List(int32_t page_size, const std::string& token,
                    v1::ListSessionsResponse* resp) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::ListSessionsRequest req;
    req.set_page_size(page_size);
    req.set_page_token(token);
    return stub_->ListSessions(&ctx, req, resp);
  }
  // Polls GetSession until `pred` holds (deadline 60 s).
  template <typename Pred>
  bool WaitSession(const std::string& id, Pred pred, v1::Session* out = nullptr) {
    auto deadline = std::chrono::steady_clock::now() + 60s;
    v1::Session s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Get(id, &s).ok() && pred(s)) {
        if (out) *out = s;
        return true;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Simulator::Stub> stub_;
};

// Raw unary call through the generic stub (for grpc.health.v1).
grpc::Status GenericUnary(std::shared_ptr<grpc::Channel> channel, const std::string& method,
                          const std::string& request, std::string* response) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 30s);
  grpc::Slice slice(request);
  grpc::ByteBuffer req(&slice, 1), resp;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &req, &resp,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status status = done.get_future().get();
  std::vector<grpc::Slice> slices;
  if (status.ok() && resp.Dump(&slices).ok()) {
    response->clear();
    for (auto& s : slices) response->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

// One request/response on a bidi method through the generic stub (for
// server reflection).
grpc::Status GenericBidiOnce(std::shared_ptr<grpc::Channel> channel,
                             const std::string& method, const std::string& request,
                             std::string* response) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 30s);
  grpc::CompletionQueue cq;
  void* tag;
  bool ok;
  auto call = stub.PrepareCall(&ctx, method, &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  cq.Next(&tag, &ok);
  grpc::Slice slice(request);
  grpc::ByteBuffer req(&slice, 1), resp;
  call->Write(req, reinterpret_cast<void*>(2));
  cq.Next(&tag, &ok);
  call->WritesDone(reinterpret_cast<void*>(3));
  cq.Next(&tag, &ok);
  call->Read(&resp, reinterpret_cast<void*>(4));
  cq.Next(&tag, &ok);
  bool read_ok = ok;
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  if (read_ok) {
    std::vector<grpc::Slice> slices;
    if (resp.Dump(&slices).ok()) {
      for (auto& s : slices) {
        response->append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

// --- The shared server -----------------------------------------------------

class ServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--max-sessions", "1000", "--log-level", "debug"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(server_->ok());
    client_ = std::make_unique<Client>(server_->address());
  }

  static ServerProcess* server_;
  std::unique_ptr<Client> client_;
};
ServerProcess* ServiceTest::server_ = nullptr;

TEST_F(ServiceTest, HealthServing) {
  std::string resp;
  // grpc.health.v1.HealthCheckRequest{service: ""} is empty;
  // HealthCheckResponse{status: SERVING} is 08 01.
  grpc::Status s = GenericUnary(client_->channel(), "/grpc.health.v1.Health/Check", "", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp, std::string("\x08\x01", 2));
  // Per-service status too: HealthCheckRequest{service: "tether.v1.Simulator"}.
  std::string name = "tether.v1.Simulator";
  std::string req = std::string("\x0a", 1) + static_cast<char>(name.size()) + name;
  s = GenericUnary(client_->channel(), "/grpc.health.v1.Health/Check", req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp, std::string("\x08\x01", 2));
}

TEST_F(ServiceTest, ReflectionListsSimulator) {
  // ServerReflectionRequest{list_services: ""} = field 7, empty string.
  std::string resp;
  grpc::Status s = GenericBidiOnce(client_->channel(),
                                   "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                   std::string("\x3a\x00", 2), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_NE(resp.find("tether.v1.Simulator"), std::string::npos);
}

TEST_F(ServiceTest, ValidateReportsWithoutRpcError) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::ValidateRequest req;
  *req.mutable_spec() = Pendulum();
  v1::ValidateResponse resp;
  grpc::Status s = (*client_)->Validate(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(resp.report().valid());

  // An invalid spec is a report, not an RPC error.
  grpc::ClientContext ctx2;
  SetDeadline(&ctx2);
  req.mutable_spec()->mutable_system()->clear_coordinates();
  s = (*client_)->Validate(&ctx2, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(resp.report().valid());
  EXPECT_GT(resp.report().diagnostics_size(), 0);
}

TEST_F(ServiceTest, EvaluateAndItsErrors) {
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::EvaluateRequest req;
    *req.mutable_spec() = Pendulum();
    v1::EvaluateResponse resp;
    grpc::Status s = (*client_)->Evaluate(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.frame().q_size(), 2);
    EXPECT_EQ(resp.frame().q(0), 1.0);
    EXPECT_EQ(resp.frame().a_size(), 2);
  }
  {  // A bad expression: INVALID_ARGUMENT with the path under "spec.".
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::EvaluateRequest req;
    *req.mutable_spec() = Pendulum();
    req.mutable_spec()->mutable_system()->mutable_constraints(0)->set_expression(
        "(x^2 + y^2 - l^2)/2 + ?");
    v1::EvaluateResponse resp;
    grpc::Status s = (*client_)->Evaluate(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(HasViolation(s, "spec.system.constraints[0].expression"))
        << ViolationFields(s) << s.error_message();
  }
  {  // An unknown input: INVALID_ARGUMENT naming it.
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::EvaluateRequest req;
    *req.mutable_spec() = LoadSpec("pendulum_force_input.json");
    (*req.mutable_inputs())["nope"] = 1;
    v1::EvaluateResponse resp;
    grpc::Status s = (*client_)->Evaluate(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("nope"), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find("Fx"), std::string::npos) << s.error_message();
    EXPECT_TRUE(HasViolation(s, "inputs[nope]")) << ViolationFields(s);
  }
  {  // A state of the wrong length.
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::EvaluateRequest req;
    *req.mutable_spec() = Pendulum();
    req.mutable_state()->add_q(1);
    v1::EvaluateResponse resp;
    grpc::Status s = (*client_)->Evaluate(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(HasViolation(s, "state")) << ViolationFields(s);
  }
}

TEST_F(ServiceTest, SessionLifecycle) {
  v1::Session created;
  grpc::Status s = client_->Create(Pendulum(), &created, "my pendulum");
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(created.id().size(), 32u);
  EXPECT_EQ(created.id().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(created.status(), v1::READY);
  EXPECT_EQ(created.step(), 0u);
  EXPECT_EQ(created.display_name(), "my pendulum");
  ASSERT_EQ(created.coordinates_size(), 2);
  EXPECT_EQ(created.coordinates(0), "x");
  ASSERT_EQ(created.constraints_size(), 1);
  EXPECT_EQ(created.constraints(0), "rod");
  EXPECT_EQ(created.state().q_size(), 2);
  EXPECT_GT(created.create_time().seconds(), 0);

  v1::Session got;
  ASSERT_TRUE(client_->Get(created.id(), &got).ok());
  EXPECT_EQ(got.id(), created.id());
  EXPECT_EQ(got.status(), v1::READY);

  // Ids differ.
  v1::Session other;
  ASSERT_TRUE(client_->Create(Pendulum(), &other).ok());
  EXPECT_NE(other.id(), created.id());

  ASSERT_TRUE(client_->Delete(created.id()).ok());
  EXPECT_EQ(client_->Get(created.id(), &got).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(client_->Delete(created.id()).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(client_->Get("", &got).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client_->Get("0123456789abcdef0123456789abcdef", &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(client_->Delete(other.id()).ok());
}

TEST_F(ServiceTest, CreateSessionErrors) {
  v1::Session s;
  v1::SimulationSpec bad = Pendulum();
  bad.mutable_system()->mutable_constraints(0)->set_expression("x +* y");
  grpc::Status st = client_->Create(bad, &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(st, "spec.system.constraints[0].expression")) << ViolationFields(st);

  st = client_->Create(Pendulum(), &s, std::string(300, 'n'));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(st, "display_name")) << ViolationFields(st);
}

TEST_F(ServiceTest, CreateSessionReturnsValidationWarnings) {
  v1::SimulationSpec spec = Pendulum();
  spec.mutable_system()->mutable_baumgarte()->set_alpha(0);
  v1::Session s;
  ASSERT_TRUE(client_->Create(spec, &s).ok());
  bool alpha = false;
  for (const auto& w : s.warnings()) {
    EXPECT_EQ(w.severity(), v1::Diagnostic::WARNING) << w.ShortDebugString();
    alpha = alpha || w.field() == "system.baumgarte.alpha";
  }
  EXPECT_TRUE(alpha) << s.ShortDebugString();
  // A clean description has none; GetSession never repeats them.
  v1::Session clean;
  ASSERT_TRUE(client_->Create(Pendulum(), &clean).ok());
  EXPECT_EQ(clean.warnings_size(), 0);
  v1::Session got;
  ASSERT_TRUE(client_->Get(s.id(), &got).ok());
  EXPECT_EQ(got.warnings_size(), 0);
  EXPECT_TRUE(client_->Delete(s.id()).ok());
  EXPECT_TRUE(client_->Delete(clean.id()).ok());
}

TEST_F(ServiceTest, ListSessionsPagesInCreationOrder) {
  std::vector<std::string> mine;
  for (int i = 0; i < 7; ++i) mine.push_back(client_->MustCreate(Pendulum()));
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    v1::ListSessionsResponse resp;
    grpc::Status s = client_->List(3, token, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_LE(resp.sessions_size(), 3);
    for (const auto& session : resp.sessions()) seen.push_back(session.id());
    token = resp.next_page_token();
    ASSERT_LT(++pages, 1000);
  } while (!token.empty());
  // Ours appear, in creation order.
  std::vector<std::string> ours_seen;
  for (const auto& id : seen) {
    if (std::find(mine.begin(), mine.end(), id) != mine.end()) ours_seen.push_back(id);
  }
  EXPECT_EQ(ours_seen, mine);

  v1::ListSessionsResponse resp;
  EXPECT_EQ(client_->List(-1, "", &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status s = client_->List(10, "garbage", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "page_token"));
  for (const auto& id : mine) EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, RunStreamsConsecutiveFramesAndContinues) {
  std::string id = client_->MustCreate(Pendulum());
  v1::RunRequest req = RunSteps(id, 1000);
  req.set_frames_per_message(100);
  RunResult r = RunToEnd(client_->get(), req);
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
  ASSERT_TRUE(client_->Get(id, &s).ok());
  EXPECT_EQ(s.status(), v1::READY);
  EXPECT_EQ(s.step(), 1000u);
  EXPECT_EQ(s.state().t(), r.frames.back().t());
  EXPECT_EQ(s.state().q(0), r.frames.back().q(0));

  // A later run continues and does not repeat the last frame.
  r = RunToEnd(client_->get(), RunSteps(id, 10));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_EQ(r.frames.size(), 10u);
  EXPECT_TRUE(Consecutive(r.frames, 1001));
  ASSERT_EQ(r.messages.size(), 1u);  // default 256 frames per message

  // every = 3: run steps 3, 6, 9 and the last (10).
  req = RunSteps(id, 10);
  req.set_every(3);
  req.set_include_certificate(false);
  r = RunToEnd(client_->get(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  std::vector<uint64_t> steps;
  for (const auto& f : r.frames) steps.push_back(f.step());
  EXPECT_EQ(steps, (std::vector<uint64_t>{1013, 1016, 1019, 1020}));
  EXPECT_FALSE(r.messages.back().has_certificate());

  // until_time: lands exactly on it.
  ASSERT_TRUE(client_->Get(id, &s).ok());
  double until = s.state().t() + 0.0105;
  req = v1::RunRequest();
  req.set_session_id(id);
  req.set_until_time(until);
  r = RunToEnd(client_->get(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_FALSE(r.frames.empty());
  EXPECT_EQ(r.frames.back().t(), until);
  EXPECT_TRUE(Consecutive(r.frames, 1021));
  EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, RunErrors) {
  std::string id = client_->MustCreate(Pendulum());
  RunResult r = RunToEnd(client_->get(), RunSteps("0123456789abcdef0123456789abcdef", 10));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::NOT_FOUND);

  v1::RunRequest req;
  req.set_session_id(id);
  r = RunToEnd(client_->get(), req);  // neither steps nor until_time
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(r.status, "steps")) << ViolationFields(r.status);

  req = RunSteps(id, 10);
  req.set_frames_per_message(70000);
  r = RunToEnd(client_->get(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(r.status, "frames_per_message"));

  req = v1::RunRequest();
  req.set_session_id(id);
  req.set_until_time(-1);  // earlier than the session's time
  r = RunToEnd(client_->get(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(r.status, "until_time")) << ViolationFields(r.status);
  EXPECT_TRUE(r.frames.empty());

  // Run takes its request as bytes: bytes that are no RunRequest (a
  // truncated length-delimited field) are INVALID_ARGUMENT, not a crash.
  std::string ignored;
  grpc::Status raw = GenericUnary(client_->channel(), "/tether.v1.Simulator/Run",
                                  std::string("\x0a\x20" "0123", 6), &ignored);
  EXPECT_EQ(raw.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << raw.error_message();
  EXPECT_NE(raw.error_message().find("RunRequest"), std::string::npos) << raw.error_message();

  // The session is still usable.
  v1::Session s;
  ASSERT_TRUE(client_->Get(id, &s).ok());
  EXPECT_EQ(s.status(), v1::READY);
  r = RunToEnd(client_->get(), RunSteps(id, 5));
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, ConcurrentRunOnOneSessionIsFailedPrecondition) {
  std::string id = client_->MustCreate(Pendulum());
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto reader = (*client_)->Run(&ctx, RunSteps(id, 1000000000));
  v1::RunResponse msg;
  ASSERT_TRUE(reader->Read(&msg));  // it is running

  v1::Session s;
  ASSERT_TRUE(client_->Get(id, &s).ok());
  EXPECT_EQ(s.status(), v1::RUNNING);

  RunResult second = RunToEnd(client_->get(), RunSteps(id, 10));
  EXPECT_EQ(second.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << second.status.error_message();
  EXPECT_TRUE(second.frames.empty());

  {  // CoSimulate on it too.
    grpc::ClientContext cctx;
    SetDeadline(&cctx);
    auto stream = (*client_)->CoSimulate(&cctx);
    v1::CoSimulateRequest creq;
    creq.set_session_id(id);
    creq.set_communication_step(0.01);
    stream->Write(creq);
    stream->WritesDone();
    v1::CoSimulateResponse cresp;
    EXPECT_FALSE(stream->Read(&cresp));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  }

  ctx.TryCancel();
  while (reader->Read(&msg)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(client_->WaitSession(id, [](const v1::Session& x) {
    return x.status() == v1::READY;
  }, &s));
  // The next run continues from the last completed step.
  RunResult next = RunToEnd(client_->get(), RunSteps(id, 3));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  ASSERT_EQ(next.frames.size(), 3u);
  EXPECT_TRUE(Consecutive(next.frames, s.step() + 1));
  EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, CancelMidStreamStopsStepping) {
  std::string id = client_->MustCreate(Pendulum());
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    v1::RunRequest req = RunSteps(id, 1000000000);
    req.set_frames_per_message(16);
    auto reader = (*client_)->Run(&ctx, req);
    v1::RunResponse msg;
    uint64_t expected = 0;
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(reader->Read(&msg));
      for (const auto& f : msg.frames()) EXPECT_EQ(f.step(), expected++);
    }
    ctx.TryCancel();
    while (reader->Read(&msg)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  v1::Session s;
  ASSERT_TRUE(client_->WaitSession(id, [](const v1::Session& x) {
    return x.status() == v1::READY;
  }, &s));
  // Stepping stopped: the step no longer moves.
  std::this_thread::sleep_for(300ms);
  v1::Session later;
  ASSERT_TRUE(client_->Get(id, &later).ok());
  EXPECT_EQ(later.step(), s.step());
  EXPECT_LT(s.step(), 1000000000u);
  EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, SparseFramesStreamBeforeTheRunEnds) {
  // every = 100000 on a long run: a message holds far fewer than 256
  // frames, yet the first ones arrive while the session is still running.
  std::string id = client_->MustCreate(Pendulum());
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 600s);
  v1::RunRequest req = RunSteps(id, 100000000);
  req.set_every(100000);
  auto reader = (*client_)->Run(&ctx, req);
  v1::RunResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  ASSERT_GE(msg.frames_size(), 1);
  EXPECT_EQ(msg.frames(0).step(), 0u);
  // Not held back until 256 frames (25.6 million steps) had filled it.
  EXPECT_LT(msg.frames_size(), 256);
  EXPECT_FALSE(msg.has_certificate());
  ASSERT_TRUE(reader->Read(&msg));  // a later message, still mid-run
  ASSERT_GE(msg.frames_size(), 1);
  EXPECT_EQ(msg.frames(0).step() % 100000, 0u);
  EXPECT_LT(msg.frames(msg.frames_size() - 1).step(), 100000000u);
  v1::Session s;
  ASSERT_TRUE(client_->Get(id, &s).ok());
  EXPECT_EQ(s.status(), v1::RUNNING);
  ctx.TryCancel();
  while (reader->Read(&msg)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(client_->WaitSession(id, [](const v1::Session& x) {
    return x.status() == v1::READY;
  }, &s));
  EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, SlowReaderPausesSteppingAndLosesNothing) {
  std::string id = client_->MustCreate(Pendulum());
  constexpr uint64_t kSteps = 400000;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, 600s);
  auto reader = (*client_)->Run(&ctx, RunSteps(id, kSteps));
  std::vector<v1::Frame> frames;
  v1::RunResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  for (const auto& f : msg.frames()) frames.push_back(f);

  // The reader sleeps: the server fills a bounded buffer, then stops
  // stepping (the session's step stops moving well before the end).
  uint64_t previous = UINT64_MAX, stable = 0;
  bool paused = false;
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(500ms);
    v1::Session s;
    ASSERT_TRUE(client_->Get(id, &s).ok());
    if (s.step() == previous) {
      paused = true;
      stable = s.step();
      break;
    }
    previous = s.step();
  }
  ASSERT_TRUE(paused) << "stepping did not pause while the reader slept";
  EXPECT_LT(stable, kSteps / 2) << "the server ran ahead of a sleeping reader";
  std::printf("[ info ] server paused at step %llu of %llu while the reader slept\n",
              static_cast<unsigned long long>(stable),
              static_cast<unsigned long long>(kSteps));

  // Then everything arrives, in order.
  while (reader->Read(&msg)) {
    for (const auto& f : msg.frames()) frames.push_back(f);
  }
  grpc::Status st = reader->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(frames.size(), kSteps + 1);
  EXPECT_TRUE(Consecutive(frames, 0));
  EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, DeleteDuringRunCancelsIt) {
  std::string id = client_->MustCreate(Pendulum());
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto reader = (*client_)->Run(&ctx, RunSteps(id, 1000000000));
  v1::RunResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  ASSERT_TRUE(client_->Delete(id).ok());
  while (reader->Read(&msg)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  v1::Session s;
  EXPECT_EQ(client_->Get(id, &s).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, FailingRunStreamsFramesAndMarksSessionFailed) {
  std::string id = client_->MustCreate(BlowUp());
  v1::RunRequest req = RunSteps(id, 100000);
  req.set_frames_per_message(32);
  RunResult r = RunToEnd(client_->get(), req);
  ASSERT_EQ(r.status.error_code(), grpc::StatusCode::ABORTED) << r.status.error_message();
  EXPECT_NE(r.status.error_message().find("step"), std::string::npos) << r.status.error_message();
  ASSERT_FALSE(r.frames.empty());
  EXPECT_TRUE(Consecutive(r.frames, 0));
  EXPECT_LT(r.frames.size(), 100000u);
  for (const auto& f : r.frames) {
    for (double q : f.q()) EXPECT_TRUE(std::isfinite(q));
  }

  v1::Session s;
  ASSERT_TRUE(client_->Get(id, &s).ok());
  EXPECT_EQ(s.status(), v1::FAILED);
  EXPECT_FALSE(s.error().empty());
  EXPECT_NE(r.status.error_message().find(s.error()), std::string::npos)
      << r.status.error_message() << " vs " << s.error();
  EXPECT_EQ(s.step(), r.frames.back().step());

  // A FAILED session cannot run again.
  RunResult again = RunToEnd(client_->get(), RunSteps(id, 1));
  EXPECT_EQ(again.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(client_->Delete(id).ok());
}

TEST_F(ServiceTest, CoSimulateLockstep) {
  std::string id = client_->MustCreate(LoadSpec("pendulum_force_input.json"));
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto stream = (*client_)->CoSimulate(&ctx);
  v1::CoSimulateRequest req;
  v1::CoSimulateResponse resp;

  req.set_session_id(id);
  req.set_communication_step(0.01);
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.frame().t(), 0.0 + 0.01);
  EXPECT_EQ(resp.frame().step(), 10u);
  EXPECT_EQ(resp.certificate().steps(), 10u);
  const double x_free = resp.frame().q(0);

  req.Clear();
  req.set_communication_step(0.005);
  (*req.mutable_inputs())["Fx"] = 5.0;
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.frame().t(), 0.01 + 0.005);
  EXPECT_EQ(resp.frame().step(), 15u);
  EXPECT_GT(resp.frame().q(0), x_free);  // pushed by Fx

  stream->WritesDone();
  EXPECT_FALSE(stream->Read(&resp));
  grpc::Status st = stream->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();

  v1::Session s;
  ASSERT_TRUE(client_->Get(id, &s).ok());
  EXPECT_EQ(s.status(), v1::READY);
  EXPECT_EQ(s.step(), 15u);
  EXPECT_TRUE(client_->Delete(id).ok());
}

grpc::Status CoSimulateOnce(Client* client, const v1::CoSimulateRequest& req) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto stream = (*client)->CoSimulate(&ctx);
  stream->Write(req);
  stream->WritesDone();
  v1::CoSimulateResponse resp;
  while (stream->Read(&resp)) {
  }
  return stream->Finish();
}

TEST_F(ServiceTest, CoSimulateErrors) {
  std::string id = client_->MustCreate(LoadSpec("pendulum_force_input.json"));
  v1::CoSimulateRequest req;
  req.set_session_id("0123456789abcdef0123456789abcdef");
  req.set_communication_step(0.01);
  EXPECT_EQ(CoSimulateOnce(client_.get(), req).error_code(), grpc::StatusCode::NOT_FOUND);

  req.set_session_id(id);
  req.set_communication_step(0);
  grpc::Status s = CoSimulateOnce(client_.get(), req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "communication_step"));

  req.set_communication_step(0.01);
  (*req.mutable_inputs())["torque"] = 1;
  s = CoSimulateOnce(client_.get(), req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("torque"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("Fx"), std::string::npos) << s.error_message();

  req.clear_session_id();
  req.clear_inputs();
  s = CoSimulateOnce(client_.get(), req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasViolation(s, "session_id"));

  // None of that advanced or broke the session.
  v1::Session session;
  ASSERT_TRUE(client_->Get(id, &session).ok());
  EXPECT_EQ(session.status(), v1::READY);
  EXPECT_EQ(session.step(), 0u);
  EXPECT_TRUE(client_->Delete(id).ok());
}

std::vector<std::string> SerializedFrames(const RunResult& r) {
  std::vector<std::string> out;
  for (const auto& f : r.frames) out.push_back(f.SerializeAsString());
  return out;
}

TEST_F(ServiceTest, HundredSessionsAtOnceAndDeterminismUnderLoad) {
  // Reference: one session alone.
  constexpr uint64_t kSteps = 1500;
  std::string alone = client_->MustCreate(Pendulum());
  v1::RunRequest ref_req = RunSteps(alone, kSteps);
  ref_req.set_frames_per_message(64);
  RunResult reference = RunToEnd(client_->get(), ref_req);
  ASSERT_TRUE(reference.status.ok()) << reference.status.error_message();
  ASSERT_EQ(reference.frames.size(), kSteps + 1);

  // A hundred sessions, all running at once, plus the same spec again.
  constexpr int kSessions = 100;
  std::vector<std::string> ids;
  for (int i = 0; i < kSessions; ++i) ids.push_back(client_->MustCreate(Pendulum()));
  std::string loaded = client_->MustCreate(Pendulum());

  std::vector<RunResult> results(kSessions);
  std::vector<std::thread> threads;
  std::atomic<int> started{0};
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      Client c(server_->address());
      started++;
      v1::RunRequest req = RunSteps(ids[i], 2 * kSteps);
      req.set_frames_per_message(100);
      results[i] = RunToEnd(c.get(), req);
    });
  }
  while (started.load() < kSessions) std::this_thread::sleep_for(5ms);
  v1::RunRequest req = RunSteps(loaded, kSteps);
  req.set_frames_per_message(64);
  RunResult under_load = RunToEnd(client_->get(), req);
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
      ASSERT_EQ(results[i].frames[k].SerializeAsString(),
                reference.frames[k].SerializeAsString()) << i << " step " << k;
    }
  }

  for (const auto& id : ids) EXPECT_TRUE(client_->Delete(id).ok());
  EXPECT_TRUE(client_->Delete(alone).ok());
  EXPECT_TRUE(client_->Delete(loaded).ok());
}

TEST_F(ServiceTest, LogsSessionLifecycle) {
  std::string id = client_->MustCreate(Pendulum());
  ASSERT_TRUE(RunToEnd(client_->get(), RunSteps(id, 5)).status.ok());
  ASSERT_TRUE(client_->Delete(id).ok());
  auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = server_->Log();
    if (log.find("session deleted: session=" + id) != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(log.find("session created: session=" + id), std::string::npos) << log;
  EXPECT_NE(log.find("run started: session=" + id), std::string::npos);
  EXPECT_NE(log.find("run finished: session=" + id), std::string::npos);
  EXPECT_NE(log.find("session deleted: session=" + id), std::string::npos);
}

// --- Dedicated servers -----------------------------------------------------

TEST(ServiceLimitsTest, MaxSessionsAndMessageSize) {
  ServerProcess server({"--max-sessions", "2", "--max-message-bytes", "65536",
                        "--log-format", "json"});
  ASSERT_TRUE(server.ok());
  Client client(server.address());
  std::string a = client.MustCreate(Pendulum());
  std::string b = client.MustCreate(Pendulum());
  v1::Session s;
  EXPECT_EQ(client.Create(Pendulum(), &s).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(client.Delete(a).ok());
  std::string c = client.MustCreate(Pendulum());

  // A request larger than --max-message-bytes.
  v1::SimulationSpec huge = Pendulum();
  huge.mutable_system()->set_potential_energy("grav*y" + std::string(100000, ' '));
  EXPECT_EQ(client.Create(huge, &s).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // Frames are split so no response exceeds the limit; nothing is lost.
  v1::RunRequest req = RunSteps(b, 5000);
  req.set_frames_per_message(65536);
  RunResult r = RunToEnd(client.get(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_EQ(r.frames.size(), 5001u);
  EXPECT_TRUE(Consecutive(r.frames, 0));
  EXPECT_GT(r.messages.size(), 1u);
  for (const auto& m : r.messages) EXPECT_LE(m.ByteSizeLong(), 65536u);

  // json log lines.
  std::string log = server.Log();
  EXPECT_NE(log.find("\"msg\":\"session created: session=" + c), std::string::npos) << log;
}

TEST(ServiceIdleTest, IdleSessionsExpire) {
  ServerProcess server({"--session-idle-timeout", "1"});
  ASSERT_TRUE(server.ok());
  Client client(server.address());
  std::string id = client.MustCreate(Pendulum());
  // ListSessions does not count as use; poll it until the session is gone.
  bool gone = false;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    v1::ListSessionsResponse resp;
    ASSERT_TRUE(client.List(100, "", &resp).ok());
    gone = true;
    for (const auto& s : resp.sessions()) gone &= s.id() != id;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(gone);
  v1::Session s;
  EXPECT_EQ(client.Get(id, &s).error_code(), grpc::StatusCode::NOT_FOUND);
  auto log_deadline = std::chrono::steady_clock::now() + 30s;
  while (server.Log().find("session expired: session=" + id) == std::string::npos &&
         std::chrono::steady_clock::now() < log_deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_NE(server.Log().find("session expired: session=" + id), std::string::npos);
}

TEST(ServiceShutdownTest, SigtermEndsStreamsUnavailableAndExitsZero) {
  ServerProcess server({});
  ASSERT_TRUE(server.ok());
  Client client(server.address());
  std::string run_id = client.MustCreate(Pendulum());
  std::string cosim_id = client.MustCreate(Pendulum());

  // An idle CoSimulate stream (one step done, waiting for the next request).
  grpc::ClientContext cctx;
  SetDeadline(&cctx);
  auto cosim = client->CoSimulate(&cctx);
  v1::CoSimulateRequest creq;
  creq.set_session_id(cosim_id);
  creq.set_communication_step(0.01);
  ASSERT_TRUE(cosim->Write(creq));
  v1::CoSimulateResponse cresp;
  ASSERT_TRUE(cosim->Read(&cresp));

  // A long Run being read.
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::RunRequest req = RunSteps(run_id, 1000000000);
  req.set_frames_per_message(64);
  auto reader = client->Run(&ctx, req);
  v1::RunResponse msg;
  uint64_t expected = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reader->Read(&msg));
    for (const auto& f : msg.frames()) ASSERT_EQ(f.step(), expected++);
  }

  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  while (reader->Read(&msg)) {
    for (const auto& f : msg.frames()) ASSERT_EQ(f.step(), expected++);
  }
  grpc::Status st = reader->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_FALSE(cosim->Read(&cresp));
  EXPECT_EQ(cosim->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);

  // New calls are refused, and health no longer says SERVING.
  v1::Session s;
  EXPECT_EQ(client.Get(run_id, &s).error_code(), grpc::StatusCode::UNAVAILABLE);
  std::string health;
  grpc::Status hs = GenericUnary(client.channel(), "/grpc.health.v1.Health/Check", "", &health);
  if (hs.ok()) {
    EXPECT_EQ(health, std::string("\x08\x02", 2));  // NOT_SERVING
  }

  EXPECT_EQ(server.WaitExit(60s), 0) << server.Log();
}

TEST(ServiceFlagsTest, BadFlagValuesExitTwo) {
  EXPECT_EQ(RunServerExpectingExit({"--workers", "0"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--workers", "many"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--listen", "nonsense"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--listen", "127.0.0.1:99999"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--max-sessions", "-3"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--worker-spin", "-1"}), 2);
  EXPECT_EQ(RunServerExpectingExit({}, {"TETHER_WORKER_SPIN=2000000"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--session-idle-timeout", "soon"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--log-level", "loud"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--log-format", "xml"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--no-such-flag", "1"}), 2);
  EXPECT_EQ(RunServerExpectingExit({}, {"TETHER_WORKERS=abc"}), 2);
  EXPECT_EQ(RunServerExpectingExit({"--help"}), 0);
}

TEST(ServiceFlagsTest, EnvironmentConfiguresTheServer) {
  ServerProcess server({}, {"TETHER_MAX_SESSIONS=1", "TETHER_LOG_FORMAT=json"});
  ASSERT_TRUE(server.ok());
  Client client(server.address());
  client.MustCreate(Pendulum());
  v1::Session s;
  EXPECT_EQ(client.Create(Pendulum(), &s).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace
