#include "service/cluster_sessions.h"

#include <spdlog/spdlog.h>

#include "engine/session_export.h"

namespace tether::service {

ClusterSessions::ClusterSessions(std::unique_ptr<SharedSessionStore> store,
                                 std::chrono::milliseconds lease_ttl, OnLost on_lost,
                                 OnRehomed on_rehomed, std::function<void()> on_tick)
    : store_(std::move(store)),
      lease_ttl_(lease_ttl),
      on_lost_(std::move(on_lost)),
      on_rehomed_(std::move(on_rehomed)),
      on_tick_(std::move(on_tick)) {
  // The first renewal before any lease is taken (each lease script renews
  // a lapsed key itself too, so an unreachable store only delays it).
  uint64_t incarnation = 0;
  if (store_->KeepAlive(&incarnation).ok()) incarnation_ = incarnation;
  generation_ = store_->generation();
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  maintainer_ = std::thread([this] { MaintenanceLoop(); });
}

ClusterSessions::~ClusterSessions() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (maintainer_.joinable()) maintainer_.join();
}

Status ClusterSessions::Claim(const std::string& id, const Tenant* tenant, uint64_t* epoch) {
  // Read before: a lease taken while the store changed counts as the older
  // store's, which at worst takes it once more (Rehome; the same epoch when
  // it is this replica's already).
  const uint64_t generation = store_->generation();
  if (Status s = store_->Acquire(id, epoch); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  held_[id] = Lease{*epoch, tenant, generation, store_->incarnation()};
  return Status::Ok();
}

Status ClusterSessions::Rehome(const std::string& id) {
  Lease lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(id);
    if (it == held_.end()) {
      return Status(StatusCode::kAborted, "session " + id + ": no lease on it is held here");
    }
    lease = it->second;
  }
  const uint64_t generation = store_->generation();
  if (lease.generation == generation) {
    return Status(StatusCode::kAborted, "session " + id + ": its lease (epoch " +
                                            std::to_string(lease.epoch) + ") is not one the " +
                                            store_->name() + " lost with its data");
  }
  if (lease.incarnation == 0 || lease.incarnation != store_->incarnation_at_loss()) {
    return Status(StatusCode::kAborted,
                  "session " + id + ": its lease went with the " + store_->name() +
                      "'s data, but this replica's liveness was not continuous until then "
                      "(another replica may have taken the session over before)");
  }
  uint64_t epoch = 0;
  if (Status s = store_->Acquire(id, &epoch); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(id);
  if (it == held_.end()) {
    // Forgotten meanwhile (given up, deleted): not kept.
    return Status(StatusCode::kAborted, "session " + id + ": given up meanwhile");
  }
  if (it->second.epoch == lease.epoch || it->second.generation < generation) {
    spdlog::warn("session {}: its lease (epoch {}) went with the {}'s data; taken again (epoch {})",
                 id, lease.epoch, store_->name(), epoch);
    it->second = Lease{epoch, lease.tenant, generation, store_->incarnation()};
  }
  return Status::Ok();
}

bool ClusterSessions::EpochOf(const std::string& id, uint64_t* epoch) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(id);
  if (it == held_.end()) return false;
  *epoch = it->second.epoch;
  return true;
}

void ClusterSessions::Forget(const std::string& id, bool release) {
  uint64_t epoch = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(id);
    if (it == held_.end()) return;
    epoch = it->second.epoch;
    held_.erase(it);
  }
  if (release) store_->Release(id, epoch);
}

std::vector<std::string> ClusterSessions::Held() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, lease] : held_) out.push_back(id);
  return out;
}

void ClusterSessions::HeartbeatLoop() {
  const auto period = std::max(lease_ttl_ / 3, std::chrono::milliseconds(10));
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    uint64_t incarnation = 0;
    Status s = store_->KeepAlive(&incarnation);
    lock.lock();
    if (!s.ok()) {
      if (!store_down_) spdlog::error("cannot renew this replica's liveness: {}", s.message());
      store_down_ = true;
      continue;
    }
    if (store_down_) spdlog::info("{}: reachable again, liveness renewed", store_->name());
    store_down_ = false;
    if (const uint64_t generation = store_->generation(); generation != generation_) {
      // Every lease is gone with the store's data: the maintenance thread
      // finds each one missing (Adopt) and takes it again (Rehome).
      spdlog::warn(
          "{}: the store came back without its data (its identity changed); taking this "
          "replica's {} lease(s) again and writing their sessions back",
          store_->name(), held_.size());
      generation_ = generation;
      confirm_ = true;
      cv_.notify_all();
    }
    if (incarnation != incarnation_) {
      // The key lapsed (this process paused, or the store out of reach,
      // longer than the TTL): every lease held awaits confirmation.
      if (incarnation_ != 0) {
        spdlog::warn(
            "{}: this replica's liveness lapsed; now incarnation {}, confirming {} lease(s)",
            store_->name(), incarnation, held_.size());
        confirm_ = true;
        cv_.notify_all();
      }
      incarnation_ = incarnation;
    }
  }
}

