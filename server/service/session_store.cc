#include "service/session_store.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>

#include <google/protobuf/util/time_util.h>

#include "engine/session_export.h"

namespace tether::service {

ErrorSubject SessionSubject(std::string_view id, std::string description, std::string type) {
  return ErrorSubject{std::move(type), EscapeForMessage(id), std::move(description)};
}
namespace {

constexpr int32_t kDefaultPageSize = 100;
constexpr int32_t kMaxPageSize = 1000;

bool FillRandom(unsigned char* buf, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += static_cast<std::size_t>(r);
  }
  if (got == n) return true;
  if (std::FILE* f = std::fopen("/dev/urandom", "rb")) {
    got = std::fread(buf, 1, n, f);
    std::fclose(f);
    if (got == n) return true;
  }
  return false;
}

google::protobuf::Timestamp ToTimestamp(std::chrono::system_clock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(ns);
}

// The bytes a session's simulation and its copy of the description hold.
int64_t SimulationBytes(const Simulation& simulation) {
  return simulation.memory_use().total() + MessageHeapBytes(simulation.spec());
}

int64_t NamesBytes(const std::vector<std::string>& names) {
  int64_t bytes = static_cast<int64_t>(names.capacity() * sizeof(std::string));
  for (const std::string& n : names) bytes += n.capacity() > 15 ? n.capacity() + 17 : 0;
  return bytes;
}

// A session's own copies besides the simulation: the object, the names, the
// published state (the same shape whatever the step; id and label within
// the object's small-string room or under a KiB).
int64_t FixedBytes(const Simulation& simulation, const v1::SimulationState& published) {
  return static_cast<int64_t>(sizeof(Session)) + 1024 + NamesBytes(simulation.coordinate_names()) +
         NamesBytes(simulation.constraint_names()) + NamesBytes(simulation.input_names()) +
         NamesBytes(simulation.output_names()) + MessageHeapBytes(published);
}

std::string EncodePageToken(uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "s%llx", static_cast<unsigned long long>(seq));
  return buf;
}

bool DecodePageToken(const std::string& token, uint64_t* seq) {
  if (token.size() < 2 || token.size() > 17 || token[0] != 's') return false;
  uint64_t value = 0;
  for (std::size_t i = 1; i < token.size(); ++i) {
    char c = token[i];
    int digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else
      return false;
    value = value * 16 + static_cast<uint64_t>(digit);
  }
  *seq = value;
  return true;
}

}  // namespace

