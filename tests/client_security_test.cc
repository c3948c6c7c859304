// The C++ client library's TLS, mTLS and bearer-token options
// (ConnectOptions): against a tether-server serving TLS with certificates
// made at test time (support/pki.h), against an in-process fake
// tether.v1.Simulator that records the `authorization` metadata of every
// call (plaintext on loopback and over TLS), and the options' own checks.
// Also what a proxy in front of replicas needs of the client: the routing
// header on session calls, and Resume retrying through a failover.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "support/pki.h"
#include "support/server_process.h"
#include "tether/client.h"
#include "tether/status_details.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether {
namespace {

using test_support::Pki;

// A token that must never show in a message.
constexpr char kToken[] = "s3cr3t-T0ken.value_42";

std::unique_ptr<test_support::ServerProcess> StartServer(std::vector<std::string> args) {
  std::vector<std::string> argv = {TETHER_SERVER_PATH};
  for (std::string& a : test_support::EphemeralLoopback()) argv.push_back(std::move(a));
  for (std::string& a : args) argv.push_back(std::move(a));
  return std::make_unique<test_support::ServerProcess>(std::move(argv));
}

// "localhost:PORT" for a server's "127.0.0.1:PORT" (the name its
// certificate carries).
std::string Localhost(const std::string& address) {
  return "localhost" + address.substr(address.rfind(':'));
}

client::ConnectOptions Options() {
  client::ConnectOptions options;
  options.timeout = std::chrono::seconds(20);
  return options;
}

std::string WriteFile(const std::string& name, const std::string& contents) {
  std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

grpc::Status List(client::Client& c) {
  std::vector<v1::Session> sessions;
  return c.ListSessions(&sessions);
}

// --- against tether-server with TLS ------------------------------------------

class ClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(pki_.ok()) << pki_.log(); }
  Pki pki_;
};

TEST_F(ClientTlsTest, RightCaConnectsByNameAndByAddress) {
  auto server =
      StartServer({"--tls-cert", pki_.path("server.crt"), "--tls-key", pki_.path("server.key")});
  ASSERT_TRUE(server->ok()) << server->error();
  client::ConnectOptions options = Options();
  options.tls_ca = pki_.path("ca.crt");
  for (const std::string& address : {Localhost(server->address()), server->address()}) {
    std::unique_ptr<client::Client> c;
    ASSERT_TRUE(client::Client::Create(address, options, &c).ok());
    grpc::Status status = List(*c);
    EXPECT_TRUE(status.ok()) << address << ": " << client::FormatStatus(status);
    client::HealthStatus health;
    status = c->Health("", std::chrono::seconds(20), &health);
    EXPECT_TRUE(status.ok()) << client::FormatStatus(status);
    EXPECT_EQ(health, client::HealthStatus::kServing);
  }
}

TEST_F(ClientTlsTest, ServerNameOverrideIsTheNameChecked) {
  auto server =
      StartServer({"--tls-cert", pki_.path("server.crt"), "--tls-key", pki_.path("server.key")});
  ASSERT_TRUE(server->ok()) << server->error();
  client::ConnectOptions options = Options();
  options.tls_ca = pki_.path("ca.crt");
  options.tls_server_name = "localhost";
  auto right = client::Client::Connect(server->address(), options);
  grpc::Status status = List(*right);
  EXPECT_TRUE(status.ok()) << client::FormatStatus(status);

  options.tls_server_name = "not-the-server.example";
  auto wrong = client::Client::Connect(server->address(), options);
  status = List(*wrong);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("TLS handshake"), std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("'not-the-server.example'"), std::string::npos)
      << status.error_message();
}

TEST_F(ClientTlsTest, WrongCaFailsWithAMessageNamingTheHandshakeAndTheCaFile) {
  auto server =
      StartServer({"--tls-cert", pki_.path("server.crt"), "--tls-key", pki_.path("server.key")});
  ASSERT_TRUE(server->ok()) << server->error();
  client::ConnectOptions options = Options();
  options.tls_ca = pki_.path("wrong-ca.crt");
  options.token = kToken;
  auto c = client::Client::Connect(Localhost(server->address()), options);
  ASSERT_TRUE(c->setup_status().ok());
  for (int call = 0; call < 3; ++call) {
    grpc::Status status;
    if (call == 0) status = List(*c);
    if (call == 1) {
      v1::RunRequest run;
      run.set_session_id("0123456789abcdef");
      status = c->Run(run, nullptr);
    }
    if (call == 2) {
      client::HealthStatus health;
      status = c->Health("", std::chrono::seconds(20), &health);
    }
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << call;
    const std::string& m = status.error_message();
    EXPECT_NE(m.find("TLS handshake with " + Localhost(server->address()) + " failed"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find(pki_.path("wrong-ca.crt")), std::string::npos) << m;
    EXPECT_EQ(m.find(kToken), std::string::npos) << m;
  }
}

TEST_F(ClientTlsTest, APlaintextClientOfATlsServerIsToldSo) {
  auto server =
      StartServer({"--tls-cert", pki_.path("server.crt"), "--tls-key", pki_.path("server.key")});
  ASSERT_TRUE(server->ok()) << server->error();
  auto c = client::Client::Connect(server->address(), Options());
  grpc::Status status = List(*c);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("if it serves TLS, this plaintext client cannot talk"),
            std::string::npos)
      << status.error_message();
}

