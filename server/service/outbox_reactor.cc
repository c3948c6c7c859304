#include "service/outbox_reactor.h"

#include <mutex>
#include <utility>

namespace tether::service {

void OutboxStreamReactor::OnWriteDone(bool ok) {
  OutboxActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    WriteDoneLocked();
    ++progress_;
    if (!ok) {
      StopLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
      outbox_.clear();
    } else if (!outbox_.empty()) {
      outbox_.pop_front();
    }
    DecideLocked(&act, /*in_quantum=*/false);
  }
  Act(act);
}

void OutboxStreamReactor::Drain(grpc::Status status) {
  bool schedule = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_ || stopping() || done_producing_ || draining_.load()) return;
    drain_status_ = std::move(status);
    draining_.store(true);
    // A quantum turns the drain into the stream's end; a running one sees
    // the flag between chunks, a paused one (full buffer) is woken.
    if (!scheduled_) {
      scheduled_ = true;
      schedule = true;
    }
  }
  if (schedule) Schedule();
}

void OutboxStreamReactor::DecideLocked(OutboxActions* act, bool in_quantum, bool starved) {
  if (finished_) return;
  const bool quantum_running = (scheduled_ && !in_quantum) || HelpersRunningLocked();
  if (stopping()) {
    if (in_quantum) scheduled_ = false;
    // A stalled write is not waited for.
    if (!quantum_running && (!write_in_flight_ || stalled_)) FinishLocked(act, stop_status());
    return;
  }
  if (!write_in_flight_ && !outbox_.empty()) {
    StartWriteLocked(&outbox_.front().message);
  }
  if (done_producing_) {
    if (in_quantum) scheduled_ = false;
    if (!write_in_flight_ && outbox_.empty() && !HelpersRunningLocked()) {
      FinishLocked(act, final_status_);
    }
    return;
  }
  const bool room = outbox_.size() < max_buffered_;
  if (in_quantum) {
    if (room && !starved) {
      act->schedule = true;  // requeue at the back: fairness
    } else {
      scheduled_ = false;  // resumed by a later OnWriteDone
    }
  } else if (!scheduled_ && outbox_.size() <= resume_buffered()) {
    scheduled_ = true;
    act->schedule = true;
  }
}

void OutboxStreamReactor::Act(const OutboxActions& act) {
  if (ActOnEnd(act)) return;
  if (act.schedule) Schedule();
}

void OutboxStreamReactor::EndQuantum(std::vector<grpc::ByteBuffer>* ready, bool done, bool blocked,
                                     uint64_t progress_seen) {
  OutboxActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& m : *ready) {
      MemoryCharge charge = outbox_reserve_.bytes() > 0
                                ? MemoryCharge()
                                : core_->memory().Force(tenant_, static_cast<int64_t>(m.Length()));
      outbox_.push_back({std::move(m), std::move(charge)});
    }
    ready->clear();
    if (done) done_producing_ = true;
    DecideLocked(&act, /*in_quantum=*/true, /*starved=*/blocked && progress_ == progress_seen);
  }
  if (act.any()) Act(act);  // a worker's last act (session_reactor.h)
}

}  // namespace tether::service
