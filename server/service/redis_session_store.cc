#include "service/redis_session_store.h"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <utility>

#include <hiredis/hiredis.h>

#include "service/session_store.h"

namespace tether::service {
namespace {

// Every lease script below first checks this replica's liveness key
// (KEYS[live] = tether:replica:OWNER against ARGV[2], the incarnation the
// caller believes in force) and answers {-2, ...} when it lapsed, so that
// the caller renews it (KeepAlive) and runs the script again. A lease value
// is "OWNER#INCARNATION:EPOCH".

// Renews the liveness key: KEYS[1] tether:replica:OWNER, KEYS[2]
// tether:store; ARGV[1] the incarnation in force (0 at start-up), ARGV[2]
// the TTL in ms, ARGV[3] the store identity to set when there is none (one
// never given before). {incarnation, identity}: the incarnation in force
// after the call (the same one renewed, or, it lapsed, the next one set)
// and the store's identity (set first when missing: an empty store).
constexpr char kKeepAlive[] = R"lua(
local id = redis.call('GET', KEYS[2])
if not id then
  redis.call('SET', KEYS[2], ARGV[3])
  id = ARGV[3]
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {tonumber(ARGV[1]), id}
end
local n = tonumber(ARGV[1]) + 1
redis.call('SET', KEYS[1], n, 'PX', ARGV[2])
return {n, id}
)lua";

// The lease of ID: KEYS[1] the lease, KEYS[2] the epoch counter, KEYS[3]
// this replica's liveness key, KEYS[4] the liveness key of the holder the
// caller saw in ARGV[3] (the lease value read before; '' and KEYS[3] when
// none); ARGV[1] this replica's owner id, ARGV[2] its incarnation.
// {epoch, ''} when taken or kept; {0, holder} while another replica's
// lease is in force; {-1, lease} when the lease is not the one the caller
// saw (it calls again with that holder's liveness key); {-2, ''} this
// replica's liveness lapsed. A lease of this replica from an earlier
// incarnation that no replica took since is this replica's again. A lease
// value of another form (a replica of an older version, whose leases
// expire by themselves) is respected until it expires.
constexpr char kAcquire[] = R"lua(
if redis.call('GET', KEYS[3]) ~= ARGV[2] then return {-2, ''} end
local mine = ARGV[1] .. '#' .. ARGV[2]
local cur = redis.call('GET', KEYS[1])
if cur then
  local o, i, e = string.match(cur, '^(.*)#(%d+):(%d+)$')
  if not o then return {0, cur} end
  if o == ARGV[1] then
    if i ~= ARGV[2] then redis.call('SET', KEYS[1], mine .. ':' .. e) end
    return {tonumber(e), ''}
  end
  if cur ~= ARGV[3] then return {-1, cur} end
  if redis.call('GET', KEYS[4]) == i then return {0, cur} end
end
local e = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], mine .. ':' .. e)
return {e, ''}
)lua";

// The fenced write: KEYS[1] the lease, KEYS[2] the record, KEYS[3] this
// replica's liveness key, KEYS[4] the tenant's index; ARGV[1] the owner id,
// ARGV[2] its incarnation, ARGV[3] EPOCH, ARGV[4] the tenant, ARGV[5] the
// record bytes, ARGV[6] the summary, ARGV[7] the index member, ARGV[8] the
// cap on the index (0: none). {1, ""} written; {0, why} refused (the lease
// is not this replica's at EPOCH, or a later epoch wrote); {-2, why} this
// replica's liveness lapsed; {-3, count} refused: the member is new and the
// index holds the cap already (the tenant's sessions across replicas,
// counted by the same scripts that add and remove them, so a dead replica
// leaves no count wrong). The lease, unchanged since an earlier
// incarnation, moves to this one.
constexpr char kWrite[] = R"lua(
if redis.call('GET', KEYS[3]) ~= ARGV[2] then return {-2, 'the replica liveness key lapsed'} end
local cur = redis.call('GET', KEYS[1])
if not cur then return {0, 'the lease is gone'} end
local o, i, e = string.match(cur, '^(.*)#(%d+):(%d+)$')
if o ~= ARGV[1] or e ~= ARGV[3] then return {0, 'the lease is held by ' .. cur} end
if i ~= ARGV[2] then redis.call('SET', KEYS[1], ARGV[1] .. '#' .. ARGV[2] .. ':' .. e) end
local stored = tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0')
if stored > tonumber(ARGV[3]) then return {0, 'epoch ' .. stored .. ' wrote since'} end
local cap = tonumber(ARGV[8])
if cap > 0 and not redis.call('ZSCORE', KEYS[4], ARGV[7]) then
  local n = redis.call('ZCARD', KEYS[4])
  if n >= cap then return {-3, tostring(n)} end
