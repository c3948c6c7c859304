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

// Waits until Stop() has begun on another thread (aborting after 30 s).
void WaitUntilStopping(const WorkerPool& pool) {
  WithinOrAbort(30s, "Stop to begin", [&] {
    while (!pool.stopping()) std::this_thread::sleep_for(1ms);
  });
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
  // Submits a task that waits here, and returns once a worker runs it (so
  // the next tasks queue behind it).
  void HoldAWorker(WorkerPool& pool) {
    pool.Submit([this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        held_ = true;
      }
      cv_.notify_all();
      Wait();
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return held_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  bool held_ = false;  // HoldAWorker's task runs
};

TEST(WorkerPoolTest, OneWorkerRunsTasksInSubmissionOrder) {
  WorkerPool pool(1, 0us);
  Gate gate;
  gate.HoldAWorker(pool);
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
    std::this_thread::sleep_for(50us);  // the quantum's work, not a wait
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
  // The gate opens once Stop() has begun, none of the tasks run yet.
  std::thread opener([&] {
    WaitUntilStopping(pool);
    EXPECT_EQ(ran.load(), 0);
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
    if (chain.load() == 0) WaitUntilStopping(pool);  // the other 19 are queued while stopping
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
  WithinOrAbort(30s, "the tasks", [&] {
    while (ran.load() < 10) std::this_thread::sleep_for(1ms);
  });
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

// Owners (tenants) are served in turn: a worker takes the owner with the
// fewest tasks running, the least recently served first, so one owner's
// long queue does not make another's task wait behind all of it.
TEST(WorkerPoolTest, OwnersAreServedInTurnNotInSubmissionOrder) {
  WorkerPool pool(1, 0us);
  const int a = 0, b = 0, c = 0;  // owners: their addresses
  Gate gate;
  std::promise<void> started;
  pool.Submit(
      [&] {
        started.set_value();
        gate.Wait();
      },
      false, &a);
  started.get_future().wait();
  std::mutex mu;
  std::string order;
  auto record = [&](char name) {
    return [&, name] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(name);
    };
  };
  for (int i = 0; i < 4; ++i) pool.Submit(record('a'), false, &a);
  pool.Submit(record('b'), false, &b);
  pool.Submit(record('b'), false, &b);
  pool.Submit(record('c'), false, &c);
  EXPECT_EQ(pool.queued(&a), 4u);
  EXPECT_EQ(pool.queued(&b), 2u);
  EXPECT_EQ(pool.queued(), 7u);
  gate.Open();
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  // b and c were never served, a just was: b, c first (in either order),
  // then a, b, a, a, a (b's second task after a's first: a was served
  // before b's first).
  ASSERT_EQ(order.size(), 7u);
  EXPECT_TRUE(order == "bcabaaa" || order == "cbabaaa") << order;
}

TEST(WorkerPoolTest, AFreeWorkerTakesTheOwnerWithFewestRunning) {
  // Two workers; owner a holds one and queues more. b's task, queued after
  // a's, runs on the next free worker before a's queued ones.
  WorkerPool pool(2, 0us);
  const int a = 0, b = 0;
  Gate hold, release;
  std::promise<void> held, second;
  pool.Submit(
      [&] {
        held.set_value();
        hold.Wait();
      },
      false, &a);
  held.get_future().wait();
  pool.Submit(
      [&] {
        second.set_value();
        release.Wait();
      },
      false, &a);
  second.get_future().wait();  // both workers busy with a
  std::mutex mu;
  std::string order;
  for (int i = 0; i < 3; ++i) {
    pool.Submit(
        [&] {
          std::lock_guard<std::mutex> lock(mu);
          order.push_back('a');
        },
        false, &a);
  }
  pool.Submit(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back('b');
      },
      false, &b);
  release.Open();  // one worker frees up while a still runs one task
  hold.Open();
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], 'b') << order;
  EXPECT_EQ(pool.extra_started(), 0u);
}

// Every worker busy with owner a: owner b, which runs nothing, gets an
// extra worker at once (max_extra), which retires when idle; a's own
// further tasks never start one.
TEST(WorkerPoolTest, AnExtraWorkerServesAnOwnerWithNothingRunning) {
  WorkerPool pool(1, 0us, /*max_extra=*/1);
  const int a = 0, b = 0;
  Gate gate;
  std::promise<void> started;
  pool.Submit(
      [&] {
        started.set_value();
        gate.Wait();
      },
      false, &a);
  started.get_future().wait();
  std::atomic<int> a_ran{0};
  pool.Submit([&] { ++a_ran; }, false, &a);
  EXPECT_EQ(pool.extra_started(), 0u);  // a has a task running
  std::promise<void> b_ran;
  pool.Submit([&] { b_ran.set_value(); }, false, &b);
  // b's task completes while the only regular worker is still held.
  EXPECT_EQ(b_ran.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_EQ(pool.extra_started(), 1u);
  EXPECT_EQ(a_ran.load(), 0);  // the extra worker does not take a's
  // Idle, it retires (after kExtraIdle); the next b task starts another.
  WithinOrAbort(30s, "the extra worker to retire", [&] {
    while (pool.extra_workers() > 0) std::this_thread::sleep_for(1ms);
  });
  std::promise<void> b_again;
  pool.Submit([&] { b_again.set_value(); }, false, &b);
  EXPECT_EQ(b_again.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_EQ(pool.extra_started(), 2u);
  gate.Open();
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  EXPECT_EQ(a_ran.load(), 1);
}

TEST(WorkerPoolTest, WithoutExtraWorkersAnOwnerWaitsForAFreeWorker) {
  WorkerPool pool(1, 0us, /*max_extra=*/0);
  const int a = 0, b = 0;
  Gate gate;
  std::promise<void> started;
  std::atomic<bool> a_done{false};
  pool.Submit(
      [&] {
        started.set_value();
        gate.Wait();
        a_done = true;
      },
      false, &a);
  started.get_future().wait();
  // b's task notes whether a's still held the only worker when it ran.
  std::atomic<bool> b_ran{false}, b_ran_beside_a{false};
  pool.Submit(
      [&] {
        b_ran_beside_a = !a_done.load();
        b_ran = true;
      },
      false, &b);
  EXPECT_EQ(pool.queued(&b), 1u);
  gate.Open();
  WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
  EXPECT_TRUE(b_ran.load());
  EXPECT_FALSE(b_ran_beside_a.load()) << "b ran while a's task held the only worker";
  EXPECT_EQ(pool.extra_started(), 0u);
}

// Admission under a race: 16 threads submit at once against bounds of 5 in
// all and 3 per owner while the only worker is held. Checking queued() and
// then submitting let several callers pass together (and one find the
// owner's share just taken); SubmitIfRoom holds both bounds exactly, and
// refuses by the bound that was reached.
TEST(WorkerPoolTest, SubmitIfRoomHoldsBothBoundsExactlyUnderARace) {
  for (int round = 0; round < 20; ++round) {
    WorkerPool pool(1, 0us);
    Gate gate;
    gate.HoldAWorker(pool);
    int a = 0, b = 0;
    std::atomic<int> ran{0};
    std::vector<WorkerPool::Admission> got(16);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < 16; ++i) {
      threads.emplace_back([&, i] {
        while (!go.load()) std::this_thread::yield();
        got[static_cast<size_t>(i)] =
            pool.SubmitIfRoom([&] { ++ran; }, i % 2 ? &a : &b, /*max_queued=*/5,
                              /*max_owner_queued=*/3);
      });
    }
    go = true;
    for (auto& t : threads) t.join();
    int queued = 0, pool_full = 0, owner_full = 0, queued_a = 0;
    for (int i = 0; i < 16; ++i) {
      const WorkerPool::Admission x = got[static_cast<size_t>(i)];
      queued += x == WorkerPool::Admission::kQueued;
      queued_a += x == WorkerPool::Admission::kQueued && i % 2;
      pool_full += x == WorkerPool::Admission::kPoolFull;
      owner_full += x == WorkerPool::Admission::kOwnerFull;
    }
    EXPECT_EQ(queued, 5) << "round " << round;
    EXPECT_EQ(pool.queued(), 5u);
    EXPECT_LE(queued_a, 3);
    EXPECT_LE(queued - queued_a, 3);
    EXPECT_EQ(pool.queued(&a), static_cast<size_t>(queued_a));
    EXPECT_EQ(queued + pool_full + owner_full, 16);
    gate.Open();
    WithinOrAbort(30s, "Stop", [&] { pool.Stop(); });
    EXPECT_EQ(ran.load(), 5) << "a refused task ran, or a queued one did not";
  }
}

}  // namespace
}  // namespace tether::service
