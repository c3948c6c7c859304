// Sessions: server-made ids, status, the last completed state, limits,
// creation-order paging and idle expiry.
//
// Every session belongs to the tenant that created it (service/tenant.h):
// the store's lookups, listings and removals take the caller's tenant and
// treat another tenant's session exactly as an absent one, and the store
// counts each tenant's sessions against its quota. Without a tenant
// argument (nullptr) the store's own unlimited tenant stands in (for the
// store's unit tests); the service always passes the caller's.
//
// A session owns its Simulation. Only the holder of the session's lease (the
// one Run or CoSimulate stream advancing it) touches the Simulation; every
// other reader sees the snapshot (status, state, step) the holder publishes
// after each quantum. So unary calls never wait for a stepping thread.
#pragma once

#include <atomic>
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
#include <vector>

#include "engine/simulation.h"
#include "engine/status.h"
#include "service/memory_budget.h"
#include "service/tenant.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// The ErrorSubject (engine/status.h) of a status about session `id`, for the
// status's google.rpc detail: type `type` ("tether.v1.Session" for
// ResourceInfo, "SESSION_RUNNING"/"SESSION_FAILED" for PreconditionFailure),
// name the id as EscapeForMessage gives it.
ErrorSubject SessionSubject(std::string_view id, std::string description,
                            std::string type = "tether.v1.Session");

// 128 random bits from the OS CSPRNG (getrandom / /dev/urandom), as 32
// lowercase hex digits.
std::string NewSessionId();

// The monotonic clock of idle expiry. Empty means std::chrono::steady_clock
// (the server's); tests inject their own to expire sessions without waiting.
using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;

