// A store of sessions shared by several replicas (--session-store): one
// record per session id (the session file bytes of service/state_dir.h, with
// the owning tenant's name), and per session a lease that makes one replica
// at a time its owner.
//
// Ownership and fencing: Acquire gives this replica the session's lease
// with an epoch, larger than every epoch given before for that id. The
// lease expires `lease_ttl` after it was last taken, renewed or written
// unless renewed (Renew). Every write names the epoch it was made under and
// is refused (ABORTED) unless the lease is still held under that epoch, so
// a replica that lost its lease (paused, partitioned, presumed dead) can
// never overwrite the new owner's state. The check and the write are one
// atomic step in the store.
//
// Errors: UNAVAILABLE naming the store (name()) when it cannot be reached
// or answers with an error; ABORTED when the lease is (or was) another
// replica's; NOT_FOUND when the store has no such session.
//
// Threading: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "engine/status.h"

namespace tether::service {

class SharedSessionStore {
 public:
  virtual ~SharedSessionStore() = default;
  // What errors and logs call the store, e.g. "session store redis://h:6379".
  virtual const std::string& name() const = 0;
  // This replica's owner id in the leases (random at start-up).
  virtual const std::string& owner() const = 0;

  // The tenant name recorded for `id` (NOT_FOUND when absent). Read before
  // Acquire so that a caller of another tenant never takes the lease.
  virtual Status Tenant(const std::string& id, std::string* tenant) = 0;
  // Takes (or keeps) the lease of `id` for this replica: *epoch. ABORTED
  // naming the holder while another replica's lease has not expired.
  virtual Status Acquire(const std::string& id, uint64_t* epoch) = 0;
  // The record of `id` (NOT_FOUND when absent).
  virtual Status Load(const std::string& id, std::string* record) = 0;
  // Writes the record of `id` under the lease `epoch` (and renews it).
  virtual Status Write(const std::string& id, uint64_t epoch, const std::string& tenant,
                       const std::string& record) = 0;
  // Renews the lease `epoch` of `id` (re-takes it when it expired and no
  // replica took it since). ABORTED when it was lost.
  virtual Status Renew(const std::string& id, uint64_t epoch) = 0;
  // Gives the lease up (a draining replica hands its sessions over).
  virtual void Release(const std::string& id, uint64_t epoch) = 0;
  // Removes the record and the lease (DeleteSession, idle expiry) under the
  // lease `epoch`.
  virtual Status Delete(const std::string& id, uint64_t epoch) = 0;
  // Whether the store answers (a PING).
  virtual bool Reachable() = 0;
};

}  // namespace tether::service
