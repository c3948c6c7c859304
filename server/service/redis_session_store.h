// SharedSessionStore (service/shared_session_store.h) over Redis, through
// hiredis (Debian's libhiredis-dev).
//
// Why Redis and not etcd: a session's record is rewritten at the end of
// every Run, every checkpoint and, with --write-through, every CoSimulate
// step, so the store must take high-rate writes of records of kilobytes to
// megabytes. etcd is built for leases and small, rarely written keys (every
// write goes through Raft consensus and an fsync, its values are capped at
// 1.5 MiB by default, and its history grows with every write until
// compacted). Redis takes such writes from memory at a fraction of the
// cost, has key expiry for the leases, and runs a Lua script (EVAL)
// atomically, which gives the compare-and-set on the lease epoch that
// fencing needs in one round trip. What Redis does not give, etcd would:
// a replicated, linearizable store (a single Redis is a single point of
// failure; its durability is its AOF/RDB settings). deploy/README.md says
// so.
//
// Keys (ID: a session id, OWNER: a replica's owner id, TENANT: a tenant's
// name):
//   tether:replica:OWNER  the replica's current incarnation, expiring after
//                         the lease TTL unless renewed (KeepAlive)
//   tether:session:ID     hash: tenant, epoch (of the last write), data (the
//                         session file bytes, service/state_dir.h), summary
//                         (a tether.v1.Session), order (its index member)
//   tether:lease:ID       "OWNER#INCARNATION:EPOCH" (no expiry: it is in
//                         force while tether:replica:OWNER is INCARNATION)
//   tether:epoch:ID       the last epoch given out (INCR)
//   tether:index:TENANT   sorted set of "CREATED_US:ID" (20 digits, zero
//                         padded), all of score 0: ZRANGEBYLEX pages through
//                         a tenant's sessions in creation order
//   tether:store          the store's identity: set (to a value never given
//                         before) by the first KeepAlive on an empty store,
//                         so a store that comes back without its data has
//                         another one
//
// Threading: one connection for the calls, used under a mutex, and one for
// KeepAlive alone, so that a slow write never delays the liveness key's
// renewal; a failed connection is dropped and made again by the next call.

#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "service/shared_session_store.h"

struct redisContext;
struct redisReply;

namespace tether::service {

class RedisSessionStore : public SharedSessionStore {
 public:
  // `url`: redis://HOST:PORT. nullptr with *error naming what is wrong when
  // the URL is malformed (an unreachable store is not an error here: calls
  // fail UNAVAILABLE until it answers).
  static std::unique_ptr<RedisSessionStore> Open(const std::string& url,
                                                 std::chrono::milliseconds lease_ttl,
                                                 std::string* error);
  ~RedisSessionStore() override;

  const std::string& name() const override { return name_; }
  const std::string& owner() const override { return owner_; }
  Status KeepAlive(uint64_t* incarnation) override;
  uint64_t generation() const override { return generation_.load(); }
  uint64_t incarnation() const override { return incarnation_.load(); }
  uint64_t incarnation_at_loss() const override { return incarnation_at_loss_.load(); }
  Status Tenant(const std::string& id, std::string* tenant) override;
  Status Acquire(const std::string& id, uint64_t* epoch) override;
  Status Load(const std::string& id, std::string* record) override;
  Status Write(const std::string& id, uint64_t epoch, const Record& record) override;
  Status Adopt(const std::string& id, uint64_t epoch) override;
  void Release(const std::string& id, uint64_t epoch) override;
  Status Delete(const std::string& id, uint64_t epoch, const std::string& tenant) override;
  Status List(const std::string& tenant, int32_t page_size, const std::string& page_token,
              std::vector<Listed>* page, std::string* next_page_token) override;
  bool Reachable() override;

 private:
  RedisSessionStore(std::string host, int port, std::chrono::milliseconds lease_ttl);
  // One command (argv), its reply (freed by the deleter), or UNAVAILABLE
  // naming the store; mu_ held.
  using Reply = std::unique_ptr<redisReply, void (*)(void*)>;
  // Connects *context when it is not (null); its mutex held.
  Status ConnectLocked(redisContext** context, std::chrono::milliseconds timeout);
  // `argv` (one command each) sent at once and their replies read in turn
  // (pipelined: one round trip); mu_ held.
  // A reused connection that the store closed since (its first reply
  // end-of-file) is replaced and the commands sent once more.
  Status PipelineLocked(const std::vector<std::vector<std::string>>& commands,
                        std::vector<Reply>* replies);
  // One attempt of PipelineLocked; on a broken connection, records in
  // last_error_was_eof_ whether its first reply was end-of-file.
  Status SendLocked(const std::vector<std::vector<std::string>>& commands,
                    std::vector<Reply>* replies);
  Status Command(const std::vector<std::string>& argv, Reply* reply);
  // A lease script (kAcquire, kWrite, kAdopt, kDelete): runs it with this
  // replica's incarnation at argv[incarnation_at] (its ARGV[2]) and, when the
  // script answers that this replica's liveness key lapsed (-2), renews it
  // (a new incarnation) and runs it once more.
  Status LeaseScript(std::vector<std::string> argv, std::size_t incarnation_at, Reply* reply);
  Status Unavailable(const std::string& what) const;

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds lease_ttl_;
  const std::string name_;
  const std::string owner_;
  std::mutex mu_;
  bool last_error_was_eof_ = false;  // guarded by mu_
  redisContext* context_ = nullptr;  // guarded by mu_; null: not connected
  // KeepAlive's connection and the incarnation in force (0: none yet).
  std::mutex live_mu_;
  redisContext* live_context_ = nullptr;  // guarded by live_mu_
  std::atomic<uint64_t> incarnation_{0};
  // The store's identity (tether:store) as KeepAlive last read it ("" none
  // yet; guarded by live_mu_), and how often it changed (generation()).
  std::string store_id_;
  uint64_t keep_alive_calls_ = 0;  // guarded by live_mu_
  // When the last successful renewal was sent (guarded by live_mu_; the
  // epoch: none yet): the key it renewed is in force until at least a TTL
  // after it.
  std::chrono::steady_clock::time_point last_renewal_sent_{};
  std::atomic<uint64_t> incarnation_at_loss_{0};
  std::atomic<uint64_t> generation_{0};
};

}  // namespace tether::service