class Session {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // `clock` stamps the session's last use (see SteadyClock).
  // `owner` outlives the session (service/tenant.h). `create_time`: now
  // when unset (the epoch); a session read back from --state-dir keeps its
  // own. `budget` (null: no accounting) is charged what the session holds
  // (memory_bytes()): `charge` already holds InitialBytes(*simulation).
  Session(std::string id, uint64_t seq, std::string display_name,
          std::unique_ptr<Simulation> simulation, const Tenant* owner, SteadyClock clock = {},
          std::chrono::system_clock::time_point create_time = {}, MemoryBudget* budget = nullptr,
          MemoryCharge charge = {});
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The bytes a new session of `simulation` holds (memory_bytes() before
  // any snapshot), for the charge its creator takes before adding it.
  static int64_t InitialBytes(const Simulation& simulation);

  const std::string& id() const { return id_; }
  const std::string& display_name() const { return display_name_; }
  // The creation order: ListSessions and page tokens follow it, and
  // --state-dir keeps it across restarts.
  uint64_t seq() const { return seq_; }
  std::chrono::system_clock::time_point create_time() const { return create_time_; }
  // The tenant that created the session.
  const Tenant& owner() const { return *owner_; }

  // Takes the exclusive right to advance the simulation. FAILED_PRECONDITION
  // when another stream holds it or the session FAILED (unless
  // `allow_failed`: a FAILED session stays FAILED when released unless
  // the holder called Recovered); NOT_FOUND when the session was deleted.
  Status Acquire(const char* rpc, bool allow_failed = false);
  // The simulation; only for the lease holder.
  Simulation* simulation() { return simulation_.get(); }
  // Lease holder: replaces the simulation by one of another version of the
  // description (UpdateSession, a snapshot of an earlier version). It must
  // have the same coordinate, constraint, input and output names.
  // RESOURCE_EXHAUSTED (the memory budget) when the session would then
  // hold more than its tenant or the server may; it is then unchanged.
  Status ReplaceSimulation(std::unique_ptr<Simulation> simulation);
  // Lease holder of a session acquired with allow_failed: its state was
  // replaced by a good one, so the release makes it READY.
  void Recovered();

  // A snapshot: the state, and the description version and compiled model
  // it belongs to (shared, so a snapshot costs its state), with the bytes
  // of each for the memory budget.
  struct SavedSnapshot {
    v1::Snapshot meta;
    v1::SimulationState state;
    std::shared_ptr<const v1::SimulationSpec> spec;
    std::shared_ptr<const Model> model;
    int64_t state_bytes = 0;  // SpaceUsedLong of meta and state
    int64_t model_bytes = 0;  // Simulation::MemoryUse::model, and the spec's
  };

  // Snapshots (CreateSnapshot and friends). Save and Restore are for the
  // lease holder; List and Delete for anyone. A session keeps at most
  // `max` snapshots: saving one more drops the oldest. Save fills *meta, or
  // is RESOURCE_EXHAUSTED when the snapshot's state does not fit in the
  // memory budget (nothing saved, nothing dropped).
  Status SaveSnapshot(std::string label, std::size_t max, v1::Snapshot* meta);
  // NOT_FOUND naming the snapshot when the session has no such snapshot;
  // RESOURCE_EXHAUSTED as ReplaceSimulation for a snapshot of an earlier
  // description version.
  Status RestoreSnapshot(uint64_t snapshot_id);
  std::vector<v1::Snapshot> ListSnapshots() const;
  Status DeleteSnapshot(uint64_t snapshot_id);
  // The export bytes (engine/session_export.h) of a snapshot: its
  // description version and state, with the session's display name. For
  // anyone (a snapshot never changes, so no lease is needed); NOT_FOUND as
  // RestoreSnapshot.
  Status ExportSnapshot(uint64_t snapshot_id, std::string* data, v1::Snapshot* meta) const;
  // Lease holder: publishes the simulation's state and step.
  void Publish();
  // Lease holder: publishes and gives the lease back. A non-ok `failure`
  // (ABORTED) marks the session FAILED with its message.
  void Release(const Status& failure = Status::Ok());

  // Deleted sessions stay alive while a stream holds them; the stream sees
  // the flag and ends with CANCELLED.
  void MarkDeleted() { deleted_.store(true); }
  bool deleted() const { return deleted_.load(); }

  // Records activity (for idle expiry).
  void Touch();
  // Idle since `*since` (false while a stream holds the lease).
  bool IdleSince(SteadyTime* since) const;

  v1::SessionStatus status() const;
  void ToProto(v1::Session* out) const;
  // ToProto with Session.frame: one evaluation at the session's state
  // (GetSession's SESSION_VIEW_FULL), under the lease but with status and
  // times left as they are (a read changes nothing). FAILED_PRECONDITION
  // while a stream holds the lease, NOT_FOUND once deleted; no frame when
  // the session FAILED or cannot be evaluated.
  Status ToProtoWithFrame(v1::Session* out);
  // The bytes the session holds and the memory budget counts: its
  // simulation (Simulation::memory_use), its copies of the description and
  // published state, each snapshot's state, and each compiled model of an
  // earlier description version a snapshot keeps.
  int64_t memory_bytes() const;

  // What --state-dir writes (service/state_dir.h): the published state
  // (the last quantum's, complete between steps), the description version
  // it belongs to, the status, the snapshots (oldest first) with the next
  // snapshot id, and a counter that changes with every publication and
  // every snapshot saved or deleted. Any thread.
  struct Persisted {
    std::shared_ptr<const v1::SimulationSpec> spec;
    v1::SimulationState state;
    v1::SessionStatus status = v1::READY;
    std::string error;
    std::vector<SavedSnapshot> snapshots;
    uint64_t next_snapshot_id = 1;
    uint64_t version = 0;
  };
  Persisted PersistedForm() const;
  // Persisted::version alone (without copying the state and snapshots):
  // whether a checkpoint has anything new to write.
  uint64_t persisted_version() const;
  // A session read back from --state-dir that had FAILED: FAILED again with
  // its message. Before the session is shared.
  void MarkFailed(std::string error);
  // The snapshots of a session read back from --state-dir (oldest first,
  // ids below `next_snapshot_id`, which the session goes on from so that
  // ids are never reused). Before the session is shared.
  void AdoptSnapshots(std::vector<SavedSnapshot> snapshots, uint64_t next_snapshot_id);

 private:
  SteadyTime Now() const;
  // mu_ held: NOT_FOUND once deleted, FAILED_PRECONDITION (naming `rpc`)
  // while a stream holds the lease, else Ok.
  Status UnavailableLocked(const char* rpc) const;
  // mu_ held: memory_bytes() with `simulation_bytes` and `model` for the
  // simulation's (a replacement's, before it is installed).
  int64_t BytesLocked(int64_t simulation_bytes, const Model* model) const;
  // mu_ held: charges the budget for BytesLocked(...) (see Resize; with
  // `force` it cannot fail).
  Status ChargeLocked(int64_t simulation_bytes, const Model* model, std::string_view what,
                      bool force);

  const SteadyClock clock_;
  const std::string id_;
  const uint64_t seq_;
  const Tenant* const owner_;
  const std::string display_name_;
  std::unique_ptr<Simulation> simulation_;  // the lease holder's
  // The description version simulation_ runs (shared with the snapshots
  // taken under it); the lease holder's.
  std::shared_ptr<const v1::SimulationSpec> spec_;
  // Names, copied once so readers never touch the simulation.
  const std::vector<std::string> coordinates_, constraints_, inputs_, outputs_;
  const std::chrono::system_clock::time_point create_time_;
  std::atomic<bool> deleted_{false};

  mutable std::mutex mu_;
  bool leased_ = false;
  v1::SessionStatus status_ = v1::READY;
  std::string error_;
  // What the lease holder last published: the state and step every reader
  // sees (ToProto) and what --state-dir writes (PersistedForm).
  v1::SimulationState published_;
  std::shared_ptr<const v1::SimulationSpec> published_spec_;
  uint64_t version_ = 0;
  std::chrono::system_clock::time_point update_time_;
  SteadyTime last_used_;
  bool failed_when_acquired_ = false;  // Acquire(allow_failed) on a FAILED session
  std::string failed_error_;
  std::deque<SavedSnapshot> snapshots_;  // oldest first
  uint64_t next_snapshot_id_ = 1;
  // The memory budget's charge (guarded by mu_) and the part of it that is
  // the simulation's and the description's (the lease holder's, read under
  // mu_).
  MemoryBudget* const budget_;
  MemoryCharge charge_;
  int64_t held_bytes_ = 0;        // guarded by mu_: memory_bytes()
  int64_t fixed_bytes_ = 0;       // the session object, names, published state
  int64_t simulation_bytes_ = 0;  // guarded by mu_
  // The simulation's compiled model, for the bytes of those snapshots keep
  // (read by anyone under mu_; simulation_ itself is the lease holder's).
  const Model* simulation_model_ = nullptr;  // guarded by mu_
};

// A session read back from --state-dir: its creation order and time (seq
// 0: the next one; a seq in use is replaced by the next one too; the epoch:
// now). Restored sessions are added before any new one, so the ones
// created later come after them.
struct RestoredOrder {
  uint64_t seq = 0;
  std::chrono::system_clock::time_point create_time{};
};

class SessionStore {
 public:
  // `clock`: the time of idle expiry (see SteadyClock), for every session
  // and the expiry thread.
  // `budget` (null: none) is what sessions are charged to (Session).
  SessionStore(std::size_t max_sessions, std::chrono::milliseconds idle_timeout,
               SteadyClock clock = {}, MemoryBudget* budget = nullptr);
  ~SessionStore();  // Stops the expiry thread.

