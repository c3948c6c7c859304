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
// Keys (ID: a session id):
//   tether:session:ID  hash: tenant, epoch (of the last write), data (the
//                      session file bytes, service/state_dir.h)
//   tether:lease:ID    "OWNER:EPOCH", expiring after the lease TTL
//   tether:epoch:ID    the last epoch given out (INCR)
//
// Threading: one connection, used under a mutex; a failed connection is
// dropped and made again by the next call.
#pragma once

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
  Status Tenant(const std::string& id, std::string* tenant) override;
  Status Acquire(const std::string& id, uint64_t* epoch) override;
  Status Load(const std::string& id, std::string* record) override;
  Status Write(const std::string& id, uint64_t epoch, const std::string& tenant,
               const std::string& record) override;
  Status Renew(const std::string& id, uint64_t epoch) override;
  void Release(const std::string& id, uint64_t epoch) override;
  Status Delete(const std::string& id, uint64_t epoch) override;
  bool Reachable() override;

 private:
  RedisSessionStore(std::string host, int port, std::chrono::milliseconds lease_ttl);
  // One command (argv), its reply (freed by the deleter), or UNAVAILABLE
  // naming the store; mu_ held.
  using Reply = std::unique_ptr<redisReply, void (*)(void*)>;
  Status CommandLocked(const std::vector<std::string>& argv, Reply* reply);
  Status Command(const std::vector<std::string>& argv, Reply* reply);
  Status Unavailable(const std::string& what) const;

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds lease_ttl_;
  const std::string name_;
  const std::string owner_;
  std::mutex mu_;
  redisContext* context_ = nullptr;  // guarded by mu_; null: not connected
};

}  // namespace tether::service