end
redis.call('HSET', KEYS[2], 'tenant', ARGV[4], 'epoch', ARGV[3], 'data', ARGV[5],
           'summary', ARGV[6], 'order', ARGV[7])
redis.call('ZADD', KEYS[4], 'NX', 0, ARGV[7])
return {1, ''}
)lua";

// Adoption after a new incarnation: KEYS[1] the lease, KEYS[2] this
// replica's liveness key; ARGV[1] the owner id, ARGV[2] its incarnation,
// ARGV[3] EPOCH. {1, ''} the lease is this replica's (now under this
// incarnation), {0, lease} lost, {-2, ''} the liveness lapsed.
constexpr char kAdopt[] = R"lua(
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return {-2, ''} end
local cur = redis.call('GET', KEYS[1])
if not cur then return {0, 'none'} end
local o, i, e = string.match(cur, '^(.*)#(%d+):(%d+)$')
if o ~= ARGV[1] or e ~= ARGV[3] then return {0, cur} end
if i ~= ARGV[2] then redis.call('SET', KEYS[1], ARGV[1] .. '#' .. ARGV[2] .. ':' .. e) end
return {1, ''}
)lua";

// Release: KEYS[1] the lease, dropped when it names ARGV[1] (the owner id)
// and ARGV[2] (the epoch), whatever the incarnation. 1 done, 0 not ours.
constexpr char kRelease[] = R"lua(
local o, e = string.match(redis.call('GET', KEYS[1]) or '', '^(.*)#%d+:(%d+)$')
if o ~= ARGV[1] or e ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
return 1
)lua";

// Delete: KEYS[1] the lease, KEYS[2] the record, KEYS[3] the epoch
// counter, KEYS[4] this replica's liveness key, KEYS[5] the tenant's index;
// ARGV as kAdopt's. {1, ''} deleted; {0, lease} not ours; {-2, ''}.
constexpr char kDelete[] = R"lua(
if redis.call('GET', KEYS[4]) ~= ARGV[2] then return {-2, ''} end
local cur = redis.call('GET', KEYS[1]) or ''
local o, e = string.match(cur, '^(.*)#%d+:(%d+)$')
if o ~= ARGV[1] or e ~= ARGV[3] then return {0, cur} end
local order = redis.call('HGET', KEYS[2], 'order')
if order then redis.call('ZREM', KEYS[5], order) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return {1, ''}
)lua";

std::string LeaseKey(const std::string& id) { return "tether:lease:" + id; }
std::string RecordKey(const std::string& id) { return "tether:session:" + id; }
std::string EpochKey(const std::string& id) { return "tether:epoch:" + id; }
std::string LiveKey(const std::string& owner) { return "tether:replica:" + owner; }
std::string IndexKey(const std::string& tenant) { return "tether:index:" + tenant; }
constexpr char kStoreKey[] = "tether:store";

// An index member: the creation time, 20 digits zero-padded so that the
// members sort by it, and the id.
std::string IndexMember(uint64_t created_us, const std::string& id) {
  std::string digits = std::to_string(created_us);
  return std::string(20 - std::min<std::size_t>(digits.size(), 20), '0') + digits + ":" + id;
}

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
  if (live_context_) redisFree(live_context_);
}

Status RedisSessionStore::Unavailable(const std::string& what) const {
  return Status(StatusCode::kUnavailable, name_ + " is unreachable: " + what);
}