std::string NewSessionId() {
  unsigned char bytes[16];
  if (!FillRandom(bytes, sizeof bytes)) {
    // std::random_device is a CSPRNG on Linux/libstdc++ (rdrand or
    // /dev/urandom); used only if getrandom and /dev/urandom both failed.
    std::random_device rd;
    for (std::size_t i = 0; i < sizeof bytes; i += 4) {
      uint32_t r = rd();
      for (int k = 0; k < 4; ++k) bytes[i + k] = static_cast<unsigned char>(r >> (8 * k));
    }
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    id[2 * i] = kHex[bytes[i] >> 4];
    id[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return id;
}

// --- Session ---------------------------------------------------------------

Session::Session(std::string id, uint64_t seq, std::string display_name,
                 std::unique_ptr<Simulation> simulation, const Tenant* owner, SteadyClock clock,
                 std::chrono::system_clock::time_point create_time, MemoryBudget* budget,
                 MemoryCharge charge)
    : clock_(std::move(clock)),
      id_(std::move(id)),
      seq_(seq),
      owner_(owner),
      display_name_(std::move(display_name)),
      simulation_(std::move(simulation)),
      coordinates_(simulation_->coordinate_names()),
      constraints_(simulation_->constraint_names()),
      inputs_(simulation_->input_names()),
      outputs_(simulation_->output_names()),
      create_time_(create_time == std::chrono::system_clock::time_point{}
                       ? std::chrono::system_clock::now()
                       : create_time),
      budget_(budget),
      charge_(std::move(charge)) {
  spec_ = std::make_shared<const v1::SimulationSpec>(simulation_->spec());
  simulation_->SaveState(&published_);
  published_spec_ = spec_;
  update_time_ = create_time_;
  last_used_ = Now();
  fixed_bytes_ = FixedBytes(*simulation_, published_);
  simulation_bytes_ = SimulationBytes(*simulation_);
  std::lock_guard<std::mutex> lock(mu_);
  simulation_model_ = simulation_->shared_model().get();
  (void)ChargeLocked(simulation_bytes_, simulation_model_, "", true);
}

int64_t Session::BytesLocked(int64_t simulation_bytes, const Model* model) const {
  int64_t bytes = fixed_bytes_ + simulation_bytes;
  std::vector<const Model*> counted = {model};
  for (const SavedSnapshot& s : snapshots_) {
    bytes += s.state_bytes;
    if (std::find(counted.begin(), counted.end(), s.model.get()) == counted.end()) {
      counted.push_back(s.model.get());
      bytes += s.model_bytes;
    }
  }
  return bytes;
}

Status Session::ChargeLocked(int64_t simulation_bytes, const Model* model, std::string_view what,
                             bool force) {
  const int64_t bytes = BytesLocked(simulation_bytes, model);
  if (budget_) {
    if (Status s = budget_->Resize(owner_, bytes, what, &charge_, force); !s.ok()) return s;
  }
  held_bytes_ = bytes;
  return Status::Ok();
}

int64_t Session::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_bytes_;
}

int64_t Session::InitialBytes(const Simulation& simulation) {
  v1::SimulationState published;
  simulation.SaveState(&published);
  return FixedBytes(simulation, published) + SimulationBytes(simulation);
}

Session::SteadyTime Session::Now() const {
  return clock_ ? clock_() : std::chrono::steady_clock::now();
}

Status Session::UnavailableLocked(const char* rpc) const {
  if (deleted()) {
    return NotFound("session " + id_ + " was deleted",
                    SessionSubject(id_, "the session was deleted"));
  }
  if (leased_) {
    return FailedPrecondition(
        std::string(rpc) + ": session " + id_ +
            " is RUNNING: another Run or CoSimulate is active on it",
        SessionSubject(id_,
                       "another Run or CoSimulate is active on the session; retry when it ends",
                       "SESSION_RUNNING"));
  }
  return Status::Ok();
}

Status Session::Acquire(const char* rpc, bool allow_failed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status s = UnavailableLocked(rpc); !s.ok()) return s;
  failed_when_acquired_ = status_ == v1::FAILED;
  if (failed_when_acquired_ && !allow_failed) {
    return FailedPrecondition(
        std::string(rpc) + ": session " + id_ + " FAILED: " + error_,
        SessionSubject(id_, "the session FAILED and cannot advance: " + error_, "SESSION_FAILED"));
  }
  if (failed_when_acquired_) failed_error_ = error_;
  leased_ = true;
  status_ = v1::RUNNING;
  update_time_ = std::chrono::system_clock::now();
  last_used_ = Now();
  return Status::Ok();
}

void Session::Publish() {
  v1::SimulationState saved;
  simulation_->SaveState(&saved);
  std::lock_guard<std::mutex> lock(mu_);
  published_.Swap(&saved);
  published_spec_ = spec_;
  ++version_;
  update_time_ = std::chrono::system_clock::now();
  last_used_ = Now();
}

void Session::Release(const Status& failure) {
  Publish();
  std::lock_guard<std::mutex> lock(mu_);
  leased_ = false;
  if (!failure.ok()) {
    status_ = v1::FAILED;
    error_ = failure.message();
  } else if (failed_when_acquired_) {
    status_ = v1::FAILED;  // still at the state it failed at
    error_ = failed_error_;
  } else if (status_ == v1::RUNNING) {
    status_ = v1::READY;
    error_.clear();
  }
  failed_when_acquired_ = false;
}

