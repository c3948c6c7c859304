// A fixed set of threads running tasks, fair between owners. Simulation
// quanta are tasks: a session advances for a bounded quantum (bounded in
// time: quantum_budget.h), then requeues itself at the back of its owner's
// queue, so many sessions progress fairly.
//
// Fairness between owners (tenants). Each owner has its own FIFO queue; a
// worker that is free takes the head of the queue of the owner with the
// fewest tasks running, the least recently served first among equals. One
// owner's many streams therefore never make another owner wait behind all
// of them: a task of an owner that runs nothing waits at most for the first
// worker to become free. A worker is held for one quantum, which is one
// step when steps are long, so that wait can still be a long step of
// another owner; for it the pool has *extra workers* (max_extra): when an
// owner with nothing running submits a task and no worker is idle, an extra
// thread starts and serves only owners with nothing running, then retires
// after kExtraIdle without such work. The kernel then time-slices it with
// the busy workers, so that owner's small run completes within a
// scheduling quantum plus its own work, whatever the others run
// (ServiceFairnessTest). Tasks without an owner (nullptr) share one queue.
//
// A worker that has just run a task submitted with `then_poll` (a
// co-simulation step) and finds no task polls for a short while, yielding
// the CPU to any other runnable thread, before it sleeps: the master's next
// step usually arrives within that window, and handing it to a polling
// worker costs a memory read instead of a futex wake-up and a context
// switch (tens of microseconds on a busy machine). Other tasks (Run quanta,
// unary work) let the worker sleep at once, so a stream that waits for its
// reader does not burn a core.
//
// Threading: every member function may be called from any thread; tasks
// run on the pool's threads (and never on the caller's). The pool owns its
// threads and joins them in Stop.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tether::service {

class WorkerPool {
 public:
  // How long an extra worker waits for work it may take before it retires.
  static constexpr std::chrono::milliseconds kExtraIdle{50};

  // `spin`: how long a worker polls after a `then_poll` task (0: never).
  // (tether-server's default is ServiceOptions::worker_spin.) `max_extra`:
  // extra workers that may run at once for owners with nothing running
  // (0: none; see above).
  WorkerPool(std::size_t threads, std::chrono::microseconds spin, std::size_t max_extra = 0);
  ~WorkerPool();  // Runs what is queued, then joins.
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task of `owner` (any stable address, e.g. a tenant; nullptr
  // for none). After Stop() tasks are still run (reactors rely on every
  // scheduled quantum running so they can finish their RPC). `then_poll`:
  // the worker that runs it polls for the next task before sleeping.
  void Submit(std::function<void()> task, bool then_poll = false, const void* owner = nullptr);

  // Submit with admission limits: queues `task` only when fewer than
  // `max_queued` tasks wait in all and fewer than `max_owner_queued` of
  // `owner`, checked and queued under one lock, so the bounds hold exactly
  // however many callers race (a check of queued() and then Submit lets a
  // few pass together, and one of them may then find the owner's share
  // taken by another). A refused task is dropped, not run.
  enum class Admission { kQueued, kPoolFull, kOwnerFull };
  Admission SubmitIfRoom(std::function<void()> task, const void* owner, std::size_t max_queued,
                         std::size_t max_owner_queued);

  // Runs the remaining tasks and joins the threads. Idempotent.
  void Stop();

  std::size_t size() const { return threads_.size(); }
  // Tasks waiting (not running), in all or of one owner, for admission
  // limits, tests and logs.
  std::size_t queued() const;
  std::size_t queued(const void* owner) const;
  // Extra workers started so far (for tests and logs).
  std::size_t extra_started() const;
  // Extra workers alive now, retired ones not counted (for tests).
  std::size_t extra_workers() const;
  // Whether Stop() has begun (for tests).
  bool stopping() const { return stop_requested_.load(); }

 private:
  struct Task {
    std::function<void()> run;
    bool then_poll = false;
    const void* owner = nullptr;
  };
  struct Owner {
    std::deque<Task> tasks;
    int running = 0;
    uint64_t served = 0;  // the serial of its last task taken (0: never)
  };
  // mu_ held: Submit's work; returns the retired extra threads to join.
  void SubmitLocked(Task task, std::list<std::thread>* retired);
  void Loop();
  void ExtraLoop(std::list<std::thread>::iterator self);
  // mu_ held: takes the next task (for an extra worker: of an owner with
  // nothing running only) and counts it as running (and, for a regular
  // worker, the worker as busy). False when none.
  bool PopLocked(Task* task, bool extra);
  bool TryPop(Task* task);
  // Runs a task and counts it done (and a regular worker free).
  void Run(Task& task, bool extra);

  const std::chrono::microseconds spin_;
  const std::size_t max_extra_;
  const std::size_t workers_;            // regular workers (threads_ is cleared by Stop)
  std::atomic<std::size_t> pending_{0};  // tasks queued, readable without mu_
  std::atomic<bool> stop_requested_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;                     // regular workers wait here
  std::condition_variable extra_cv_;               // extra workers wait here
  std::condition_variable stop_cv_;                // Stop waits here for extras to retire
  std::unordered_map<const void*, Owner> owners_;  // owners with tasks queued or running
  uint64_t serial_ = 0;
  std::size_t busy_ = 0;         // regular workers running a task (not waiting,
                                 // polling or between tasks)
  std::size_t extras_ = 0;       // extra workers alive
  std::size_t extras_idle_ = 0;  // ... of which waiting for work
  std::size_t extra_started_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  // Extra workers' threads, alive and retired (guarded by mu_): a retiring
  // one moves itself to retired_, joined by the next Submit or by Stop.
  std::list<std::thread> extra_threads_, retired_;
};

}  // namespace tether::service
