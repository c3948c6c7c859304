// The token table (server/service/auth.*) alone, without a server: the
// tokens file's format and its start-up errors (line numbers, never the
// token), and Authenticate on metadata as gRPC delivers it (missing, not a
// bearer token, unknown, expired, each token to its own tenant), and a
// reload (Authenticator::Reload, TokensWatcher::PollOnce on a real file).
#include "service/auth.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "service/tokens_watcher.h"

namespace tether::service {
namespace {

using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;

constexpr const char* kAcmeToken = "acme-token-0123456789";
constexpr const char* kBetaToken = "beta-token-9876543210";

std::unique_ptr<Authenticator> Build(const std::string& text, ServiceOptions options = {}) {
  std::vector<TokenEntry> entries;
  std::string error;
  EXPECT_TRUE(ParseTokens(text, "tokens", &entries, &error)) << error;
  auto auth = Authenticator::FromTokens(entries, options, "tokens", &error);
  EXPECT_NE(auth, nullptr) << error;
  return auth;
}

// Authenticate with `authorization: value` (no metadata when empty).
StatusOr<Tenant*> As(const Authenticator& auth, const std::string& value,
                     std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
  Metadata md;
  if (!value.empty()) md.emplace("authorization", value);
  md.emplace("user-agent", "test");
  return auth.Authenticate(md, now);
}

TEST(AuthTest, EachTokenMapsToItsTenant) {
  auto auth = Build(std::string("# comment\n\nacme ") + kAcmeToken + "  # trailing\r\nbeta\t" +
                    kBetaToken + " max_sessions=3 max_streams=2 max_memory=2097152\n");
  ASSERT_TRUE(auth->enabled());
  EXPECT_EQ(auth->tenant_count(), 2u);
  auto acme = As(*auth, std::string("Bearer ") + kAcmeToken);
  ASSERT_TRUE(acme.ok()) << acme.status().message();
  EXPECT_EQ((*acme)->name(), "acme");
  EXPECT_EQ((*acme)->max_sessions(), 1000u);  // --max-sessions's default
  auto beta = As(*auth, std::string("bearer ") + kBetaToken);
  ASSERT_TRUE(beta.ok()) << beta.status().message();
  EXPECT_EQ((*beta)->name(), "beta");
  EXPECT_EQ((*beta)->max_sessions(), 3u);
  EXPECT_EQ((*beta)->max_streams(), 2u);
  EXPECT_EQ((*beta)->max_memory(), 2097152);
  EXPECT_EQ((*beta)->memory_quota(), "max_memory (tokens file line 4)");
  EXPECT_EQ((*acme)->max_memory(), 0);  // --tenant-max-memory's
  EXPECT_NE(*acme, *beta);
}

TEST(AuthTest, MissingWrongSchemeUnknownAndExpiredAreUnauthenticated) {
  auto auth = Build(std::string("acme ") + kAcmeToken + " expires=2027-01-01T00:00:00Z\n");
  auto missing = As(*auth, "");
  EXPECT_EQ(missing.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(missing.status().message().find("authorization: Bearer <token>"), std::string::npos)
      << missing.status().message();
  auto basic = As(*auth, std::string("Basic ") + kAcmeToken);
  EXPECT_EQ(basic.status().code(), StatusCode::kUnauthenticated);
  auto unknown = As(*auth, std::string("Bearer ") + kAcmeToken + "x");
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(unknown.status().message().find("not known"), std::string::npos);
  const auto before = *ParseUtcTime("2026-12-31T23:59:59Z");
  const auto at = *ParseUtcTime("2027-01-01T00:00:00Z");
  EXPECT_TRUE(As(*auth, std::string("Bearer ") + kAcmeToken, before).ok());
  auto expired = As(*auth, std::string("Bearer ") + kAcmeToken, at);
  EXPECT_EQ(expired.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(expired.status().message().find("expired at 2027-01-01T00:00:00Z"), std::string::npos)
      << expired.status().message();
}

TEST(AuthTest, WithoutTokensEveryoneIsTheAnonymousTenant) {
  ServiceOptions options;
  options.max_sessions = 7;
  Authenticator auth(options);
  EXPECT_FALSE(auth.enabled());
  auto a = As(auth, "");
  auto b = As(auth, "Bearer whatever-whatever-whatever");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ((*a)->max_sessions(), 7u);
  EXPECT_EQ((*a)->max_streams(), 7u);  // --tenant-max-streams 0: as many as its sessions
}

TEST(AuthTest, UtcTimesAreStrict) {
  EXPECT_TRUE(ParseUtcTime("2024-02-29T12:00:00Z"));
  for (const char* bad : {"2023-02-29T12:00:00Z", "2027-01-01T00:00:00", "2027-01-01 00:00:00Z",
                          "2027-13-01T00:00:00Z", "2027-01-01T24:00:00Z",
                          "2027-01-01T00:00:00+01:00", "2027-1-01T00:00:00Z", "soon"}) {
    EXPECT_FALSE(ParseUtcTime(bad)) << bad;
  }
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*ParseUtcTime("1970-01-02T00:00:01Z")), 86401);
}

TEST(AuthTest, MalformedLinesNameTheLineAndNeverTheToken) {
  const std::string token = kAcmeToken;
  struct Case {
    std::string text;
    std::string expected;  // a part of the error
  };
  const std::vector<Case> cases = {
      {"acme\n", "tokens line 1: expected 'TENANT TOKEN"},
      {"\n# c\nac/me " + token + "\n",
       "tokens line 3: the tenant name, word 1 (5 characters), is not valid"},
      {std::string(65, 'a') + " " + token + "\n", "tokens line 1: the tenant name"},
      {"acme short-token\n", "tokens line 1: the token (11 characters) is too short"},
      {"acme " + token + "\nbeta " + token + "\n",
       "tokens line 2: the token of tenant 'beta' is also on line 1"},
      {"acme " + token + " expires=2027-01-01\n",
       "tokens line 1: the value of expires (10 characters) is not a time"},
      {"acme " + token + " max_sessions=0\n",
       "tokens line 1: the value of max_sessions (1 characters) is not an integer"},
      {"acme " + token + " max_streams=x\n",
       "tokens line 1: the value of max_streams (1 characters)"},
      {"acme " + token + " colour=red\n", "tokens line 1: unexpected word 3 (10 characters)"},
      {"acme " + token + " max_streams=1 max_streams=1\n", "key max_streams given twice"},
      {"acme " + token + " max_memory=1000\n",
       "tokens line 1: the value of max_memory (4 characters) is not a byte count in "
       "1048576..4398046511104"},
  };
  for (const Case& c : cases) {
    std::vector<TokenEntry> entries;
    std::string error;
    EXPECT_FALSE(ParseTokens(c.text, "tokens", &entries, &error)) << c.text;
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    EXPECT_EQ(error.find(token), std::string::npos) << error;
  }
  // A token-like secret in the wrong place of a malformed line (tenant and
  // token swapped, a token split by a space, a token pasted as a value) is
  // not echoed either: the message gives the line and the word's position.
  const std::string secret = "Zq8/secret+Tok3n-abcdefghij";
  for (const std::string& text : {secret + " acme\n", "acme " + token + " " + secret + "\n",
                                  "acme " + token + " expires=" + secret + "\n",
                                  "acme " + token + " max_sessions=" + secret + "\n",
                                  "acme " + token + " x" + secret + "\n"}) {
    std::vector<TokenEntry> entries;
    std::string error;
    EXPECT_FALSE(ParseTokens(text, "tokens", &entries, &error)) << text;
    EXPECT_NE(error.find("tokens line 1: "), std::string::npos) << error;
    EXPECT_EQ(error.find("secret"), std::string::npos) << error;
    EXPECT_EQ(error.find("Tok3n"), std::string::npos) << error;
  }
  // Two lines giving one tenant different quotas.
  std::vector<TokenEntry> entries;
  std::string error;
  ASSERT_TRUE(
      ParseTokens("acme " + token + " max_sessions=2\nacme " + kBetaToken + " max_sessions=3\n",
                  "tokens", &entries, &error));
  EXPECT_EQ(Authenticator::FromTokens(entries, {}, "tokens", &error), nullptr);
  EXPECT_NE(error.find("tokens line 2: tenant 'acme' max_sessions=3 differs"), std::string::npos)
      << error;
}

TEST(AuthTest, ReloadRevokesAddsAndKeepsTenants) {
  auto auth =
      Build(std::string("acme ") + kAcmeToken + " max_sessions=3\nbeta " + kBetaToken + "\n");
  auto acme = As(*auth, std::string("Bearer ") + kAcmeToken);
  ASSERT_TRUE(acme.ok());
  const std::string gamma = "gamma-token-0123456789";
  std::string error;
  // acme's token goes, gamma comes, and a second token of acme with a
  // different quota (kept until a restart: sessions count on the Tenant).
  ASSERT_TRUE(auth->Reload("beta " + std::string(kBetaToken) + "\ngamma " + gamma +
                               "\nacme acme-second-token-0123 max_sessions=9\n",
                           "tokens", &error))
      << error;
  EXPECT_EQ(auth->token_count(), 3u);
  EXPECT_EQ(auth->tenant_count(), 3u);
  auto revoked = As(*auth, std::string("Bearer ") + kAcmeToken);
  ASSERT_FALSE(revoked.ok());
  EXPECT_EQ(revoked.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(revoked.status().message().find("was revoked"), std::string::npos)
      << revoked.status().message();
  EXPECT_EQ(revoked.status().message().find(kAcmeToken), std::string::npos);
  auto second = As(*auth, "Bearer acme-second-token-0123");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *acme);  // the same Tenant
  EXPECT_EQ((*second)->max_sessions(), 3u);
  auto g = As(*auth, "Bearer " + gamma);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->name(), "gamma");
  EXPECT_EQ(auth->FindTenant("gamma"), *g);
  // A token never seen is unknown, not revoked.
  auto unknown = As(*auth, "Bearer never-seen-token-0123456");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("not known"), std::string::npos);

