#include "credentials.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <grpc/impl/codegen/grpc_types.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

namespace tether::client::internal {
namespace {

// A token file is one token: anything larger is the wrong file.
constexpr std::size_t kMaxTokenFileBytes = 16 * 1024;

grpc::Status Bad(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

// Reads `path` (the value of `option`) into *contents, at most `limit`
// bytes; the error names the option, the path and the reason.
grpc::Status ReadFile(const char* option, const std::string& path, std::size_t limit,
                      std::string* contents) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Bad(std::string(option) + " " + path + ": is a directory; expected a file");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return Bad(std::string(option) + " " + path + ": cannot read it" +
               (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
  }
  // One byte past the limit at most: a pipe or a device (/dev/zero) has no
  // size to check first.
  contents->assign(limit + 1, '\0');
  in.read(contents->data(), static_cast<std::streamsize>(limit + 1));
  if (in.bad()) return Bad(std::string(option) + " " + path + ": cannot read it");
  contents->resize(static_cast<std::size_t>(in.gcount()));
  if (contents->size() > limit) {
    contents->clear();
    return Bad(std::string(option) + " " + path + ": larger than " + std::to_string(limit) +
               " bytes");
  }
  return grpc::Status::OK;
}

// A PEM file: readable and with at least one "-----BEGIN " line.
grpc::Status ReadPem(const char* option, const std::string& path, std::string* pem) {
  constexpr std::size_t kMaxPemBytes = 4 * 1024 * 1024;
  grpc::Status status = ReadFile(option, path, kMaxPemBytes, pem);
  if (!status.ok()) return status;
  if (pem->find("-----BEGIN ") == std::string::npos) {
    return Bad(std::string(option) + " " + path + ": not a PEM file (no -----BEGIN line)");
  }
  return grpc::Status::OK;
}

// Checks that the client's private key belongs to the first certificate of
// its chain, with libcrypto (gRPC's own TLS library on Debian). gRPC finds
// a mismatch only when it builds the handshake, and then reports the
// channel as having an "empty address list", naming neither file.
grpc::Status CheckKeyPair(const ConnectOptions& options, const std::string& chain,
                          const std::string& key) {
  auto bio = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  };
  // An encrypted key is refused, not asked for: libcrypto's default would
  // prompt on the terminal (gRPC cannot use such a key either).
  pem_password_cb* kNoPassphrase = [](char*, int, int, void*) { return 0; };
  auto cert_bio = bio(chain), key_bio = bio(key);
  if (!cert_bio || !key_bio) return grpc::Status(grpc::StatusCode::INTERNAL, "out of memory");
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), &X509_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, kNoPassphrase, nullptr), &EVP_PKEY_free);
  ERR_clear_error();  // libcrypto's queue is per thread: leave nothing in it
  if (!cert) {
    return Bad("tls_cert " + options.tls_cert +
               ": no PEM certificate could be read from it; expected a certificate chain");
  }
  if (!pkey) {
    return Bad("tls_key " + options.tls_key +
               ": no PEM private key could be read from it (an encrypted key is not supported); "
               "expected the private key of " +
               options.tls_cert);
  }
  const bool match = X509_check_private_key(cert.get(), pkey.get()) == 1;
  ERR_clear_error();
  if (!match) {
    return Bad("tls_key " + options.tls_key +
               ": the private key does not belong to the certificate in " + options.tls_cert +
               "; expected that certificate's key");
  }
  return grpc::Status::OK;
}

// Checks a token (from `option`, "token" or "token_file PATH") without
// ever printing it: visible ASCII, as an HTTP/2 header value allows and a
// bearer token is.
grpc::Status CheckToken(const std::string& option, const std::string& token) {
  if (token.empty()) return Bad(option + ": the token is empty");
  for (std::size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      return Bad(option + ": the token has a space, a control or a non-ASCII byte at offset " +
                 std::to_string(i) + "; expected visible ASCII");
    }
  }
  return grpc::Status::OK;
}

