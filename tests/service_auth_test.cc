// tether-server with bearer tokens (--tokens-file, TETHER_TOKENS): calls
// without a valid token, tenants that cannot see or touch each other's
// sessions (answered exactly as an absent id), per-tenant session and
// stream quotas, tokens files refused at start-up, and a server without
// tokens behaving as before. Raw generated stubs with
// ClientContext::AddMetadata, independent of the client library.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "google/rpc/status.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "service_test_fixture.h"
#include "support/raw_calls.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service_test {
namespace {

constexpr const char* kAcme = "acme-0123456789abcdef";
constexpr const char* kAcme2 = "acme-second-token-0123";  // acme's second token
constexpr const char* kBeta = "beta-0123456789abcdef";
constexpr const char* kSmall = "small-0123456789abcdef";
constexpr const char* kOld = "old-0123456789abcdef00";
constexpr const char* kAbsent = "0123456789abcdef0123456789abcdef";

const char* const kTokens =
    "# tenants of the auth tests\n"
    "acme   acme-0123456789abcdef\n"
    "acme   acme-second-token-0123   # rotation: a second token\n"
    "beta   beta-0123456789abcdef\n"
    "\n"
    "small  small-0123456789abcdef max_sessions=2 max_streams=1\n"
    "old    old-0123456789abcdef00 expires=2020-01-01T00:00:00Z\n";

class Caller {
 public:
  Caller(const std::string& address, std::string token)
      : stub_(v1::Simulator::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))),
        token_(std::move(token)) {}

  // A context with the caller's token (none when empty).
  void Prepare(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  }
  grpc::Status Create(std::string* id) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::CreateSessionRequest req;
    *req.mutable_spec() = Pendulum();
    v1::Session s;
    grpc::Status status = stub_->CreateSession(&ctx, req, &s);
    if (id) *id = s.id();
    return status;
  }
  grpc::Status Get(const std::string& id) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::GetSessionRequest req;
    req.set_session_id(id);
    v1::Session s;
    return stub_->GetSession(&ctx, req, &s);
  }
  grpc::Status Delete(const std::string& id) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::DeleteSessionRequest req;
    req.set_session_id(id);
    v1::DeleteSessionResponse resp;
    return stub_->DeleteSession(&ctx, req, &resp);
  }
  // Every session id listed, in pages of `page_size`.
  grpc::Status List(std::vector<std::string>* ids, int page_size = 0) {
    ids->clear();
    std::string token;
    for (int pages = 0; pages < 100; ++pages) {
      grpc::ClientContext ctx;
      Prepare(&ctx);
      v1::ListSessionsRequest req;
      req.set_page_size(page_size);
      req.set_page_token(token);
      v1::ListSessionsResponse resp;
      grpc::Status s = stub_->ListSessions(&ctx, req, &resp);
      if (!s.ok()) return s;
      for (const auto& session : resp.sessions()) ids->push_back(session.id());
      token = resp.next_page_token();
      if (token.empty()) break;
    }
    return grpc::Status::OK;
  }
  grpc::Status Run(const std::string& id, uint64_t steps = 10) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    auto reader = stub_->Run(&ctx, RunSteps(id, steps));
    v1::RunResponse resp;
    while (reader->Read(&resp)) {
    }
    return reader->Finish();
  }
  // An ensemble of two instances with `id`'s description as the template.
  grpc::Status RunEnsemble(const std::string& id) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::RunEnsembleRequest req;
    req.set_session_id(id);
    req.set_until_time(0.01);
    v1::EnsembleSweep* sweep = req.mutable_ensemble()->add_sweeps();
    sweep->set_name("x");
    sweep->set_start(0.5);
    sweep->set_stop(0.6);
    sweep->set_count(2);
    auto reader = stub_->RunEnsemble(&ctx, req);
    v1::RunEnsembleResponse resp;
    while (reader->Read(&resp)) {
    }
    return reader->Finish();
  }
  // One CoSimulate step on `id`, then half-close.
  grpc::Status CoSimulate(const std::string& id) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    auto stream = stub_->CoSimulate(&ctx);
    v1::CoSimulateRequest req;
    req.set_session_id(id);
    req.set_communication_step(0.01);
    stream->Write(req);
    stream->WritesDone();
    v1::CoSimulateResponse resp;
    while (stream->Read(&resp)) {
    }
    return stream->Finish();
  }
  // Any unary method of the stub with the caller's token: e.g.
  // Unary(&v1::Simulator::Stub::ListSnapshots, req, &resp).
  template <class Request, class Response>
  grpc::Status Unary(grpc::Status (v1::Simulator::Stub::*method)(grpc::ClientContext*,
                                                                 const Request&, Response*),
                     const Request& req, Response* resp) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    return (stub_.get()->*method)(&ctx, req, resp);
  }
  v1::Simulator::Stub* stub() { return stub_.get(); }

 private:
  std::unique_ptr<v1::Simulator::Stub> stub_;
  std::string token_;
};