  // Bad text and an empty file change nothing.
  EXPECT_FALSE(auth->Reload("beta short\n", "tokens", &error));
  EXPECT_NE(error.find("tokens line 1"), std::string::npos) << error;
  EXPECT_FALSE(auth->Reload("# all gone\n\n", "tokens", &error));
  EXPECT_NE(error.find("no tokens"), std::string::npos) << error;
  EXPECT_EQ(auth->token_count(), 3u);
  EXPECT_TRUE(As(*auth, std::string("Bearer ") + kBetaToken).ok());

  // Put back, acme's first token is accepted again.
  ASSERT_TRUE(auth->Reload(std::string("acme ") + kAcmeToken + "\n", "tokens", &error)) << error;
  EXPECT_TRUE(As(*auth, std::string("Bearer ") + kAcmeToken).ok());
  EXPECT_FALSE(As(*auth, std::string("Bearer ") + kBetaToken).ok());
}

TEST(AuthTest, ReloadNeedsTokensAtStartUp) {
  Authenticator anonymous{ServiceOptions{}};
  std::string error;
  EXPECT_FALSE(anonymous.Reload(std::string("acme ") + kAcmeToken + "\n", "tokens", &error));
  EXPECT_NE(error.find("started without tokens"), std::string::npos) << error;
  EXPECT_FALSE(anonymous.enabled());
}

