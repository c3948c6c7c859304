// A fixed set of threads running tasks in FIFO order. Simulation quanta are
// tasks: a session advances for a bounded quantum, then requeues itself at
// the back, so many sessions progress fairly.
#pragma once

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
  explicit WorkerPool(std::size_t threads);
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

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tether::service
