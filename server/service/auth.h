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
// Reload (service/tokens_watcher.h, when --tokens-file changes): the new
// lines replace the token table at once for every later call and stream
// (a stream already open keeps going: it was authenticated when it began).
// A tenant is never destroyed: a tenant whose tokens all went keeps its
// Tenant (its sessions point at it; no token reaches them), a tenant of the
// same name gets the same Tenant back, with the quotas it was made with (a
// quota changed in the file applies at the next restart; a warning says
// so). A file that does not parse, or has no token, changes nothing.
//
// Threads and ownership: an Authenticator is built at start-up; Authenticate
// and FindTenant may run on any thread, concurrently with Reload (the table
// is an immutable snapshot swapped under a mutex held only to copy its
// pointer). It owns the Tenants; ServiceCore owns it, declared before the
// session store, so it outlives every session and reactor that points at a
// tenant.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
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

  bool enabled() const { return enabled_; }
  // The tenants of the tokens in force (with tokens), or 1 (anonymous).
  std::size_t tenant_count() const;
  // The tokens in force (0 without tokens).
  std::size_t token_count() const;
  // The tenant of that name (nullptr when none): sessions read back from
  // --state-dir or the session store find their owner by name.
  Tenant* FindTenant(const std::string& name) const;

  // Replaces the tokens with those of `text` (a tokens file's new
  // contents), named `source` in errors. False with `*error` (the previous
  // tokens stay in force) when it does not parse, has no token, or tokens
  // are off (a server started without tokens cannot start requiring them).
  bool Reload(std::string_view text, const std::string& source, std::string* error);
  // Whether the tokens in force were read from exactly `text` (at start-up
  // or by the last successful Reload).
  bool InForce(std::string_view text) const;

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
  struct TokenTable {
    std::unordered_map<TokenDigest, Token, DigestHash> tokens;
    // Tokens in force before a reload removed them: a call with one is
    // told it was revoked, not merely unknown.
    std::unordered_map<TokenDigest, std::string, DigestHash> revoked;  // -> when (UTC)
  };
  // Builds the table of `entries` (tenants by name: the existing one, else
  // a new one with the quotas of the lines or of `options_`) and puts it in
  // force; false with `*error` when two lines give a tenant different
  // quotas.
  bool Install(const std::vector<TokenEntry>& entries, const std::string& source,
               std::string* error);
  std::shared_ptr<const TokenTable> table() const;

  ServiceOptions options_;  // the flags' quotas, for tenants made on reload
  bool enabled_ = false;
  bool require_client_certificate_ = false;  // --tls-client-ca set
  mutable std::mutex mu_;
  // Guarded by mu_: append-only (addresses stable, never destroyed), and
  // the table in force (its Tenant pointers point into tenants_).
  std::vector<std::unique_ptr<Tenant>> tenants_;
  std::shared_ptr<const TokenTable> tokens_;
  TokenDigest text_digest_{};  // SHA-256 of the text tokens_ came from
};

// The whole of the tokens file at `path`; false when it cannot be read.
bool ReadTokensFile(const std::string& path, std::string* out);

// SHA-256 of `token`.
TokenDigest DigestToken(std::string_view token);

}  // namespace tether::service
