// SessionStore and Session (server/service/session_store.*) alone, without
// gRPC: the capacity limit and its reservations, the lease that lets one
// stream advance a session, paging, and idle expiry on an injected clock.
#include "service/session_store.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/spec_json.h"

namespace tether::service {
namespace {

using namespace std::chrono_literals;
using SteadyTime = std::chrono::steady_clock::time_point;

// A one-coordinate harmonic oscillator: cheap to compile.
std::unique_ptr<Simulation> NewSimulation() {
  v1::SimulationSpec spec;
  Status parsed = ParseSpecJson(
      R"json({"system":{"coordinates":["x"],"masses":{"values":[1]},
          "potentialEnergy":"x^2/2"},
          "initial":{"q":[1],"v":[0]},
          "integrator":{"method":"RK4","stepSize":0.01}})json",
      &spec, "oscillator");
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  auto created = Simulation::Create(spec);
  EXPECT_TRUE(created.ok()) << created.status().message();
  if (!created.ok()) return nullptr;
  return std::move(created).value();
}

std::shared_ptr<Session> AddSession(SessionStore* store) {
  EXPECT_TRUE(store->Reserve().ok());
  return store->Add(NewSimulation(), "test");
}

// A clock that moves only when told to.
class FakeClock {
 public:
  SteadyTime Now() const { return SteadyTime(std::chrono::nanoseconds(ns_.load())); }
  void Advance(std::chrono::nanoseconds d) { ns_ += d.count(); }
  SteadyClock AsClock() {
    return [this] { return Now(); };
  }

 private:
  std::atomic<int64_t> ns_{std::chrono::nanoseconds(1h).count()};
};

// --- Capacity ---------------------------------------------------------------

TEST(SessionStoreTest, ReserveStopsAtMaxSessionsCountingReservations) {
  SessionStore store(2, 0ms);
  ASSERT_TRUE(store.Reserve().ok());
  ASSERT_TRUE(store.Reserve().ok());
  // Two reserved, none added yet: the third is refused.
  Status third = store.Reserve();
  EXPECT_EQ(third.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(third.message().find("maximum of 2 sessions"), std::string::npos) << third.message();
  // Unreserve frees a place; Add turns a reservation into a session.
  store.Unreserve();
  ASSERT_TRUE(store.Reserve().ok());
  auto a = store.Add(NewSimulation(), "a");
  auto b = store.Add(NewSimulation(), "b");
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.Reserve().code(), StatusCode::kResourceExhausted);
  // Removing a session frees its place.
  ASSERT_EQ(store.Remove(a->id()), a);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_TRUE(store.Reserve().ok());
}

TEST(SessionStoreTest, FindRemoveAndDistinctIds) {
  SessionStore store(10, 0ms);
  auto a = AddSession(&store);
  auto b = AddSession(&store);
  EXPECT_NE(a->id(), b->id());
  EXPECT_EQ(a->id().size(), 32u);
  EXPECT_LT(a->seq(), b->seq());
  EXPECT_EQ(store.Find(a->id()), a);
  EXPECT_EQ(store.Find("0123456789abcdef0123456789abcdef"), nullptr);
  EXPECT_FALSE(a->deleted());
  EXPECT_EQ(store.Remove(a->id()), a);
  EXPECT_TRUE(a->deleted());
  EXPECT_EQ(store.Find(a->id()), nullptr);
  EXPECT_EQ(store.Remove(a->id()), nullptr);
  EXPECT_EQ(store.Find(b->id()), b);
}

TEST(SessionStoreTest, ListPagesInCreationOrder) {
  SessionStore store(10, 0ms);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(AddSession(&store)->id());
  store.Remove(ids[1]);
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    std::vector<std::shared_ptr<Session>> page;
    std::string next;
    ASSERT_TRUE(store.List(2, token, &page, &next).ok());
    EXPECT_LE(page.size(), 2u);
    for (const auto& s : page) seen.push_back(s->id());
    token = next;
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  EXPECT_EQ(seen, (std::vector<std::string>{ids[0], ids[2], ids[3], ids[4]}));
  EXPECT_EQ(pages, 2);

  std::vector<std::shared_ptr<Session>> page;
  std::string next;
  EXPECT_EQ(store.List(-1, "", &page, &next).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.List(2, "garbage", &page, &next).code(), StatusCode::kInvalidArgument);
}

// --- The lease ---------------------------------------------------------------