Session::Persisted Session::PersistedForm() const {
  std::lock_guard<std::mutex> lock(mu_);
  Persisted p;
  p.spec = published_spec_;
  p.state = published_;
  p.status = status_ == v1::FAILED ? v1::FAILED : v1::READY;
  p.error = error_;
  p.snapshots.assign(snapshots_.begin(), snapshots_.end());
  p.next_snapshot_id = next_snapshot_id_;
  p.version = version_;
  return p;
}

uint64_t Session::persisted_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

void Session::MarkFailed(std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  status_ = v1::FAILED;
  error_ = std::move(error);
  ++version_;
}

void Session::Recovered() {
  std::lock_guard<std::mutex> lock(mu_);
  failed_when_acquired_ = false;
}

Status Session::ReplaceSimulation(std::unique_ptr<Simulation> simulation) {
  const int64_t bytes = SimulationBytes(*simulation);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Status s = ChargeLocked(bytes, simulation->shared_model().get(),
                                "session " + id_ + " with its new description", false);
        !s.ok()) {
      return s;
    }
    simulation_bytes_ = bytes;
    simulation_model_ = simulation->shared_model().get();
  }
  spec_ = std::make_shared<const v1::SimulationSpec>(simulation->spec());
  simulation_ = std::move(simulation);
  return Status::Ok();
}

Status Session::SaveSnapshot(std::string label, std::size_t max, v1::Snapshot* meta) {
  SavedSnapshot saved;
  simulation_->SaveState(&saved.state);
  saved.spec = spec_;
  saved.model = simulation_->shared_model();
  saved.meta.set_session_id(id_);
  saved.meta.set_step(saved.state.step());
  saved.meta.set_t(saved.state.state().t());
  *saved.meta.mutable_create_time() = ToTimestamp(std::chrono::system_clock::now());
  saved.meta.set_label(std::move(label));
  saved.state_bytes = static_cast<int64_t>(sizeof(SavedSnapshot)) + MessageHeapBytes(saved.state) +
                      MessageHeapBytes(saved.meta);
  // The compiled model, kept by the snapshot: its heap and its tapes'
  // machine code.
  const Simulation::MemoryUse use = Simulation::ModelMemoryUse(*saved.model);
  saved.model_bytes = use.model + use.code + MessageHeapBytes(*spec_);
  std::lock_guard<std::mutex> lock(mu_);
  saved.meta.set_snapshot_id(next_snapshot_id_);
  snapshots_.push_back(std::move(saved));
  std::vector<SavedSnapshot> dropped;
  while (snapshots_.size() > std::max<std::size_t>(max, 1)) {
    dropped.push_back(std::move(snapshots_.front()));
    snapshots_.pop_front();
  }
  if (Status s =
          ChargeLocked(simulation_bytes_, simulation_model_, "a snapshot of session " + id_, false);
      !s.ok()) {
    snapshots_.pop_back();
    for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
      snapshots_.push_front(std::move(*it));
    }
    return s;
  }
  ++next_snapshot_id_;
  *meta = snapshots_.back().meta;
  ++version_;
  last_used_ = Now();
  return Status::Ok();
}

namespace {
Status SnapshotNotFound(const std::string& session, uint64_t snapshot_id) {
  const std::string name = session + "/snapshots/" + std::to_string(snapshot_id);
  return NotFound("session " + session + " has no snapshot " + std::to_string(snapshot_id) +
                      " (never taken, deleted, or dropped as the oldest beyond --max-snapshots)",
                  ErrorSubject{"tether.v1.Snapshot", name, "no such snapshot"});
}
}  // namespace

Status Session::RestoreSnapshot(uint64_t snapshot_id) {
  SavedSnapshot saved;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(snapshots_.begin(), snapshots_.end(), [&](const SavedSnapshot& s) {
      return s.meta.snapshot_id() == snapshot_id;
    });
    if (it == snapshots_.end()) return SnapshotNotFound(id_, snapshot_id);
    saved = *it;
  }
  if (saved.model != simulation_->shared_model()) {
    // Taken under another version of the description (UpdateSession since).
    if (Status s = ReplaceSimulation(Simulation::FromModel(*saved.spec, saved.model)); !s.ok()) {
      return s;
    }
  }
  return simulation_->RestoreState(saved.state, "snapshot");
}