void ClusterSessions::MaintenanceLoop() {
  const auto period = std::max(lease_ttl_ / 3, std::chrono::milliseconds(10));
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
    std::vector<std::pair<std::string, std::pair<const Tenant*, Status>>> lost;
    std::vector<std::pair<std::string, const Tenant*>> rehomed;
    if (confirm_) {
      confirm_ = false;
      const std::map<std::string, Lease> held = held_;
      lock.unlock();
      for (const auto& [id, lease] : held) {
        Status s = store_->Adopt(id, lease.epoch);
        if (s.ok()) {
          // Confirmed this replica's under the incarnation now in force.
          std::lock_guard<std::mutex> again(mu_);
          auto it = held_.find(id);
          if (it != held_.end() && it->second.epoch == lease.epoch) {
            it->second.incarnation = store_->incarnation();
          }
          continue;
        }
        if (s.code() == StatusCode::kAborted) {
          // Gone with the store's data rather than taken: taken again.
          Status again = Rehome(id);
          if (again.ok()) {
            rehomed.push_back({id, lease.tenant});
            continue;
          }
          // Its words when the store lost its data (why it is not taken
          // again) or could not be asked; else the lease was taken over.
          if (again.code() == StatusCode::kUnavailable ||
              lease.generation != store_->generation()) {
            s = again;
          }
        }
        if (s.code() == StatusCode::kAborted) {
          lost.push_back({id, {lease.tenant, s}});
        } else if (!s.ok()) {
          std::lock_guard<std::mutex> again(mu_);
          confirm_ = true;  // the next period tries them all again
          break;
        }
      }
      lock.lock();
      // Only a lease still held as it was copied is lost: one taken again
      // meanwhile (a write that found it gone, PersistNow's Rehome) is not.
      std::erase_if(lost, [&](const auto& entry) {
        auto it = held_.find(entry.first);
        if (it == held_.end() || it->second.epoch != held.at(entry.first).epoch) return true;
        held_.erase(it);
        return false;
      });
    }
    lock.unlock();
    for (const auto& [id, why] : lost) {
      spdlog::warn("session {}: lease lost ({}); giving the session up here", id,
                   why.second.message());
      on_lost_(id, why.first, why.second);
    }
    for (const auto& [id, tenant] : rehomed) on_rehomed_(id, tenant);
    if (on_tick_) on_tick_();
    lock.lock();
  }
}

StatusOr<std::unique_ptr<Simulation>> ClusterSessions::Import(const std::string& data,
                                                              const CompileOptions& options) {
  v1::SessionExport payload;
  if (Status s = DecodeSessionExport(data, &payload, "data"); !s.ok()) return s;
  const std::string key = SpecSha256(payload.spec());
  std::shared_ptr<const Model> model;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (auto it = models_.find(key); it != models_.end()) {
      model = it->second;
      ++hits_;
    }
  }
  std::unique_ptr<Simulation> simulation;
  if (model) {
    simulation = Simulation::FromModel(payload.spec(), std::move(model));
  } else {
    auto created = Simulation::Create(payload.spec(), nullptr, options);
    if (!created.ok()) return created.status();
    simulation = std::move(created).value();
    std::lock_guard<std::mutex> lock(cache_mu_);
    ++misses_;
    if (models_.emplace(key, simulation->shared_model()).second) {
      cache_order_.push_back(key);
      if (cache_order_.size() > kCachedModels) {
        models_.erase(cache_order_.front());
        cache_order_.pop_front();
      }
    }
  }
  if (Status s = simulation->RestoreState(payload.state(), "data.state"); !s.ok()) return s;
  return simulation;
}

uint64_t ClusterSessions::cache_hits() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  return hits_;
}

uint64_t ClusterSessions::cache_misses() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  return misses_;
}

}  // namespace tether::service
