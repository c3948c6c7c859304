// WorkerPool (server/service/worker_pool.*) alone: FIFO order, fairness of
// sessions that run in bounded quanta and requeue themselves, and shutdown
// (queued tasks still run, tasks queued while stopping too, no hang).
#include "service/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tether::service {
namespace {

using namespace std::chrono_literals;

// Runs `f` on its own thread and fails (aborting: a hung pool cannot be
// joined) when it does not return within `limit`.
template <typename F>
void WithinOrAbort(std::chrono::seconds limit, const char* what, F f) {
  auto done = std::async(std::launch::async, std::move(f));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %s did not return within %lld s\n", what,
                 static_cast<long long>(limit.count()));
    std::abort();
  }
  done.get();
}

// A gate the first task waits at, so tasks queue up behind it.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(WorkerPoolTest, OneWorkerRunsTasksInSubmissionOrder) {
  WorkerPool pool(1, 0us);
  Gate gate;
  std::promise<void> started;
  pool.Submit([&] {
    started.set_value();
    gate.Wait();
  });
  started.get_future().wait();
  std::mutex mu;
  std::vector<int> order;
  for (int i = 0; i < 50; ++i) {
    pool.Submit([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
  }
  EXPECT_EQ(pool.queued(), 50u);
  gate.Open();
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
}

// A session's run as the service schedules it: a quantum of work, then the
// rest requeued at the back of the pool.
struct QuantumRun {
  WorkerPool* pool;
  char name;
  int quanta_left;
  std::mutex* mu;
  std::string* trace;
  std::atomic<int>* running;

  void Step() {
    {
      std::lock_guard<std::mutex> lock(*mu);
      trace->push_back(name);
    }
    if (--quanta_left > 0) {
      pool->Submit([self = *this]() mutable { self.Step(); });
    } else {
      --*running;
    }
  }
};

TEST(WorkerPoolTest, SessionsInQuantaInterleaveRoundRobin) {
  WorkerPool pool(1, 0us);
  Gate gate;
  pool.Submit([&] { gate.Wait(); });
  std::mutex mu;
  std::string trace;
  std::atomic<int> running{3};
  // A long run queued first must not starve the short ones queued after it.
  pool.Submit([r = QuantumRun{&pool, 'A', 6, &mu, &trace, &running}]() mutable { r.Step(); });
  pool.Submit([r = QuantumRun{&pool, 'B', 3, &mu, &trace, &running}]() mutable { r.Step(); });
  pool.Submit([r = QuantumRun{&pool, 'C', 2, &mu, &trace, &running}]() mutable { r.Step(); });
  gate.Open();
  WithinOrAbort(30s, "the quanta", [&] {
    while (running.load() > 0) std::this_thread::sleep_for(1ms);
  });
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(trace, "ABCABCABAAA");
}

TEST(WorkerPoolTest, ManySessionsOnSeveralWorkersAllFinishWithBoundedLag) {
  // 4 workers, 40 sessions of 50 quanta each: every session finishes, and
  // no session completes its last quantum before every other session has
  // done at least half of its own (they progress together, not one by one).
  constexpr int kSessions = 40, kQuanta = 50;
  WorkerPool pool(4, 0us);
  std::vector<std::atomic<int>> done(kSessions);
  std::atomic<int> finished{0};
  std::atomic<int> min_progress_at_first_finish{-1};
  std::function<void(int)> step = [&](int s) {
    std::this_thread::sleep_for(50us);
    if (++done[s] < kQuanta) {
      pool.Submit([&, s] { step(s); });
      return;
    }
    if (finished++ == 0) {
      int least = kQuanta;
      for (int t = 0; t < kSessions; ++t) least = std::min(least, done[t].load());
      min_progress_at_first_finish = least;
    }
  };
  Gate gate;
  pool.Submit([&] { gate.Wait(); });
  for (int s = 0; s < kSessions; ++s) pool.Submit([&, s] { step(s); });
  gate.Open();
  WithinOrAbort(60s, "the sessions", [&] {
    while (finished.load() < kSessions) std::this_thread::sleep_for(1ms);
  });
  for (int s = 0; s < kSessions; ++s) EXPECT_EQ(done[s].load(), kQuanta) << s;
  EXPECT_GE(min_progress_at_first_finish.load(), kQuanta / 2);
  pool.Stop();
}

TEST(WorkerPoolTest, StopRunsEveryQueuedTaskThenJoins) {
  WorkerPool pool(2, 0us);
  Gate gate;
  pool.Submit([&] { gate.Wait(); });
  pool.Submit([&] { gate.Wait(); });
  std::atomic<int> ran{0};
  for (int i = 0; i < 200; ++i) pool.Submit([&] { ++ran; });
  std::thread opener([&] {
    std::this_thread::sleep_for(100ms);
    gate.Open();
  });
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  opener.join();
  EXPECT_EQ(ran.load(), 200);
  EXPECT_EQ(pool.queued(), 0u);
  EXPECT_EQ(pool.size(), 0u);                                 // joined
  WithinOrAbort(30s, "a second Stop", [&] { pool.Stop(); });  // idempotent
}

TEST(WorkerPoolTest, TasksQueuedWhileStoppingStillRun) {
  // A reactor's last quanta may be scheduled after Stop() began; they run.
  WorkerPool pool(1, 0us);
  std::atomic<int> chain{0};
  std::function<void()> link = [&] {
    std::this_thread::sleep_for(1ms);
    if (++chain < 20) pool.Submit(link);
  };
  pool.Submit(link);
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  EXPECT_EQ(chain.load(), 20);
}

TEST(WorkerPoolTest, PollingWorkersStopPromptly) {
  // then_poll tasks with a long spin: Stop must not wait out the spin.
  WorkerPool pool(2, std::chrono::microseconds(std::chrono::seconds(60)));
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) pool.Submit([&] { ++ran; }, /*then_poll=*/true);
  while (ran.load() < 10) std::this_thread::sleep_for(1ms);
  auto start = std::chrono::steady_clock::now();
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(WorkerPoolTest, DestructorDrainsTheQueue) {
  std::atomic<int> ran{0};
  WithinOrAbort(30s, "~WorkerPool", [&] {
    WorkerPool pool(3, 0us);
    for (int i = 0; i < 100; ++i) pool.Submit([&] { ++ran; });
  });
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace tether::service
