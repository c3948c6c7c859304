// The state every handler and reactor of the Simulator service shares: the
// options, the authenticator (tokens and tenants), the sessions, the worker pool and the registry
// of open streams, and the graceful shutdown of all of them.
//
// Threads: gRPC's threads only run reactions (convert the request, look up
// the session, queue work, start writes). Stepping simulations happens on
// the fixed WorkerPool, in bounded quanta that requeue themselves, so many
// sessions progress fairly and no reaction ever blocks. Compiling specs
// happens on a second, bounded pool (the compile lane, --compile-workers),
// so a hostile compile never holds a worker that a stream needs. A
// watchdog thread ends streams whose reader stalled (--stream-stall-timeout).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <grpcpp/support/status.h>

#include "service/auth.h"
#include "service/cluster_sessions.h"
#include "service/memory_budget.h"
#include "service/server_options.h"
#include "service/session_store.h"
#include "service/state_dir.h"
#include "service/worker_pool.h"

namespace tether::service {

// A Run or CoSimulate stream, as the core sees it: something to interrupt
// at shutdown or when its session is deleted, and to watch for a stalled
// reader.
class StreamBase {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~StreamBase() = default;
  // Ends the stream with `status` after the message being written, if any.
  // Any thread; called with the core's registry lock held, so it must
  // neither finish the call inline nor take that lock.
  virtual void Interrupt(grpc::Status status) = 0;
  // The end of the shutdown grace: ends the stream as soon as it can while
  // keeping what it computed (a Run sends every frame computed and the
  // certificate of the partial window, then `status`). Same threading as
  // Interrupt; by default it is Interrupt.
  virtual void Drain(grpc::Status status) { Interrupt(std::move(status)); }
  // The stall watchdog: when a write has been pending since before
  // `started_before` (the client stopped reading), ends the stream with
  // `status` without waiting for that write, and gives its session back.
  // Same threading as Interrupt.
  virtual void CheckStall(Clock::time_point started_before, const grpc::Status& status) = 0;
  // The session whose lease the stream holds or is taking (nullptr before).
  const Session* attached() const { return attached_.load(); }
  // True once the stream has ended (status decided, session given back);
  // its call may stay open a while behind a stalled write.
  bool ended() const { return ended_.load(); }

 protected:
  std::atomic<const Session*> attached_{nullptr};
  std::atomic<bool> ended_{false};
};

class ServiceCore {
 public:
  // Starts the workers (options.workers 0: one per hardware thread) and the
  // idle-session expiry. `auth` null: no tokens (one anonymous tenant).
  explicit ServiceCore(const ServiceOptions& options,
                       std::unique_ptr<Authenticator> auth = nullptr);
  // StopWorkers(), then the session store (and its expiry thread) goes.
  ~ServiceCore();
  ServiceCore(const ServiceCore&) = delete;
  ServiceCore& operator=(const ServiceCore&) = delete;

  // The options in force (workers resolved to a count).
  const ServiceOptions& options() const { return options_; }
  SessionStore& sessions() { return store_; }
  // What sessions, snapshots and stream outboxes may hold (--memory-budget,
  // --tenant-max-memory; service/memory_budget.h).
  MemoryBudget& memory() { return memory_; }
  const Authenticator& auth() const { return *auth_; }
  // Queues `task` on the worker pool (WorkerPool::Submit). Tasks queued
  // after StopWorkers still run (on the stopping thread).
  // `owner` (the tenant) is whom the pool is fair between.
  void Submit(std::function<void()> task, bool then_poll, const void* owner) {
    pool_.Submit(std::move(task), then_poll, owner);
  }
  // Queues a compiling task (Validate, Evaluate, CreateSession, ...) of
  // `owner` (the tenant) on the compile lane, which serves tenants in turn.
  void SubmitCompile(std::function<void()> task, const void* owner) {
    compile_pool_.Submit(std::move(task), false, owner);
  }
  // SubmitCompile within --max-queued-compiles and the tenant's share
  // (--tenant-max-queued-compiles), checked and queued at once
  // (WorkerPool::SubmitIfRoom); a refused task is dropped.
  WorkerPool::Admission SubmitCompileIfRoom(std::function<void()> task, const void* owner) {
    return compile_pool_.SubmitIfRoom(std::move(task), owner, options_.max_queued_compiles,
                                      options_.tenant_max_queued_compiles);
  }
  // Held while an ensemble instance's parameter set is compiled (on the
  // stepping worker that runs it, EnsembleOptions::compile_gate): one such
  // compile at a time, whose memory the automatic budget reserves beside
  // the compile lane's (MakeMemoryBudget).
  std::mutex* ensemble_compile_gate() { return &ensemble_compile_gate_; }
  // Compiles queued and not yet started, in all and of one tenant.
  std::size_t compiles_waiting() const { return compile_pool_.queued(); }
  std::size_t compiles_waiting(const void* owner) const { return compile_pool_.queued(owner); }
  // Extra workers the stepping pool started (WorkerPool), for tests.
  std::size_t extra_workers_started() const { return pool_.extra_started(); }

