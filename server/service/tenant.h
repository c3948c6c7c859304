// A tenant: whom sessions belong to, and what it may hold at once.
//
// With bearer tokens (service/auth.h) each token maps to a tenant; without
// them every caller is the one anonymous tenant. Sessions belong to the
// tenant that created them (Session::owner()); the session store counts
// each tenant's sessions against max_sessions(), the stream reactors its
// concurrent Run and CoSimulate streams against max_streams(), and the
// memory budget (service/memory_budget.h) its bytes against max_memory().
//
// Threads and ownership: Tenants are made at start-up by the Authenticator,
// which owns them (stable addresses) and outlives the session store and
// every reactor (ServiceCore declares it first). Name and limits are
// immutable; the stream count is atomic, so any thread may take and give
// back a stream slot without a lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/status.h"

namespace tether::service {

class Tenant {
 public:
  // `sessions_quota` / `streams_quota` name where each limit comes from, for
  // error messages: a flag ("--tenant-max-sessions") or a tokens-file key
  // ("max_sessions (tokens file line 3)").
  // `max_memory` (bytes; 0: the server's --tenant-max-memory) with its
  // source `memory_quota`, as for sessions.
  Tenant(std::string name, std::size_t max_sessions, std::string sessions_quota,
         std::size_t max_streams, std::string streams_quota, int64_t max_memory = 0,
         std::string memory_quota = {})
      : name_(std::move(name)),
        max_sessions_(max_sessions),
        sessions_quota_(std::move(sessions_quota)),
        max_streams_(max_streams),
        streams_quota_(std::move(streams_quota)),
        max_memory_(max_memory),
        memory_quota_(std::move(memory_quota)) {}
  Tenant(const Tenant&) = delete;
  Tenant& operator=(const Tenant&) = delete;

  // [A-Za-z0-9._-]{1,64}; "anonymous" without tokens.
  const std::string& name() const { return name_; }
  std::size_t max_sessions() const { return max_sessions_; }
  std::size_t max_streams() const { return max_streams_; }
  // Bytes its sessions may hold (service/memory_budget.h); 0: the server's
  // per-tenant default.
  int64_t max_memory() const { return max_memory_; }
  const std::string& memory_quota() const { return memory_quota_; }

  // RESOURCE_EXHAUSTED (QuotaFailure subject "tenant:NAME") saying that the
  // tenant holds max_sessions() sessions.
  Status SessionQuotaExceeded() const {
    return QuotaExceeded(max_sessions_, "sessions", sessions_quota_, "delete some first");
  }
  // The same for the sessions it keeps in a shared session store (on all
  // replicas together).
  Status StoredSessionQuotaExceeded() const {
    return QuotaExceeded(max_sessions_, "sessions in the shared session store (all replicas)",
                         sessions_quota_, "delete some first");
  }

  // Takes one of the tenant's stream slots: RESOURCE_EXHAUSTED (as for
  // sessions) when max_streams() are taken. Every successful call is
  // followed by one ReleaseStream.
  Status AcquireStream() {
    std::size_t n = streams_.load();
    do {
      if (n >= max_streams_) {
        return QuotaExceeded(max_streams_, "concurrent Run and CoSimulate streams", streams_quota_,
                             "retry when one of them ends");
      }
    } while (!streams_.compare_exchange_weak(n, n + 1));
    return Status::Ok();
  }
  void ReleaseStream() { streams_.fetch_sub(1); }
  std::size_t streams() const { return streams_.load(); }

 private:
  Status QuotaExceeded(std::size_t limit, const char* what, const std::string& quota,
                       const char* advice) const {
    const std::string at_most = "at most " + std::to_string(limit) + " " + what;
    return ResourceExhausted(
        "tenant '" + name_ + "' holds the maximum of " + std::to_string(limit) + " " + what + " (" +
            quota + "); " + advice,
        ErrorSubject{"", "tenant:" + name_, quota + ": " + at_most + " for tenant " + name_});
  }

  const std::string name_;
  const std::size_t max_sessions_;
  const std::string sessions_quota_;
  const std::size_t max_streams_;
  const std::string streams_quota_;
  const int64_t max_memory_;
  const std::string memory_quota_;
  std::atomic<std::size_t> streams_{0};
};

}  // namespace tether::service