TEST_F(ClientTlsTest, MutualTlsWithAndWithoutAClientCertificate) {
  auto server = StartServer({"--tls-cert", pki_.path("server.crt"), "--tls-key",
                             pki_.path("server.key"), "--tls-client-ca", pki_.path("ca.crt")});
  ASSERT_TRUE(server->ok()) << server->error();
  client::ConnectOptions options = Options();
  options.tls_ca = pki_.path("ca.crt");
  options.tls_cert = pki_.path("client.crt");
  options.tls_key = pki_.path("client.key");
  auto with = client::Client::Connect(Localhost(server->address()), options);
  grpc::Status status = List(*with);
  EXPECT_TRUE(status.ok()) << client::FormatStatus(status);

  options.tls_cert.clear();
  options.tls_key.clear();
  // Without a certificate the connection is made (health stays open to
  // probes) and every tether.v1 call is UNAUTHENTICATED, saying why.
  auto without = client::Client::Connect(Localhost(server->address()), options);
  status = List(*without);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("no client certificate"), std::string::npos)
      << status.error_message();

  // A certificate of another CA.
  options.tls_cert = pki_.path("wrong-ca.crt");
  options.tls_key = pki_.path("wrong-ca.key");
  auto other = client::Client::Connect(Localhost(server->address()), options);
  status = List(*other);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find(pki_.path("wrong-ca.crt")), std::string::npos)
      << status.error_message();
}

// --- the options' own checks --------------------------------------------------

grpc::Status CreateStatus(const std::string& address, const client::ConnectOptions& options) {
  std::unique_ptr<client::Client> c;
  grpc::Status status = client::Client::Create(address, options, &c);
  EXPECT_EQ(c == nullptr, !status.ok());
  EXPECT_EQ(status.error_message().find(kToken), std::string::npos) << status.error_message();
  return status;
}

// INVALID_ARGUMENT whose message starts with `prefix`.
void ExpectBad(const grpc::Status& status, const std::string& prefix) {
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(status.error_message().substr(0, prefix.size()), prefix) << status.error_message();
}

TEST(ClientOptionsTest, UnreadableOrUnfitFilesNameTheOptionAndThePath) {
  client::ConnectOptions options;
  options.tls_ca = "/nonexistent/ca.crt";
  grpc::Status status = CreateStatus("localhost:1", options);
  ExpectBad(status, "tls_ca /nonexistent/ca.crt: cannot read it");
  EXPECT_NE(status.error_message().find("No such file"), std::string::npos);

  options.tls_ca = WriteFile("not_pem.crt", "hello\n");
  ExpectBad(CreateStatus("localhost:1", options), "tls_ca " + options.tls_ca + ": not a PEM file");

  Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  options.tls_ca = pki.path("ca.crt");
  options.tls_cert = pki.path("client.crt");
  ExpectBad(CreateStatus("localhost:1", options),
            "tls_key: missing; a client certificate needs its private key");
  options.tls_key = "/nonexistent/client.key";
  ExpectBad(CreateStatus("localhost:1", options), "tls_key /nonexistent/client.key: cannot read");
  // A key of another certificate, a certificate where the key goes, a key
  // where the certificate goes: named before any connection (gRPC said
  // "empty address list", naming neither file; found by an audit).
  options.tls_key = pki.path("wrong-ca.key");
  ExpectBad(CreateStatus("localhost:1", options),
            "tls_key " + options.tls_key +
                ": the private key does not belong to the certificate in " + options.tls_cert);
  options.tls_key = pki.path("client.crt");
  ExpectBad(CreateStatus("localhost:1", options),
            "tls_key " + options.tls_key + ": no PEM private key could be read from it");
  options.tls_cert = pki.path("client.key");
  options.tls_key = pki.path("client.key");
  ExpectBad(CreateStatus("localhost:1", options),
            "tls_cert " + options.tls_cert + ": no PEM certificate could be read from it");
  options.tls_cert = pki.path("client.crt");
  options.tls_key = "/nonexistent/client.key";
  options.tls_cert.clear();
  ExpectBad(CreateStatus("localhost:1", options),
            "tls_cert: missing; a client private key needs its certificate chain");

  options = {};
  options.token_file = "/nonexistent/token";
  ExpectBad(CreateStatus("localhost:1", options), "token_file /nonexistent/token: cannot read");
  options.token_file = WriteFile("empty_token", "\n");
  ExpectBad(CreateStatus("localhost:1", options),
            "token_file " + options.token_file + ": the token is empty");
  options.token_file = WriteFile("two_line_token", std::string(kToken) + "\nsecond\n");
  ExpectBad(CreateStatus("localhost:1", options), "token_file " + options.token_file +
                                                      ": the token has a space, a control or a "
                                                      "non-ASCII byte at offset 21");
  options.token = kToken;
  ExpectBad(CreateStatus("localhost:1", options), "token_file: set either token or token_file");
  options.token_file.clear();
  options.token = std::string(kToken) + " x";
  ExpectBad(CreateStatus("localhost:1", options), "token: the token has a space");
}

