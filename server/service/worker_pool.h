// A fixed set of threads running tasks in FIFO order. Simulation quanta are
// tasks: a session advances for a bounded quantum, then requeues itself at
// the back, so many sessions progress fairly.
//
// A worker that runs out of tasks polls the queue for a short while
// (yielding the CPU to any other runnable thread) before it sleeps: a
// co-simulation master's next step usually arrives within that window, and
// handing it to a polling worker costs a memory read instead of a futex
// wake-up and a context switch (tens of microseconds on a busy machine).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tether::service {

class WorkerPool {
 public:
  // `spin`: how long an idle worker polls before it sleeps (0: never).
  explicit WorkerPool(std::size_t threads,
                      std::chrono::microseconds spin = std::chrono::microseconds(1000));
  ~WorkerPool();  // Runs what is queued, then joins.
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task. After Stop() tasks are still run (reactors rely on every
  // scheduled quantum running so they can finish their RPC).
  void Submit(std::function<void()> task);

  // Runs the remaining tasks and joins the threads. Idempotent.
  void Stop();

  std::size_t size() const { return threads_.size(); }
  // Tasks waiting (not running), for tests and logs.
  std::size_t queued() const;

 private:
  void Loop();
  bool TryPop(std::function<void()>* task);

  const std::chrono::microseconds spin_;
  std::atomic<std::size_t> pending_{0};  // tasks_.size(), readable without mu_
  std::atomic<bool> stop_requested_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tether::service
