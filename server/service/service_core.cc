#include "service/service_core.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>

#include <spdlog/fmt/fmt.h>

#include <spdlog/spdlog.h>

#include "engine/session_export.h"

#include "service/rpc_common.h"

namespace tether::service {
namespace {

ServiceOptions Resolved(ServiceOptions options) {
  if (options.workers == 0) {
    options.workers = std::max(1u, std::thread::hardware_concurrency());
  }
  if (options.max_extra_workers == 0) options.max_extra_workers = options.workers;
  if (options.tenant_max_queued_compiles == 0) {
    options.tenant_max_queued_compiles = std::max<std::size_t>(1, options.max_queued_compiles / 2);
  }
  return options;
}

// The snapshots of a session file read back, each checked by restoring it
// into a scratch simulation (so that RestoreSnapshot cannot fail on it
// later); one that cannot be served is logged and left out. Descriptions
// other than the session's are compiled once each within `compile`.
std::vector<Session::SavedSnapshot> RestoreSnapshots(const StateDir::Record& r,
                                                     const Simulation& simulation,
                                                     const CompileOptions& compile) {
  auto own_spec = std::make_shared<const v1::SimulationSpec>(simulation.spec());
  // By spec index: the description and its compiled model (null: unusable).
  std::vector<std::shared_ptr<const v1::SimulationSpec>> specs{own_spec};
  std::vector<std::shared_ptr<const Model>> models{simulation.shared_model()};
  for (std::size_t k = 0; k < r.specs.size(); ++k) {
    auto spec = std::make_shared<v1::SimulationSpec>();
    std::shared_ptr<const Model> model;
    if (!spec->ParseFromString(r.specs[k])) {
      spdlog::error("state-dir: {}: spec section {} does not parse; its snapshots are left out",
                    r.file, k + 1);
    } else if (auto created = Simulation::Create(*spec, nullptr, compile); !created.ok()) {
      spdlog::error(
          "state-dir: {}: spec section {} does not compile ({}); its snapshots are left out",
          r.file, k + 1, created.status().message());
    } else {
      model = (*created)->shared_model();
    }
    specs.push_back(std::move(spec));
    models.push_back(std::move(model));
  }
  std::vector<Session::SavedSnapshot> out;
  for (const StateDir::SnapshotRecord& s : r.snapshots) {
    const uint64_t id = s.meta.snapshot_id();
    if (!models[s.spec]) continue;  // logged above
    Session::SavedSnapshot saved;
    saved.meta = s.meta;
    saved.spec = specs[s.spec];
    saved.model = models[s.spec];
    Status status = Status::Ok();
    if (!saved.state.ParseFromString(s.state)) {
      status = Status(StatusCode::kInvalidArgument, "its state does not parse");
    } else if (id == 0 || id >= r.next_snapshot_id) {
      status = Status(StatusCode::kInvalidArgument, "its id is not below next_snapshot_id");
    } else {
      status = Simulation::FromModel(*saved.spec, saved.model)->RestoreState(saved.state, "state");
    }
    if (!status.ok()) {
      spdlog::error("state-dir: {}: snapshot {} left out: {}", r.file, id, status.message());
      continue;
    }
    out.push_back(std::move(saved));
  }
  return out;
}

// --memory-budget, or the automatic budget for the limit found
// (service/memory_budget.h), with where it came from for messages.
MemoryBudget MakeMemoryBudget(const ServiceOptions& o) {
  const std::string tenant_source = "--tenant-max-memory";
  if (o.memory_budget > 0) {
    return MemoryBudget(o.memory_budget, "--memory-budget", o.tenant_max_memory, tenant_source);
  }
  const MemoryLimit limit = DetectMemoryLimit();
  const int64_t bytes = AutomaticMemoryBudget(limit, o.compile_workers, o.compile.max_bytes);
  return MemoryBudget(bytes,
                      "--memory-budget, automatic: " + FormatBytes(limit.bytes) + " from " +
                          limit.source + ", less room for the process and the compile lane",
                      o.tenant_max_memory, tenant_source);
}

}  // namespace

ServiceCore::ServiceCore(const ServiceOptions& options, std::unique_ptr<Authenticator> auth)
    : options_(Resolved(options)),
      auth_(auth ? std::move(auth) : std::make_unique<Authenticator>(options_)),
      memory_(MakeMemoryBudget(options_)),
      store_(options_.max_sessions, options_.session_idle_timeout, {}, &memory_),
      pool_(options_.workers, options_.worker_spin, options_.max_extra_workers),
      compile_pool_(options_.compile_workers, std::chrono::microseconds(0)) {
  spdlog::info("memory budget for sessions: {} ({})", FormatBytes(memory_.limit()),
               memory_.source());
  if (options_.stream_stall_timeout.count() > 0) watchdog_ = std::thread([this] { WatchStalls(); });
  store_.StartExpiry([this](const Session& s) {
    spdlog::info("session expired: tenant={} session={} step={}", s.owner().name(), s.id(), [&] {
      v1::Session p;
      s.ToProto(&p);
      return p.step();
    }());
    ForgetPersisted(s.id());
  });
}

ServiceCore::~ServiceCore() {
  StopWorkers();
  {
    std::lock_guard<std::mutex> lock(persist_mu_);
    checkpoint_stop_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
}

bool ServiceCore::RestoreSessions(std::string* error) {
  if (options_.state_dir.empty()) {
    if (options_.checkpoint_interval.count() > 0) {
      *error = "--checkpoint-interval: needs --state-dir DIR";
      return false;
    }
    return true;
  }
  // The largest file a session can need: its export and, per snapshot, a
  // state and a description, each at most a message (every one of them
  // can be sent in one), plus 1 MiB for the header.
  const std::size_t message = options_.max_message_bytes;
  const std::size_t parts = 1 + 2 * options_.max_snapshots;
  const std::size_t cap = message > (SIZE_MAX - (1u << 20)) / parts
                              ? SIZE_MAX
                              : message * parts + (std::size_t{1} << 20);
  state_dir_ = StateDir::Open(options_.state_dir, cap, error);
  if (!state_dir_) return false;
  last_checkpoint_ = state_dir_->ReadCheckpointTime();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> problems;
  std::vector<StateDir::Record> records = state_dir_->ReadAll(&problems);
  for (const auto& p : problems) spdlog::error("state-dir: {}", p);
  std::size_t served = 0;
  for (StateDir::Record& r : records) {
    Tenant* tenant = auth_->FindTenant(r.tenant);
    if (!tenant) {
      spdlog::error(
          "state-dir: {}: tenant '{}' is not configured (tokens file); not served, "
          "the file is kept",
          r.file, r.tenant);
      continue;
    }
    CompileOptions compile;
    compile.limits = options_.compile;
    auto imported = ImportSimulation(r.data, compile, nullptr, "data");
    if (!imported.ok()) {
      spdlog::error("state-dir: {}: cannot be served: {}; the file is kept", r.file,
                    imported.status().message());
      continue;
    }
    if (Status s = store_.Reserve(tenant); !s.ok()) {
      spdlog::error("state-dir: {}: not served: {}; the file is kept", r.file, s.message());
      continue;
    }
    std::unique_ptr<Simulation> simulation = std::move(imported).value();
    std::vector<Session::SavedSnapshot> snapshots = RestoreSnapshots(r, *simulation, compile);
    // Charged whatever the budget: an acknowledged session is never dropped
    // (new ones are refused while the server is over it).
    MemoryCharge charge = memory_.Force(tenant, Session::InitialBytes(*simulation));
    auto session = store_.Add(std::move(simulation), r.display_name, tenant, r.id,
                              RestoredOrder{r.seq, r.create_time}, std::move(charge));
    if (r.failed) session->MarkFailed(r.error);
    session->AdoptSnapshots(std::move(snapshots), r.next_snapshot_id);
    std::lock_guard<std::mutex> lock(persist_mu_);
    written_[session->id()] = session->persisted_version();
    ++served;
  }
  spdlog::info("state-dir {}: serving {} session(s) written there ({} ms)", state_dir_->path(),
               served,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count());
  if (options_.checkpoint_interval.count() > 0) {
    checkpointer_ = std::thread([this] { CheckpointLoop(); });
  }
  return true;
}

bool ServiceCore::Checkpoint(bool final) {
  // persist_mu_ is taken per session, so a DeleteSession (which removes the
  // file under it, on a gRPC thread) waits for one write at most.
  std::size_t written = 0, failed = 0;
  std::string first_error;
  for (const auto& session : store_.All()) {
    std::lock_guard<std::mutex> lock(persist_mu_);
    if (session->deleted()) continue;
    // Unchanged since written and its file still there: nothing to copy
    // (the state and up to --max-snapshots snapshots) or write.
    auto it = written_.find(session->id());
    if (it != written_.end() && it->second == session->persisted_version() &&
        state_dir_->Exists(session->id())) {
      continue;
    }
    Session::Persisted p = session->PersistedForm();
    if (Status s = state_dir_->Write(*session, p); !s.ok()) {
      // Not recorded as written: the next checkpoint tries again.
      if (final) spdlog::error("state-dir: session {}: {}", session->id(), s.message());
      if (first_error.empty()) first_error = "session " + session->id() + ": " + s.message();
      ++failed;
      continue;
    }
    written_[session->id()] = p.version;
    ++written;
  }
  if (written) spdlog::debug("state-dir: wrote {} session(s)", written);
  // Also the test that DIR can be written when no session changed.
  Status stamp = state_dir_->WriteCheckpointTime(std::chrono::system_clock::now());
  if (!stamp.ok() && first_error.empty()) first_error = stamp.message();
  if (failed) first_error = std::to_string(failed) + " session(s) not written; " + first_error;
  SetPersistenceOk(failed == 0 && stamp.ok(), first_error);
  return failed == 0;
}

void ServiceCore::SetPersistenceOk(bool ok, const std::string& why) {
  std::lock_guard<std::mutex> lock(health_mu_);
  if (ok == persist_ok_) {
    if (!ok) spdlog::debug("state-dir {}: still cannot write: {}", state_dir_->path(), why);
    return;
  }
  persist_ok_ = ok;
  if (ok) {
    spdlog::info("state-dir {}: writing again; tether.v1.Simulator is SERVING", state_dir_->path());
  } else {
    spdlog::error(
        "state-dir {}: cannot write ({}); tether.v1.Simulator is NOT_SERVING until a "
        "checkpoint succeeds (retried every {}s)",
        state_dir_->path(), why,
        std::chrono::duration<double>(options_.checkpoint_interval).count());
  }
  if (on_persist_change_) on_persist_change_(ok);
}

void ServiceCore::WatchPersistence(std::function<void(bool writable)> on_change) {
  std::lock_guard<std::mutex> lock(health_mu_);
  on_persist_change_ = std::move(on_change);
  if (on_persist_change_) on_persist_change_(persist_ok_);
}

bool ServiceCore::persistence_ok() const {
  std::lock_guard<std::mutex> lock(health_mu_);
  return persist_ok_;
}

void ServiceCore::CheckpointLoop() {
  // The schedule goes on from the last checkpoint written before this
  // start (DIR/checkpoint-time): a restart never postpones a checkpoint
  // that was due, and one overdue runs at once.
  auto wait = options_.checkpoint_interval;
  if (last_checkpoint_) {
    const auto due = *last_checkpoint_ + options_.checkpoint_interval;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        due - std::chrono::system_clock::now());
    wait = std::clamp(left, std::chrono::milliseconds(0), options_.checkpoint_interval);
  }
  std::unique_lock<std::mutex> lock(persist_mu_);
  while (!checkpoint_stop_) {
    checkpoint_cv_.wait_for(lock, wait, [this] { return checkpoint_stop_; });
    if (checkpoint_stop_) break;
    lock.unlock();
    Checkpoint();
    lock.lock();
    wait = options_.checkpoint_interval;
  }
}

bool ServiceCore::PersistSessions() {
  if (!state_dir_) return true;
  {
    std::lock_guard<std::mutex> lock(persist_mu_);
    if (drain_done_) return drain_ok_;
    checkpoint_stop_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  const bool ok = Checkpoint(/*final=*/true);
  std::lock_guard<std::mutex> lock(persist_mu_);
  drain_done_ = true;
  drain_ok_ = ok;
  if (ok) {
    spdlog::info("state-dir {}: {} session(s) written", state_dir_->path(), written_.size());
  } else {
    spdlog::critical(
        "state-dir {}: the drain could not write every session (see above); those sessions "
        "are lost unless an earlier checkpoint wrote them",
        state_dir_->path());
  }
  return ok;
}

void ServiceCore::ForgetPersisted(const std::string& id) {
  if (!state_dir_) return;
  std::lock_guard<std::mutex> lock(persist_mu_);
  written_.erase(id);
  state_dir_->Remove(id);
}

void ServiceCore::Register(StreamBase* stream) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.insert(stream);
}

void ServiceCore::Unregister(StreamBase* stream) {
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams_.erase(stream);
  }
  streams_cv_.notify_all();
}

