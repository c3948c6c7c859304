#include "service/auth.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

namespace tether::service {
namespace {

constexpr std::size_t kMaxTenantName = 64;
constexpr std::size_t kMinTokenLength = 16;
// A quota in a tokens file, at most (the flags' range).
constexpr uint64_t kMaxQuota = 10000000;
// max_memory in a tokens file: 1 MiB to 4 TiB (--tenant-max-memory's range).
constexpr uint64_t kMinMemoryQuota = uint64_t{1} << 20;
constexpr uint64_t kMaxMemoryQuota = uint64_t{1} << 42;

bool ValidTenantName(std::string_view name) {
  if (name.empty() || name.size() > kMaxTenantName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

bool ValidToken(std::string_view token) {
  return token.size() >= kMinTokenLength &&
         std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 127; });
}

// Space- or tab-separated words of `line`.
std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::optional<uint64_t> ParseUint(std::string_view s) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// Text from a tokens file that may appear in a message: only validated
// tenant names (ValidTenantName), escaped. A word that failed a check is
// never echoed, whatever it is: a malformed line may hold a token in any
// position (a swapped tenant and token, a token with a space in it), so a
// message names the file, the line, the word's position and its length.
std::string Quote(std::string_view text) { return QuoteForMessage(text, 64); }

// "word 3 (40 characters)".
std::string WordAt(std::size_t index, std::string_view word) {
  return "word " + std::to_string(index + 1) + " (" + std::to_string(word.size()) + " characters)";
}

// Now as "2026-12-05T21:40:00Z".
std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

Status Missing() {
  return Unauthenticated(
      "missing credentials: send the gRPC metadata 'authorization: Bearer <token>' with every "
      "tether.v1 call");
}

}  // namespace

bool ReadTokensFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return false;
  *out = text.str();
  return true;
}

TokenDigest DigestToken(std::string_view token) {
  TokenDigest digest{};
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return digest;
}

std::size_t Authenticator::DigestHash::operator()(const TokenDigest& d) const {
  std::size_t h;
  std::memcpy(&h, d.data(), sizeof h);  // a SHA-256 digest is already uniform
  return h;
}

