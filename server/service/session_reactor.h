// What the Run and CoSimulate reactors share: a stream that leases one
// session, steps it in quanta on the worker pool and can be stopped from
// anywhere (the client cancelling, DeleteSession, shutdown, a broken
// stream) while exactly one party ends it.
//
// Threads and who calls what:
// - gRPC threads run the reactions (the derived constructor, OnReadDone,
//   OnWriteDone, OnCancel, OnDone). They never block: they decide under mu_
//   and act (start a read, queue a quantum, Finish) after releasing it
//   ("decide under the lock, act outside it"), except a write, which is
//   started under mu_ (StartWriteLocked says why).
// - Worker threads run Quantum(), at most one at a time per stream: a
//   quantum is queued only by whoever sets scheduled_ (under mu_), and only
//   that quantum (or the constructor, before any) clears it. Quantum() is
//   the only code that advances the simulation; the constructor and the
//   reactions read its step and time for logs only while no quantum runs.
// - A worker's last act: a worker (a quantum, an ensemble lane, a compile)
//   that releases mu_ having cleared scheduled_ (or its lane) without
//   deciding the end no longer owns the stream. Another party (OnWriteDone,
//   a lane) may then end it at once, and OnDone deletes it, so the worker
//   must not touch `this` again, not even by a member call with nothing to
//   do: it calls Act only when its actions have any() (UBSan's vptr check
//   found such a call in CI). The reactions need no such care: gRPC calls
//   OnDone only after every other reaction has returned.
// - Interrupt() comes from any thread, possibly with the core's registry
//   lock held: it records the stop and, when no quantum and no write is
//   pending, queues a quantum to finish the stream; it never finishes
//   inline.
//
// Ownership:
// - The reactor owns itself: gRPC calls OnDone once, after Finish and every
//   other reaction; OnDone unregisters the stream and deletes it. So
//   whoever decides the end (FinishLocked sets finished_, once) calls
//   EndStream as its last use of the reactor, and nothing else may be
//   pending then but gRPC's own reactions.
// - The session lease: AcquireSession takes it (session_ set), EndStream
//   gives it back (publishing the last state, and marking the session
//   FAILED when failure_ holds an engine error). With the lease the stream
//   holds one of its tenant's stream slots (Tenant::AcquireStream), taken
//   and given back at the same two points.
// - tenant_: the authenticated caller, owned by the core's Authenticator
//   (which outlives every reactor); only sessions it owns are found.
// - A stalled reader (a write pending longer than --stream-stall-timeout)
//   is ended in two phases, so that it frees what it holds while a client
//   that reads again soon still gets every message up to the stall status:
//   1. CheckStall stops the stream like an Interrupt; the next decision
//      (FinishLocked, with the write still pending) releases the session
//      lease and the tenant's stream slot (ReleaseLease) and drops every
//      buffered message but the one being written (DropUnsentLocked); the
//      call stays open (released_). If the write then completes, the call
//      finishes with the stall status, queued behind nothing.
//   2. If the write is still pending one more stall timeout later,
//      CheckStall decides the end (finished_) and queues CancelStalled on
//      the pool, which cancels the call (the client sees CANCELLED) and
//      finishes it: gRPC then frees the write and calls OnDone. Finish is
//      called only there or after the write, so `this` is alive when
//      CancelStalled runs (OnDone cannot come before Finish), and the
//      write is gRPC's from the moment write_in_flight_ is set
//      (StartWriteLocked), so OnDone waits for it.
//   A client that re-opens a Run after each stall therefore holds at most
//   about two stall timeouts' worth of calls, each with one message.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>
#include <grpcpp/support/status.h>
#include <spdlog/spdlog.h>

#include "engine/status.h"
#include "service/rpc_common.h"
#include "service/service_core.h"
#include "service/session_store.h"
#include "service/status_mapping.h"