TEST(ClientOptionsTest, ATokenGoesInPlaintextOnlyToLoopbackUnlessAllowed) {
  client::ConnectOptions options;
  options.token = kToken;
  for (const char* address :
       {"127.0.0.1:50051", "localhost:50051", "127.3.2.1:1", "[::1]:50051", "ipv4:127.0.0.1:1",
        "dns:///localhost:50051", "unix:/tmp/tether.sock", "ipv6:[::ffff:127.0.0.1]:1"}) {
    EXPECT_TRUE(CreateStatus(address, options).ok()) << address;
  }
  for (const char* address : {"10.1.2.3:50051", "0.0.0.0:50051", "sim.example:50051",
                              "[2001:db8::1]:50051", "dns:///sim.example:443", "128.0.0.1:1"}) {
    grpc::Status status = CreateStatus(address, options);
    ExpectBad(status,
              "token: refusing to send a bearer token in plaintext to " + std::string(address));
  }
  options.allow_plaintext_token = true;
  EXPECT_TRUE(CreateStatus("10.1.2.3:50051", options).ok());
  // Without a token plaintext anywhere is the caller's choice.
  EXPECT_TRUE(CreateStatus("10.1.2.3:50051", client::ConnectOptions()).ok());
}

TEST(ClientOptionsTest, ConnectWithABadOptionFailsEveryCallWithItsStatus) {
  client::ConnectOptions options;
  options.tls_ca = "/nonexistent/ca.crt";
  auto c = client::Client::Connect("localhost:1", options);
  ASSERT_NE(c, nullptr);
  ExpectBad(c->setup_status(), "tls_ca /nonexistent/ca.crt");
  ExpectBad(List(*c), "tls_ca /nonexistent/ca.crt");
  v1::Session session;
  ExpectBad(c->GetSession("x", &session), "tls_ca /nonexistent/ca.crt");
  ExpectBad(c->CreateSession(v1::SimulationSpec(), "", &session), "tls_ca /nonexistent/ca.crt");
  ExpectBad(c->DeleteSession("x"), "tls_ca /nonexistent/ca.crt");
  v1::ValidationReport report;
  ExpectBad(c->Validate(v1::SimulationSpec(), &report), "tls_ca /nonexistent/ca.crt");
  v1::EvaluateResponse evaluated;
  ExpectBad(c->Evaluate(v1::EvaluateRequest(), &evaluated), "tls_ca /nonexistent/ca.crt");
  ExpectBad(c->Run(v1::RunRequest(), nullptr), "tls_ca /nonexistent/ca.crt");
  client::HealthStatus health;
  ExpectBad(c->Health("", std::chrono::seconds(1), &health), "tls_ca /nonexistent/ca.crt");
  auto cosim = c->CoSimulate("x");
  v1::Frame frame;
  ExpectBad(cosim->DoStep(0.01, {}, &frame), "tls_ca /nonexistent/ca.crt");
  ExpectBad(cosim->Finish(), "tls_ca /nonexistent/ca.crt");
}

// --- what goes on the wire: a fake Simulator that records metadata -----------