void ServiceCore::InterruptStreams(const Session* session, const grpc::Status& status) {
  // Interrupt never calls into gRPC with a lock held by gRPC, and never
  // runs OnDone inline, so holding streams_mu_ here is safe.
  std::lock_guard<std::mutex> lock(streams_mu_);
  for (StreamBase* s : streams_) {
    if (session == nullptr || s->attached() == session) s->Interrupt(status);
  }
}

void ServiceCore::StreamEnded() {
  // Taking the lock orders this wake-up after a waiter's check.
  { std::lock_guard<std::mutex> lock(streams_mu_); }
  streams_cv_.notify_all();
}

void ServiceCore::BeginShutdown() { shutting_down_.store(true); }

bool ServiceCore::WaitForStreams(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(streams_mu_);
  return streams_cv_.wait_until(lock, deadline, [this] {
    return std::all_of(streams_.begin(), streams_.end(),
                       [](const StreamBase* s) { return s->ended(); });
  });
}

void ServiceCore::DrainStreams() {
  std::lock_guard<std::mutex> lock(streams_mu_);
  if (drained_) return;
  drained_ = true;
  const grpc::Status status(grpc::StatusCode::UNAVAILABLE,
                            "the server is shutting down and its grace (--shutdown-grace) ran out");
  for (StreamBase* s : streams_) s->Drain(status);
}

void ServiceCore::WatchStalls() {
  const auto timeout = options_.stream_stall_timeout;
  const auto period = std::clamp<std::chrono::milliseconds>(
      timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  const grpc::Status stalled(
      grpc::StatusCode::DEADLINE_EXCEEDED,
      fmt::format("the client read nothing for {} s (--stream-stall-timeout): the stream was "
                  "ended and its session given back, READY at its last computed step (unread "
                  "for as long again, the call is cancelled)",
                  std::chrono::duration<double>(timeout).count()));
  std::unique_lock<std::mutex> lock(watch_mu_);
  while (!watch_cv_.wait_for(lock, period, [this] { return watch_stop_; })) {
    lock.unlock();
    {
      const auto before = StreamBase::Clock::now() - timeout;
      std::lock_guard<std::mutex> streams_lock(streams_mu_);
      for (StreamBase* s : streams_) s->CheckStall(before, stalled);
    }
    lock.lock();
  }
}

void ServiceCore::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watch_stop_ = true;
  }
  watch_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  compile_pool_.Stop();
  pool_.Stop();
}

}  // namespace tether::service