// The token of `options` (token or token_file), or "" when none is set.
grpc::Status ResolveToken(const ConnectOptions& options, std::string* token) {
  token->clear();
  if (!options.token.empty() && !options.token_file.empty()) {
    return Bad("token_file: set either token or token_file, not both");
  }
  if (!options.token.empty()) {
    *token = options.token;
    return CheckToken("token", *token);
  }
  if (options.token_file.empty()) return grpc::Status::OK;
  grpc::Status status = ReadFile("token_file", options.token_file, kMaxTokenFileBytes, token);
  if (!status.ok()) return status;
  while (!token->empty() && (token->back() == '\n' || token->back() == '\r')) token->pop_back();
  return CheckToken("token_file " + options.token_file, *token);
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The host of a gRPC target: "dns:///host:port", "dns://authority/host:port",
// "ipv4:a.b.c.d:port", "ipv6:[::1]:port", "host:port", "[::1]:port", "host".
std::string_view TargetHost(std::string_view target) {
  if (StartsWith(target, "dns:")) {
    target.remove_prefix(4);
    if (StartsWith(target, "//")) {
      const std::size_t slash = target.find('/', 2);
      target = slash == std::string_view::npos ? std::string_view() : target.substr(slash + 1);
    }
  } else if (StartsWith(target, "ipv4:") || StartsWith(target, "ipv6:")) {
    target.remove_prefix(5);
    target = target.substr(0, target.find(','));  // the first of a list
  }
  if (StartsWith(target, "[")) {
    const std::size_t close = target.find(']');
    return close == std::string_view::npos ? target : target.substr(1, close - 1);
  }
  const std::size_t colon = target.find(':');
  if (colon == std::string_view::npos) return target;
  // A bare IPv6 address has several colons and no port.
  if (target.find(':', colon + 1) != std::string_view::npos) return target;
  return target.substr(0, colon);
}

// What a failed TLS handshake with `address` checked, for its message.
std::string TlsChecks(const std::string& address, const ConnectOptions& options) {
  std::string checks = "is the server's certificate signed by ";
  checks += options.tls_ca.empty() ? "a CA of gRPC's default roots (no CA file given)"
                                   : "the CA in " + options.tls_ca;
  const std::string name =
      options.tls_server_name.empty() ? std::string(TargetHost(address)) : options.tls_server_name;
  checks += " and issued for the name '" + name + "'";
  checks += options.tls_cert.empty()
                ? ", and does the server require a client certificate (none given)?"
                : ", and does the server accept the client certificate " + options.tls_cert + "?";
  return checks;
}

bool Contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

bool IsLoopback(const std::string& address) {
  if (StartsWith(address, "unix:") || StartsWith(address, "unix-abstract:")) return true;
  const std::string host(TargetHost(address));
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

// gRPC's retry policy (the channel's service config) for the calls that
// may be repeated safely when the server could not be reached: at most 5
// attempts on UNAVAILABLE, a random wait of at most 0.1, 0.2, 0.4, 0.8 s
// before each retry (1.5 s in all; the call's deadline bounds the whole).
// They read (Validate, Evaluate, GetSession, ListSessions, ListSnapshots,
// ExportSession, Health), set values (UpdateSession) or create a session
// (CreateSession, ImportSession: an attempt that failed UNAVAILABLE never
// reached a server, or reached one that went away with its sessions). Run,
// CoSimulate, the snapshot calls that change a session and the deletes are
// not retried. The channel reconnects 0.1 s after a failure, growing to 1 s
// (gRPC's default: 1 s to 120 s), so a restarted server is found within the
// retries. The Python client has the same policy (RETRY_POLICY in
// client/python/src/tether_client/client.py).
constexpr char kRetryServiceConfig[] = R"json({"methodConfig": [{
  "name": [
    {"service": "tether.v1.Simulator", "method": "Validate"},
    {"service": "tether.v1.Simulator", "method": "Evaluate"},
    {"service": "tether.v1.Simulator", "method": "GetSession"},
    {"service": "tether.v1.Simulator", "method": "ListSessions"},
    {"service": "tether.v1.Simulator", "method": "ListSnapshots"},
    {"service": "tether.v1.Simulator", "method": "ExportSession"},
    {"service": "tether.v1.Simulator", "method": "UpdateSession"},
    {"service": "tether.v1.Simulator", "method": "CreateSession"},
    {"service": "tether.v1.Simulator", "method": "ImportSession"},
    {"service": "grpc.health.v1.Health", "method": "Check"}],
  "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "0.8s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})json";

