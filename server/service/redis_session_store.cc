#include "service/redis_session_store.h"

#include <sys/time.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <utility>

#include <hiredis/hiredis.h>

#include "service/session_store.h"

namespace tether::service {
namespace {

// The lease of ID: KEYS[1] the lease, KEYS[2] the epoch counter; ARGV[1]
// this replica's owner id, ARGV[2] the TTL in ms. {epoch, ""} when taken or
// kept, {0, holder} while another replica holds it.
constexpr char kAcquire[] = R"lua(
local cur = redis.call('GET', KEYS[1])
if cur then
  local o, e = string.match(cur, '^(.*):(%d+)$')
  if o == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {tonumber(e), ''}
  end
  return {0, cur}
end
local e = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. e, 'PX', ARGV[2])
return {e, ''}
)lua";

// The fenced write: KEYS[1] the lease, KEYS[2] the record; ARGV[1]
// "OWNER:EPOCH", ARGV[2] EPOCH, ARGV[3] the tenant, ARGV[4] the record
// bytes, ARGV[5] the TTL in ms. {1, ""} written; {0, why} refused (the
// lease is not this one, or a later epoch wrote).
constexpr char kWrite[] = R"lua(
local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[1] then
  if cur then return {0, 'the lease is held by ' .. cur} end
  return {0, 'the lease expired'}
end
local stored = tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0')
if stored > tonumber(ARGV[2]) then return {0, 'epoch ' .. stored .. ' wrote since'} end
redis.call('HSET', KEYS[2], 'tenant', ARGV[3], 'epoch', ARGV[2], 'data', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, ''}
)lua";

// Renewal: KEYS[1] the lease, KEYS[2] the epoch counter; ARGV[1]
// "OWNER:EPOCH", ARGV[2] EPOCH, ARGV[3] the TTL in ms. 1 renewed (or
// re-taken: it expired and no replica took it since), 0 lost.
constexpr char kRenew[] = R"lua(
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
if not cur and redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
  return 1
end
return 0
)lua";

// Release (n = 1: KEYS[1] the lease) and delete (n = 3: also the record
// and the epoch counter), only under the lease ARGV[1]. 1 done, 0 not ours.
constexpr char kDropIfOwned[] = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', unpack(KEYS))
return 1
)lua";

std::string LeaseKey(const std::string& id) { return "tether:lease:" + id; }
std::string RecordKey(const std::string& id) { return "tether:session:" + id; }
std::string EpochKey(const std::string& id) { return "tether:epoch:" + id; }

std::string OwnerId() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + "-" + std::to_string(::getpid()) + "-" + NewSessionId().substr(0, 8);
}

timeval Timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

// The connect and command timeouts: a store that does not answer within
// them is unreachable for this call.
constexpr std::chrono::milliseconds kConnectTimeout{500};
constexpr std::chrono::milliseconds kCommandTimeout{2000};

}  // namespace

std::unique_ptr<RedisSessionStore> RedisSessionStore::Open(const std::string& url,
                                                           std::chrono::milliseconds lease_ttl,
                                                           std::string* error) {
  constexpr std::string_view kScheme = "redis://";
  const std::string expected = "expected redis://HOST:PORT, found '" + url + "'";
  if (url.rfind(kScheme, 0) != 0) {
    *error = "--session-store: " + expected;
    return nullptr;
  }
  const std::string rest = url.substr(kScheme.size());
  const auto colon = rest.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0) {
    *error = "--session-store: " + expected;
    return nullptr;
  }
  const std::string digits = rest.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || port < 1 ||
      port > 65535) {
    *error = "--session-store: " + expected + " (PORT in 1..65535)";
    return nullptr;
  }
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::unique_ptr<RedisSessionStore>(new RedisSessionStore(host, port, lease_ttl));
}

RedisSessionStore::RedisSessionStore(std::string host, int port,
                                     std::chrono::milliseconds lease_ttl)
    : host_(std::move(host)),
      port_(port),
      lease_ttl_(lease_ttl),
      name_("session store redis://" + host_ + ":" + std::to_string(port_)),
      owner_(OwnerId()) {}

RedisSessionStore::~RedisSessionStore() {
  if (context_) redisFree(context_);
}

Status RedisSessionStore::Unavailable(const std::string& what) const {
  return Status(StatusCode::kUnavailable, name_ + " is unreachable: " + what);
}

Status RedisSessionStore::CommandLocked(const std::vector<std::string>& argv, Reply* reply) {
  if (!context_) {
    const timeval tv = Timeval(kConnectTimeout);
    redisContext* c = redisConnectWithTimeout(host_.c_str(), port_, tv);
    if (!c) return Unavailable("cannot allocate a connection");
    if (c->err) {
      Status s = Unavailable(c->errstr);
      redisFree(c);
      return s;
    }
    redisSetTimeout(c, Timeval(kCommandTimeout));
    context_ = c;
  }
  std::vector<const char*> args;
  std::vector<size_t> lengths;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lengths.push_back(a.size());
  }
  void* r = redisCommandArgv(context_, static_cast<int>(args.size()), args.data(), lengths.data());
  if (!r) {
    // The connection is broken (or timed out): drop it; the next call
    // connects again.
    Status s = Unavailable(context_->err ? context_->errstr : "no reply");
    redisFree(context_);
    context_ = nullptr;
    return s;
  }
  *reply = Reply(static_cast<redisReply*>(r), freeReplyObject);
  if ((*reply)->type == REDIS_REPLY_ERROR) {
    return Unavailable(std::string("error reply: ") + (*reply)->str);
  }
  return Status::Ok();
}

