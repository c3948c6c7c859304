// tether-server with --tls-cert/--tls-key (TLS) and --tls-client-ca (mTLS):
// certificates made by openssl at test time (support/pki.h: a CA, a server
// certificate for localhost/127.0.0.1 signed by it, a client certificate,
// and a second, unrelated CA); and plaintext on a non-loopback address
// without --insecure.
#include <sys/stat.h>

#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "grpc/health/v1/health.pb.h"
#include "service_test_fixture.h"
#include "support/pki.h"
#include "support/raw_calls.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service_test {
namespace {

using test_support::Pki;

// A channel over TLS trusting `ca` (and presenting a client certificate
// when `client` names one), to localhost:PORT of `address`.
std::shared_ptr<grpc::Channel> TlsChannel(const Pki& pki, const std::string& address,
                                          const std::string& ca, const std::string& client) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pki.pem(ca);
  if (!client.empty()) {
    ssl.pem_cert_chain = pki.pem(client + ".crt");
    ssl.pem_private_key = pki.pem(client + ".key");
  }
  const std::string port = address.substr(address.rfind(':') + 1);
  return grpc::CreateChannel("localhost:" + port, grpc::SslCredentials(ssl));
}

// ListSessions over TlsChannel.
grpc::Status ListOverTls(const Pki& pki, const std::string& address, const std::string& ca,
                         const std::string& client = "") {
  auto stub = v1::Simulator::NewStub(TlsChannel(pki, address, ca, client));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::ListSessionsRequest req;
  v1::ListSessionsResponse resp;
  return stub->ListSessions(&ctx, req, &resp);
}

// grpc.health.v1.Health/Check over TLS as ListOverTls does it.
grpc::Status HealthOverTls(const Pki& pki, const std::string& address, const std::string& ca,
                           const std::string& client = "") {
  grpc::health::v1::HealthCheckRequest check;
  std::string bytes;
  return test_support::RawUnary(TlsChannel(pki, address, ca, client),
                                "/grpc.health.v1.Health/Check", check.SerializeAsString(), &bytes);
}

// A CoSimulate stream's status (after its first request) over TLS.
grpc::Status CoSimulateOverTls(const Pki& pki, const std::string& address, const std::string& ca,
                               const std::string& client = "") {
  auto stub = v1::Simulator::NewStub(TlsChannel(pki, address, ca, client));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = stub->CoSimulate(&ctx);
  v1::CoSimulateRequest req;
  req.set_session_id("0123456789abcdef0123456789abcdef");
  stream->Write(req);
  stream->WritesDone();
  v1::CoSimulateResponse resp;
  while (stream->Read(&resp)) {
  }
  return stream->Finish();
}

TEST(ServiceTlsTest, RightCaConnectsWrongCaAndPlaintextDoNot) {
  Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  auto server =
      StartServer({"--tls-cert", pki.path("server.crt"), "--tls-key", pki.path("server.key")});
  ASSERT_TRUE(server->ok()) << server->error();
  grpc::Status right = ListOverTls(pki, server->address(), "ca.crt");
  EXPECT_TRUE(right.ok()) << right.error_message();
  grpc::Status wrong = ListOverTls(pki, server->address(), "wrong-ca.crt");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAVAILABLE) << wrong.error_message();
  // A plaintext client gets no answer from a TLS port.
  auto plain = ConnectClient(server->address(), std::chrono::seconds(20));
  std::vector<v1::Session> sessions;
  EXPECT_FALSE(plain->ListSessions(&sessions).ok());
}