std::optional<std::chrono::system_clock::time_point> ParseUtcTime(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SSZ
  if (s.size() != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':' || s[19] != 'Z') {
    return std::nullopt;
  }
  auto num = [&](std::size_t at, std::size_t n) -> std::optional<int> {
    for (std::size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
    }
    auto v = ParseUint(s.substr(at, n));
    if (!v) return std::nullopt;
    return static_cast<int>(*v);
  };
  auto year = num(0, 4), month = num(5, 2), day = num(8, 2), hour = num(11, 2), minute = num(14, 2),
       second = num(17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (*year < 1970 || *month < 1 || *month > 12 || *hour > 23 || *minute > 59 || *second > 59) {
    return std::nullopt;
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  const int days_in_month = kDays[*month - 1] + (*month == 2 && leap ? 1 : 0);
  if (*day < 1 || *day > days_in_month) return std::nullopt;
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  const std::time_t t = timegm(&tm);
  return std::chrono::system_clock::from_time_t(t);
}

bool ParseTokens(std::string_view text, const std::string& source, std::vector<TokenEntry>* out,
                 std::string* error) {
  out->clear();
  // Digest -> line of its first use, for duplicates.
  std::map<TokenDigest, int> seen;
  int line_number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const auto words = Words(line);
    if (words.empty()) {
      if (end == text.size()) break;
      continue;
    }
    const std::string at = source + " line " + std::to_string(line_number) + ": ";
    if (words.size() < 2) {
      *error = at + "expected 'TENANT TOKEN [key=value ...]', found only a tenant name";
      return false;
    }
    TokenEntry entry;
    entry.line = line_number;
    if (!ValidTenantName(words[0])) {
      *error = at + "the tenant name, " + WordAt(0, words[0]) +
               ", is not valid: expected 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' or '-'";
      return false;
    }
    entry.tenant = std::string(words[0]);
    if (!ValidToken(words[1])) {
      // Never the token itself: its length says enough.
      *error = at + "the token (" + std::to_string(words[1].size()) +
               " characters) is too short or not printable: expected at least " +
               std::to_string(kMinTokenLength) + " printable non-space ASCII characters";
      return false;
    }
    entry.digest = DigestToken(words[1]);
    if (auto [it, inserted] = seen.emplace(entry.digest, line_number); !inserted) {
      *error = at + "the token of tenant " + Quote(entry.tenant) + " is also on line " +
               std::to_string(it->second) + ": expected every token to be unique";
      return false;
    }
    std::set<std::string_view> keys;
    for (std::size_t i = 2; i < words.size(); ++i) {
      const std::string_view word = words[i];
      const auto eq = word.find('=');
      const std::string_view key = word.substr(0, eq);
      const std::string_view value =
          eq == std::string_view::npos ? std::string_view() : word.substr(eq + 1);
      if (eq == std::string_view::npos || (key != "expires" && key != "max_sessions" &&
                                           key != "max_streams" && key != "max_memory")) {
        *error = at + "unexpected " + WordAt(i, word) +
                 ": expected key=value with key expires, max_sessions, max_streams or max_memory";
        return false;
      }
      if (!keys.insert(key).second) {
        *error = at + "key " + std::string(key) + " given twice";
        return false;
      }
      if (key == "expires") {
        entry.expires = ParseUtcTime(value);
        if (!entry.expires) {
          *error = at + "the value of expires (" + std::to_string(value.size()) +
                   " characters) is not a time: expected an RFC 3339 UTC time such as "
                   "2027-01-01T00:00:00Z";
          return false;
        }
        entry.expires_text = std::string(value);
      } else if (key == "max_memory") {
        auto n = ParseUint(value);
        if (!n || *n < kMinMemoryQuota || *n > kMaxMemoryQuota) {
          *error = at + "the value of max_memory (" + std::to_string(value.size()) +
                   " characters) is not a byte count in " + std::to_string(kMinMemoryQuota) + ".." +
                   std::to_string(kMaxMemoryQuota) + " (1 MiB to 4 TiB)";
          return false;
        }
        entry.max_memory = *n;
      } else {
        auto n = ParseUint(value);
        if (!n || *n < 1 || *n > kMaxQuota) {
          *error = at + "the value of " + std::string(key) + " (" + std::to_string(value.size()) +
                   " characters) is not an integer in 1.." + std::to_string(kMaxQuota);
          return false;
        }
        (key == "max_sessions" ? entry.max_sessions : entry.max_streams) = *n;
      }
    }
    out->push_back(std::move(entry));
    if (end == text.size()) break;
  }
  return true;
}

Authenticator::Authenticator(const ServiceOptions& options) : options_(options) {
  const std::size_t sessions =
      options.tenant_max_sessions == 0 ? options.max_sessions : options.tenant_max_sessions;
  const std::size_t streams =
      options.tenant_max_streams == 0 ? sessions : options.tenant_max_streams;
  tenants_.push_back(std::make_unique<Tenant>(
      "anonymous", sessions, "--tenant-max-sessions", streams,
      options.tenant_max_streams == 0 ? "--tenant-max-streams (default: the tenant's sessions)"
                                      : "--tenant-max-streams"));
}

std::unique_ptr<Authenticator> Authenticator::FromTokens(const std::vector<TokenEntry>& entries,
                                                         const ServiceOptions& options,
                                                         const std::string& source,
                                                         std::string* error) {
  std::unique_ptr<Authenticator> auth(new Authenticator());
  auth->options_ = options;
  auth->enabled_ = true;
  if (!auth->Install(entries, source, error)) return nullptr;
  return auth;
}

bool Authenticator::Install(const std::vector<TokenEntry>& entries, const std::string& source,
                            std::string* error) {
  // Per tenant: its quotas from the file, and the line that set each.
  struct Quotas {
    std::optional<std::size_t> sessions, streams, memory;
    int sessions_line = 0, streams_line = 0, memory_line = 0;
  };
  std::map<std::string, Quotas> quotas;
  for (const TokenEntry& e : entries) {
    Quotas& q = quotas[e.tenant];
    auto merge = [&](const std::optional<std::size_t>& v, std::optional<std::size_t>* into,
                     int* line, const char* key) {
      if (!v) return true;
      if (*into && **into != *v) {
        *error = source + " line " + std::to_string(e.line) + ": tenant " + Quote(e.tenant) + " " +
                 key + "=" + std::to_string(*v) + " differs from " + key + "=" +
                 std::to_string(**into) + " on line " + std::to_string(*line) +
                 ": expected one value per tenant";
        return false;
      }
      *into = v;
      *line = e.line;
      return true;
    };
    if (!merge(e.max_sessions, &q.sessions, &q.sessions_line, "max_sessions") ||
        !merge(e.max_streams, &q.streams, &q.streams_line, "max_streams") ||
        !merge(e.max_memory, &q.memory, &q.memory_line, "max_memory")) {
      return false;
    }
  }
  const std::size_t default_sessions =
      options_.tenant_max_sessions == 0 ? options_.max_sessions : options_.tenant_max_sessions;
  auto table = std::make_shared<TokenTable>();
  std::lock_guard lock(mu_);
  std::map<std::string, Tenant*> by_name;
  for (const auto& [name, q] : quotas) {
    const std::size_t sessions = q.sessions.value_or(default_sessions);
    const std::size_t streams = q.streams                          ? *q.streams
                                : options_.tenant_max_streams == 0 ? sessions
                                                                   : options_.tenant_max_streams;
    const int64_t memory = q.memory ? static_cast<int64_t>(*q.memory) : 0;
    // A copy: lambdas capture structured bindings only from C++20 on in
    // clang 16, and the sanitizer build's clang is 14.
    const std::string& tenant_name = name;
    auto existing = std::find_if(tenants_.begin(), tenants_.end(),
                                 [&](const auto& t) { return t->name() == tenant_name; });
    if (existing != tenants_.end()) {
      Tenant* t = existing->get();
      if (t->max_sessions() != sessions || t->max_streams() != streams ||
          t->max_memory() != memory) {
        // Sessions and streams in flight count against the Tenant they
        // hold; a second Tenant of one name would split the counts.
        spdlog::warn(
            "{}: tenant {} now has max_sessions={} max_streams={} max_memory={}; it keeps "
            "{}, {}, {} until the server restarts",
            source, Quote(name), sessions, streams, memory, t->max_sessions(), t->max_streams(),
            t->max_memory());
      }
      by_name[name] = t;
      continue;
    }
    auto line = [](int n) { return " (tokens file line " + std::to_string(n) + ")"; };
    tenants_.push_back(std::make_unique<Tenant>(
        name, sessions,
        q.sessions ? "max_sessions" + line(q.sessions_line) : std::string("--tenant-max-sessions"),
        streams,
        q.streams ? "max_streams" + line(q.streams_line)
        : options_.tenant_max_streams == 0
            ? std::string("--tenant-max-streams (default: the tenant's sessions)")
            : std::string("--tenant-max-streams"),
        memory, q.memory ? "max_memory" + line(q.memory_line) : std::string()));
    by_name[name] = tenants_.back().get();
  }
  for (const TokenEntry& e : entries) {
    table->tokens.emplace(e.digest, Token{by_name.at(e.tenant), e.expires, e.expires_text});
  }
  if (tokens_) {
    table->revoked = tokens_->revoked;
    const std::string now = UtcNow();
    for (const auto& [digest, token] : tokens_->tokens) {
      if (!table->tokens.count(digest)) table->revoked.emplace(digest, now);
    }
    for (const auto& [digest, token] : table->tokens) table->revoked.erase(digest);
  }
  tokens_ = std::move(table);
  return true;
}

bool Authenticator::Reload(std::string_view text, const std::string& source, std::string* error) {
  if (!enabled_) {
    *error = source + ": this server was started without tokens; start it with --tokens-file";
    return false;
  }
  std::vector<TokenEntry> entries;
  if (!ParseTokens(text, source, &entries, error)) return false;
  if (entries.empty()) {
    // Never an empty set by accident (a file truncated while written, an
    // empty Secret key): that would lock every client out.
    *error = source + ": no tokens (expected at least one line 'TENANT TOKEN [key=value ...]')";
    return false;
  }
  if (!Install(entries, source, error)) return false;
  std::lock_guard lock(mu_);
  text_digest_ = DigestToken(text);
  return true;
}

bool Authenticator::InForce(std::string_view text) const {
  const TokenDigest digest = DigestToken(text);
  std::lock_guard lock(mu_);
  return digest == text_digest_;
}

std::shared_ptr<const Authenticator::TokenTable> Authenticator::table() const {
  std::lock_guard lock(mu_);
  return tokens_;
}

std::size_t Authenticator::tenant_count() const {
  if (!enabled_) return 1;
  const auto tokens = table();
  std::set<const Tenant*> tenants;
  for (const auto& [digest, token] : tokens->tokens) tenants.insert(token.tenant);
  return tenants.size();
}

std::size_t Authenticator::token_count() const { return enabled_ ? table()->tokens.size() : 0; }

Tenant* Authenticator::FindTenant(const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const auto& t : tenants_) {
    if (t->name() == name) return t.get();
  }
  return nullptr;
}

