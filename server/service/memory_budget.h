// The server's memory budget: what sessions hold, counted in bytes against
// one server-wide budget and a quota per tenant, so that a session,
// snapshot or import that would take the process past its memory is
// refused (RESOURCE_EXHAUSTED with a QuotaFailure) instead of ending it.
//
// What is counted (docs/ARCHITECTURE.md, "Memory"): each session's
// simulation as Simulation::memory_use gives it (its compiled model and its
// own part, at the largest a run makes them), each snapshot's state, a
// compiled model an UpdateSession left behind while snapshots still use it,
// and a stream's outbox (a Run's reserved before it begins, RunEnsemble's
// messages as they wait). Compilations are
// not: their memory is transient and bounded by --compile-memory-budget per
// compile lane thread, which the automatic budget keeps room for.
//
// Threads and ownership: MemoryBudget is shared by every thread (one mutex
// around two counters and a map). A MemoryCharge is owned by what it pays
// for (a Session, a snapshot, a stream's outbox message) and gives its bytes
// back when destroyed, on whatever thread that happens; the budget outlives
// every charge (ServiceCore declares it before the session store). Tenants
// outlive the budget (service/tenant.h).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "engine/status.h"
#include "service/tenant.h"

namespace tether::service {

// The memory the process may use, and where that figure came from.
struct MemoryLimit {
  int64_t bytes = 0;   // 0: none found
  std::string source;  // "cgroup memory.max", "RLIMIT_AS", "MemTotal"
};

// The tightest of: the cgroup's memory limit (v2 memory.max of the
// process's cgroup, or v1 memory.limit_in_bytes), the address-space limit
// (RLIMIT_AS, e.g. `ulimit -v`; halved, since thread stacks and the
// allocator's arenas reserve address space that is never resident), and
// the machine's memory (/proc/meminfo MemTotal).
MemoryLimit DetectMemoryLimit();

// The automatic --memory-budget for a process limited to `limit`: four
// fifths (the allocator's slack) of what is left after a reserve for the
// process itself (64 MiB: code, gRPC, buffers) and for `compile_workers`
// compiles at once (each may hold 1.25 x `compile_bytes`: the caller counts
// the compile lane's threads and the one ensemble compile it allows), and
// at least an eighth of the limit.
int64_t AutomaticMemoryBudget(const MemoryLimit& limit, std::size_t compile_workers,
                              int64_t compile_bytes);

class MemoryBudget;

// Bytes taken from a MemoryBudget for one tenant; given back when
// destroyed. Move-only; an empty charge (default) holds nothing.
class MemoryCharge {
 public:
  MemoryCharge() = default;
  MemoryCharge(MemoryCharge&& other) noexcept { *this = std::move(other); }
  MemoryCharge& operator=(MemoryCharge&& other) noexcept;
  MemoryCharge(const MemoryCharge&) = delete;
  MemoryCharge& operator=(const MemoryCharge&) = delete;
  ~MemoryCharge() { Reset(); }

  int64_t bytes() const { return bytes_; }
  // Gives the bytes back now.
  void Reset();

 private:
  friend class MemoryBudget;
  MemoryBudget* budget_ = nullptr;
  const Tenant* tenant_ = nullptr;
  int64_t bytes_ = 0;
};

class MemoryBudget {
 public:
  // `server_bytes`: the budget (flag --memory-budget, or the automatic one;
  // `server_source` says which, for messages). `tenant_bytes`: each
  // tenant's quota unless the tenant has its own (Tenant::max_memory; 0:
  // no quota of its own), from `tenant_source`.
  MemoryBudget(int64_t server_bytes, std::string server_source, int64_t tenant_bytes,
               std::string tenant_source);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Takes `bytes` for `tenant`, or RESOURCE_EXHAUSTED (QuotaFailure subject
  // "--memory-budget" or "tenant:NAME") saying what `what` needs, what is
  // held and the limit, leaving *charge empty.
  Status Charge(const Tenant* tenant, int64_t bytes, std::string_view what, MemoryCharge* charge);
  // Takes `bytes` whatever the limits: for what the server already holds
  // and must not drop (sessions read back from --state-dir, a stream's
  // next message, each bounded elsewhere).
  MemoryCharge Force(const Tenant* tenant, int64_t bytes);
  // Makes *charge (of `tenant`, empty or not) hold `bytes`: less gives the
  // difference back; more takes it as Charge does (RESOURCE_EXHAUSTED
  // leaves *charge as it was) or, with `force`, whatever the limits.
  Status Resize(const Tenant* tenant, int64_t bytes, std::string_view what, MemoryCharge* charge,
                bool force = false);

  int64_t limit() const { return server_bytes_; }
  // Where limit() came from ("--memory-budget", or the automatic budget's
  // derivation).
  const std::string& source() const { return server_source_; }
  int64_t used() const;
  int64_t used_by(const Tenant* tenant) const;
  // A tenant's quota in bytes (INT64_MAX: none).
  int64_t quota_of(const Tenant* tenant) const;

 private:
  friend class MemoryCharge;
  void Give(const Tenant* tenant, int64_t bytes);
  // Adds `bytes` to the tenant's and the server's use, checking both
  // limits unless `force`.
  Status Take(const Tenant* tenant, int64_t bytes, std::string_view what, bool force);

  const int64_t server_bytes_;
  const std::string server_source_;
  const int64_t tenant_bytes_;
  const std::string tenant_source_;
  mutable std::mutex mu_;
  int64_t used_ = 0;                                      // guarded by mu_
  std::unordered_map<const Tenant*, int64_t> by_tenant_;  // guarded by mu_
};

// "12.5 MiB": bytes for a message.
std::string FormatBytes(int64_t bytes);

}  // namespace tether::service
