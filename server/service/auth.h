// Bearer-token authentication: the token table (from --tokens-file or
// TETHER_TOKENS), each token mapped to a tenant (service/tenant.h), and the
// check every tether.v1 call goes through (SimulatorService). Health and
// reflection are not checked (probes carry no token; SECURITY.md).
//
// The tokens file: one entry per line, `TENANT TOKEN [key=value ...]`;
// `#` starts a comment, blank lines are ignored. TENANT is
// [A-Za-z0-9._-]{1,64}; TOKEN at least 16 printable non-space ASCII
// characters; keys `expires=YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC),
// `max_sessions=N`, `max_streams=N` (the tenant's own quotas; a tenant
// with several tokens may give each key once, or the same value again).
// A malformed line, a duplicate token or a bad key/value stops the server
// at start-up with the source, the line number and what was expected;
// the token itself is never printed or logged.
//
// Tokens are kept only as SHA-256 digests: a call's token is hashed and
// its digest looked up, so the time a lookup takes depends on the digest,
// never on how many leading characters of a real token were guessed.
//
// Threads and ownership: an Authenticator is built once at start-up and
// then only read (Authenticate is const and lock-free, any thread). It owns
// the Tenants; ServiceCore owns it, declared before the session store, so
// it outlives every session and reactor that points at a tenant.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <grpcpp/server_context.h>
#include <grpcpp/support/string_ref.h>

#include "engine/status.h"
#include "service/server_options.h"
#include "service/tenant.h"

namespace tether::service {

// The gRPC metadata key (lowercase, as gRPC delivers it) and scheme.
inline constexpr std::string_view kAuthorizationMetadata = "authorization";

using TokenDigest = std::array<unsigned char, 32>;  // SHA-256

// One line of a tokens file.
struct TokenEntry {
  std::string tenant;
  TokenDigest digest;
  int line = 0;
  std::optional<std::chrono::system_clock::time_point> expires;
  std::string expires_text;  // as written ("2027-01-01T00:00:00Z")
  std::optional<std::size_t> max_sessions, max_streams;
  std::optional<std::size_t> max_memory;  // bytes (service/memory_budget.h)
};

// Parses a tokens file's text; `source` names it in errors ("--tokens-file
// /etc/tether/tokens" or "TETHER_TOKENS"). False with `*error` =
// "SOURCE line N: ..." at the first bad line.
bool ParseTokens(std::string_view text, const std::string& source, std::vector<TokenEntry>* out,
                 std::string* error);

// "2027-01-01T00:00:00Z" -> the time; nullopt unless exactly that form
// with a valid date and time.
std::optional<std::chrono::system_clock::time_point> ParseUtcTime(std::string_view text);

class Authenticator {
 public:
  // No tokens: every caller is the anonymous tenant, with the flags' quotas.
  explicit Authenticator(const ServiceOptions& options);
  // Tokens; the tenants' quotas are the flags' unless their lines set them.
  // False with `*error` when two lines give a tenant different quotas.
  static std::unique_ptr<Authenticator> FromTokens(const std::vector<TokenEntry>& entries,
                                                   const ServiceOptions& options,
                                                   const std::string& source, std::string* error);
  // From `options.tokens_file` or `options.tokens_text` (neither: no
  // tokens), requiring a client certificate when `options.tls_client_ca`
  // is set (AuthenticateCall); nullptr with `*error` when the file cannot be read or the
  // tokens are malformed.
  static std::unique_ptr<Authenticator> Load(const ServerOptions& options, std::string* error);

  bool enabled() const { return !tokens_.empty(); }
  std::size_t tenant_count() const { return tenants_.size(); }
  // The tenant of that name (nullptr when none): sessions read back from
  // --state-dir find their owner by name.
  Tenant* FindTenant(const std::string& name) const {
    for (const auto& t : tenants_) {
      if (t->name() == name) return t.get();
    }
    return nullptr;
  }

  // The caller's tenant from its metadata: the anonymous tenant when tokens
  // are off; else the token's tenant, or UNAUTHENTICATED saying what is
  // wrong (missing metadata, not a Bearer token, unknown, expired at ...).
  StatusOr<Tenant*> Authenticate(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;

  // A tether.v1 call's tenant (what every method calls): under mTLS
  // (--tls-client-ca) first the connection's verified client certificate,
  // UNAUTHENTICATED without one (the TLS handshake lets a client without a
  // certificate through, and verifies any it presents, so that health and
  // reflection stay open to probes); then Authenticate(metadata). A client
  // certificate only authenticates the connection: the tenant comes from
  // the bearer token (the anonymous tenant without tokens).
  StatusOr<Tenant*> AuthenticateCall(const grpc::ServerContextBase& context) const;
  bool requires_client_certificate() const { return require_client_certificate_; }

 private:
  Authenticator() = default;
  // Load's tokens (everything but the client certificate rule).
  static std::unique_ptr<Authenticator> LoadTokens(const ServerOptions& options,
                                                   std::string* error);
  struct Token {
    Tenant* tenant;
    std::optional<std::chrono::system_clock::time_point> expires;
    std::string expires_text;
  };
  struct DigestHash {
    std::size_t operator()(const TokenDigest& d) const;
  };
  std::vector<std::unique_ptr<Tenant>> tenants_;
  std::unordered_map<TokenDigest, Token, DigestHash> tokens_;
  bool require_client_certificate_ = false;  // --tls-client-ca set
};

// SHA-256 of `token`.
TokenDigest DigestToken(std::string_view token);

}  // namespace tether::service
