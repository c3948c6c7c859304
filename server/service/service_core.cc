#include "service/service_core.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>

#include <spdlog/fmt/fmt.h>

#include <spdlog/spdlog.h>

#include "engine/session_export.h"

#include "service/redis_session_store.h"
#include "service/rpc_common.h"
#include "service/status_mapping.h"

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
  // Only the sections a kept snapshot names: one whose checksum failed has
  // had its snapshots left out (and said so) as the file was read, and its
  // bytes are not to be parsed.
  std::vector<char> named(r.specs.size() + 1, 0);
  for (const StateDir::SnapshotRecord& s : r.snapshots) named[s.spec] = 1;
  for (std::size_t k = 0; k < r.specs.size(); ++k) {
    auto spec = std::make_shared<v1::SimulationSpec>();
    std::shared_ptr<const Model> model;
    if (!named[k + 1]) {
      // left null: no snapshot reads it
    } else if (!spec->ParseFromString(r.specs[k])) {
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
  // The compile lane's workers and one ensemble compile (behind
  // ServiceCore::ensemble_compile_gate).
  const int64_t bytes = AutomaticMemoryBudget(limit, o.compile_workers + 1, o.compile.max_bytes);
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
    ForgetPersisted(s.id(), s.owner().name());
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

std::shared_ptr<Session> ServiceCore::Serve(const StateDir::Record& r, const Tenant* tenant,
                                            std::unique_ptr<Simulation> simulation,
                                            const CompileOptions& compile) {
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
  return session;
}

bool ServiceCore::RestoreSessions(std::string* error) {
  if (!options_.session_store.empty()) {
    if (!options_.state_dir.empty()) {
      *error =
          "--session-store and --state-dir: expected one of them, found both (a shared store "
          "holds the sessions of every replica; a state directory those of one)";
      return false;
    }
    auto store = RedisSessionStore::Open(options_.session_store, options_.lease_ttl, error);
    if (!store) return false;
    const bool reachable = store->Reachable();
    const std::string name = store->name();
    const std::string owner = store->owner();
    cluster_ = std::make_unique<ClusterSessions>(
        std::move(store), options_.lease_ttl,
        [this](const std::string& id, const Tenant* tenant, const Status& why) {
          GiveUp(id, tenant, why);
        },
        [this](const std::string& id, const Tenant* tenant) { WriteBack(id, tenant); },
        [this] { HandBackIdle(); });
    if (reachable) {
      spdlog::info("{}: sessions are shared, this replica's lease owner id is {}", name, owner);
    } else {
      spdlog::error("{}: not reachable at start-up; session calls fail UNAVAILABLE until it is",
                    name);
    }
    if (options_.checkpoint_interval.count() > 0) {
      checkpointer_ = std::thread([this] { CheckpointLoop(); });
    }
    return true;
  }
  if (options_.state_dir.empty()) {
    if (options_.checkpoint_interval.count() > 0) {
      *error = "--checkpoint-interval: needs --state-dir DIR or --session-store URL";
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
    Serve(r, tenant, std::move(imported).value(), compile);
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
  // --session-store: sessions whose lease was lost (given up after the loop).
  std::vector<std::pair<std::shared_ptr<Session>, Status>> lost;
  for (const auto& session : store_.All()) {
    std::lock_guard<std::mutex> lock(persist_mu_);
    if (session->deleted()) continue;
    // Unchanged since written and its file still there: nothing to copy
    // (the state and up to --max-snapshots snapshots) or write.
    auto it = written_.find(session->id());
    if (it != written_.end() && it->second == session->persisted_version() &&
        (cluster_ || state_dir_->Exists(session->id()))) {
      continue;
    }
    Session::Persisted p = session->PersistedForm();
    if (Status s = WriteSharedLocked(*session, p); !s.ok()) {
      if (s.code() == StatusCode::kAborted && cluster_) lost.emplace_back(session, s);
      // Not recorded as written: the next checkpoint tries again.
      if (final) spdlog::error("{}: session {}: {}", PersistenceName(), session->id(), s.message());
      if (first_error.empty()) first_error = "session " + session->id() + ": " + s.message();
      ++failed;
      continue;
    }
    written_[session->id()] = p.version;
    ++written;
  }
  for (const auto& [session, why] : lost) GiveUp(session->id(), &session->owner(), why);
  failed -= lost.size();  // not this replica's to write any more
  if (written) spdlog::debug("{}: wrote {} session(s)", PersistenceName(), written);
  // Also the test that DIR can be written (the store reached) when no
  // session changed.
  Status stamp = Status::Ok();
  if (state_dir_) {
    stamp = state_dir_->WriteCheckpointTime(std::chrono::system_clock::now());
  } else if (!cluster_->store().Reachable()) {
    stamp = Status(StatusCode::kUnavailable, cluster_->store().name() + " is unreachable");
  }
  if (!stamp.ok() && first_error.empty()) first_error = stamp.message();
  if (failed) first_error = std::to_string(failed) + " session(s) not written; " + first_error;
  SetPersistenceOk(failed == 0 && stamp.ok(), first_error);
  return failed == 0;
}

void ServiceCore::SetPersistenceOk(bool ok, const std::string& why) {
  std::lock_guard<std::mutex> lock(health_mu_);
  if (ok == persist_ok_) {
    if (!ok) spdlog::debug("{}: still cannot write: {}", PersistenceName(), why);
    return;
  }
  persist_ok_ = ok;
  if (ok) {
    spdlog::info("{}: writing again; tether.v1.Simulator is SERVING", PersistenceName());
  } else {
    spdlog::error(
        "{}: cannot write ({}); tether.v1.Simulator is NOT_SERVING until a "
        "checkpoint succeeds (retried every {}s)",
        PersistenceName(), why,
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
  if (!state_dir_ && !cluster_) return true;
  {
    std::lock_guard<std::mutex> lock(persist_mu_);
    if (drain_done_) return drain_ok_;
    checkpoint_stop_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  const bool ok = Checkpoint(/*final=*/true);
  if (cluster_) {
    // Hand the sessions over: another replica may take each at once
    // instead of after the lease TTL.
    for (const std::string& id : cluster_->Held()) cluster_->Forget(id, /*release=*/true);
  }
  std::lock_guard<std::mutex> lock(persist_mu_);
  drain_done_ = true;
  drain_ok_ = ok;
  if (ok) {
    spdlog::info("{}: {} session(s) written", PersistenceName(), written_.size());
  } else {
    spdlog::critical(
        "{}: the drain could not write every session (see above); those sessions "
        "are lost unless an earlier checkpoint wrote them",
        PersistenceName());
  }
  return ok;
}

std::string ServiceCore::PersistenceName() const {
  return cluster_ ? cluster_->store().name() : "state-dir " + state_dir_->path();
}

Status ServiceCore::WriteLocked(const Session& session, const Session::Persisted& p,
                                bool write_back) {
  if (state_dir_) return state_dir_->Write(session, p);
  uint64_t epoch = 0;
  if (!cluster_->EpochOf(session.id(), &epoch)) {
    return Status(StatusCode::kAborted, "session " + session.id() +
                                            ": this replica holds no lease on it in the " +
                                            cluster_->store().name());
  }
  StatusOr<std::string> bytes = StateDir::Encode(session, p);
  if (!bytes.ok()) return bytes.status();
  SharedSessionStore::Record record;
  record.tenant = session.owner().name();
  record.data = std::move(bytes).value();
  // The summary a listing shows: the session as GetSession shows it, at
  // the state written.
  v1::Session summary;
  session.ToProto(&summary);
  summary.set_status(p.status);
  summary.set_error(p.error);
  *summary.mutable_state() = p.state.state();
  summary.set_step(p.state.step());
  summary.set_snapshot_count(static_cast<uint32_t>(p.snapshots.size()));
  record.summary = summary.SerializeAsString();
  record.created_us = static_cast<uint64_t>(summary.create_time().seconds()) * 1000000u +
                      static_cast<uint64_t>(summary.create_time().nanos() / 1000);
  // With tokens, a tenant's session quota caps what it keeps in the store
  // too: the replicas together hold no more of its sessions than one may
  // (without tokens the one tenant is the whole service, and the store's
  // size is the operator's: deploy/README.md).
  if (auth_->enabled() && !write_back) record.max_indexed = session.owner().max_sessions();
  Status s = cluster_->store().Write(session.id(), epoch, record);
  if (s.code() == StatusCode::kResourceExhausted) {
    spdlog::debug("{}", s.message());
    return session.owner().StoredSessionQuotaExceeded();
  }
  return s;
}

Status ServiceCore::WriteSharedLocked(const Session& session, const Session::Persisted& p) {
  // A session to write back after the store lost its data (until one write
  // of it succeeds): not capped by its tenant's quota.
  Status s = WriteLocked(session, p, written_back_.count(session.id()) > 0);
  // Refused because the store came back without its data (the lease went
  // with it, no other replica took it): the lease taken again, written.
  if (cluster_ && s.code() == StatusCode::kAborted) {
    Status again = cluster_->Rehome(session.id());
    if (again.ok()) {
      written_back_.insert(session.id());
      s = WriteLocked(session, p, /*write_back=*/true);
    } else if (again.code() == StatusCode::kUnavailable) {
      s = again;  // not given up: written once the store answers
    }
  }
  if (s.ok()) written_back_.erase(session.id());
  return s;
}

Status ServiceCore::PersistNow(const Session& session) {
  if (!cluster_) return Status::Ok();
  Status s = Status::Ok();
  {
    std::lock_guard<std::mutex> lock(persist_mu_);
    if (session.deleted()) return Status::Ok();
    auto it = written_.find(session.id());
    if (it != written_.end() && it->second == session.persisted_version()) return Status::Ok();
    Session::Persisted p = session.PersistedForm();
    s = WriteSharedLocked(session, p);
    if (s.ok()) written_[session.id()] = p.version;
  }
  if (s.code() == StatusCode::kAborted) GiveUp(session.id(), &session.owner(), s);
  return s;
}

void ServiceCore::HandBackIdle() {
  const auto now = std::chrono::steady_clock::now();
  const auto idle_for =
      std::max<std::chrono::steady_clock::duration>(options_.lease_ttl, std::chrono::seconds(1));
  for (const auto& session : store_.All()) {
    Session::SteadyTime since;
    uint64_t epoch = 0;
    if (!session->IdleSince(&since) || now - since < idle_for ||
        !cluster_->EpochOf(session->id(), &epoch)) {
      continue;
    }
    // Held while it is written and removed, so no call starts on it
    // meanwhile (one that tries is FAILED_PRECONDITION; its retry loads it
    // from the store).
    if (!session->Acquire("a hand-back to the session store").ok()) continue;
    if (Status s = PersistNow(*session); !s.ok()) {
      session->Release();  // kept; tried again
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(load_mu_);
      store_.Remove(session->id(), &session->owner());
    }
    cluster_->Forget(session->id(), /*release=*/true);
    {
      std::lock_guard<std::mutex> persist(persist_mu_);
      ForgetWrittenLocked(session->id());
    }
    session->Release();
    spdlog::debug("session handed back to the {}: session={}", cluster_->store().name(),
                  session->id());
  }
}

void ServiceCore::WriteBack(const std::string& id, const Tenant* tenant) {
  auto session = store_.Find(id, tenant);
  if (!session) return;
  {
    std::lock_guard<std::mutex> lock(persist_mu_);
    written_.erase(id);  // the store no longer has what was written
    written_back_.insert(id);
  }
  if (Status s = PersistNow(*session); !s.ok()) {
    // Tried again at the next checkpoint or stream end (GiveUp already ran
    // for a lease another replica took).
    spdlog::error("session {}: not written back to the {}: {}", id, cluster_->store().name(),
                  s.message());
  }
}

void ServiceCore::GiveUp(const std::string& id, const Tenant* tenant, const Status& why) {
  // Released if it is still this replica's after all (a write refused
  // under a lease no other replica took): a lease has no TTL of its own,
  // so one kept would stay in force while this replica lives.
  cluster_->Forget(id, /*release=*/true);
  {
    std::lock_guard<std::mutex> lock(persist_mu_);
    ForgetWrittenLocked(id);
  }
  auto session = store_.Remove(id, tenant);
  if (!session) return;
  InterruptStreams(session.get(), ToGrpcStatus(why));
  spdlog::warn("session given up: tenant={} session={}: {}", tenant->name(), id, why.message());
}

grpc::Status ServiceCore::FindSession(const std::string& id, const Tenant* tenant,
                                      std::shared_ptr<Session>* out) {
  *out = store_.Find(id, tenant);
  if (*out) return grpc::Status::OK;
  if (!cluster_) return SessionNotFound(id);
  std::lock_guard<std::mutex> lock(load_mu_);
  *out = store_.Find(id, tenant);
  if (*out) return grpc::Status::OK;
  Status s = LoadShared(id, tenant, out);
  if (s.ok()) return grpc::Status::OK;
  return s.code() == StatusCode::kNotFound ? SessionNotFound(id) : ToGrpcStatus(s);
}

Status ServiceCore::LoadShared(const std::string& id, const Tenant* tenant,
                               std::shared_ptr<Session>* out) {
  const auto start = std::chrono::steady_clock::now();
  SharedSessionStore& shared = cluster_->store();
  // The tenant first: a caller of another tenant never takes the lease.
  std::string owner;
  if (Status s = shared.Tenant(id, &owner); !s.ok()) return s;
  if (owner != tenant->name()) return Status(StatusCode::kNotFound, "another tenant's session");
  uint64_t epoch = 0;
  if (Status s = cluster_->Claim(id, tenant, &epoch); !s.ok()) return s;
  // Read under the lease: no other replica writes it from now on.
  std::string bytes;
  StateDir::Record r;
  std::string problem;
  std::vector<std::string> notes;
  Status s = shared.Load(id, &bytes);
  if (s.ok() && (!StateDir::Decode(bytes, &r, &problem, &notes) || r.id != id)) {
    s = Status(StatusCode::kInternal,
               "session " + id + ": its record in the " + shared.name() +
                   " cannot be served: " + (problem.empty() ? "the id does not match" : problem));
  }
  if (s.ok()) s = store_.Reserve(tenant);
  if (!s.ok()) {
    cluster_->Forget(id, /*release=*/true);
    return s;
  }
  for (const auto& n : notes) spdlog::error("{}: session {}: {}", shared.name(), id, n);
  CompileOptions compile;
  compile.limits = options_.compile;
  const uint64_t hits = cluster_->cache_hits();
  auto imported = cluster_->Import(r.data, compile);
  if (!imported.ok()) {
    store_.Unreserve(tenant);
    cluster_->Forget(id, /*release=*/true);
    return imported.status();
  }
  const bool cached = cluster_->cache_hits() > hits;
  r.file = shared.name() + " record " + id;
  auto session = Serve(r, tenant, std::move(imported).value(), compile);
  v1::Session view;
  session->ToProto(&view);
  spdlog::info("session loaded from the {}: tenant={} session={} epoch={} step={} model={} ({} ms)",
               shared.name(), tenant->name(), id, epoch, view.step(),
               cached ? "cached" : "compiled",
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count());
  *out = std::move(session);
  return Status::Ok();
}

grpc::Status ServiceCore::Share(const std::shared_ptr<Session>& session) {
  if (!cluster_) return grpc::Status::OK;
  uint64_t epoch = 0;
  Status s = cluster_->Claim(session->id(), &session->owner(), &epoch);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(persist_mu_);
    Session::Persisted p = session->PersistedForm();
    s = WriteLocked(*session, p);
    if (s.ok()) written_[session->id()] = p.version;
  }
  // Written or not, this replica keeps neither the session nor its lease:
  // the proxy routes the session's calls by its id (deploy/README.md), and
  // whichever replica they reach loads it from the store.
  cluster_->Forget(session->id(), /*release=*/true);
  store_.Remove(session->id(), &session->owner());
  {
    std::lock_guard<std::mutex> lock(persist_mu_);
    ForgetWrittenLocked(session->id());
  }
  return ToGrpcStatus(s);
}

void ServiceCore::ForgetPersisted(const std::string& id, const std::string& tenant) {
  if (cluster_) {
    uint64_t epoch = 0;
    if (cluster_->EpochOf(id, &epoch)) {
      if (Status s = cluster_->store().Delete(id, epoch, tenant); !s.ok()) {
        spdlog::error("session {}: not deleted from the store: {}", id, s.message());
      }
    }
    cluster_->Forget(id, /*release=*/false);
    std::lock_guard<std::mutex> lock(persist_mu_);
    ForgetWrittenLocked(id);
    return;
  }
  if (!state_dir_) return;
  std::lock_guard<std::mutex> lock(persist_mu_);
  ForgetWrittenLocked(id);
  state_dir_->Remove(id);
}

grpc::Status ServiceCore::DeleteShared(const std::string& id, const Tenant* tenant) {
  if (!cluster_) return SessionNotFound(id);
  SharedSessionStore& shared = cluster_->store();
  std::lock_guard<std::mutex> lock(load_mu_);
  if (store_.Find(id, tenant)) {
    return grpc::Status(grpc::StatusCode::ABORTED,
                        "session " + id + " was loaded meanwhile; delete it again");
  }
  // As LoadShared: the tenant first, then the lease (no other replica runs
  // it meanwhile), without loading the session.
  std::string owner;
  Status s = shared.Tenant(id, &owner);
  if (s.ok() && owner != tenant->name()) return SessionNotFound(id);
  uint64_t epoch = 0;
  if (s.ok()) s = cluster_->Claim(id, tenant, &epoch);
  if (s.ok()) {
    s = shared.Delete(id, epoch, tenant->name());
    cluster_->Forget(id, /*release=*/!s.ok());
  }
  if (s.ok()) return grpc::Status::OK;
  return s.code() == StatusCode::kNotFound ? SessionNotFound(id) : ToGrpcStatus(s);
}

grpc::Status ServiceCore::ListShared(const Tenant* tenant, const v1::ListSessionsRequest& request,
                                     v1::ListSessionsResponse* response) {
  int32_t page_size = 0;
  if (Status s = SessionStore::PageSize(request.page_size(), &page_size); !s.ok()) {
    return ToGrpcStatus(s);
  }
  std::vector<SharedSessionStore::Listed> page;
  std::string next;
  if (Status s =
          cluster_->store().List(tenant->name(), page_size, request.page_token(), &page, &next);
      !s.ok()) {
    if (s.code() == StatusCode::kInvalidArgument) {
      return ToGrpcStatus(InvalidArgument(
          s.message(), {{"page_token", "not a token from a previous ListSessions response"}}));
    }
    return ToGrpcStatus(s);
  }
  const std::string& self = cluster_->store().owner();
  // As the local listing: a page ends early when its sessions would pass
  // 3/4 of the message limit (SessionStore::PageRoom).
  SessionStore::PageRoom room(options_.max_message_bytes);
  for (const SharedSessionStore::Listed& listed : page) {
    v1::Session* out = response->add_sessions();
    if (!out->ParseFromString(listed.summary)) {
      response->mutable_sessions()->RemoveLast();
      continue;
    }
    // A session this replica runs: its state now, not its last write.
    if (listed.holder == self) {
      if (auto session = store_.Find(out->id(), tenant)) session->ToProto(out);
    }
    out->set_replica(listed.holder);
    if (!room.Keeps(*out)) {
      response->mutable_sessions()->RemoveLast();
      next = listed.page_token;
      break;
    }
  }
  response->set_next_page_token(next);
  return grpc::Status::OK;
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

void ServiceCore::UnaryStarted() {
  std::lock_guard<std::mutex> lock(streams_mu_);
  ++unary_calls_;
}

void ServiceCore::UnaryDone() {
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    --unary_calls_;
  }
  streams_cv_.notify_all();
}

bool ServiceCore::WaitForCalls(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(streams_mu_);
  return streams_cv_.wait_until(lock, deadline,
                                [this] { return streams_.empty() && unary_calls_ == 0; });
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
      fmt::format("the client left a message unread for {} s (--stream-stall-timeout, one "
                  "timeout per message the transport held ahead of it, at most 8): the stream "
                  "was ended (a session it ran is given back, READY at its last computed step; "
                  "unread for as long again, the call is cancelled)",
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