TEST(SessionTest, OneLeaseAtATime) {
  SessionStore store(10, 0ms);
  auto s = AddSession(&store);
  EXPECT_EQ(s->status(), v1::READY);
  ASSERT_TRUE(s->Acquire("Run").ok());
  EXPECT_EQ(s->status(), v1::RUNNING);
  Status second = s->Acquire("CoSimulate");
  EXPECT_EQ(second.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.message().find("CoSimulate: session " + s->id() + " is RUNNING"),
            std::string::npos)
      << second.message();
  s->Release();
  EXPECT_EQ(s->status(), v1::READY);
  ASSERT_TRUE(s->Acquire("Run").ok());
  s->Release();
}

TEST(SessionTest, ReleasePublishesTheHoldersState) {
  SessionStore store(10, 0ms);
  auto s = AddSession(&store);
  ASSERT_TRUE(s->Acquire("Run").ok());
  RunOptions run;
  run.steps = 7;
  ASSERT_TRUE(s->simulation()->BeginRun(run).ok());
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  while (!s->simulation()->run_done()) {
    ASSERT_TRUE(s->simulation()->Advance(100, &frames).ok());
  }
  // Readers see the old snapshot until the holder publishes.
  v1::Session before;
  s->ToProto(&before);
  EXPECT_EQ(before.step(), 0u);
  s->Release();
  v1::Session after;
  s->ToProto(&after);
  EXPECT_EQ(after.step(), 7u);
  EXPECT_EQ(after.status(), v1::READY);
  EXPECT_DOUBLE_EQ(after.state().t(), 0.07);
}

TEST(SessionTest, AFailedReleaseMarksTheSessionFailedForGood) {
  SessionStore store(10, 0ms);
  auto s = AddSession(&store);
  ASSERT_TRUE(s->Acquire("Run").ok());
  s->Release(Status(StatusCode::kAborted, "step 12: x is not finite"));
  EXPECT_EQ(s->status(), v1::FAILED);
  v1::Session proto;
  s->ToProto(&proto);
  EXPECT_EQ(proto.error(), "step 12: x is not finite");
  Status again = s->Acquire("Run");
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("FAILED: step 12: x is not finite"), std::string::npos)
      << again.message();
}

TEST(SessionTest, ADeletedSessionCannotBeLeased) {
  SessionStore store(10, 0ms);
  auto s = AddSession(&store);
  store.Remove(s->id());
  EXPECT_EQ(s->Acquire("Run").code(), StatusCode::kNotFound);
}

// --- Idle expiry on an injected clock -----------------------------------------

TEST(SessionStoreExpiryTest, ExpiresOnlyAfterTheTimeoutSinceLastUse) {
  FakeClock clock;
  SessionStore store(10, 10s, clock.AsClock());
  auto a = AddSession(&store);
  clock.Advance(5s);
  auto b = AddSession(&store);  // created 5 s later
  clock.Advance(4s);
  EXPECT_TRUE(store.ExpireIdle(clock.Now()).empty());  // a idle 9 s
  a->Touch();                                          // a used at 9 s
  clock.Advance(1s);
  EXPECT_TRUE(store.ExpireIdle(clock.Now()).empty());  // a 1 s, b 5 s
  clock.Advance(5s);
  auto expired = store.ExpireIdle(clock.Now());  // a 6 s, b 10 s
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], b);
  EXPECT_TRUE(b->deleted());
  EXPECT_EQ(store.Find(b->id()), nullptr);
  EXPECT_EQ(store.Find(a->id()), a);
  clock.Advance(4s);
  expired = store.ExpireIdle(clock.Now());  // a 10 s
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], a);
  EXPECT_EQ(store.size(), 0u);
}

TEST(SessionStoreExpiryTest, ALeasedSessionNeverExpiresAndPublishCountsAsUse) {
  FakeClock clock;
  SessionStore store(10, 10s, clock.AsClock());
  auto s = AddSession(&store);
  ASSERT_TRUE(s->Acquire("Run").ok());
  clock.Advance(1h);
  EXPECT_TRUE(store.ExpireIdle(clock.Now()).empty());
  s->Release();  // publishes: last use is now
  clock.Advance(9s);
  EXPECT_TRUE(store.ExpireIdle(clock.Now()).empty());
  clock.Advance(1s);
  EXPECT_EQ(store.ExpireIdle(clock.Now()).size(), 1u);
}

TEST(SessionStoreExpiryTest, ZeroTimeoutNeverExpires) {
  FakeClock clock;
  SessionStore store(10, 0ms, clock.AsClock());
  AddSession(&store);
  clock.Advance(24h * 365);
  EXPECT_TRUE(store.ExpireIdle(clock.Now()).empty());
  EXPECT_EQ(store.size(), 1u);
}