Status RedisSessionStore::ConnectLocked(redisContext** context, std::chrono::milliseconds timeout) {
  if (*context) return Status::Ok();
  redisContext* c = redisConnectWithTimeout(host_.c_str(), port_, Timeval(kConnectTimeout));
  if (!c) return Unavailable("cannot allocate a connection");
  if (c->err) {
    Status s = Unavailable(c->errstr);
    redisFree(c);
    return s;
  }
  redisSetTimeout(c, Timeval(timeout));
  *context = c;
  return Status::Ok();
}

namespace {

// One reply read from `context` into *reply; false when the connection
// broke (or timed out).
bool ReadReply(redisContext* context, std::unique_ptr<redisReply, void (*)(void*)>* reply) {
  void* r = nullptr;
  if (redisGetReply(context, &r) != REDIS_OK || !r) return false;
  reply->reset(static_cast<redisReply*>(r));
  return true;
}

}  // namespace

Status RedisSessionStore::PipelineLocked(const std::vector<std::vector<std::string>>& commands,
                                         std::vector<Reply>* replies) {
  // A connection made before may have been closed by the store since (a
  // restart): its first reply is then end-of-file, and the commands never
  // reached a store that could run them (the old process is gone; a live
  // one closes only idle connections). Sent once more on a new connection,
  // so the first call after a restart does not fail.
  const bool reused = context_ != nullptr;
  Status s = SendLocked(commands, replies);
  if (!s.ok() && reused && context_ == nullptr && last_error_was_eof_) {
    s = SendLocked(commands, replies);
  }
  return s;
}

Status RedisSessionStore::SendLocked(const std::vector<std::vector<std::string>>& commands,
                                     std::vector<Reply>* replies) {
  last_error_was_eof_ = false;
  if (Status s = ConnectLocked(&context_, kCommandTimeout); !s.ok()) return s;
  for (const auto& argv : commands) {
    std::vector<const char*> args;
    std::vector<size_t> lengths;
    for (const std::string& a : argv) {
      args.push_back(a.data());
      lengths.push_back(a.size());
    }
    redisAppendCommandArgv(context_, static_cast<int>(args.size()), args.data(), lengths.data());
  }
  replies->clear();
  for (std::size_t k = 0; k < commands.size(); ++k) {
    replies->emplace_back(nullptr, freeReplyObject);
    if (!ReadReply(context_, &replies->back())) {
      // The connection is broken (or timed out): drop it; the next call
      // connects again.
      Status s = Unavailable(context_->err ? context_->errstr : "no reply");
      last_error_was_eof_ = k == 0 && context_->err == REDIS_ERR_EOF;
      redisFree(context_);
      context_ = nullptr;
      return s;
    }
  }
  for (const Reply& r : *replies) {
    if (r->type == REDIS_REPLY_ERROR) return Unavailable(std::string("error reply: ") + r->str);
  }
  return Status::Ok();
}

Status RedisSessionStore::Command(const std::vector<std::string>& argv, Reply* reply) {
  std::vector<Reply> replies;
  std::lock_guard<std::mutex> lock(mu_);
  Status s = PipelineLocked({argv}, &replies);
  if (!replies.empty()) *reply = std::move(replies.front());
  return s;
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

// Whether a lease script answered that this replica's liveness lapsed.
bool Lapsed(const redisReply* r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
         r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == -2;
}

}  // namespace