  // Open streams. A stream registers before it checks shutting_down() (so
  // that BeginShutdown either is seen by the check or interrupts it) and
  // unregisters in OnDone, just before it is deleted.
  void Register(StreamBase* stream);
  void Unregister(StreamBase* stream);
  // Interrupts the streams attached to `session` (every stream when nullptr).
  void InterruptStreams(const Session* session, const grpc::Status& status);
  // A stream has ended (StreamBase::ended() turned true): wakes
  // WaitForStreams. Never called with the registry lock held.
  void StreamEnded();

  // --- Graceful shutdown (TetherServer::Shutdown runs the steps in order) ---
  // True once BeginShutdown has run: new calls get UNAVAILABLE, and
  // compiles in progress stop.
  bool shutting_down() const { return shutting_down_.load(); }
  // Step 1: new calls get UNAVAILABLE; open streams go on. Idempotent.
  void BeginShutdown();
  // Step 2: waits until every stream has ended or `deadline`; true when all
  // ended.
  bool WaitForStreams(std::chrono::steady_clock::time_point deadline);
  // Step 3, when the grace runs short: every open stream ends as soon as it
  // can, keeping what it computed (StreamBase::Drain); then step 2 again.
  void DrainStreams();
  // Unary calls of the service in progress (RawUnaryReactor: from its
  // start to its OnDone).
  void UnaryStarted();
  void UnaryDone();
  // Waits until every call of the service is done (each stream
  // unregistered, its last messages and status written; no unary call in
  // progress) or `deadline`; true when all are.
  bool WaitForCalls(std::chrono::steady_clock::time_point deadline);
  // Step 4 (after grpc::Server::Shutdown): stops the watchdog, runs what is
  // queued and joins the compile lane and the workers. Idempotent.
  void StopWorkers();
  // Step 5, with --state-dir: stops the checkpoint thread and writes every
  // session (after step 4 nothing changes them any more). Idempotent.
  // False when some session could not be written (tether-server then
  // exits with 4); true without --state-dir.
  bool PersistSessions();

  // --- Sessions that survive a restart (--state-dir; service/state_dir.h) ---
  // Before serving: opens the directory, serves the sessions written there
  // again under their ids (logging each file it cannot use) and starts the
  // checkpoint thread (--checkpoint-interval). False with *error when the
  // directory cannot be used. No-op without --state-dir.
  bool RestoreSessions(std::string* error);
  // `tenant`'s session `id` was deleted or expired: its file goes too
  // (with --session-store: its record, lease and index entry).
  void ForgetPersisted(const std::string& id, const std::string& tenant);

  // --- Sessions shared by replicas (--session-store; cluster_sessions.h) ---
  // The session `id` of `tenant` (another tenant's is absent): the one this
  // replica holds or, with --session-store, the one in the store, loaded
  // under a new lease of this replica. OK with *out set, or the status to
  // answer: SessionNotFound, ABORTED while another replica holds it,
  // UNAVAILABLE naming the store when it cannot be reached.
  grpc::Status FindSession(const std::string& id, const Tenant* tenant,
                           std::shared_ptr<Session>* out);
  // A session just created or imported here: with --session-store, takes
  // its lease and writes it to the store; when that fails the session is
  // removed again and the status says why (UNAVAILABLE naming the store).
  // OK without --session-store.
  grpc::Status Share(const std::shared_ptr<Session>& session);
  // With --session-store: writes the session's published state to the
  // store now if it changed since last written (the end of a Run or
  // CoSimulate stream, and each CoSimulate step with --write-through).
  // UNAVAILABLE naming the store; ABORTED when this replica lost the
  // session's lease (the session is then given up here). OK without.
  Status PersistNow(const Session& session);
  // With --session-store: DeleteSession of a session this replica does not
  // hold: under a lease taken for it (ABORTED while another replica's is in
  // force), its record, lease and index entry go, without loading it.
  // SessionNotFound (also another tenant's, and without --session-store).
  grpc::Status DeleteShared(const std::string& id, const Tenant* tenant);
  // With --session-store: ListSessions over the store, every replica's
  // sessions of `tenant` in creation order, each with the replica holding
  // it (Session.replica) and as of its last write (the ones held here: as
  // now).
  bool shared() const { return cluster_ != nullptr; }
  grpc::Status ListShared(const Tenant* tenant, const v1::ListSessionsRequest& request,
                          v1::ListSessionsResponse* response);
  // --write-through: a CoSimulate response waits for PersistNow.
  bool write_through() const { return cluster_ && options_.write_through; }
  // Whether the last checkpoint wrote every changed session and
  // DIR/checkpoint-time (true before the first, and without --state-dir).
  // `on_change` is called at once with the current value, then on every
  // change (on the checkpoint thread, under a lock of the core's: it must
  // not call back into the core); nullptr stops the calls (the call
  // returns once a call in progress has ended). TetherServer maps it to
  // the health of tether.v1.Simulator.
  void WatchPersistence(std::function<void(bool writable)> on_change);
  bool persistence_ok() const;