TEST(SessionStoreExpiryTest, TheExpiryThreadReadsTheInjectedClock) {
  // An hour's timeout: on the real clock nothing would expire during this
  // test; the thread wakes every second and sees the fake clock's jump.
  FakeClock clock;
  SessionStore store(10, 1h, clock.AsClock());
  auto s = AddSession(&store);
  std::promise<std::string> expired;
  std::atomic<bool> once{false};
  store.StartExpiry([&](const Session& session) {
    if (!once.exchange(true)) expired.set_value(session.id());
  });
  auto future = expired.get_future();
  EXPECT_EQ(future.wait_for(1500ms), std::future_status::timeout);  // not yet idle
  clock.Advance(1h);
  ASSERT_EQ(future.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(future.get(), s->id());
  EXPECT_EQ(store.Find(s->id()), nullptr);
}

}  // namespace
}  // namespace tether::service

namespace tether::service {
namespace {

// Two tenants' sessions in one store: each sees, lists and removes only its
// own; another tenant's id is answered like an absent one; each tenant's
// quota holds apart from the store's.
TEST(SessionStoreTenantTest, TenantsSeeOnlyTheirOwnSessions) {
  Tenant acme("acme", 100, "--tenant-max-sessions", 100, "--tenant-max-streams");
  Tenant beta("beta", 100, "--tenant-max-sessions", 100, "--tenant-max-streams");
  SessionStore store(100, 0ms);
  std::vector<std::string> mine;
  for (int i = 0; i < 7; ++i) {
    for (Tenant* t : {&acme, &beta}) {
      ASSERT_TRUE(store.Reserve(t).ok());
      auto s = store.Add(NewSimulation(), "", t);
      if (t == &acme) mine.push_back(s->id());
    }
  }
  EXPECT_EQ(store.Find(mine[0], &acme)->id(), mine[0]);
  EXPECT_EQ(store.Find(mine[0], &beta), nullptr);
  EXPECT_EQ(store.Remove(mine[0], &beta), nullptr);
  EXPECT_EQ(store.held_by(&acme), 7u);
  // Pages of 3 list acme's 7 sessions, in order, and nothing of beta's.
  std::vector<std::string> listed;
  std::string token, next;
  int pages = 0;
  do {
    std::vector<std::shared_ptr<Session>> page;
    ASSERT_TRUE(store.List(3, token, &page, &next, &acme).ok());
    EXPECT_EQ(page.size(), next.empty() ? 1u : 3u);
    for (const auto& s : page) listed.push_back(s->id());
    token = next;
  } while (!token.empty() && ++pages < 10);
  EXPECT_EQ(listed, mine);
  ASSERT_NE(store.Remove(mine[0], &acme), nullptr);
  EXPECT_EQ(store.held_by(&acme), 6u);
  EXPECT_EQ(store.held_by(&beta), 7u);
}

TEST(SessionStoreTenantTest, TenantQuotaIsPerTenantAndReleasedOnRemove) {
  Tenant small("small", 2, "max_sessions", 1, "max_streams");
  Tenant other("other", 100, "--tenant-max-sessions", 1, "--tenant-max-streams");
  SessionStore store(100, 0ms);
  ASSERT_TRUE(store.Reserve(&small).ok());
  auto a = store.Add(NewSimulation(), "", &small);
  ASSERT_TRUE(store.Reserve(&small).ok());
  Status full = store.Reserve(&small);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("tenant 'small'"), std::string::npos) << full.message();
  EXPECT_NE(full.message().find("max_sessions"), std::string::npos) << full.message();
  EXPECT_EQ(full.subject().name, "tenant:small");
  EXPECT_TRUE(store.Reserve(&other).ok());  // another tenant is not held back
  store.Unreserve(&small);
  EXPECT_TRUE(store.Reserve(&small).ok());
  store.Unreserve(&small);
  ASSERT_NE(store.Remove(a->id(), &small), nullptr);
  EXPECT_EQ(store.held_by(&small), 0u);
  // Streams: one slot, given back.
  ASSERT_TRUE(small.AcquireStream().ok());
  EXPECT_EQ(small.AcquireStream().code(), StatusCode::kResourceExhausted);
  small.ReleaseStream();
  EXPECT_TRUE(small.AcquireStream().ok());
}

}  // namespace
}  // namespace tether::service