std::vector<v1::Snapshot> Session::ListSnapshots() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Snapshot> out;
  out.reserve(snapshots_.size());
  for (const auto& s : snapshots_) out.push_back(s.meta);
  return out;
}

Status Session::ExportSnapshot(uint64_t snapshot_id, std::string* data, v1::Snapshot* meta) const {
  v1::SessionExport payload;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(snapshots_.begin(), snapshots_.end(), [&](const SavedSnapshot& s) {
      return s.meta.snapshot_id() == snapshot_id;
    });
    if (it == snapshots_.end()) return SnapshotNotFound(id_, snapshot_id);
    *payload.mutable_spec() = *it->spec;
    *payload.mutable_state() = it->state;
    *meta = it->meta;
  }
  payload.set_display_name(display_name_);
  *data = EncodeSessionExport(std::move(payload));
  return Status::Ok();
}

Status Session::DeleteSnapshot(uint64_t snapshot_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(snapshots_.begin(), snapshots_.end(), [&](const SavedSnapshot& s) {
    return s.meta.snapshot_id() == snapshot_id;
  });
  if (it == snapshots_.end()) return SnapshotNotFound(id_, snapshot_id);
  snapshots_.erase(it);
  (void)ChargeLocked(simulation_bytes_, simulation_model_, "", true);
  ++version_;
  return Status::Ok();
}

void Session::AdoptSnapshots(std::vector<SavedSnapshot> snapshots, uint64_t next_snapshot_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : snapshots) {
    s.meta.set_session_id(id_);
    // One description object per version, as SaveSnapshot shares it (the
    // file names the session's own description by pointer).
    if (s.model == simulation_->shared_model()) s.spec = spec_;
    s.state_bytes = static_cast<int64_t>(sizeof(SavedSnapshot)) + MessageHeapBytes(s.state) +
                    MessageHeapBytes(s.meta);
    if (s.model_bytes == 0 && s.model != simulation_->shared_model()) {
      const Simulation::MemoryUse use = Simulation::ModelMemoryUse(*s.model);
      s.model_bytes = MessageHeapBytes(*s.spec) + use.model + use.code;
    }
    snapshots_.push_back(std::move(s));
  }
  (void)ChargeLocked(simulation_bytes_, simulation_model_, "", true);
  next_snapshot_id_ = std::max(next_snapshot_id_, next_snapshot_id);
  ++version_;
}

void Session::Touch() {
  std::lock_guard<std::mutex> lock(mu_);
  last_used_ = Now();
}

bool Session::IdleSince(SteadyTime* since) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (leased_) return false;
  *since = last_used_;
  return true;
}

v1::SessionStatus Session::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void Session::ToProto(v1::Session* out) const {
  out->Clear();
  out->set_id(id_);
  out->set_display_name(display_name_);
  *out->mutable_create_time() = ToTimestamp(create_time_);
  for (const auto& n : coordinates_) out->add_coordinates(n);
  for (const auto& n : constraints_) out->add_constraints(n);
  for (const auto& n : inputs_) out->add_inputs(n);
  for (const auto& n : outputs_) out->add_outputs(n);
  std::lock_guard<std::mutex> lock(mu_);
  out->set_status(status_);
  *out->mutable_state() = published_.state();
  out->set_step(published_.step());
  out->set_error(error_);
  *out->mutable_update_time() = ToTimestamp(update_time_);
  out->set_snapshot_count(static_cast<uint32_t>(snapshots_.size()));
  out->set_memory_bytes(static_cast<uint64_t>(held_bytes_));
}

Status Session::ToProtoWithFrame(v1::Session* out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Status s = UnavailableLocked("GetSession (SESSION_VIEW_FULL)"); !s.ok()) return s;
    leased_ = true;  // no stream takes it meanwhile; status_ and times stay
  }
  ToProto(out);
  if (out->status() != v1::FAILED && !simulation_->Evaluate(out->mutable_frame()).ok()) {
    out->clear_frame();
  }
  std::lock_guard<std::mutex> lock(mu_);
  leased_ = false;
  return Status::Ok();
}