grpc::Status OpenConnection(const std::string& address, const ConnectOptions& options,
                            Connection* connection) {
  *connection = Connection();
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return Bad(options.tls_cert.empty()
                   ? "tls_cert: missing; a client private key needs its certificate chain"
                   : "tls_key: missing; a client certificate needs its private key");
  }
  std::string token;
  grpc::Status status = ResolveToken(options, &token);
  if (!status.ok()) return status;

  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(options.max_message_bytes);
  arguments.SetMaxSendMessageSize(options.max_message_bytes);
  // A restarted server is found by the first call after it (kRetryServiceConfig).
  arguments.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  arguments.SetServiceConfigJSON(kRetryServiceConfig);
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (options.keepalive_time.count() > 0) {
    auto ms = [](std::chrono::milliseconds d) {
      return static_cast<int>(std::min<int64_t>(d.count(), INT32_MAX));
    };
    arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, ms(options.keepalive_time));
    arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ms(options.keepalive_timeout));
    // Between calls too (a master idle between communication steps), and
    // without a limit on pings while no data flows (default: 2, then the
    // pings stop until a call sends data).
    arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  const bool tls =
      !options.tls_ca.empty() || !options.tls_cert.empty() || !options.tls_server_name.empty();
  if (!tls) {
    if (!token.empty() && !options.allow_plaintext_token && !IsLoopback(address)) {
      return Bad("token: refusing to send a bearer token in plaintext to " + address +
                 ", which is not a loopback address (anyone on the path could read and replay "
                 "it): use TLS (tls_ca), or allow_plaintext_token when the hop is protected "
                 "otherwise");
    }
    connection->channel =
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
    if (!token.empty()) connection->metadata_authorization = "Bearer " + token;
    return grpc::Status::OK;
  }

  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca.empty()) {
    status = ReadPem("tls_ca", options.tls_ca, &ssl.pem_root_certs);
    if (!status.ok()) return status;
  }
  if (!options.tls_cert.empty()) {
    status = ReadPem("tls_cert", options.tls_cert, &ssl.pem_cert_chain);
    if (!status.ok()) return status;
    status = ReadPem("tls_key", options.tls_key, &ssl.pem_private_key);
    if (!status.ok()) return status;
    status = CheckKeyPair(options, ssl.pem_cert_chain, ssl.pem_private_key);
    if (!status.ok()) return status;
  }
  if (!options.tls_server_name.empty()) arguments.SetSslTargetNameOverride(options.tls_server_name);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(ssl);
  if (credentials == nullptr) return Bad("tls_ca: gRPC refused the TLS settings");
  if (!token.empty()) {
    credentials =
        grpc::CompositeChannelCredentials(credentials, grpc::AccessTokenCredentials(token));
  }
  connection->channel = grpc::CreateCustomChannel(address, credentials, arguments);
  connection->tls = true;
  return grpc::Status::OK;
}

grpc::Status ExplainConnectFailure(const grpc::Status& status, const std::string& address,
                                   const ConnectOptions& options, bool tls, bool reached) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return status;
  const std::string& m = status.error_message();
  // gRPC's words (1.51): "Ssl handshake failed: SSL_ERROR_SSL: ...
  // certificate verify failed" when this side rejects the server's chain,
  // "Peer name NAME is not in peer certificate" when the name does not
  // match; "Socket closed" (or a reset) when the server drops the
  // connection, as a TLS 1.3 server that rejects the client's certificate
  // does right after the handshake.
  const bool handshake = Contains(m, "andshake") || Contains(m, "SSL") || Contains(m, "TLS") ||
                         Contains(m, "certificate");
  const bool dropped = Contains(m, "Socket closed") || Contains(m, "reset by peer");
  std::string explained;
  if (tls && handshake) {
    explained = "the TLS handshake with " + address + " failed: " + TlsChecks(address, options);
  } else if (tls && dropped) {
    explained = "the server at " + address +
                " closed the connection during or right after the TLS handshake: " +
                TlsChecks(address, options);
  } else if (!tls && dropped && !reached) {
    // Only while no call has succeeded on the channel: once one has, the
    // server speaks plaintext, and a dropped connection is the server going
    // away (a restart), not TLS.
    explained = "the server at " + address +
                " closed the connection (if it serves TLS, this plaintext client cannot talk to "
                "it: give the CA of its certificate)";
  } else {
    return status;
  }
  return grpc::Status(status.error_code(), explained + " [gRPC: " + m + "]",
                      status.error_details());
}

}  // namespace tether::client::internal