  // Holds a place for a session of `tenant` about to be created
  // (RESOURCE_EXHAUSTED when --max-sessions are held or reserved on the
  // server, or the tenant's max_sessions() by the tenant). Every successful
  // Reserve is followed by Add or Unreserve with the same tenant.
  Status Reserve(const Tenant* tenant = nullptr);
  void Unreserve(const Tenant* tenant = nullptr);
  // `id` empty: a new id; else that id (a session read back from
  // --state-dir; it must not be in use). `restored`, for a session read
  // back from --state-dir: its creation order and time (RestoredOrder).
  // `charge`: the memory budget's charge for the simulation (Session).
  std::shared_ptr<Session> Add(std::unique_ptr<Simulation> simulation, std::string display_name,
                               const Tenant* tenant = nullptr, std::string id = {},
                               RestoredOrder restored = {}, MemoryCharge charge = {});
  // Add for a new session of a reserved place (CreateSession,
  // ImportSession): charges the memory budget the session's bytes
  // (Session::InitialBytes) first; when they do not fit, gives the place
  // back (Unreserve) and returns RESOURCE_EXHAUSTED saying what `what`
  // needs. Without a budget, Add alone.
  Status AddWithinBudget(std::unique_ptr<Simulation> simulation, std::string display_name,
                         const Tenant* tenant, std::string_view what,
                         std::shared_ptr<Session>* session);
  // The memory budget sessions are charged to (null: none).
  MemoryBudget* budget() const { return budget_; }
  // Every session in creation order (for --state-dir).
  std::vector<std::shared_ptr<Session>> All() const;

