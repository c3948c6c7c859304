// tether-server with --tls-cert/--tls-key (TLS) and --tls-client-ca (mTLS):
// certificates made by openssl at test time (support/pki.h: a CA, a server
// certificate for localhost/127.0.0.1 signed by it, a client certificate,
// and a second, unrelated CA); and plaintext on a non-loopback address
// without --insecure.
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "service_test_fixture.h"
#include "support/pki.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service_test {
namespace {

using test_support::Pki;

// ListSessions over TLS trusting `ca_pem` (and presenting a client
// certificate when `client` names one), to localhost:PORT of `address`.
grpc::Status ListOverTls(const Pki& pki, const std::string& address, const std::string& ca,
                         const std::string& client = "") {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pki.pem(ca);
  if (!client.empty()) {
    ssl.pem_cert_chain = pki.pem(client + ".crt");
    ssl.pem_private_key = pki.pem(client + ".key");
  }
  const std::string port = address.substr(address.rfind(':') + 1);
  auto channel = grpc::CreateChannel("localhost:" + port, grpc::SslCredentials(ssl));
  auto stub = v1::Simulator::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::ListSessionsRequest req;
  v1::ListSessionsResponse resp;
  return stub->ListSessions(&ctx, req, &resp);
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
  grpc::Status without = ListOverTls(pki, server->address(), "ca.crt");
  EXPECT_EQ(without.error_code(), grpc::StatusCode::UNAVAILABLE) << without.error_message();
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