// `s` with every occurrence of `from` in its message and details replaced
// by `to` (ids of equal length, so the serialized details stay valid).
std::string Shape(const grpc::Status& s, const std::string& from, const std::string& to) {
  auto replace = [&](std::string text) {
    for (std::size_t at; (at = text.find(from)) != std::string::npos;) {
      text.replace(at, from.size(), to);
    }
    return text;
  };
  return std::to_string(s.error_code()) + "|" + replace(s.error_message()) + "|" +
         replace(s.error_details());
}

class ServiceAuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokens_ = new TempFile(kTokens);
    server_ = StartServer({"--tokens-file", tokens_->path()}).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete tokens_;
  }
  void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }
  Caller As(const std::string& token) { return Caller(server_->address(), token); }

  static TempFile* tokens_;
  static ServerProcess* server_;
};
TempFile* ServiceAuthTest::tokens_ = nullptr;
ServerProcess* ServiceAuthTest::server_ = nullptr;

TEST_F(ServiceAuthTest, MissingUnknownAndExpiredTokensAreUnauthenticated) {
  std::vector<std::string> ids;
  grpc::Status missing = As("").List(&ids);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(missing.error_message().find("'authorization: Bearer <token>'"), std::string::npos)
      << missing.error_message();
  grpc::Status unknown = As("nobody-0123456789abcdef").List(&ids);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(unknown.error_message().find("not known"), std::string::npos)
      << unknown.error_message();
  grpc::Status expired = As(kOld).List(&ids);
  EXPECT_EQ(expired.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(expired.error_message().find("expired at 2020-01-01T00:00:00Z"), std::string::npos)
      << expired.error_message();
  // A token of another scheme, and every method, streams included.
  grpc::ClientContext basic;
  basic.AddMetadata("authorization", std::string("Basic ") + kAcme);
  v1::ListSessionsResponse resp;
  EXPECT_EQ(As("").stub()->ListSessions(&basic, {}, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  Caller anonymous = As("");
  EXPECT_EQ(anonymous.Create(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.Get(kAbsent).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.Delete(kAbsent).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.Run(kAbsent).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.CoSimulate(kAbsent).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.RunEnsemble(kAbsent).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // The other nine unary methods (SECURITY.md: all 16 through one check).
  using Stub = v1::Simulator::Stub;
  auto code = [&](auto method, auto req, auto resp) {
    return anonymous.Unary(method, req, &resp).error_code();
  };
  const auto kUnauth = grpc::StatusCode::UNAUTHENTICATED;
  EXPECT_EQ(code(&Stub::Validate, v1::ValidateRequest(), v1::ValidateResponse()), kUnauth);
  EXPECT_EQ(code(&Stub::Evaluate, v1::EvaluateRequest(), v1::EvaluateResponse()), kUnauth);
  EXPECT_EQ(code(&Stub::CreateSnapshot, v1::CreateSnapshotRequest(), v1::Snapshot()), kUnauth);
  EXPECT_EQ(code(&Stub::ListSnapshots, v1::ListSnapshotsRequest(), v1::ListSnapshotsResponse()),
            kUnauth);
  EXPECT_EQ(code(&Stub::RestoreSnapshot, v1::RestoreSnapshotRequest(), v1::Session()), kUnauth);
  EXPECT_EQ(code(&Stub::DeleteSnapshot, v1::DeleteSnapshotRequest(), v1::DeleteSnapshotResponse()),
            kUnauth);
  EXPECT_EQ(code(&Stub::ExportSession, v1::ExportSessionRequest(), v1::ExportSessionResponse()),
            kUnauth);
  EXPECT_EQ(code(&Stub::ImportSession, v1::ImportSessionRequest(), v1::Session()), kUnauth);
  EXPECT_EQ(code(&Stub::UpdateSession, v1::UpdateSessionRequest(), v1::Session()), kUnauth);
  // Health stays open (probes carry no token).
  auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  grpc::health::v1::HealthCheckRequest check;
  std::string bytes;
  grpc::Status health = test_support::RawUnary(channel, "/grpc.health.v1.Health/Check",
                                               check.SerializeAsString(), &bytes);
  EXPECT_TRUE(health.ok()) << health.error_message();
  // Logs name the tenant, never a token.
  ASSERT_TRUE(As(kAcme).Get(kAbsent).error_code() == grpc::StatusCode::NOT_FOUND);
  const std::string log = server_->Log();
  EXPECT_NE(log.find("tenant=acme"), std::string::npos);
  EXPECT_NE(log.find("code=UNAUTHENTICATED"), std::string::npos);
  for (const char* token : {kAcme, kAcme2, kBeta, kSmall, kOld}) {
    EXPECT_EQ(log.find(token), std::string::npos) << token;
  }
}

TEST_F(ServiceAuthTest, AnotherTenantsSessionIsAnsweredAsAnAbsentOne) {
  Caller acme = As(kAcme), beta = As(kBeta);
  std::string id;
  ASSERT_TRUE(acme.Create(&id).ok());
  ASSERT_EQ(id.size(), std::string(kAbsent).size());
  // Each of beta's calls on acme's session: the same code, message and
  // ResourceInfo as on an id nobody has.
  EXPECT_EQ(Shape(beta.Get(id), id, kAbsent), Shape(beta.Get(kAbsent), id, kAbsent));
  EXPECT_EQ(beta.Get(id).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Shape(beta.Run(id), id, kAbsent), Shape(beta.Run(kAbsent), id, kAbsent));
  EXPECT_EQ(Shape(beta.CoSimulate(id), id, kAbsent), Shape(beta.CoSimulate(kAbsent), id, kAbsent));
  // A session as an ensemble's template (found missing from the list by an
  // audit; the behaviour was right).
  EXPECT_EQ(beta.RunEnsemble(id).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Shape(beta.RunEnsemble(id), id, kAbsent),
            Shape(beta.RunEnsemble(kAbsent), id, kAbsent));
  EXPECT_TRUE(acme.RunEnsemble(id).ok()) << acme.RunEnsemble(id).error_message();
  EXPECT_EQ(Shape(beta.Delete(id), id, kAbsent), Shape(beta.Delete(kAbsent), id, kAbsent));
  EXPECT_EQ(beta.Delete(id).error_code(), grpc::StatusCode::NOT_FOUND);
  // Nothing happened to it: acme still has it, at step 0, under either of
  // its tokens.
  EXPECT_TRUE(acme.Get(id).ok());
  EXPECT_TRUE(As(kAcme2).Get(id).ok());
  std::vector<std::string> listed;
  ASSERT_TRUE(beta.List(&listed).ok());
  EXPECT_EQ(std::count(listed.begin(), listed.end(), id), 0);
  ASSERT_TRUE(acme.List(&listed).ok());
  EXPECT_EQ(std::count(listed.begin(), listed.end(), id), 1);
  EXPECT_TRUE(acme.Run(id).ok());
  EXPECT_TRUE(acme.Delete(id).ok());
}

// `method` by `caller` with `req` on `id` (another tenant's session) is
// NOT_FOUND, shaped exactly as on an id nobody has (kAbsent).
template <class Request, class Response>
void ExpectAnsweredAsAbsent(Caller& caller,
                            grpc::Status (v1::Simulator::Stub::*method)(grpc::ClientContext*,
                                                                        const Request&, Response*),
                            Request req, const std::string& id, const char* name) {
  Response resp;
  req.set_session_id(id);
  grpc::Status on_other = caller.Unary(method, req, &resp);
  req.set_session_id(kAbsent);
  grpc::Status on_absent = caller.Unary(method, req, &resp);
  EXPECT_EQ(on_other.error_code(), grpc::StatusCode::NOT_FOUND)
      << name << ": " << on_other.error_message();
  EXPECT_EQ(Shape(on_other, id, kAbsent), Shape(on_absent, id, kAbsent)) << name;
}

// The session-state calls (snapshots, export, update) on another tenant's
// session: answered as on an absent id, and nothing happens to it. An
// imported session belongs to its importer, whoever exported the bytes.
TEST_F(ServiceAuthTest, AnotherTenantsSessionStateIsAnsweredAsAnAbsentOne) {
  using Stub = v1::Simulator::Stub;
  Caller acme = As(kAcme), beta = As(kBeta);
  std::string id;
  ASSERT_TRUE(acme.Create(&id).ok());
  v1::CreateSnapshotRequest create;
  create.set_session_id(id);
  create.set_label("acme's");
  v1::Snapshot snapshot;
  ASSERT_TRUE(acme.Unary(&Stub::CreateSnapshot, create, &snapshot).ok());
  // Each of beta's calls on acme's session: the same code, message and
  // ResourceInfo as on an id nobody has.
  ExpectAnsweredAsAbsent(beta, &Stub::CreateSnapshot, create, id, "CreateSnapshot");
  ExpectAnsweredAsAbsent(beta, &Stub::ListSnapshots, v1::ListSnapshotsRequest(), id,
                         "ListSnapshots");
  v1::RestoreSnapshotRequest restore;
  restore.set_snapshot_id(snapshot.snapshot_id());
  ExpectAnsweredAsAbsent(beta, &Stub::RestoreSnapshot, restore, id, "RestoreSnapshot");
  v1::DeleteSnapshotRequest remove;
  remove.set_snapshot_id(snapshot.snapshot_id());
  ExpectAnsweredAsAbsent(beta, &Stub::DeleteSnapshot, remove, id, "DeleteSnapshot");
  ExpectAnsweredAsAbsent(beta, &Stub::ExportSession, v1::ExportSessionRequest(), id,
                         "ExportSession");
  v1::UpdateSessionRequest update;
  (*update.mutable_parameters())["l"] = 2.0;
  ExpectAnsweredAsAbsent(beta, &Stub::UpdateSession, update, id, "UpdateSession");
  // Nothing happened to acme's session: its snapshot is still there.
  v1::ListSnapshotsRequest list;
  list.set_session_id(id);
  v1::ListSnapshotsResponse snapshots;
  ASSERT_TRUE(acme.Unary(&Stub::ListSnapshots, list, &snapshots).ok());
  ASSERT_EQ(snapshots.snapshots_size(), 1);
  EXPECT_EQ(snapshots.snapshots(0).label(), "acme's");
  // Bytes acme exports and beta imports make beta's session, which acme
  // does not see.
  v1::ExportSessionRequest export_req;
  export_req.set_session_id(id);
  v1::ExportSessionResponse exported;
  ASSERT_TRUE(acme.Unary(&Stub::ExportSession, export_req, &exported).ok());
  v1::ImportSessionRequest import_req;
  import_req.set_data(exported.data());
  v1::Session imported;
  ASSERT_TRUE(beta.Unary(&Stub::ImportSession, import_req, &imported).ok());
  EXPECT_NE(imported.id(), id);
  EXPECT_TRUE(beta.Get(imported.id()).ok());
  EXPECT_EQ(acme.Get(imported.id()).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(beta.Delete(imported.id()).ok());
  EXPECT_TRUE(acme.Delete(id).ok());
}

TEST_F(ServiceAuthTest, ListingPagesThroughTheCallersSessionsOnly) {
  Caller acme = As(kAcme2), beta = As(kBeta);
  std::vector<std::string> mine;
  for (int i = 0; i < 5; ++i) {
    std::string id;
    ASSERT_TRUE(acme.Create(&id).ok());
    mine.push_back(id);
    ASSERT_TRUE(beta.Create(&id).ok());  // interleaved with beta's
  }
  std::vector<std::string> listed;
  ASSERT_TRUE(acme.List(&listed, 2).ok());
  EXPECT_EQ(listed, mine);
  std::vector<std::string> betas;
  ASSERT_TRUE(beta.List(&betas, 2).ok());
  for (const std::string& id : mine) {
    EXPECT_EQ(std::count(betas.begin(), betas.end(), id), 0);
    EXPECT_TRUE(acme.Delete(id).ok());
  }
  for (const std::string& id : betas) EXPECT_TRUE(beta.Delete(id).ok());
}

TEST_F(ServiceAuthTest, SessionQuotaIsPerTenant) {
  Caller small = As(kSmall);
  std::string a, b;
  ASSERT_TRUE(small.Create(&a).ok());
  ASSERT_TRUE(small.Create(&b).ok());
  grpc::Status third = small.Create(nullptr);
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(third.error_message().find("tenant 'small'"), std::string::npos)
      << third.error_message();
  const std::string quota = Quota(third);
  EXPECT_EQ(quota.rfind("tenant:small|max_sessions", 0), 0u) << quota;
  // Another tenant is not held back.
  std::string other;
  ASSERT_TRUE(As(kBeta).Create(&other).ok());
  EXPECT_TRUE(As(kBeta).Delete(other).ok());
  // Deleting gives the place back.
  ASSERT_TRUE(small.Delete(a).ok());
  ASSERT_TRUE(small.Create(&a).ok());
  EXPECT_TRUE(small.Delete(a).ok());
  EXPECT_TRUE(small.Delete(b).ok());
}

TEST_F(ServiceAuthTest, StreamQuotaIsPerTenantAndReleasedWhenTheStreamEnds) {
  Caller small = As(kSmall);
  std::string a, b;
  ASSERT_TRUE(small.Create(&a).ok());
  ASSERT_TRUE(small.Create(&b).ok());
  {
    // An open co-simulation holds small's one stream.
    grpc::ClientContext ctx;
    small.Prepare(&ctx);
    auto stream = small.stub()->CoSimulate(&ctx);
    v1::CoSimulateRequest req;
    req.set_session_id(a);
    req.set_communication_step(0.01);
    ASSERT_TRUE(stream->Write(req));
    v1::CoSimulateResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    grpc::Status second = small.Run(b);
    EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << second.error_message();
    const std::string quota = Quota(second);
    EXPECT_EQ(quota.rfind("tenant:small|max_streams", 0), 0u) << quota;
    // Another tenant's streams are not counted against small's.
    std::string other;
    ASSERT_TRUE(As(kBeta).Create(&other).ok());
    EXPECT_TRUE(As(kBeta).Run(other).ok());
    EXPECT_TRUE(As(kBeta).Delete(other).ok());
    stream->WritesDone();
    while (stream->Read(&resp)) {
    }
    ASSERT_TRUE(stream->Finish().ok());
  }
  // Ended, the stream gave its slot back (twice over: release is not a
  // one-off).
  EXPECT_TRUE(small.Run(b).ok());
  EXPECT_TRUE(small.CoSimulate(a).ok());
  EXPECT_TRUE(small.Run(b).ok());
  // A refused stream (someone else's session) takes no slot either.
  EXPECT_EQ(small.Run(kAbsent).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(small.Run(a).ok());
  EXPECT_TRUE(small.Delete(a).ok());
  EXPECT_TRUE(small.Delete(b).ok());
}

TEST(ServiceAuthStartUpTest, MalformedTokensAreRefusedWithTheLineNumber) {
  const std::string secret = "secret-0123456789abcdef";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"# ok\nacme " + secret + "\nbeta short\n", "line 3: the token (5 characters)"},
      {"acme " + secret + "\nbeta " + secret + "\n", "line 2: the token of tenant 'beta' is also"},
      {"acme " + secret + " expires=tomorrow\n",
       "line 1: the value of expires (8 characters) is not a time"},
      {"\n\nacme " + secret + " max_streams=-1\n",
       "line 3: the value of max_streams (2 characters)"},
      {"bad/name " + secret + "\n", "line 1: the tenant name, word 1 (8 characters)"},
  };
  for (const auto& [text, expected] : cases) {
    TempFile file(text);
    test_support::ServerProcessOptions options;
    ServerProcess server(
        {TETHER_SERVER_PATH, "--listen", "127.0.0.1:0", "--tokens-file", file.path()}, options);
    EXPECT_FALSE(server.ok()) << text;
    EXPECT_EQ(server.early_exit_code(), 1) << text;
    const std::string log = server.Log();
    EXPECT_NE(log.find("--tokens-file " + file.path() + " " + expected), std::string::npos) << log;
    EXPECT_EQ(log.find(secret), std::string::npos) << log;
  }
  // The same through TETHER_TOKENS.
  test_support::ServerProcessOptions options;
  options.environment = {"TETHER_TOKENS=acme " + secret + " colour=red"};
  ServerProcess env({TETHER_SERVER_PATH, "--listen", "127.0.0.1:0"}, options);
  EXPECT_FALSE(env.ok());
  EXPECT_NE(env.Log().find("TETHER_TOKENS line 1: unexpected word 3 (10 characters)"),
            std::string::npos)
      << env.Log();
  // No such file.
  EXPECT_EQ(RunServerExpectingExit({"--listen", "127.0.0.1:0", "--tokens-file", "/nonexistent"}),
            1);
  // Tokens without TLS are not enough on a non-loopback address.
  TempFile good("acme " + secret + "\n");
  EXPECT_EQ(RunServerExpectingExit({"--listen", "0.0.0.0:0", "--tokens-file", good.path()}), 1);
}

// A tokens file others can read (or the group can write) stops the server
// with exit 2 naming the file and its mode; mkstemp's 0600 is what passes.
TEST(ServiceAuthStartUpTest, ATokensFileOpenToOthersIsRefused) {
  TempFile file(std::string("acme ") + kAcme + "\n");
  for (mode_t mode : {0644, 0604, 0620}) {
    ASSERT_EQ(chmod(file.path().c_str(), mode), 0);
    test_support::ServerProcessOptions options;
    ServerProcess server(
        {TETHER_SERVER_PATH, "--listen", "127.0.0.1:0", "--tokens-file", file.path()}, options);
    EXPECT_FALSE(server.ok());
    EXPECT_EQ(server.early_exit_code(), 2) << std::oct << mode;
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(server.Log().find("--tokens-file " + file.path() +
                                ": UNPROTECTED SECRET FILE: mode " + octal),
              std::string::npos)
        << server.Log();
    EXPECT_EQ(server.Log().find(kAcme), std::string::npos) << server.Log();
  }
  ASSERT_EQ(chmod(file.path().c_str(), 0600), 0);
  auto server = StartServer({"--tokens-file", file.path()});
  ASSERT_TRUE(server->ok()) << server->error();
}

TEST(ServiceAuthStartUpTest, TokensInTheEnvironmentWorkLikeAFile) {
  auto server = StartServer({}, {"TETHER_TOKENS=acme acme-0123456789abcdef"});
  ASSERT_TRUE(server->ok()) << server->error();
  std::vector<std::string> ids;
  EXPECT_TRUE(Caller(server->address(), kAcme).List(&ids).ok());
  EXPECT_EQ(Caller(server->address(), kBeta).List(&ids).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(ServiceAuthStartUpTest, WithoutTokensNothingChanges) {
  auto server = StartServer({"--max-sessions", "2"});
  ASSERT_TRUE(server->ok()) << server->error();
  // No token, or any token: the one anonymous tenant sees every session.
  Caller none(server->address(), ""), any(server->address(), kBeta);
  std::string a, b;
  ASSERT_TRUE(none.Create(&a).ok());
  ASSERT_TRUE(any.Create(&b).ok());
  EXPECT_TRUE(any.Get(a).ok());
  EXPECT_TRUE(none.Run(b).ok());
  std::vector<std::string> ids;
  ASSERT_TRUE(none.List(&ids).ok());
  EXPECT_EQ(ids, (std::vector<std::string>{a, b}));
  // The server's cap, with its own message, as before.
  grpc::Status full = none.Create(nullptr);
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(full.error_message().find("(--max-sessions)"), std::string::npos)
      << full.error_message();
  EXPECT_TRUE(any.Delete(a).ok());
}

}  // namespace
}  // namespace tether::service_test
