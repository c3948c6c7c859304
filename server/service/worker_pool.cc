#include "service/worker_pool.h"

#include <sched.h>

namespace tether::service {

WorkerPool::WorkerPool(std::size_t threads, std::chrono::microseconds spin) : spin_(spin) {
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Submit(std::function<void()> task, bool then_poll) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(Task{std::move(task), then_poll});
    pending_.store(tasks_.size(), std::memory_order_release);
  }
  cv_.notify_one();  // no system call when nobody sleeps
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    stop_requested_.store(true);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::size_t WorkerPool::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

bool WorkerPool::TryPop(Task* task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tasks_.empty()) return false;
  *task = std::move(tasks_.front());
  tasks_.pop_front();
  pending_.store(tasks_.size(), std::memory_order_release);
  return true;
}

void WorkerPool::Loop() {
  using Clock = std::chrono::steady_clock;
  bool poll = false;  // the last task asked for polling
  for (;;) {
    Task task;
    bool have = TryPop(&task);
    if (!have && poll && spin_.count() > 0) {
      // Poll (the queue size is one atomic read), yielding between polls.
      const auto deadline = Clock::now() + spin_;
      for (int i = 0; !have; ++i) {
        if (pending_.load(std::memory_order_acquire) > 0) {
          have = TryPop(&task);
          continue;
        }
        if ((i & 15) == 15 &&
            (stop_requested_.load(std::memory_order_relaxed) || Clock::now() >= deadline)) {
          break;
        }
        sched_yield();
      }
    }
    if (!have) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      pending_.store(tasks_.size(), std::memory_order_release);
    }
    poll = task.then_poll;
    task.run();
  }
}

}  // namespace tether::service