// GetSession, Run and CoSimulate record the values of the `key` metadata
// (`authorization` unless given) of each call (one entry per call, in
// order).
class RecordingSimulator : public v1::Simulator::CallbackService {
 public:
  explicit RecordingSimulator(std::string key = "authorization") : key_(std::move(key)) {}
  std::vector<std::vector<std::string>> calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

  grpc::ServerUnaryReactor* GetSession(grpc::CallbackServerContext* context,
                                       const v1::GetSessionRequest* request,
                                       v1::Session* session) override {
    Record(*context);
    session->set_id(request->session_id());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<v1::RunResponse>* Run(grpc::CallbackServerContext* context,
                                                 const v1::RunRequest*) override {
    Record(*context);
    // One message with one frame, then OK.
    class Writer : public grpc::ServerWriteReactor<v1::RunResponse> {
     public:
      Writer() {
        response_.add_frames()->set_step(7);
        StartWrite(&response_);
      }
      void OnWriteDone(bool) override { Finish(grpc::Status::OK); }
      void OnDone() override { delete this; }

     private:
      v1::RunResponse response_;
    };
    return new Writer;
  }

  grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>* CoSimulate(
      grpc::CallbackServerContext* context) override {
    Record(*context);
    class Ender : public grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse> {
     public:
      Ender() { Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "fake")); }
      void OnDone() override { delete this; }
    };
    return new Ender;
  }

 private:
  void Record(const grpc::CallbackServerContext& context) {
    std::vector<std::string> values;
    auto [begin, end] = context.client_metadata().equal_range(key_);
    for (auto it = begin; it != end; ++it)
      values.emplace_back(it->second.data(), it->second.size());
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back(std::move(values));
  }

  const std::string key_;
  std::mutex mutex_;
  std::vector<std::vector<std::string>> calls_;
};

