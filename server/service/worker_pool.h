// A fixed set of threads running tasks in FIFO order. Simulation quanta are
// tasks: a session advances for a bounded quantum, then requeues itself at
// the back, so many sessions progress fairly.
//
// A worker that has just run a task submitted with `then_poll` (a
// co-simulation step) and finds the queue empty polls it for a short while,
// yielding the CPU to any other runnable thread, before it sleeps: the
// master's next step usually arrives within that window, and handing it to a
// polling worker costs a memory read instead of a futex wake-up and a
// context switch (tens of microseconds on a busy machine). Other tasks (Run
// quanta, unary work) let the worker sleep at once, so a stream that waits
// for its reader does not burn a core.
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
  // `spin`: how long a worker polls after a `then_poll` task (0: never).
  // (tether-server's default is ServiceOptions::worker_spin.)
  WorkerPool(std::size_t threads, std::chrono::microseconds spin);
  ~WorkerPool();  // Runs what is queued, then joins.
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task. After Stop() tasks are still run (reactors rely on every
  // scheduled quantum running so they can finish their RPC). `then_poll`:
  // the worker that runs it polls for the next task before sleeping.
  void Submit(std::function<void()> task, bool then_poll = false);

  // Runs the remaining tasks and joins the threads. Idempotent.
  void Stop();

  std::size_t size() const { return threads_.size(); }
  // Tasks waiting (not running), for tests and logs.
  std::size_t queued() const;

 private:
  void Loop();
  struct Task {
    std::function<void()> run;
    bool then_poll = false;
  };
  bool TryPop(Task* task);

  const std::chrono::microseconds spin_;
  std::atomic<std::size_t> pending_{0};  // tasks_.size(), readable without mu_
  std::atomic<bool> stop_requested_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tether::service