// --- SessionStore ----------------------------------------------------------

SessionStore::SessionStore(std::size_t max_sessions, std::chrono::milliseconds idle_timeout,
                           SteadyClock clock, MemoryBudget* budget)
    : max_sessions_(max_sessions),
      idle_timeout_(idle_timeout),
      clock_(clock ? std::move(clock) : SteadyClock(&std::chrono::steady_clock::now)),
      budget_(budget),
      unlimited_("unlimited", SIZE_MAX, "", SIZE_MAX, "") {}

SessionStore::~SessionStore() {
  {
    std::lock_guard<std::mutex> lock(expiry_mu_);
    stop_expiry_ = true;
  }
  expiry_cv_.notify_all();
  if (expiry_thread_.joinable()) expiry_thread_.join();
}

Status SessionStore::Reserve(const Tenant* tenant) {
  tenant = Resolve(tenant);
  std::lock_guard<std::mutex> lock(mu_);
  if (by_id_.size() + reserved_ >= max_sessions_) {
    return ResourceExhausted(
        "the server holds the maximum of " + std::to_string(max_sessions_) +
            " sessions (--max-sessions); delete some first",
        ErrorSubject{"", "--max-sessions",
                     "at most " + std::to_string(max_sessions_) + " sessions on this server"});
  }
  std::size_t& held = held_[tenant];
  if (held >= tenant->max_sessions()) {
    if (held == 0) held_.erase(tenant);
    return tenant->SessionQuotaExceeded();
  }
  ++held;
  ++reserved_;
  return Status::Ok();
}

void SessionStore::ForgetLocked(const Tenant* tenant) {
  auto it = held_.find(tenant);
  if (it == held_.end()) return;
  if (--it->second == 0) held_.erase(it);
}

void SessionStore::Unreserve(const Tenant* tenant) {
  tenant = Resolve(tenant);
  std::lock_guard<std::mutex> lock(mu_);
  if (reserved_ > 0) {
    --reserved_;
    ForgetLocked(tenant);
  }
}

std::shared_ptr<Session> SessionStore::Add(std::unique_ptr<Simulation> simulation,
                                           std::string display_name, const Tenant* tenant,
                                           std::string id, RestoredOrder restored,
                                           MemoryCharge charge) {
  tenant = Resolve(tenant);
  std::lock_guard<std::mutex> lock(mu_);
  while (id.empty() || by_id_.count(id) != 0) id = NewSessionId();
  uint64_t seq = restored.seq;
  if (seq == 0 || by_seq_.count(seq) != 0) seq = next_seq_;
  next_seq_ = std::max(next_seq_, seq + 1);
  auto session =
      std::make_shared<Session>(id, seq, std::move(display_name), std::move(simulation), tenant,
                                clock_, restored.create_time, budget_, std::move(charge));
  // The reservation becomes the session (an Add without one, as in the
  // store's tests, counts the session all the same).
  if (reserved_ > 0) {
    --reserved_;
  } else {
    ++held_[tenant];
  }
  by_id_.emplace(id, session);
  by_seq_.emplace(session->seq(), session);
  return session;
}

Status SessionStore::AddWithinBudget(std::unique_ptr<Simulation> simulation,
                                     std::string display_name, const Tenant* tenant,
                                     std::string_view what, std::shared_ptr<Session>* session) {
  MemoryCharge charge;
  if (budget_) {
    if (Status s = budget_->Charge(tenant, Session::InitialBytes(*simulation), what, &charge);
        !s.ok()) {
      Unreserve(tenant);
      return s;
    }
  }
  *session = Add(std::move(simulation), std::move(display_name), tenant, {}, {}, std::move(charge));
  return Status::Ok();
}

std::vector<std::shared_ptr<Session>> SessionStore::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> all;
  all.reserve(by_seq_.size());
  for (const auto& [seq, session] : by_seq_) all.push_back(session);
  return all;
}

