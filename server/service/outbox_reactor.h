// What the server-streaming reactors share (Run, RunEnsemble): a quantum
// fills whole response messages, as bytes, into an outbox that the writer
// drains one message at a time, and the decision after each quantum and
// each completed write ("decide under the lock, act outside it";
// session_reactor.h has the threading and the lease).
//
// Backpressure: at most kMaxBufferedMessages finished messages wait
// (including the one being written) plus the one a quantum is filling; a
// quantum stops producing until a write completes, and one paused on a
// full buffer is resumed once the writer has drained it to
// kResumeBufferedMessages (a stream may lower both: max_buffered_). Each
// message is charged to the tenant's memory budget until it is written or
// dropped, or the stream reserved its outbox's most beforehand
// (outbox_reserve_).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "service/memory_budget.h"
#include "service/session_reactor.h"

namespace tether::service {

// Messages buffered per stream, the one being written included.
inline constexpr std::size_t kMaxBufferedMessages = 8;
// A stream paused on a full buffer resumes once the writer has drained it
// to this many, so that each wake-up of a worker fills several messages
// instead of one per completed write.
inline constexpr std::size_t kResumeBufferedMessages = 4;

class OutboxStreamReactor
    : public SessionStreamReactor<grpc::ServerWriteReactor<grpc::ByteBuffer>> {
 public:
  void OnWriteDone(bool ok) override;
  // StreamBase: the shutdown grace ran out. Records `status` in
  // drain_status_ and sets draining_, then wakes a paused quantum; the
  // quantum ends the stream with what it computed (each reactor says
  // what) and drain_status_.
  void Drain(grpc::Status status) override;

 protected:
  using SessionStreamReactor::SessionStreamReactor;

  // The base's actions: a write is started under mu_ (StartWriteLocked),
  // not carried out after.
  using OutboxActions = Actions;

  // Decides what happens next; mu_ held. `in_quantum` is true when the
  // caller is the quantum itself (which owns scheduled_ == true); `starved`
  // when that quantum stopped for lack of buffer room and no write has
  // completed since it looked: requeueing it would only spin.
  void DecideLocked(OutboxActions* act, bool in_quantum, bool starved = false);
  // Carries out `act` without mu_. After a finish, `this` may be gone.
  void Act(const OutboxActions& act);
  // A quantum's end, without mu_: queues its finished messages behind the
  // outbox, each charged to the memory budget whatever its state (at most
  // kMaxBufferedMessages a stream) unless outbox_reserve_ already holds
  // what the outbox can take, records that it made the last one
  // (`done`), decides and acts. `blocked`: it stopped for lack of buffer
  // room (or, RunEnsemble, waiting for its lanes), when progress_ was
  // `progress_seen`. `this` may then be gone.
  void EndQuantum(std::vector<grpc::ByteBuffer>* ready, bool done, bool blocked,
                  uint64_t progress_seen);
  // mu_ held: work other than the quantum that still uses the stream
  // (RunEnsemble's lanes): the stream does not end while there is any, and
  // that work decides again (DecideLocked, not in_quantum) when it ends.
  virtual bool HelpersRunningLocked() const { return false; }
  // Keeps only the message being written (outbox_.front()).
  void DropUnsentLocked() override {
    while (outbox_.size() > (write_in_flight_ ? 1u : 0u)) outbox_.pop_back();
  }

  // Guarded by mu_. A deque: the front stays put while StartWrite holds it
  // and more are pushed behind it.
  struct Outgoing {
    grpc::ByteBuffer message;
    MemoryCharge charge;
  };
  std::deque<Outgoing> outbox_;
  // The most the outbox can hold, taken from the memory budget before the
  // stream produces anything (Run: RunReactor::ReserveOutbox), so that
  // streams nobody reads are refused when the budget is spent instead of
  // forcing their messages past it; empty: each message is charged as it
  // is queued. Written by the first quantum before any message exists.
  MemoryCharge outbox_reserve_;
  // Finished messages that may wait (the one being written included), at
  // most kMaxBufferedMessages; a quantum paused on a full outbox resumes at
  // resume_buffered(). Set by the first quantum.
  std::size_t max_buffered_ = kMaxBufferedMessages;
  std::size_t resume_buffered() const {
    return std::min(kResumeBufferedMessages, max_buffered_ - 1);
  }
  // Events that may unblock a paused quantum: completed writes and, for
  // RunEnsemble, instances finished on its lanes and lanes ended.
  uint64_t progress_ = 0;
  // The quantum made its last message; the stream ends with final_status_
  // once the outbox is written.
  bool done_producing_ = false;
  grpc::Status final_status_;
  grpc::Status drain_status_;  // guarded by mu_
  // Set once, under mu_, by Drain; read by the quantum between chunks.
  std::atomic<bool> draining_{false};
};

}  // namespace tether::service