std::unique_ptr<Authenticator> Authenticator::LoadTokens(const ServerOptions& options,
                                                         std::string* error) {
  if (!options.tokens_file.empty() && !options.tokens_text.empty()) {
    *error = "--tokens-file and TETHER_TOKENS: expected one of them, found both";
    return nullptr;
  }
  std::string text, source;
  if (!options.tokens_file.empty()) {
    source = "--tokens-file " + options.tokens_file;
    if (!ReadTokensFile(options.tokens_file, &text)) {
      *error = source + ": cannot read the file (expected lines 'TENANT TOKEN [key=value ...]')";
      return nullptr;
    }
  } else if (!options.tokens_text.empty()) {
    source = "TETHER_TOKENS";
    text = options.tokens_text;
  } else {
    return std::make_unique<Authenticator>(options.service);
  }
  std::vector<TokenEntry> entries;
  if (!ParseTokens(text, source, &entries, error)) return nullptr;
  if (entries.empty()) {
    *error = source + ": no tokens (expected at least one line 'TENANT TOKEN [key=value ...]')";
    return nullptr;
  }
  auto auth = FromTokens(entries, options.service, source, error);
  if (auth) auth->text_digest_ = DigestToken(text);
  return auth;
}

std::unique_ptr<Authenticator> Authenticator::Load(const ServerOptions& options,
                                                   std::string* error) {
  auto auth = LoadTokens(options, error);
  if (auth) auth->require_client_certificate_ = !options.tls_client_ca.empty();
  return auth;
}