Status RedisSessionStore::Command(const std::vector<std::string>& argv, Reply* reply) {
  std::lock_guard<std::mutex> lock(mu_);
  return CommandLocked(argv, reply);
}

namespace {

// A script's {integer, string} reply.
bool Pair(const redisReply* r, long long* n, std::string* text) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_INTEGER) {
    return false;
  }
  *n = r->element[0]->integer;
  const redisReply* t = r->element[1];
  *text = t->type == REDIS_REPLY_STRING ? std::string(t->str, t->len) : std::string();
  return true;
}

}  // namespace

Status RedisSessionStore::Tenant(const std::string& id, std::string* tenant) {
  Reply reply(nullptr, freeReplyObject);
  if (Status s = Command({"HGET", RecordKey(id), "tenant"}, &reply); !s.ok()) return s;
  if (reply->type != REDIS_REPLY_STRING) {
    return Status(StatusCode::kNotFound, "no session " + id + " in the " + name_);
  }
  tenant->assign(reply->str, reply->len);
  return Status::Ok();
}

Status RedisSessionStore::Acquire(const std::string& id, uint64_t* epoch) {
  Reply reply(nullptr, freeReplyObject);
  const std::string ttl = std::to_string(lease_ttl_.count());
  if (Status s = Command({"EVAL", kAcquire, "2", LeaseKey(id), EpochKey(id), owner_, ttl}, &reply);
      !s.ok()) {
    return s;
  }
  long long n = 0;
  std::string holder;
  if (!Pair(reply.get(), &n, &holder)) return Unavailable("unexpected reply to the lease script");
  if (n <= 0) {
    return Status(StatusCode::kAborted,
                  "session " + id + " is owned by another replica (lease " + holder + " in the " +
                      name_ + "); it is free once that lease expires (" +
                      std::to_string(lease_ttl_.count()) + " ms after its last renewal)");
  }
  *epoch = static_cast<uint64_t>(n);
  return Status::Ok();
}

Status RedisSessionStore::Load(const std::string& id, std::string* record) {
  Reply reply(nullptr, freeReplyObject);
  if (Status s = Command({"HGET", RecordKey(id), "data"}, &reply); !s.ok()) return s;
  if (reply->type != REDIS_REPLY_STRING) {
    return Status(StatusCode::kNotFound, "no session " + id + " in the " + name_);
  }
  record->assign(reply->str, reply->len);
  return Status::Ok();
}

Status RedisSessionStore::Write(const std::string& id, uint64_t epoch, const std::string& tenant,
                                const std::string& record) {
  Reply reply(nullptr, freeReplyObject);
  const std::string e = std::to_string(epoch);
  if (Status s = Command({"EVAL", kWrite, "2", LeaseKey(id), RecordKey(id), owner_ + ":" + e, e,
                          tenant, record, std::to_string(lease_ttl_.count())},
                         &reply);
      !s.ok()) {
    return s;
  }
  long long n = 0;
  std::string why;
  if (!Pair(reply.get(), &n, &why)) return Unavailable("unexpected reply to the write script");
  if (n != 1) {
    return Status(StatusCode::kAborted, "the " + name_ + " refused the write of session " + id +
                                            " under lease epoch " + e + ": " + why +
                                            " (this replica lost the session's lease)");
  }
  return Status::Ok();
}

Status RedisSessionStore::Renew(const std::string& id, uint64_t epoch) {
  Reply reply(nullptr, freeReplyObject);
  const std::string e = std::to_string(epoch);
  if (Status s = Command({"EVAL", kRenew, "2", LeaseKey(id), EpochKey(id), owner_ + ":" + e, e,
                          std::to_string(lease_ttl_.count())},
                         &reply);
      !s.ok()) {
    return s;
  }
  if (reply->type != REDIS_REPLY_INTEGER) return Unavailable("unexpected reply to renewal");
  if (reply->integer != 1) {
    return Status(StatusCode::kAborted, "the lease of session " + id + " (epoch " + e +
                                            ") was taken by another replica in the " + name_);
  }
  return Status::Ok();
}

void RedisSessionStore::Release(const std::string& id, uint64_t epoch) {
  Reply reply(nullptr, freeReplyObject);
  (void)Command({"EVAL", kDropIfOwned, "1", LeaseKey(id), owner_ + ":" + std::to_string(epoch)},
                &reply);
}

Status RedisSessionStore::Delete(const std::string& id, uint64_t epoch) {
  Reply reply(nullptr, freeReplyObject);
  if (Status s = Command({"EVAL", kDropIfOwned, "3", LeaseKey(id), RecordKey(id), EpochKey(id),
                          owner_ + ":" + std::to_string(epoch)},
                         &reply);
      !s.ok()) {
    return s;
  }
  if (reply->type != REDIS_REPLY_INTEGER || reply->integer != 1) {
    return Status(StatusCode::kAborted, "the " + name_ + " refused to delete session " + id +
                                            ": this replica lost its lease");
  }
  return Status::Ok();
}

bool RedisSessionStore::Reachable() {
  Reply reply(nullptr, freeReplyObject);
  return Command({"PING"}, &reply).ok();
}

}  // namespace tether::service
