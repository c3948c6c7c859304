// MemoryBudget and MemoryCharge (service/memory_budget.h): the ledger the
// server's memory budget keeps, its refusals, and the automatic budget.
#include "service/memory_budget.h"

#include <limits>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tether::service {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

Tenant MakeTenant(const char* name, int64_t max_memory = 0) {
  return Tenant(name, 100, "--tenant-max-sessions", 100, "--tenant-max-streams", max_memory,
                max_memory ? "max_memory (tokens file line 1)" : "");
}

TEST(MemoryBudgetTest, ChargesAreGivenBackWhenDestroyed) {
  MemoryBudget budget(10 * kMiB, "--memory-budget", 0, "--tenant-max-memory");
  Tenant a = MakeTenant("a");
  {
    MemoryCharge c;
    ASSERT_TRUE(budget.Charge(&a, 3 * kMiB, "the new session", &c).ok());
    EXPECT_EQ(c.bytes(), 3 * kMiB);
    EXPECT_EQ(budget.used(), 3 * kMiB);
    EXPECT_EQ(budget.used_by(&a), 3 * kMiB);
    MemoryCharge moved = std::move(c);
    EXPECT_EQ(c.bytes(), 0);
    EXPECT_EQ(budget.used(), 3 * kMiB);
  }
  EXPECT_EQ(budget.used(), 0);
  EXPECT_EQ(budget.used_by(&a), 0);
}

TEST(MemoryBudgetTest, TheServerBudgetRefusesNamingWhatAndHowMuch) {
  MemoryBudget budget(10 * kMiB, "--memory-budget", 0, "--tenant-max-memory");
  Tenant a = MakeTenant("a"), b = MakeTenant("b");
  MemoryCharge held, refused;
  ASSERT_TRUE(budget.Charge(&a, 8 * kMiB, "the new session", &held).ok());
  Status s = budget.Charge(&b, 3 * kMiB, "the new session", &refused);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "the new session needs 3.0 MiB more memory; the server holds 8.0 MiB of its 10.0 MiB "
            "(--memory-budget); delete sessions or snapshots first");
  EXPECT_EQ(s.subject().name, "--memory-budget");
  EXPECT_EQ(refused.bytes(), 0);
  EXPECT_EQ(budget.used(), 8 * kMiB);
  EXPECT_EQ(budget.used_by(&b), 0);
  // What fits exactly is taken.
  ASSERT_TRUE(budget.Charge(&b, 2 * kMiB, "the new session", &refused).ok());
  EXPECT_EQ(budget.used(), 10 * kMiB);
}

TEST(MemoryBudgetTest, ATenantQuotaRefusesThatTenantOnly) {
  MemoryBudget budget(100 * kMiB, "--memory-budget", 4 * kMiB, "--tenant-max-memory");
  Tenant a = MakeTenant("a"), own = MakeTenant("own", 1 * kMiB), b = MakeTenant("b");
  EXPECT_EQ(budget.quota_of(&a), 4 * kMiB);
  EXPECT_EQ(budget.quota_of(&own), 1 * kMiB);
  MemoryCharge c1, c2, c3, c4;
  ASSERT_TRUE(budget.Charge(&a, 3 * kMiB, "x", &c1).ok());
  Status s = budget.Charge(&a, 2 * kMiB, "a snapshot of session s", &c2);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.subject().name, "tenant:a");
  EXPECT_NE(s.message().find("tenant 'a' holds 3.0 MiB of its 4.0 MiB (--tenant-max-memory)"),
            std::string::npos)
      << s.message();
  Status t = budget.Charge(&own, 2 * kMiB, "x", &c3);
  EXPECT_EQ(t.subject().name, "tenant:own");
  EXPECT_NE(t.message().find("(max_memory (tokens file line 1))"), std::string::npos)
      << t.message();
  EXPECT_TRUE(budget.Charge(&b, 4 * kMiB, "x", &c4).ok());
}

TEST(MemoryBudgetTest, ResizeShrinksAlwaysAndGrowsWithinTheLimits) {
  MemoryBudget budget(10 * kMiB, "--memory-budget", 0, "--tenant-max-memory");
  Tenant a = MakeTenant("a");
  MemoryCharge c;
  ASSERT_TRUE(budget.Resize(&a, 4 * kMiB, "x", &c).ok());
  ASSERT_TRUE(budget.Resize(&a, 9 * kMiB, "x", &c).ok());
  EXPECT_EQ(budget.used(), 9 * kMiB);
  Status s = budget.Resize(&a, 11 * kMiB, "x", &c);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.bytes(), 9 * kMiB) << "a refused growth leaves the charge as it was";
  EXPECT_NE(s.message().find("needs 2.0 MiB more"), std::string::npos) << s.message();
  ASSERT_TRUE(budget.Resize(&a, 1 * kMiB, "x", &c).ok());
  EXPECT_EQ(budget.used(), 1 * kMiB);
  // Forced: past the limit (what the server already holds), and refusing
  // the next charge until it is given back.
  MemoryCharge forced = budget.Force(&a, 12 * kMiB);
  EXPECT_EQ(budget.used(), 13 * kMiB);
  MemoryCharge next;
  EXPECT_FALSE(budget.Charge(&a, 1, "x", &next).ok());
  forced.Reset();
  EXPECT_TRUE(budget.Charge(&a, 1, "x", &next).ok());
}

TEST(MemoryBudgetTest, ChargesFromManyThreadsBalance) {
  MemoryBudget budget(1000 * kMiB, "--memory-budget", 0, "--tenant-max-memory");
  Tenant a = MakeTenant("a");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        MemoryCharge c;
        ASSERT_TRUE(budget.Charge(&a, 1000 + i, "x", &c).ok());
        ASSERT_TRUE(budget.Resize(&a, 10, "x", &c).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(budget.used(), 0);
  EXPECT_EQ(budget.used_by(&a), 0);
}

TEST(MemoryBudgetTest, TheAutomaticBudgetKeepsRoomForTheProcessAndTheCompileLane) {
  // A 1 GiB container with one compile worker of 256 MiB: 4/5 (1024 - 64 -
  // 320).
  EXPECT_EQ(AutomaticMemoryBudget({1024 * kMiB, "cgroup"}, 1, 256 * kMiB), 512 * kMiB);
  // Never below an eighth of the limit.
  EXPECT_EQ(AutomaticMemoryBudget({512 * kMiB, "cgroup"}, 4, 256 * kMiB), 64 * kMiB);
  // No limit found: unlimited.
  EXPECT_EQ(AutomaticMemoryBudget({0, ""}, 1, 256 * kMiB), std::numeric_limits<int64_t>::max());
  // This machine has some limit (at least its memory).
  const MemoryLimit limit = DetectMemoryLimit();
  EXPECT_GT(limit.bytes, 64 * kMiB);
  EXPECT_FALSE(limit.source.empty());
}

}  // namespace
}  // namespace tether::service