 private:
  const ServiceOptions options_;
  // Before store_: the tenants outlive every session (service/auth.h).
  const std::unique_ptr<Authenticator> auth_;
  // Before store_: every session's charge is given back to it.
  MemoryBudget memory_;
  SessionStore store_;
  WorkerPool pool_;
  WorkerPool compile_pool_;

  // The stall watchdog (absent when the stall timeout is 0).
  void WatchStalls();
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool watch_stop_ = false;  // guarded by watch_mu_
  std::thread watchdog_;

  // --state-dir: the directory, the checkpoint thread, and the version of
  // each session last written (Session::Persisted::version). persist_mu_
  // serializes each write and removal (and guards written_ and the stop
  // flag); Checkpoint takes it per session.
  // Writes every session changed since written (or whose file went) and
  // DIR/checkpoint-time; updates persistence_ok(). True when every session
  // was written. `final`: the shutdown drain (every failure is logged).
  bool Checkpoint(bool final = false);
  void CheckpointLoop();
  void SetPersistenceOk(bool ok, const std::string& why);
  std::unique_ptr<StateDir> state_dir_;
  // --session-store (exclusive with state_dir_).
  std::unique_ptr<ClusterSessions> cluster_;
  // Where sessions are persisted, for logs: the directory or the store.
  std::string PersistenceName() const;
  // persist_mu_ held: writes one session (to the directory or the store).
  // `write_back`: the session is being written back to a store that lost
  // its data (ClusterSessions::Rehome): not capped by its tenant's quota of
  // stored sessions, which counts only what is in the store (others may
  // have filled it since), since the session existed all along.
  Status WriteLocked(const Session& session, const Session::Persisted& p, bool write_back = false);
  // persist_mu_ held: WriteLocked, and with --session-store, when the
  // write is refused because the store lost its data (the lease with it),
  // the lease taken again (ClusterSessions::Rehome) and the session written
  // back; UNAVAILABLE (not ABORTED) when the store could not be asked.
  Status WriteSharedLocked(const Session& session, const Session::Persisted& p);
  // A session read back (a --state-dir file, a store record) with its place
  // reserved (SessionStore::Reserve) and its simulation imported: its
  // snapshots checked, charged to the memory budget whatever it holds,
  // added under its id, recorded as written.
  std::shared_ptr<Session> Serve(const StateDir::Record& r, const Tenant* tenant,
                                 std::unique_ptr<Simulation> simulation,
                                 const CompileOptions& compile);
  // With --session-store: the session `id` of `tenant` from the store
  // (FindSession's load); load_mu_ held.
  Status LoadShared(const std::string& id, const Tenant* tenant, std::shared_ptr<Session>* out);
  // The lease of `id` was lost: its session is removed here and its streams
  // end with `why` (ABORTED).
  void GiveUp(const std::string& id, const Tenant* tenant, const Status& why);
  // The lease of `id` went with the store's data and was taken again
  // (ClusterSessions::Rehome): its session is written to the store now.
  void WriteBack(const std::string& id, const Tenant* tenant);
  // Sessions held here, idle (no stream) for longer than the lease TTL:
  // written if changed, their lease released and removed here (not from
  // the store), so that the replica their calls now reach (the proxy's
  // ring changed) can load them. On the renewal thread.
  void HandBackIdle();
  // Serializes loads from the store, so a session is never loaded twice.
  std::mutex load_mu_;
  std::mutex ensemble_compile_gate_;
  std::mutex persist_mu_;
  std::unordered_map<std::string, uint64_t> written_;  // guarded by persist_mu_
  // Sessions taken again after the store lost its data and not yet written
  // back (WriteLocked's write_back); guarded by persist_mu_.
  std::unordered_set<std::string> written_back_;
  // persist_mu_ held: drops what written_ and written_back_ keep of `id` (a
  // session given up, deleted, handed back).
  void ForgetWrittenLocked(const std::string& id) {
    written_.erase(id);
    written_back_.erase(id);
  }
  std::condition_variable checkpoint_cv_;
  bool checkpoint_stop_ = false;  // guarded by persist_mu_
  bool drain_done_ = false;       // guarded by persist_mu_: PersistSessions ran
  bool drain_ok_ = true;          // guarded by persist_mu_: and wrote every session
  std::thread checkpointer_;
  // The last completed checkpoint's time read back at start-up (the
  // schedule goes on from it); set before the checkpoint thread starts.
  std::optional<std::chrono::system_clock::time_point> last_checkpoint_;
  mutable std::mutex health_mu_;
  bool persist_ok_ = true;                       // guarded by health_mu_
  std::function<void(bool)> on_persist_change_;  // guarded by health_mu_

  std::atomic<bool> shutting_down_{false};
  std::mutex streams_mu_;
  std::condition_variable streams_cv_;
  std::unordered_set<StreamBase*> streams_;  // guarded by streams_mu_
  bool drained_ = false;                     // guarded by streams_mu_
  int64_t unary_calls_ = 0;                  // guarded by streams_mu_
};

}  // namespace tether::service
