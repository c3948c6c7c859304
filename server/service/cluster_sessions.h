// What one replica of a cluster (--session-store) keeps about the shared
// store: the leases it holds (session id -> epoch and tenant), the thread
// that keeps this replica's liveness key (one renewal per third of the
// lease TTL, whatever the number of leases: every lease is in force while
// the key is; service/shared_session_store.h), the thread that confirms the
// leases after the key lapsed and hands idle sessions back, and the
// compiled models of the sessions it loaded, cached by the SHA-256 of their
// description so that loading a session of a description already seen
// does not compile again.
//
// A lease this replica held and lost (its liveness key lapsed, because this
// process was paused or cut off longer than the TTL, and another replica
// took the lease meanwhile) is reported once to `on_lost`, which gives the
// session up here; every write under it is refused by the store anyway.
// A lease that is gone because the store came back without its data
// (SharedSessionStore::generation grew: no other replica took it, nor can
// one load the session, whose record went with it) is taken again instead
// (Rehome) and reported to `on_rehomed`, which writes the session back.
//
// Threading: every method may be called from any thread; `on_lost` and
// `on_tick` run on the maintenance thread without this object's locks
// held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/simulation.h"
#include "engine/status.h"
#include "service/shared_session_store.h"
#include "service/tenant.h"

namespace tether::service {

class ClusterSessions {
 public:
  using OnLost = std::function<void(const std::string& id, const Tenant* tenant, const Status&)>;
  using OnRehomed = std::function<void(const std::string& id, const Tenant* tenant)>;
  // Renews the liveness key each `lease_ttl` / 3 (the heartbeat thread);
  // each `lease_ttl` / 3 too, the maintenance thread confirms the leases
  // (SharedSessionStore::Adopt) when the key came back under a new
  // incarnation, then calls `on_tick` (ServiceCore hands idle sessions
  // back).
  ClusterSessions(std::unique_ptr<SharedSessionStore> store, std::chrono::milliseconds lease_ttl,
                  OnLost on_lost, OnRehomed on_rehomed, std::function<void()> on_tick);
  ~ClusterSessions();  // Stops both threads (the leases then lapse).
  ClusterSessions(const ClusterSessions&) = delete;
  ClusterSessions& operator=(const ClusterSessions&) = delete;

  SharedSessionStore& store() { return *store_; }

  // Takes the lease of `id` for `tenant`'s session (SharedSessionStore::
  // Acquire) and keeps renewing it.
  Status Claim(const std::string& id, const Tenant* tenant, uint64_t* epoch);
  // The epoch of the lease held on `id` (false: none held).
  bool EpochOf(const std::string& id, uint64_t* epoch) const;
  // When the lease held on `id` was taken before the store last came back
  // without its data, and was this replica's until then (held under the
  // incarnation in force without a lapse up to the loss:
  // SharedSessionStore::incarnation_at_loss), takes it again in the store
  // as it is now (EpochOf then gives the new epoch): OK. ABORTED when no
  // lease is held on `id` or it is not such a lease (another replica may
  // have taken it before: a replica paused past its TTL must not win the
  // session back from its new owner because the store lost the leases);
  // UNAVAILABLE when the store cannot be reached.
  Status Rehome(const std::string& id);
  // Stops renewing `id` (given up, deleted); `release`: and frees the lease
  // in the store at once (a drain handing the session over).
  void Forget(const std::string& id, bool release);
  // Every lease held (for the drain).
  std::vector<std::string> Held() const;

  // A simulation from export bytes (engine/session_export.h), as
  // ImportSimulation gives, with the compiled model taken from the cache
  // when a description of the same SHA-256 was compiled before.
  StatusOr<std::unique_ptr<Simulation>> Import(const std::string& data,
                                               const CompileOptions& options);
  // Loads that found their model in the cache, and loads that compiled.
  uint64_t cache_hits() const;
  uint64_t cache_misses() const;

 private:
  void HeartbeatLoop();
  void MaintenanceLoop();

  const std::unique_ptr<SharedSessionStore> store_;
  const std::chrono::milliseconds lease_ttl_;
  const OnLost on_lost_;
  const OnRehomed on_rehomed_;
  const std::function<void()> on_tick_;

  struct Lease {
    uint64_t epoch = 0;
    const Tenant* tenant = nullptr;
    uint64_t generation = 0;  // the store's generation() before it was taken
    // The incarnation under which it was last known this replica's (taken
    // or adopted); Rehome takes it again only when that is the one in force
    // until the store lost its data.
    uint64_t incarnation = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Lease> held_;  // guarded by mu_
  bool stop_ = false;                  // guarded by mu_
  bool store_down_ = false;            // guarded by mu_: the last renewal found it unreachable
  uint64_t incarnation_ = 0;           // guarded by mu_: the last one KeepAlive gave
  uint64_t generation_ = 0;            // guarded by mu_: the store's generation() seen last
  bool confirm_ = false;               // guarded by mu_: the leases await Adopt
  std::condition_variable cv_;
  std::thread heartbeat_;
  std::thread maintainer_;

  // The model cache: at most kCachedModels, the oldest dropped first.
  static constexpr std::size_t kCachedModels = 64;
  mutable std::mutex cache_mu_;
  std::unordered_map<std::string, std::shared_ptr<const Model>> models_;  // guarded by cache_mu_
  std::deque<std::string> cache_order_;                                   // guarded by cache_mu_
  uint64_t hits_ = 0, misses_ = 0;                                        // guarded by cache_mu_
};

}  // namespace tether::service
