// A store of sessions shared by several replicas (--session-store): one
// record per session id (the session file bytes of service/state_dir.h,
// with the owning tenant's name and a summary for listings), an index of
// each tenant's sessions, and per session a lease that makes one replica at
// a time its owner.
//
// Ownership and fencing: every replica keeps one liveness key in the store
// (KeepAlive, renewed every third of `lease_ttl` by one thread, whatever
// the number of sessions it holds), whose value is the replica's current
// incarnation. A session lease names its holder (replica and incarnation)
// and an epoch larger than every epoch given out before for that id, and
// is valid only while its holder's liveness key exists with that
// incarnation: a replica that dies, or is paused or cut off longer than
// `lease_ttl`, loses every lease it held at once, and another replica may
// take them (Acquire). Its liveness key, once lapsed, comes back under a
// new incarnation only; a lease of the old one is this replica's again
// only after Adopt (or a write) found it unchanged, so a replica learns of
// every lease it lost. Every write names the epoch it was made under and is
// refused (ABORTED) unless the lease still names this replica and that
// epoch and the replica's liveness key is in force, so a replica that lost
// a lease can never overwrite the new owner's state. Each check and its
// write are one atomic step in the store (a Lua script).
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
#include <vector>

#include "engine/status.h"

namespace tether::service {

class SharedSessionStore {
 public:
  // What a write stores besides the lease check.
  struct Record {
    std::string tenant;
    // The session file bytes (service/state_dir.h).
    std::string data;
    // A tether.v1.Session (serialized) describing `data`, for listings.
    std::string summary;
    // The session's place in its tenant's index (creation order): the
    // creation time in microseconds since the Unix epoch.
    uint64_t created_us = 0;
    // A session new to its tenant's index is refused (kResourceExhausted)
    // when the index already holds this many (the tenant's session quota,
    // across replicas); 0: no cap.
    uint64_t max_indexed = 0;
  };
  // A session of a listing.
  struct Listed {
    std::string summary;  // Record::summary of its last write
    // The owner id of the replica whose lease on it is in force; empty when
    // none is.
    std::string holder;
    // The page token of a page that starts at this session (what List gives
    // as next_page_token), for a caller that ends a page early.
    std::string page_token;
  };

  virtual ~SharedSessionStore() = default;
  // What errors and logs call the store, e.g. "session store redis://h:6379".
  virtual const std::string& name() const = 0;
  // This replica's owner id in the leases (random at start-up).
  virtual const std::string& owner() const = 0;

  // Renews this replica's liveness key, or sets it under a new incarnation
  // when it lapsed (or at the first call): *incarnation is the one in force
  // after the call. It also reads the store's identity, set by the first
  // renewal on an empty store: when it changed since the last renewal, the
  // store came back without its data, and generation() grows by one.
  virtual Status KeepAlive(uint64_t* incarnation) = 0;
  // How often this replica found the store come back without its data (0
  // at first). A lease taken before the last change is gone from the
  // store, with the record.
  virtual uint64_t generation() const = 0;
  // This replica's incarnation in force now (0: none yet).
  virtual uint64_t incarnation() const = 0;
  // At the last change of generation(): the incarnation of this replica's
  // liveness key that was in force, without a lapse, until the data went
  // (its last renewal less than 0.9 lease TTL before the renewal that found
  // the change), or 0 when the key may have lapsed before. Only a lease held
  // under that incarnation was this replica's when the data went: no other
  // replica can take a lease while its holder's key is in force. Any other
  // may have been taken over (and the new owner's state written) before.
  virtual uint64_t incarnation_at_loss() const = 0;

  // The tenant name recorded for `id` (NOT_FOUND when absent). Read before
  // Acquire so that a caller of another tenant never takes the lease.
  virtual Status Tenant(const std::string& id, std::string* tenant) = 0;
  // Takes (or keeps) the lease of `id` for this replica: *epoch. ABORTED
  // naming the holder while another replica's lease is in force.
  virtual Status Acquire(const std::string& id, uint64_t* epoch) = 0;
  // The record of `id` (NOT_FOUND when absent).
  virtual Status Load(const std::string& id, std::string* record) = 0;
  // Writes the record of `id` under the lease `epoch` and indexes it under
  // its tenant.
  virtual Status Write(const std::string& id, uint64_t epoch, const Record& record) = 0;
  // Confirms that the lease `epoch` of `id` is still this replica's (no
  // other replica took it, also while this replica's liveness had lapsed)
  // and moves it to the current incarnation. ABORTED when it was lost.
  virtual Status Adopt(const std::string& id, uint64_t epoch) = 0;
  // Gives the lease up (a draining replica hands its sessions over).
  virtual void Release(const std::string& id, uint64_t epoch) = 0;
  // Removes the record, the lease and the index entry of `tenant`'s session
  // `id` (DeleteSession, idle expiry) under the lease `epoch`.
  virtual Status Delete(const std::string& id, uint64_t epoch, const std::string& tenant) = 0;
  // A page of `tenant`'s sessions in creation order: at most `page_size`
  // (1..1000), from `page_token` (empty: the first); *next_page_token is
  // empty after the last. INVALID_ARGUMENT naming page_token when it is not
  // one of this call's tokens.
  virtual Status List(const std::string& tenant, int32_t page_size, const std::string& page_token,
                      std::vector<Listed>* page, std::string* next_page_token) = 0;
  // Whether the store answers (a PING).
  virtual bool Reachable() = 0;
};

}  // namespace tether::service