Status RedisSessionStore::KeepAlive(uint64_t* incarnation) {
  std::lock_guard<std::mutex> lock(live_mu_);
  // The renewal must not wait longer than a third of the TTL (the time
  // left to the next one).
  const auto timeout = std::max(lease_ttl_ / 3, std::chrono::milliseconds(20));
  if (Status s = ConnectLocked(&live_context_, timeout); !s.ok()) return s;
  const std::string current = std::to_string(incarnation_.load());
  const std::string ttl = std::to_string(lease_ttl_.count());
  const std::string key = LiveKey(owner_);
  // The identity to set if the store has none: never one given before (the
  // owner id is this process's, the count this call's), so that a store
  // emptied again gets another identity even from the same replica.
  const std::string candidate = owner_ + "/" + std::to_string(++keep_alive_calls_);
  const char* args[] = {"EVAL",    kKeepAlive,      "2",         key.c_str(),
                        kStoreKey, current.c_str(), ttl.c_str(), candidate.c_str()};
  const auto sent = std::chrono::steady_clock::now();
  void* r = redisCommandArgv(live_context_, 8, args, nullptr);
  if (!r) {
    Status s = Unavailable(live_context_->err ? live_context_->errstr : "no reply");
    redisFree(live_context_);
    live_context_ = nullptr;
    return s;
  }
  Reply reply(static_cast<redisReply*>(r), freeReplyObject);
  long long n = 0;
  std::string id;
  if (!Pair(reply.get(), &n, &id) || n <= 0 || id.empty()) {
    return Unavailable(reply->type == REDIS_REPLY_ERROR
                           ? std::string("error reply: ") + reply->str
                           : std::string("unexpected reply to the liveness script"));
  }
  const auto answered = std::chrono::steady_clock::now();
  if (store_id_.empty()) {
    store_id_ = id;
  } else if (id != store_id_) {
    // Not the store this replica wrote to: it came back without its data
    // (restarted without persistence, or flushed). Its leases are gone;
    // ClusterSessions takes again those no other replica can have taken:
    // the data went before this answer, and the key of the last renewal is
    // in force until at least a TTL after that renewal was sent (0.9 of it:
    // the two clocks' rates may differ a little).
    const bool continuous = last_renewal_sent_ != std::chrono::steady_clock::time_point{} &&
                            answered - last_renewal_sent_ < lease_ttl_ * 9 / 10;
    incarnation_at_loss_.store(continuous ? incarnation_.load() : 0);
    store_id_ = id;
    generation_.fetch_add(1);
  }
  last_renewal_sent_ = sent;
  incarnation_.store(static_cast<uint64_t>(n));
  *incarnation = static_cast<uint64_t>(n);
  return Status::Ok();
}

Status RedisSessionStore::LeaseScript(std::vector<std::string> argv, std::size_t incarnation_at,
                                      Reply* reply) {
  for (int attempt = 0;; ++attempt) {
    argv[incarnation_at] = std::to_string(incarnation_.load());
    if (Status s = Command(argv, reply); !s.ok()) return s;
    if (!Lapsed(reply->get()) || attempt == 1) return Status::Ok();
    uint64_t incarnation = 0;
    if (Status s = KeepAlive(&incarnation); !s.ok()) return s;
  }
}

Status RedisSessionStore::Tenant(const std::string& id, std::string* tenant) {
  Reply reply(nullptr, freeReplyObject);
  if (Status s = Command({"HGET", RecordKey(id), "tenant"}, &reply); !s.ok()) return s;
  if (reply->type != REDIS_REPLY_STRING) {
    return Status(StatusCode::kNotFound, "no session " + id + " in the " + name_);
  }
  tenant->assign(reply->str, reply->len);
  return Status::Ok();
}

namespace {

// The owner id of a lease value "OWNER#INCARNATION:EPOCH" (empty for
// another form).
std::string LeaseOwner(const std::string& lease) {
  const auto hash = lease.rfind('#');
  return hash == std::string::npos ? std::string() : lease.substr(0, hash);
}

}  // namespace