StatusOr<Tenant*> Authenticator::AuthenticateCall(const grpc::ServerContextBase& context) const {
  if (require_client_certificate_) {
    // gRPC sets the peer's PEM certificate only for one that it verified
    // against --tls-client-ca (GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY).
    auto auth_context = context.auth_context();
    if (!auth_context || auth_context->FindPropertyValues("x509_pem_cert").empty()) {
      return Unauthenticated(
          "no client certificate: this server requires one signed by its --tls-client-ca for "
          "every tether.v1 call (only health and reflection are open without one)");
    }
  }
  return Authenticate(context.client_metadata());
}

StatusOr<Tenant*> Authenticator::Authenticate(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    std::chrono::system_clock::time_point now) const {
  if (!enabled_) {
    std::lock_guard lock(mu_);
    return tenants_.front().get();
  }
  auto [first, last] = metadata.equal_range(
      grpc::string_ref(kAuthorizationMetadata.data(), kAuthorizationMetadata.size()));
  if (first == last) return Missing();
  if (std::next(first) != last) {
    return Unauthenticated("expected one 'authorization' metadata entry, found several");
  }
  const std::string_view value(first->second.data(), first->second.size());
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), value.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    return Unauthenticated(
        "the 'authorization' metadata is not a bearer token: expected 'Bearer <token>'");
  }
  std::string_view token = value.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  const auto tokens = table();
  const TokenDigest digest = DigestToken(token);
  auto it = tokens->tokens.find(digest);
  if (it == tokens->tokens.end()) {
    if (auto revoked = tokens->revoked.find(digest); revoked != tokens->revoked.end()) {
      return Unauthenticated(
          "the bearer token was revoked (removed from the tokens file, seen at " + revoked->second +
          "); ask for a new one");
    }
    return Unauthenticated("the bearer token is not known to this server");
  }
  if (it->second.expires && now >= *it->second.expires) {
    return Unauthenticated("the bearer token expired at " + it->second.expires_text +
                           "; ask for a new one");
  }
  return it->second.tenant;
}

}  // namespace tether::service