  // nullptr when unknown or another tenant's.
  std::shared_ptr<Session> Find(const std::string& id, const Tenant* tenant = nullptr) const;
  // Removes and marks deleted; nullptr when unknown or another tenant's.
  std::shared_ptr<Session> Remove(const std::string& id, const Tenant* tenant = nullptr);

  // A page of `tenant`'s sessions in creation order (other tenants' are
  // skipped, so a page is full unless it is the last; ListSessions may end
  // it earlier for the message limit, PageTokenAt). page_size 0 means
  // 100; larger than 1000 is clamped. INVALID_ARGUMENT for a negative size
  // or a malformed token.
  // ListSessions' page_size: 0 means 100, larger than 1000 is clamped;
  // INVALID_ARGUMENT naming page_size when negative.
  static Status PageSize(int32_t requested, int32_t* page_size);
  // The page token of a page that starts at `session` (what List gives as
  // next_page_token), for a caller that ends a page early.
  static std::string PageTokenAt(const Session& session);
  // Whether a ListSessions response may keep `session`, the next one added
  // to it: always the first; then while the page's sessions stay within
  // 3/4 of the message limit (a session's names alone may take about
  // 1.5 MB: 12,288 names of 128 bytes), so that the response stays within
  // what a message may carry. The next page then starts at the first one
  // left out (PageTokenAt, or the shared store's Listed::page_token).
  class PageRoom {
   public:
    explicit PageRoom(std::size_t max_message_bytes) : cap_(max_message_bytes / 4 * 3) {}
    bool Keeps(const v1::Session& session) {
      bytes_ += session.ByteSizeLong() + 8;
      return ++kept_ == 1 || bytes_ <= cap_;
    }

   private:
    std::size_t cap_, bytes_ = 0, kept_ = 0;
  };
  Status List(int32_t page_size, const std::string& page_token,
              std::vector<std::shared_ptr<Session>>* page, std::string* next_page_token,
              const Tenant* tenant = nullptr) const;

  std::size_t size() const;
  // Sessions held or reserved by `tenant`.
  std::size_t held_by(const Tenant* tenant = nullptr) const;
  std::size_t max_sessions() const { return max_sessions_; }

  // Starts a thread deleting sessions idle longer than the timeout (no-op
  // when the timeout is 0); `on_expired` is called for each, outside locks.
  // It wakes every timeout / 4 (50 ms to 1 s, real time) and reads the
  // store's clock.
  void StartExpiry(std::function<void(const Session&)> on_expired);
  // Removes the sessions idle since before `now - timeout`; returns them.
  std::vector<std::shared_ptr<Session>> ExpireIdle(Session::SteadyTime now);

 private:
  const std::size_t max_sessions_;
  const std::chrono::milliseconds idle_timeout_;
  const SteadyClock clock_;
  MemoryBudget* const budget_;
  // Stands in for a null tenant argument: no quota of its own.
  const Tenant unlimited_;
  const Tenant* Resolve(const Tenant* tenant) const { return tenant ? tenant : &unlimited_; }
  // mu_ held: a session of `tenant` is gone (removed or expired).
  void ForgetLocked(const Tenant* tenant);

  mutable std::mutex mu_;
  std::size_t reserved_ = 0;
  // Sessions held or reserved per tenant (absent: none).
  std::unordered_map<const Tenant*, std::size_t> held_;
  uint64_t next_seq_ = 1;
  std::map<uint64_t, std::shared_ptr<Session>> by_seq_;
  std::unordered_map<std::string, std::shared_ptr<Session>> by_id_;

  std::mutex expiry_mu_;
  std::condition_variable expiry_cv_;
  bool stop_expiry_ = false;
  std::thread expiry_thread_;
};

}  // namespace tether::service