Status RedisSessionStore::Acquire(const std::string& id, uint64_t* epoch) {
  Reply reply(nullptr, freeReplyObject);
  const std::string live = LiveKey(owner_);
  // The holder seen: none at first; then the one the script names (its
  // liveness key is passed, declared, to the next attempt).
  std::string seen, seen_live = live;
  for (int attempt = 0; attempt < 4; ++attempt) {
    Status s = LeaseScript(
        {"EVAL", kAcquire, "4", LeaseKey(id), EpochKey(id), live, seen_live, owner_, "", seen}, 8,
        &reply);
    if (!s.ok()) return s;
    long long n = 0;
    std::string holder;
    if (!Pair(reply.get(), &n, &holder)) return Unavailable("unexpected reply to the lease script");
    if (n > 0) {
      *epoch = static_cast<uint64_t>(n);
      return Status::Ok();
    }
    if (n == -1) {  // another holder than the one seen: check its liveness
      seen = holder;
      seen_live = LiveKey(LeaseOwner(holder));
      continue;
    }
    if (n == -2) {
      return Unavailable("this replica's liveness key cannot be kept (" + LiveKey(owner_) + ")");
    }
    return Status(StatusCode::kAborted,
                  "session " + id + " is owned by another replica (lease " + holder + " in the " +
                      name_ + "); that replica hands it back once no stream has used it for " +
                      std::to_string(std::max<long long>(lease_ttl_.count(), 1000)) +
                      " ms, or another replica takes it over " +
                      std::to_string(lease_ttl_.count()) +
                      " ms after that replica stops renewing its liveness (it exited or is cut "
                      "off); call it again then");
  }
  return Status(StatusCode::kAborted, "session " + id + ": its lease in the " + name_ +
                                          " changed hands during every attempt to take it");
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

Status RedisSessionStore::Write(const std::string& id, uint64_t epoch, const Record& record) {
  Reply reply(nullptr, freeReplyObject);
  const std::string e = std::to_string(epoch);
  if (Status s = LeaseScript(
          {"EVAL", kWrite, "4", LeaseKey(id), RecordKey(id), LiveKey(owner_),
           IndexKey(record.tenant), owner_, "", e, record.tenant, record.data, record.summary,
           IndexMember(record.created_us, id), std::to_string(record.max_indexed)},
          8, &reply);
      !s.ok()) {
    return s;
  }
  long long n = 0;
  std::string why;
  if (!Pair(reply.get(), &n, &why)) return Unavailable("unexpected reply to the write script");
  if (n == -3) {
    return Status(StatusCode::kResourceExhausted,
                  "the " + name_ + " holds " + why + " sessions of tenant '" + record.tenant +
                      "', its cap of " + std::to_string(record.max_indexed));
  }
  if (n != 1) {
    return Status(StatusCode::kAborted, "the " + name_ + " refused the write of session " + id +
                                            " under lease epoch " + e + ": " + why +
                                            " (this replica lost the session's lease)");
  }
  return Status::Ok();
}

Status RedisSessionStore::Adopt(const std::string& id, uint64_t epoch) {
  Reply reply(nullptr, freeReplyObject);
  const std::string e = std::to_string(epoch);
  if (Status s = LeaseScript({"EVAL", kAdopt, "2", LeaseKey(id), LiveKey(owner_), owner_, "", e}, 6,
                             &reply);
      !s.ok()) {
    return s;
  }
  long long n = 0;
  std::string lease;
  if (!Pair(reply.get(), &n, &lease)) return Unavailable("unexpected reply to the adopt script");
  if (n != 1) {
    return Status(StatusCode::kAborted,
                  "the lease of session " + id + " (epoch " + e + ") was taken over in the " +
                      name_ + " while this replica's liveness key had lapsed (lease now: " + lease +
                      ")");
  }
  return Status::Ok();
}

void RedisSessionStore::Release(const std::string& id, uint64_t epoch) {
  Reply reply(nullptr, freeReplyObject);
  (void)Command({"EVAL", kRelease, "1", LeaseKey(id), owner_, std::to_string(epoch)}, &reply);
}

Status RedisSessionStore::Delete(const std::string& id, uint64_t epoch, const std::string& tenant) {
  Reply reply(nullptr, freeReplyObject);
  if (Status s = LeaseScript({"EVAL", kDelete, "5", LeaseKey(id), RecordKey(id), EpochKey(id),
                              LiveKey(owner_), IndexKey(tenant), owner_, "", std::to_string(epoch)},
                             9, &reply);
      !s.ok()) {
    return s;
  }
  long long n = 0;
  std::string lease;
  if (!Pair(reply.get(), &n, &lease) || n != 1) {
    return Status(StatusCode::kAborted, "the " + name_ + " refused to delete session " + id +
                                            ": this replica lost its lease");
  }
  return Status::Ok();
}

namespace {

// A page token of List: the index member to start from, as IndexMember
// makes it (20 digits, ':', a session id of visible ASCII).
bool ValidMember(const std::string& token) {
  if (token.size() < 22 || token.size() > 21 + 256 || token[20] != ':') return false;
  for (std::size_t k = 0; k < 20; ++k) {
    if (token[k] < '0' || token[k] > '9') return false;
  }
  for (std::size_t k = 21; k < token.size(); ++k) {
    if (token[k] <= ' ' || token[k] > '~') return false;
  }
  return true;
}

// "OWNER#INCARNATION:EPOCH" split; false for another form.
bool SplitLease(const std::string& lease, std::string* owner, std::string* incarnation) {
  const auto hash = lease.rfind('#');
  const auto colon = lease.rfind(':');
  if (hash == std::string::npos || colon == std::string::npos || colon < hash) return false;
  *owner = lease.substr(0, hash);
  *incarnation = lease.substr(hash + 1, colon - hash - 1);
  return true;
}

}  // namespace

Status RedisSessionStore::List(const std::string& tenant, int32_t page_size,
                               const std::string& page_token, std::vector<Listed>* page,
                               std::string* next_page_token) {
  page->clear();
  next_page_token->clear();
  if (!page_token.empty() && !ValidMember(page_token)) {
    return Status(StatusCode::kInvalidArgument,
                  "page_token: not a token from a previous ListSessions response");
  }
  // One page of the index (ZRANGEBYLEX: O(log N + page_size), no scan of
  // the key space), then, pipelined, each session's summary and lease, then
  // the liveness keys of the holders named.
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Reply> replies;
  if (Status s = PipelineLocked(
          {{"ZRANGEBYLEX", IndexKey(tenant), page_token.empty() ? "-" : "[" + page_token, "+",
            "LIMIT", "0", std::to_string(page_size + 1)}},
          &replies);
      !s.ok()) {
    return s;
  }
  const redisReply* members = replies.front().get();
  if (members->type != REDIS_REPLY_ARRAY) return Unavailable("unexpected reply to ZRANGEBYLEX");
  std::vector<std::string> ids, tokens;
  for (std::size_t k = 0; k < members->elements; ++k) {
    const std::string m(members->element[k]->str, members->element[k]->len);
    if (static_cast<int32_t>(k) == page_size) {
      *next_page_token = m;
      break;
    }
    ids.push_back(m.size() > 21 ? m.substr(21) : std::string());
    tokens.push_back(m);
  }
  std::vector<std::vector<std::string>> reads;
  for (const std::string& id : ids) {
    reads.push_back({"HGET", RecordKey(id), "summary"});
    reads.push_back({"GET", LeaseKey(id)});
  }
  if (Status s = PipelineLocked(reads, &replies); !s.ok()) return s;
  std::vector<std::string> owners, incarnations;
  std::vector<std::vector<std::string>> lives;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const redisReply* summary = replies[2 * k].get();
    const redisReply* lease = replies[2 * k + 1].get();
    // A session deleted since the index was read is left out.
    if (summary->type != REDIS_REPLY_STRING) continue;
    page->push_back(Listed{std::string(summary->str, summary->len), std::string(), tokens[k]});
    std::string owner, incarnation;
    if (lease->type == REDIS_REPLY_STRING &&
        SplitLease(std::string(lease->str, lease->len), &owner, &incarnation)) {
      owners.push_back(owner);
      incarnations.push_back(incarnation);
      lives.push_back({"GET", LiveKey(owner)});
    } else {
      owners.emplace_back();
      incarnations.emplace_back();
      lives.push_back({"ECHO", ""});
    }
  }
  if (Status s = PipelineLocked(lives, &replies); !s.ok()) return s;
  for (std::size_t k = 0; k < page->size(); ++k) {
    const redisReply* live = replies[k].get();
    if (!owners[k].empty() && live->type == REDIS_REPLY_STRING &&
        std::string(live->str, live->len) == incarnations[k]) {
      (*page)[k].holder = owners[k];
    }
  }
  return Status::Ok();
}

bool RedisSessionStore::Reachable() {
  Reply reply(nullptr, freeReplyObject);
  return Command({"PING"}, &reply).ok();
}

}  // namespace tether::service