namespace tether::service {

// `GrpcReactor`: grpc::ServerWriteReactor<...> or grpc::ServerBidiReactor<...>.
template <class GrpcReactor>
class SessionStreamReactor : public GrpcReactor, public StreamBase {
 public:
  // StreamBase: stops the stream with `status` (the first stop wins) unless
  // it has already decided to finish.
  void Interrupt(grpc::Status status) final {
    bool schedule = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || stop_.load()) return;
      StopLocked(std::move(status));
      // Never finish here (the caller may hold the stream registry lock):
      // when nothing is pending (at most a read), a quantum does it;
      // otherwise the running quantum or the write's completion does.
      if (!scheduled_ && !write_in_flight_) {
        scheduled_ = true;
        schedule = true;
      }
    }
    if (schedule) Schedule();
  }

  // StreamBase: the stall watchdog. A write pending since before
  // `started_before` stops the stream, which then ends without waiting for
  // that write (a quantum does it, as for Interrupt).
  void CheckStall(Clock::time_point started_before, const grpc::Status& status) final {
    bool schedule = false;
    bool cancel = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || !write_in_flight_) return;
      if (released_) {
        // Phase 2: still not read one timeout after the release.
        if (!release_done_ || released_at_ > started_before) return;
        finished_ = true;
        cancel = true;
      } else {
        // The write may wait behind what the transport has buffered ahead
        // of it, which a reading client works through first.
        if (stalled_ || write_started_ + write_allowance_ > started_before) return;
        stalled_ = true;
        StopLocked(status);  // the first stop wins
        if (!scheduled_) {
          scheduled_ = true;
          schedule = true;
        }
      }
    }
    if (schedule) Schedule();
    if (cancel) core_->Submit([this] { CancelStalled(); }, false, tenant_);
  }

  // gRPC: the client cancelled, or the deadline passed.
  void OnCancel() final { Interrupt(grpc::Status(grpc::StatusCode::CANCELLED, cancel_message_)); }

  // gRPC: the call is over; the last reaction.
  void OnDone() final {
    core_->Unregister(this);
    delete this;
  }

 protected:
  // What a reaction decided under mu_, carried out after releasing it. The
  // derived reactors add their reads and writes.
  struct Actions {
    bool schedule = false;  // queue a quantum (scheduled_ was set)
    bool release = false;   // a stall's phase 1: ReleaseLease (released_ was set)
    bool finish = false;    // end the stream (finished_ was set) ...
    grpc::Status status;    // ... with this status
    // Whether there is anything to carry out ("A worker's last act" above).
    bool any() const { return schedule || release || finish; }
  };

  // `rpc` names the method in logs and lease errors; `cancel_message` is
  // the status message when the client cancels; `poll_after_quantum` makes
  // the worker poll for the next task after each quantum (WorkerPool).
  // `context`: the call's, owned by gRPC until OnDone.
  SessionStreamReactor(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                       const char* rpc, const char* cancel_message, bool poll_after_quantum)
      : core_(core),
        tenant_(tenant),
        context_(context),
        rpc_(rpc),
        cancel_message_(cancel_message),
        poll_after_quantum_(poll_after_quantum) {}
  ~SessionStreamReactor() override = default;

  // Makes the stream reachable by shutdown and DeleteSession. The derived
  // constructor calls it first, once `this` is complete, and before it
  // checks ServiceCore::shutting_down(); from then on Interrupt may come
  // from any thread. scheduled_ starts true: until the constructor has
  // decided, it owns the stream like a running quantum, so an Interrupt
  // meanwhile only records the stop.
  void RegisterStream() { core_->Register(this); }

  // One quantum on a worker thread (see the threading notes above).
  virtual void Quantum() = 0;
  // Logs how the stream ended; runs in ReleaseLease while the lease is
  // still held (so it may read the simulation).
  virtual void LogEnd(const grpc::Status& status) = 0;
  // mu_ held, a stall's phase 1: drops the messages buffered behind the
  // pending write (that one must stay valid until OnWriteDone).
  virtual void DropUnsentLocked() {}

  // Queues Quantum(); the caller has set scheduled_ under mu_.
  void Schedule() {
    core_->Submit([this] { Quantum(); }, poll_after_quantum_, tenant_);
  }

  // mu_ held: records the first stop request.
  void StopLocked(grpc::Status status) {
    if (stop_.load()) return;
    stop_status_ = std::move(status);
    stop_.store(true);
  }
  // Any thread, without mu_ (a quantum checks it between chunks).
  bool stopping() const { return stop_.load(); }
  // mu_ held, after a stop.
  const grpc::Status& stop_status() const { return stop_status_; }

  // mu_ held: decides, once, to end the stream with `status`. Behind a
  // stalled write it only releases the lease (phase 1 above): the call
  // finishes when the write completes (a later FinishLocked) or is
  // cancelled (CheckStall).
  void FinishLocked(Actions* act, grpc::Status status) {
    if (finished_) return;
    if (stalled_ && write_in_flight_) {
      if (released_) return;
      released_ = true;
      DropUnsentLocked();
      act->release = true;
      act->status = std::move(status);
      return;
    }
    finished_ = true;
    if (released_ && !release_done_) {
      // Phase 1's ReleaseLease is still running on another thread: it
      // finishes the call when it is done (ActOnEnd).
      finish_deferred_ = true;
      deferred_status_ = std::move(status);
      return;
    }
    act->finish = true;
    act->status = std::move(status);
  }

  // Carries out what Actions says about the end, without mu_: true when
  // the stream was finished (`this` may then be gone).
  bool ActOnEnd(const Actions& act) {
    if (act.finish) {
      EndStream(act.status);
      return true;
    }
    if (!act.release) return false;
    ReleaseLease(act.status);
    grpc::Status deferred;
    {
      std::lock_guard<std::mutex> lock(mu_);
      release_done_ = true;
      // Phase 2's grace counts from here: a slow release (PersistNow to a
      // session store) does not eat into the client's second timeout.
      released_at_ = Clock::now();
      if (!finish_deferred_) return false;
      deferred = std::move(deferred_status_);
    }
    EndStream(deferred);
    return true;
  }

  // mu_ held: looks the tenant's session up (another tenant's is NOT_FOUND
  // like an absent one), takes one of the tenant's stream slots
  // (RESOURCE_EXHAUSTED when --tenant-max-streams are open), attaches the
  // stream to the session (so that DeleteSession interrupts it) and takes
  // its lease; session_ is set on success only.
  grpc::Status AcquireSession(const std::string& id) {
    std::shared_ptr<Session> session;
    if (grpc::Status found = core_->FindSession(id, tenant_, &session); !found.ok()) return found;
    if (Status s = tenant_->AcquireStream(); !s.ok()) return ToGrpcStatus(s);
    attached_.store(session.get());
    Status s = session->Acquire(rpc_);
    if (!s.ok()) {
      attached_.store(nullptr);
      tenant_->ReleaseStream();
      return ToGrpcStatus(s);
    }
    session_ = std::move(session);
    return grpc::Status::OK;
  }

  // mu_ held: starts writing `message` (the stall watchdog times it from
  // now). The one act carried out under mu_: between a decision to write
  // and gRPC's write, the watchdog could otherwise run both stall phases
  // (a worker descheduled for two --stream-stall-timeouts, which may be as
  // short as 1 ms) and finish the call on a write that gRPC does not hold,
  // so that OnDone frees the reactor before the write starts. gRPC never
  // runs OnWriteDone inline from StartWrite (its write callback is
  // registered with can_inline=false, grpcpp's server_callback_handlers.h),
  // so holding mu_ here cannot deadlock with it.
  void StartWriteLocked(const grpc::ByteBuffer* message) {
    write_in_flight_ = true;
    write_started_ = Clock::now();
    write_bytes_ = message->Length();
    // A write waits behind what gRPC's transport already holds for the
    // client (its flow-control window, several MB, which it reopens in
    // chunks): a client reading one 2 MB message every 2 s left a write
    // pending 6 s behind the four it had buffered, and a 3 s stall timeout
    // ended its stream. So the write gets one more stall timeout for each
    // message of its size the transport was seen to take at once
    // (buffered_bytes_), at most kMaxStallTimeouts in all: the timeout is
    // "a message left unread that long", counted from where the client is.
    const auto timeout = core_->options().stream_stall_timeout;
    const size_t ahead = write_bytes_ > 0 ? buffered_bytes_ / write_bytes_ : 0;
    write_allowance_ =
        timeout * static_cast<int64_t>(std::min<size_t>(ahead, kMaxStallTimeouts - 1));
    this->StartWrite(message);
  }

  // mu_ held, in OnWriteDone: a write that completed at once went into the
  // transport's buffer, behind the ones before it in the same burst; the
  // largest such burst is what later writes may wait behind.
  void WriteDoneLocked() {
    write_in_flight_ = false;
    const auto took = Clock::now() - write_started_;
    // "At once": within a quarter of the timeout, at most 250 ms (a busy
    // machine can take tens of ms to queue a write the transport has room
    // for; a smaller window split the bursts and undercounted them).
    const auto at_once = std::min<Clock::duration>(std::chrono::milliseconds(250),
                                                   core_->options().stream_stall_timeout / 4);
    burst_bytes_ = took <= at_once ? burst_bytes_ + write_bytes_ : 0;
    buffered_bytes_ = std::max(buffered_bytes_, burst_bytes_);
  }

  // Without mu_, once, by whoever FinishLocked chose: logs, gives the lease
  // back and finishes the call. `this` may be gone when it returns. After a
  // stall the call's last write is still pending: gRPC queues the status
  // behind it (a client that reads again gets both) and calls OnDone once
  // the write completes or the call is cancelled.
  void EndStream(const grpc::Status& status) {
    if (!lease_released_) ReleaseLease(status);
    this->Finish(status);
  }

  // Without mu_, once (EndStream or a stall's phase 1): logs the end, gives
  // the lease and the stream slot back, and tells the core the stream
  // ended (its call may stay open behind a stalled write).
  void ReleaseLease(const grpc::Status& status) {
    lease_released_ = true;
    LogEnd(status);
    if (session_) {
      session_->Release(failure_);
      tenant_->ReleaseStream();
      // --session-store: the state at the end of the stream goes to the
      // store now (PersistNow logs nothing; a refusal gives the session up).
      if (Status s = core_->PersistNow(*session_); !s.ok()) {
        spdlog::error("session {}: state at the end of the stream not stored: {}", session_->id(),
                      s.message());
      }
    }
    ended_.store(true);
    core_->StreamEnded();
  }

  // On a worker, a stall's phase 2 (finished_ was set by CheckStall):
  // cancels the call, whose write then fails and frees, and finishes it.
  void CancelStalled() {
    spdlog::warn(
        "stream cancelled: its client read nothing for two stall timeouts "
        "(--stream-stall-timeout); its last message is dropped");
    context_->TryCancel();
    this->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                              "the client read nothing for two stall timeouts"));
  }

  ServiceCore* const core_;
  Tenant* const tenant_;
  // The leased session (nullptr until AcquireSession succeeds).
  std::shared_ptr<Session> session_;
  // An engine error (ABORTED) that ends the stream and fails the session;
  // written by the quantum before the stream ends.
  Status failure_;

  std::mutex mu_;
  bool scheduled_ = true;         // a quantum is queued or running (guarded by mu_)
  bool write_in_flight_ = false;  // guarded by mu_
  bool finished_ = false;         // the end was decided (guarded by mu_)
  // The pending write stalled: the stream ends without waiting for it
  // (guarded by mu_).
  bool stalled_ = false;
  // A stall's phase 1 is done: the lease was given back, the call is still
  // open behind the write (guarded by mu_); released_at_ is when that
  // release was done (set with release_done_).
  bool released_ = false;
  Clock::time_point released_at_;  // guarded by mu_
  // Phase 1's ReleaseLease has returned (guarded by mu_); until then an end
  // decided elsewhere is left to it (finish_deferred_, deferred_status_).
  bool release_done_ = false;
  bool finish_deferred_ = false;     // guarded by mu_
  grpc::Status deferred_status_;     // guarded by mu_
  Clock::time_point write_started_;  // guarded by mu_
  // The stall watchdog's measure of the transport (StartWriteLocked,
  // WriteDoneLocked; guarded by mu_): the pending write's bytes, the bytes
  // of the writes just completed at once, the largest such burst, and the
  // pending write's time beyond one stall timeout.
  static constexpr size_t kMaxStallTimeouts = 8;
  size_t write_bytes_ = 0, burst_bytes_ = 0, buffered_bytes_ = 0;
  Clock::duration write_allowance_{};

 private:
  grpc::CallbackServerContext* const context_;
  const char* const rpc_;
  const char* const cancel_message_;
  // ReleaseLease ran. Written by phase 1's releaser before it sets
  // release_done_ under mu_, read by EndStream, which runs after that (or
  // on the releaser's own thread).
  bool lease_released_ = false;
  const bool poll_after_quantum_;
  std::atomic<bool> stop_{false};
  grpc::Status stop_status_;  // guarded by mu_
};

}  // namespace tether::service