// The fake on 127.0.0.1 with `credentials` (plaintext or TLS).
class FakeServer {
 public:
  // `key`: the metadata the fake records (RecordingSimulator).
  explicit FakeServer(std::shared_ptr<grpc::ServerCredentials> credentials,
                      std::string key = "authorization")
      : service_(std::move(key)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  RecordingSimulator& service() { return service_; }

 private:
  RecordingSimulator service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// GetSession, Run and a CoSimulate step through `c`; returns the metadata
// the fake saw.
std::vector<std::vector<std::string>> CallAll(client::Client& c, FakeServer& fake) {
  v1::Session session;
  grpc::Status status = c.GetSession("abc", &session);
  EXPECT_TRUE(status.ok()) << client::FormatStatus(status);
  EXPECT_EQ(session.id(), "abc");
  std::vector<uint64_t> steps;
  v1::RunRequest run;
  run.set_session_id("abc");
  status = c.Run(run, [&steps](const v1::Frame& f) {
    steps.push_back(f.step());
    return true;
  });
  EXPECT_TRUE(status.ok()) << client::FormatStatus(status);
  EXPECT_EQ(steps, std::vector<uint64_t>{7});
  auto cosim = c.CoSimulate("abc");
  v1::Frame frame;
  EXPECT_EQ(cosim->DoStep(0.01, {}, &frame).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  return fake.service().calls();
}

const std::vector<std::vector<std::string>> kThreeCallsWithTheToken = {
    {std::string("Bearer ") + kToken},
    {std::string("Bearer ") + kToken},
    {std::string("Bearer ") + kToken}};

TEST(ClientTokenTest, PlaintextLoopbackCarriesTheTokenOnUnaryAndStreamingCalls) {
  FakeServer fake(grpc::InsecureServerCredentials());
  ASSERT_TRUE(fake.ok());
  client::ConnectOptions options = Options();
  options.token = kToken;
  auto c = client::Client::Connect("127.0.0.1:" + std::to_string(fake.port()), options);
  ASSERT_TRUE(c->setup_status().ok()) << c->setup_status().error_message();
  EXPECT_EQ(CallAll(*c, fake), kThreeCallsWithTheToken);
}

TEST(ClientTokenTest, ATokenFileLosesItsTrailingNewline) {
  FakeServer fake(grpc::InsecureServerCredentials());
  ASSERT_TRUE(fake.ok());
  client::ConnectOptions options = Options();
  options.token_file = WriteFile("token_crlf", std::string(kToken) + "\r\n");
  auto c = client::Client::Connect("localhost:" + std::to_string(fake.port()), options);
  ASSERT_TRUE(c->setup_status().ok()) << c->setup_status().error_message();
  EXPECT_EQ(CallAll(*c, fake), kThreeCallsWithTheToken);
}

// Every call of a session carries its id in the routing header a proxy in
// front of several replicas hashes on (deploy/README.md).
TEST(ClientRoutingTest, SessionCallsCarryTheSessionIdInTheRoutingHeader) {
  FakeServer fake(grpc::InsecureServerCredentials(), client::kRoutingHeader);
  ASSERT_TRUE(fake.ok());
  auto c = client::Client::Connect("127.0.0.1:" + std::to_string(fake.port()), Options());
  const std::vector<std::vector<std::string>> routed = {{"abc"}, {"abc"}, {"abc"}};
  EXPECT_EQ(CallAll(*c, fake), routed);
  EXPECT_STREQ(client::kRoutingHeader, "tether-session-id");
}

// GetSession answers `failures` times UNAVAILABLE then ABORTED in turn (a
// replica gone, another's lease not expired), then the session.
class FailoverSimulator : public v1::Simulator::CallbackService {
 public:
  explicit FailoverSimulator(int failures) : failures_(failures) {}
  int calls() const { return calls_.load(); }
  grpc::ServerUnaryReactor* GetSession(grpc::CallbackServerContext* context,
                                       const v1::GetSessionRequest* request,
                                       v1::Session* session) override {
    const int call = calls_.fetch_add(1);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (call < failures_) {
      reactor->Finish(grpc::Status(
          call % 2 == 0 ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::ABORTED, "not yet"));
    } else {
      session->set_id(request->session_id());
      session->set_step(200);
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

 private:
  const int failures_;
  std::atomic<int> calls_{0};
};

TEST(ClientResumeTest, RetriesUnavailableAndAbortedUntilTheSessionIsServed) {
  FailoverSimulator service(4);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  ASSERT_TRUE(server && port > 0);
  auto c = client::Client::Connect("127.0.0.1:" + std::to_string(port), Options());
  v1::Session session;
  grpc::Status status = c->Resume("abc", std::chrono::seconds(10), &session);
  EXPECT_TRUE(status.ok()) << client::FormatStatus(status);
  EXPECT_EQ(session.step(), 200u);
  EXPECT_EQ(service.calls(), 5);
  // A short timeout gives up with the last answer.
  FailoverSimulator never(1000);
  grpc::ServerBuilder builder2;
  int port2 = 0;
  builder2.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port2);
  builder2.RegisterService(&never);
  auto server2 = builder2.BuildAndStart();
  ASSERT_TRUE(server2 && port2 > 0);
  auto c2 = client::Client::Connect("127.0.0.1:" + std::to_string(port2), Options());
  status = c2->Resume("abc", std::chrono::milliseconds(100), &session);
  EXPECT_TRUE(status.error_code() == grpc::StatusCode::UNAVAILABLE ||
              status.error_code() == grpc::StatusCode::ABORTED);
  server->Shutdown(std::chrono::system_clock::now());
  server2->Shutdown(std::chrono::system_clock::now());
}

TEST(ClientTokenTest, NoTokenNoAuthorizationMetadata) {
  FakeServer fake(grpc::InsecureServerCredentials());
  ASSERT_TRUE(fake.ok());
  auto c = client::Client::Connect("127.0.0.1:" + std::to_string(fake.port()), Options());
  const std::vector<std::vector<std::string>> none = {{}, {}, {}};
  EXPECT_EQ(CallAll(*c, fake), none);
}

TEST(ClientTokenTest, OverTlsTheTokenIsTheChannelsCallCredentials) {
  Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({pki.pem("server.key"), pki.pem("server.crt")});
  FakeServer fake(grpc::SslServerCredentials(ssl));
  ASSERT_TRUE(fake.ok());
  client::ConnectOptions options = Options();
  options.tls_ca = pki.path("ca.crt");
  options.token = kToken;
  auto c = client::Client::Connect("localhost:" + std::to_string(fake.port()), options);
  ASSERT_TRUE(c->setup_status().ok()) << c->setup_status().error_message();
  EXPECT_EQ(CallAll(*c, fake), kThreeCallsWithTheToken);

  // And none without a token.
  options.token.clear();
  auto plain = client::Client::Connect("localhost:" + std::to_string(fake.port()), options);
  std::vector<std::vector<std::string>> calls = CallAll(*plain, fake);
  ASSERT_EQ(calls.size(), 6u);
  for (size_t i = 3; i < 6; ++i) EXPECT_TRUE(calls[i].empty()) << i;
}

}  // namespace
}  // namespace tether