TEST(AuthTest, WatcherReloadsOnChangedContentsOnly) {
  char dir_template[] = "/tmp/tether-tokens-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/tokens";
  auto write = [&](const std::string& text, mode_t mode) {
    std::ofstream(path, std::ios::trunc) << text;
    chmod(path.c_str(), mode);
  };
  write(std::string("acme ") + kAcmeToken + "\n", 0600);
  ServerOptions options;
  options.tokens_file = path;
  options.tokens_reload_interval = std::chrono::hours(1);  // polled by hand below
  std::string error;
  auto auth = Authenticator::Load(options, &error);
  ASSERT_NE(auth, nullptr) << error;
  TokensWatcher watcher(auth.get(), options);
  EXPECT_FALSE(watcher.PollOnce());                       // unchanged
  write(std::string("beta ") + kBetaToken + "\n", 0644);  // open to others: refused
  EXPECT_FALSE(watcher.PollOnce());
  EXPECT_TRUE(As(*auth, std::string("Bearer ") + kAcmeToken).ok());
  chmod(path.c_str(), 0600);
  EXPECT_TRUE(watcher.PollOnce());
  EXPECT_FALSE(As(*auth, std::string("Bearer ") + kAcmeToken).ok());
  EXPECT_TRUE(As(*auth, std::string("Bearer ") + kBetaToken).ok());
  EXPECT_FALSE(watcher.PollOnce());  // unchanged again
  unlink(path.c_str());              // unreadable: kept
  EXPECT_FALSE(watcher.PollOnce());
  EXPECT_TRUE(As(*auth, std::string("Bearer ") + kBetaToken).ok());
  rmdir(dir_template);
}

}  // namespace
}  // namespace tether::service