std::shared_ptr<Session> SessionStore::Find(const std::string& id, const Tenant* tenant) const {
  tenant = Resolve(tenant);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  // Another tenant's session is answered exactly as an absent one.
  if (it == by_id_.end() || &it->second->owner() != tenant) return nullptr;
  return it->second;
}

std::shared_ptr<Session> SessionStore::Remove(const std::string& id, const Tenant* tenant) {
  tenant = Resolve(tenant);
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end() || &it->second->owner() != tenant) return nullptr;
    session = it->second;
    by_id_.erase(it);
    by_seq_.erase(session->seq());
    ForgetLocked(tenant);
  }
  session->MarkDeleted();
  return session;
}

Status SessionStore::PageSize(int32_t requested, int32_t* page_size) {
  if (requested < 0) {
    return InvalidArgument("page_size: must not be negative",
                           {{"page_size", "must not be negative"}});
  }
  *page_size = requested == 0 ? kDefaultPageSize : std::min(requested, kMaxPageSize);
  return Status::Ok();
}

std::string SessionStore::PageTokenAt(const Session& session) {
  return EncodePageToken(session.seq());
}

Status SessionStore::List(int32_t page_size, const std::string& page_token,
                          std::vector<std::shared_ptr<Session>>* page, std::string* next_page_token,
                          const Tenant* tenant) const {
  tenant = Resolve(tenant);
  page->clear();
  next_page_token->clear();
  if (Status s = PageSize(page_size, &page_size); !s.ok()) return s;
  uint64_t from = 0;
  if (!page_token.empty() && !DecodePageToken(page_token, &from)) {
    return InvalidArgument("page_token: not a token from a previous ListSessions response",
                           {{"page_token", "not a token from a previous ListSessions response"}});
  }
  std::lock_guard<std::mutex> lock(mu_);
  // The next of the tenant's sessions at or after `it`.
  auto next = [&](auto it) {
    while (it != by_seq_.end() && &it->second->owner() != tenant) ++it;
    return it;
  };
  auto it = next(by_seq_.lower_bound(from));
  for (; it != by_seq_.end() && static_cast<int32_t>(page->size()) < page_size;
       it = next(std::next(it))) {
    page->push_back(it->second);
  }
  if (it != by_seq_.end()) *next_page_token = EncodePageToken(it->first);
  return Status::Ok();
}

std::size_t SessionStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_id_.size();
}

std::size_t SessionStore::held_by(const Tenant* tenant) const {
  tenant = Resolve(tenant);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(tenant);
  return it == held_.end() ? 0 : it->second;
}

std::vector<std::shared_ptr<Session>> SessionStore::ExpireIdle(Session::SteadyTime now) {
  std::vector<std::shared_ptr<Session>> expired;
  if (idle_timeout_.count() <= 0) return expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = by_seq_.begin(); it != by_seq_.end();) {
      Session::SteadyTime since;
      if (it->second->IdleSince(&since) && now - since >= idle_timeout_) {
        expired.push_back(it->second);
        ForgetLocked(&it->second->owner());
        by_id_.erase(it->second->id());
        it = by_seq_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : expired) s->MarkDeleted();
  return expired;
}

void SessionStore::StartExpiry(std::function<void(const Session&)> on_expired) {
  if (idle_timeout_.count() <= 0 || expiry_thread_.joinable()) return;
  auto period =
      std::clamp(idle_timeout_ / 4, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  expiry_thread_ = std::thread([this, period, on_expired = std::move(on_expired)] {
    std::unique_lock<std::mutex> lock(expiry_mu_);
    while (!stop_expiry_) {
      expiry_cv_.wait_for(lock, period, [this] { return stop_expiry_; });
      if (stop_expiry_) break;
      lock.unlock();
      for (const auto& s : ExpireIdle(clock_())) {
        if (on_expired) on_expired(*s);
      }
      lock.lock();
    }
  });
}

}  // namespace tether::service