TEST(ServiceTlsTest, MutualTlsRequiresAClientCertificateOfTheCa) {
  Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  auto server = StartServer({"--tls-cert", pki.path("server.crt"), "--tls-key",
                             pki.path("server.key"), "--tls-client-ca", pki.path("ca.crt")});
  ASSERT_TRUE(server->ok()) << server->error();
  grpc::Status with_cert = ListOverTls(pki, server->address(), "ca.crt", "client");
  EXPECT_TRUE(with_cert.ok()) << with_cert.error_message();
  // Without a certificate the handshake succeeds (so that probes reach
  // health), and every tether.v1 call is refused.
  grpc::Status without = ListOverTls(pki, server->address(), "ca.crt");
  EXPECT_EQ(without.error_code(), grpc::StatusCode::UNAUTHENTICATED) << without.error_message();
  EXPECT_NE(without.error_message().find("no client certificate"), std::string::npos)
      << without.error_message();
  grpc::Status health = HealthOverTls(pki, server->address(), "ca.crt");
  EXPECT_TRUE(health.ok()) << health.error_message();
  grpc::Status cosimulate = CoSimulateOverTls(pki, server->address(), "ca.crt");
  EXPECT_EQ(cosimulate.error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << cosimulate.error_message();
  // The server's own certificate is not signed for client authentication
  // by another CA; a certificate of the wrong CA is refused too.
  grpc::Status wrong_client = ListOverTls(pki, server->address(), "ca.crt", "wrong-ca");
  EXPECT_EQ(wrong_client.error_code(), grpc::StatusCode::UNAVAILABLE)
      << wrong_client.error_message();
}

TEST(ServiceTlsTest, UnreadableFilesAndPlaintextOnEveryInterfaceAreRefusedAtStartUp) {
  EXPECT_EQ(RunServerExpectingExit({"--listen", "0.0.0.0:0"}), 1);
  EXPECT_EQ(RunServerExpectingExit({"--tls-cert", "/nonexistent.crt", "--tls-key", "/x.key"}), 1);
  EXPECT_EQ(RunServerExpectingExit({"--tls-cert", "/nonexistent.crt"}), 1);
  // Asked for explicitly, plaintext on 0.0.0.0 starts.
  auto server = StartServer({"--listen", "0.0.0.0:0", "--insecure", "true"});
  EXPECT_TRUE(server->ok()) << server->error();
}

// Like OpenSSH's "UNPROTECTED PRIVATE KEY FILE": a private key others can
// read stops the server (exit 2, naming the file and its mode) unless
// --strict-file-modes false, which starts it with a warning.
TEST(ServiceTlsTest, APrivateKeyReadableByOthersIsRefused) {
  Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  const std::string key = pki.path("server.key");
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  test_support::ServerProcessOptions options;
  ServerProcess refused({TETHER_SERVER_PATH, "--listen", "127.0.0.1:0", "--tls-cert",
                         pki.path("server.crt"), "--tls-key", key},
                        options);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.early_exit_code(), 2);
  EXPECT_NE(refused.Log().find("--tls-key " + key +
                               ": UNPROTECTED SECRET FILE: mode 0644 makes it accessible to "
                               "others"),
            std::string::npos)
      << refused.Log();
  auto allowed = StartServer(
      {"--tls-cert", pki.path("server.crt"), "--tls-key", key, "--strict-file-modes", "false"});
  ASSERT_TRUE(allowed->ok()) << allowed->error();
  EXPECT_NE(allowed->Log().find("allowed by --strict-file-modes false"), std::string::npos)
      << allowed->Log();
  // 0600 (make_pki.sh's mode) starts without a word about it.
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  auto protected_key = StartServer({"--tls-cert", pki.path("server.crt"), "--tls-key", key});
  ASSERT_TRUE(protected_key->ok()) << protected_key->error();
  EXPECT_EQ(protected_key->Log().find("UNPROTECTED"), std::string::npos) << protected_key->Log();
}

TEST(ServiceTlsTest, EveryInterfaceNeedsTlsAndTokensOrInsecure) {
  Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  const std::vector<std::string> tls = {"--listen",   "0.0.0.0:0",
                                        "--tls-cert", pki.path("server.crt"),
                                        "--tls-key",  pki.path("server.key")};
  // TLS alone is not enough off loopback...
  EXPECT_EQ(RunServerExpectingExit(tls), 1);
  // ... TLS and tokens are.
  auto server = StartServer(tls, {"TETHER_TOKENS=acme acme-0123456789abcdef"});
  EXPECT_TRUE(server->ok()) << server->error();
}

}  // namespace
}  // namespace tether::service_test
