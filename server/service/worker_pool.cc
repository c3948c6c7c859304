#include "service/worker_pool.h"

#include <sched.h>

#include <iterator>
#include <utility>

namespace tether::service {

WorkerPool::WorkerPool(std::size_t threads, std::chrono::microseconds spin, std::size_t max_extra)
    : spin_(spin), max_extra_(max_extra), workers_(threads == 0 ? 1 : threads) {
  threads_.reserve(workers_);
  for (std::size_t i = 0; i < workers_; ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Submit(std::function<void()> task, bool then_poll, const void* owner) {
  std::list<std::thread> retired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SubmitLocked(Task{std::move(task), then_poll, owner}, &retired);
  }
  cv_.notify_one();
  for (std::thread& t : retired) t.join();
}

WorkerPool::Admission WorkerPool::SubmitIfRoom(std::function<void()> task, const void* owner,
                                               std::size_t max_queued,
                                               std::size_t max_owner_queued) {
  std::list<std::thread> retired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.load(std::memory_order_relaxed) >= max_queued) return Admission::kPoolFull;
    auto it = owners_.find(owner);
    const std::size_t mine = it == owners_.end() ? 0 : it->second.tasks.size();
    if (mine >= max_owner_queued) return Admission::kOwnerFull;
    SubmitLocked(Task{std::move(task), false, owner}, &retired);
  }
  cv_.notify_one();
  for (std::thread& t : retired) t.join();
  return Admission::kQueued;
}

void WorkerPool::SubmitLocked(Task task, std::list<std::thread>* retired) {
  const void* owner = task.owner;
  Owner& o = owners_[owner];
  o.tasks.push_back(std::move(task));
  pending_.fetch_add(1, std::memory_order_release);
  if (busy_ < workers_ || o.running > 0 || max_extra_ == 0 || stopping_) {
    // A regular worker takes it (no system call when nobody sleeps): one
    // is between tasks, or this owner's running task will requeue.
  } else {
    // Every regular worker is busy and this owner runs nothing: an idle
    // extra worker, else a new one (up to max_extra_).
    extra_cv_.notify_one();
    if (extras_ < max_extra_ && extras_idle_ == 0) {
      ++extras_;
      ++extra_started_;
      extra_threads_.emplace_back();
      auto self = std::prev(extra_threads_.end());
      *self = std::thread([this, self] { ExtraLoop(self); });
    }
  }
  retired->splice(retired->end(), retired_);
}

void WorkerPool::Stop() {
  std::list<std::thread> extras;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    stop_requested_.store(true);
  }
  cv_.notify_all();
  extra_cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  // The regular workers ran everything queued; extra workers end their task
  // and retire.
  {
    std::unique_lock<std::mutex> lock(mu_);
    stop_cv_.wait(lock, [this] { return extras_ == 0; });
    extras.splice(extras.end(), retired_);
  }
  for (std::thread& t : extras) t.join();
}

std::size_t WorkerPool::queued() const { return pending_.load(std::memory_order_acquire); }

std::size_t WorkerPool::queued(const void* owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owners_.find(owner);
  return it == owners_.end() ? 0 : it->second.tasks.size();
}

std::size_t WorkerPool::extra_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return extra_started_;
}

std::size_t WorkerPool::extra_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return extras_;
}

bool WorkerPool::PopLocked(Task* task, bool extra) {
  Owner* best = nullptr;
  for (auto& [key, o] : owners_) {
    if (o.tasks.empty() || (extra && o.running > 0)) continue;
    if (!best || o.running < best->running ||
        (o.running == best->running && o.served < best->served)) {
      best = &o;
    }
  }
  if (!best) return false;
  *task = std::move(best->tasks.front());
  best->tasks.pop_front();
  ++best->running;
  if (!extra) ++busy_;
  best->served = ++serial_;
  pending_.fetch_sub(1, std::memory_order_release);
  return true;
}

bool WorkerPool::TryPop(Task* task) {
  std::lock_guard<std::mutex> lock(mu_);
  return PopLocked(task, false);
}

void WorkerPool::Run(Task& task, bool extra) {
  task.run();
  task.run = nullptr;  // its captures die before the task counts as done
  std::lock_guard<std::mutex> lock(mu_);
  if (!extra) --busy_;
  auto it = owners_.find(task.owner);
  if (--it->second.running == 0 && it->second.tasks.empty()) owners_.erase(it);
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
      cv_.wait(lock, [&] { return (have = PopLocked(&task, false)) || stopping_; });
      if (!have) return;  // stopping and drained
    }
    poll = task.then_poll;
    Run(task, false);
  }
}

void WorkerPool::ExtraLoop(std::list<std::thread>::iterator self) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Task task;
    if (PopLocked(&task, true)) {
      lock.unlock();
      Run(task, true);
      lock.lock();
      continue;
    }
    if (stopping_) break;
    ++extras_idle_;
    const bool woken = extra_cv_.wait_for(lock, kExtraIdle, [&] {
      if (stopping_) return true;
      for (const auto& [key, o] : owners_) {
        if (!o.tasks.empty() && o.running == 0) return true;
      }
      return false;
    });
    --extras_idle_;
    if (!woken) break;
  }
  // Retire: whoever next submits (or Stop) joins this thread.
  retired_.splice(retired_.end(), extra_threads_, self);
  --extras_;
  stop_cv_.notify_all();
}

}  // namespace tether::service
