#include "service/simulator_service.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>
#include <spdlog/spdlog.h>

#include "service/run_response_encoder.h"
#include "service/status_mapping.h"
#include "tether/status_code_name.h"

namespace tether::service {
namespace {

using Clock = std::chrono::steady_clock;

// One log line per failed RPC.
void LogIfFailed(const char* rpc, const std::string& session_id,
                 const grpc::Status& status) {
  if (status.ok()) return;
  spdlog::warn("rpc {} failed: session={} code={} message=\"{}\"", rpc,
               session_id.empty() ? "-" : session_id, GrpcStatusCodeName(status.error_code()),
               status.error_message());
}

grpc::Status Unavailable() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
}

grpc::Status SessionNotFound(const std::string& id) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND, "no session " + id);
}

// Validates a session id field (non-empty).
grpc::Status CheckSessionId(const std::string& id, const char* field = "session_id") {
  if (id.empty()) return InvalidField(field, "required");
  return grpc::Status::OK;
}

// Applies the inputs of a request (sorted by name so that errors and the
// order of SetInput never depend on map iteration order). Every name and
// value is checked before any is set.
grpc::Status ApplyInputs(Simulation* sim,
                         const google::protobuf::Map<std::string, double>& inputs) {
  std::vector<std::pair<std::string, double>> sorted(inputs.begin(), inputs.end());
  std::sort(sorted.begin(), sorted.end());
  const auto& names = sim->input_names();
  for (const auto& [name, value] : sorted) {
    bool known = std::find(names.begin(), names.end(), name) != names.end();
    if (!known || !std::isfinite(value)) {
      // The engine's message names the input and lists the valid ones.
      Status s = sim->SetInput(name, value);
      std::string description = s.ok() ? "invalid input" : s.message();
      return GrpcError(grpc::StatusCode::INVALID_ARGUMENT, description,
                       {FieldViolation{"inputs[" + name + "]", description}});
    }
  }
  for (const auto& [name, value] : sorted) {
    Status s = sim->SetInput(name, value);
    if (!s.ok()) {
      return GrpcError(ToGrpcCode(s.code()), s.message(),
                       {FieldViolation{"inputs[" + name + "]", s.message()}});
    }
  }
  return grpc::Status::OK;
}

// Advances a simulation for one quantum of at most kQuantumMaxSteps steps
// and about kQuantumMaxTime, in chunks sized so that a check (stop request,
// buffer full) happens every ~0.25 ms. Chunking never changes the numbers:
// the engine's Advance(a) then Advance(b) equals Advance(a + b).
class QuantumBudget {
 public:
  QuantumBudget() : start_(Clock::now()) {}
  // Steps for the next chunk (0 when the quantum is spent).
  uint64_t NextChunk() const {
    if (steps_ >= kQuantumMaxSteps) return 0;
    auto elapsed = Clock::now() - start_;
    if (steps_ > 0 && elapsed >= kQuantumMaxTime) return 0;
    uint64_t chunk = 64;
    if (steps_ > 0) {
      double per_step = std::chrono::duration<double>(elapsed).count() / steps_;
      double target = 250e-6;
      chunk = per_step > 0 ? static_cast<uint64_t>(target / per_step) : 64;
      chunk = std::clamp<uint64_t>(chunk, 1, 256);
    } else {
      chunk = 16;
    }
    return std::min(chunk, kQuantumMaxSteps - steps_);
  }
  void Took(uint64_t steps) { steps_ += steps; }

 private:
  Clock::time_point start_;
  uint64_t steps_ = 0;
};

// --- Run -------------------------------------------------------------------

// Bytes added to the first frame's size to bound every frame of the run.
inline constexpr std::size_t kFrameSizeSlack = 64;

// Run is registered as a raw method: the request arrives as bytes (parsed
// here) and the responses leave as bytes written by RunResponseEncoder.
class RunReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
                         public StreamBase {
 public:
  RunReactor(ServiceCore* core, const grpc::ByteBuffer* request) : core_(core) {
    core_->Register(this);
    grpc::Status s = Start(request);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      LogIfFailed("Run", request_.session_id(), s);
      Finish(s);
      return;
    }
    spdlog::info("run started: session={} from_step={} steps={} until_time={}",
                 session_->id(), session_->simulation()->step(), request_.steps(),
                 request_.has_until_time() ? std::to_string(request_.until_time())
                                           : std::string("-"));
    scheduled_ = true;
    Schedule();
  }

  void OnWriteDone(bool ok) override {
    Actions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      write_in_flight_ = false;
      ++writes_done_;
      if (!ok) {
        StopLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
        outbox_.clear();
      } else if (!outbox_.empty()) {
        outbox_.pop_front();
      }
      DecideLocked(&act, /*in_quantum=*/false);
    }
    Act(act);
  }

  void OnCancel() override {
    Interrupt(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the run"));
  }

  void OnDone() override {
    core_->Unregister(this);
    delete this;
  }

  void Interrupt(grpc::Status status) override {
    Actions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || stop_.load()) return;
      StopLocked(std::move(status));
      // Never finish here (the caller may hold the stream registry lock):
      // if nothing is pending, a quantum does it.
      if (!scheduled_ && !write_in_flight_) {
        scheduled_ = true;
        act.schedule = true;
      }
    }
    Act(act);
  }

 private:
  struct Actions {
    const grpc::ByteBuffer* write = nullptr;
    bool schedule = false;
    bool finish = false;
    grpc::Status status;
  };

  // Checks the request and takes the session's lease (on the gRPC thread:
  // only lookups, no stepping).
  grpc::Status Start(const grpc::ByteBuffer* request) {
    if (core_->shutting_down()) return Unavailable();
    {
      grpc::ByteBuffer copy(*request);  // Deserialize consumes its buffer
      grpc::Status parsed =
          grpc::SerializationTraits<v1::RunRequest>::Deserialize(&copy, &request_);
      if (!parsed.ok()) {
        return GrpcError(grpc::StatusCode::INVALID_ARGUMENT,
                         "the request is not a valid tether.v1.RunRequest message (" +
                             parsed.error_message() + ")");
      }
    }
    const auto& r = request_;
    if (grpc::Status s = CheckSessionId(r.session_id()); !s.ok()) return s;
    if (r.steps() == 0 && !r.has_until_time()) {
      return InvalidField("steps", "at least one of steps and until_time must be set");
    }
    if (r.has_until_time() && !std::isfinite(r.until_time())) {
      return InvalidField("until_time", "must be finite");
    }
    if (r.frames_per_message() > kMaxFramesPerMessage) {
      return InvalidField("frames_per_message",
                          "at most " + std::to_string(kMaxFramesPerMessage));
    }
    frames_per_message_ =
        r.frames_per_message() == 0 ? kDefaultFramesPerMessage : r.frames_per_message();
    include_certificate_ = r.has_include_certificate() ? r.include_certificate() : true;
    options_every_ = r.every() == 0 ? 1 : r.every();
    // Room for the certificate and framing in the last message.
    frame_bytes_cap_ = std::max<std::size_t>(core_->options.max_message_bytes / 4 * 3, 1);

    session_ = core_->store.Find(r.session_id());
    if (!session_) return SessionNotFound(r.session_id());
    attached_.store(session_.get());
    Status s = session_->Acquire("Run");
    if (!s.ok()) {
      session_.reset();
      attached_.store(nullptr);
      return ToGrpcStatus(s);
    }
    return grpc::Status::OK;
  }

  void Schedule() {
    core_->pool.Submit([this] { Quantum(); });
  }

  void StopLocked(grpc::Status status) {
    if (stop_.load()) return;
    stop_status_ = std::move(status);
    stop_.store(true);
  }

  // Decides what happens next; called with mu_ held. `in_quantum` is true
  // when the caller is the quantum itself (which owns scheduled_ == true);
  // `starved` when that quantum stopped for lack of buffer room and no write
  // has completed since it looked: requeueing it would only spin. A paused
  // quantum is resumed by the OnWriteDone that drains the buffer to
  // kResumeBufferedMessages.
  void DecideLocked(Actions* act, bool in_quantum, bool starved = false) {
    if (finished_) return;
    bool quantum_running = scheduled_ && !in_quantum;
    if (stop_.load()) {
      if (in_quantum) scheduled_ = false;
      if (!quantum_running && !write_in_flight_) {
        finished_ = true;
        act->finish = true;
        act->status = stop_status_;
      }
      return;
    }
    if (!write_in_flight_ && !outbox_.empty()) {
      write_in_flight_ = true;
      act->write = &outbox_.front();
    }
    if (done_producing_) {
      if (in_quantum) scheduled_ = false;
      if (!write_in_flight_ && outbox_.empty()) {
        finished_ = true;
        act->finish = true;
        act->status = final_status_;
      }
      return;
    }
    bool room = outbox_.size() < kMaxBufferedMessages;
    if (in_quantum) {
      if (room && !starved) {
        act->schedule = true;  // requeue at the back: fairness
      } else {
        scheduled_ = false;    // resumed by a later OnWriteDone
      }
    } else if (!scheduled_ && outbox_.size() <= kResumeBufferedMessages) {
      scheduled_ = true;
      act->schedule = true;
    }
  }

  // Carried out without mu_ held. After Finish, `this` may be gone.
  void Act(const Actions& act) {
    if (act.finish) {
      FinishRun(act.status);
      return;
    }
    if (act.write) StartWrite(act.write);
    if (act.schedule) Schedule();
  }

  void FinishRun(const grpc::Status& status) {
    if (session_) {
      session_->Release(failure_);
      Simulation* sim = session_->simulation();
      if (!failure_.ok()) {
        spdlog::error("run failed: session={} step={} error=\"{}\"", session_->id(),
                      sim->step(), failure_.message());
      } else if (status.ok()) {
        spdlog::info("run finished: session={} step={} t={}", session_->id(),
                     sim->step(), sim->time());
      } else {
        spdlog::info("run stopped: session={} step={} t={} reason=\"{}\"",
                     session_->id(), sim->step(), sim->time(), status.error_message());
      }
    }
    if (!status.ok() && failure_.ok()) LogIfFailed("Run", request_.session_id(), status);
    Finish(status);
  }

  // Frames per message: the request's count, within the byte cap once a
  // frame's size is known (one frame until then).
  std::size_t PerMessage() const {
    if (frame_bound_ == 0) return 1;
    return std::clamp<std::size_t>(frame_bytes_cap_ / frame_bound_, 1, frames_per_message_);
  }

  // One quantum on a worker thread; the only code touching the simulation.
  void Quantum() {
    Simulation* sim = session_->simulation();
    std::vector<grpc::ByteBuffer> ready;
    bool done = false;
    bool blocked = false;          // stopped for lack of buffer room
    uint64_t writes_seen = 0;      // writes_done_ when room was last checked
    if (!stop_.load() && !begun_) {
      begun_ = true;
      RunOptions options;
      options.steps = request_.steps();
      if (request_.has_until_time()) options.until_time = request_.until_time();
      options.every = options_every_;
      // Frames never repeat: only a session's first run emits step 0.
      options.emit_start = sim->step() == 0;
      options.certificate = include_certificate_;
      Status s = sim->BeginRun(options);
      if (!s.ok()) {
        final_status_ = ToGrpcStatus(s);
        done = true;
      }
    }
    if (!stop_.load() && !done) {
      QuantumBudget budget;
      for (;;) {
        if (stop_.load()) break;
        if (session_->deleted()) {
          std::lock_guard<std::mutex> lock(mu_);
          StopLocked(grpc::Status(grpc::StatusCode::CANCELLED,
                                  "session " + session_->id() + " was deleted"));
          break;
        }
        uint64_t chunk = budget.NextChunk();
        if (chunk == 0) break;
        // At most kMaxBufferedMessages messages wait for the writer, plus
        // the one being filled: memory stays bounded behind a slow reader.
        std::size_t buffered;
        {
          std::lock_guard<std::mutex> lock(mu_);
          buffered = outbox_.size() + ready.size();
          writes_seen = writes_done_;
        }
        if (buffered >= kMaxBufferedMessages) {
          blocked = true;
          break;
        }
        // A full message goes out once more frames are sure to follow, so
        // the last message (with the certificate) is never empty.
        if (encoder_.frames() >= PerMessage()) {
          ready.push_back(TakeMessage());
          continue;
        }
        const std::size_t before = encoder_.frames();
        const uint64_t step_before = sim->step();
        Status s = sim->Advance(chunk, &encoder_, PerMessage() - before);
        budget.Took(std::max<uint64_t>(sim->step() - step_before, 1));
        if (before == 0 && encoder_.frames() > 0) first_pending_ = Clock::now();
        if (frame_bound_ == 0 && encoder_.frames() > 0) {
          // Frames of one run differ only in varints and in scalars that
          // proto3 omits when zero: this bounds every later one.
          frame_bound_ = encoder_.first_entry_size() + kFrameSizeSlack;
        }
        if (!s.ok()) {
          failure_ = s;
          final_status_ = ToGrpcStatus(s);
          done = true;
          break;
        }
        if (sim->run_done()) {
          done = true;
          break;
        }
      }
    }
    if (!done && encoder_.frames() > 0 && Clock::now() - first_pending_ >= kMaxFrameDelay) {
      // Sparse frames go out without waiting for a full message, when the
      // buffer has room for one more.
      bool room;
      {
        std::lock_guard<std::mutex> lock(mu_);
        room = outbox_.size() + ready.size() < kMaxBufferedMessages;
      }
      if (room) ready.push_back(TakeMessage());
    }
    if (done) {
      // The last message: the remaining frames and the window's certificate.
      if (encoder_.frames() > 0 || include_certificate_) {
        if (include_certificate_) {
          v1::Certificate certificate;
          sim->GetCertificate(&certificate);
          encoder_.AddCertificate(certificate);
        }
        ready.push_back(TakeMessage());
      }
    }
    session_->Publish();
    spdlog::debug("quantum: session={} step={} ready={} building={} done={}",
                  session_->id(), sim->step(), ready.size(),
                  encoder_.frames(), done);
    Actions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& m : ready) outbox_.push_back(std::move(m));
      if (done) done_producing_ = true;
      DecideLocked(&act, /*in_quantum=*/true,
                   /*starved=*/blocked && writes_done_ == writes_seen);
    }
    Act(act);
  }

  ServiceCore* const core_;
  v1::RunRequest request_;  // parsed by Start
  std::shared_ptr<Session> session_;
  uint32_t frames_per_message_ = kDefaultFramesPerMessage;
  bool include_certificate_ = true;
  uint64_t options_every_ = 1;
  std::size_t frame_bytes_cap_ = 0;

  // The message being filled, as bytes, into a new buffer for gRPC.
  grpc::ByteBuffer TakeMessage() {
    const std::string& bytes = encoder_.bytes();
    grpc::Slice slice(bytes.data(), bytes.size());
    grpc::ByteBuffer buffer(&slice, 1);
    encoder_.Clear();
    return buffer;
  }

  // Owned by the quantum (one at a time).
  bool begun_ = false;
  RunResponseEncoder encoder_;  // the message being filled
  Clock::time_point first_pending_;  // when its first frame was added
  std::size_t frame_bound_ = 0;           // serialized bytes of any frame (0: unknown)
  Status failure_;  // ABORTED from the engine (session becomes FAILED)
  grpc::Status final_status_;

  std::atomic<bool> stop_{false};
  std::mutex mu_;
  grpc::Status stop_status_;
  // RunResponses ready to be written, as wire bytes (RunResponseEncoder).
  // A deque: the front stays put while StartWrite holds it and more are
  // pushed behind it.
  std::deque<grpc::ByteBuffer> outbox_;
  uint64_t writes_done_ = 0;  // completed writes, guarded by mu_
  bool scheduled_ = false;
  bool write_in_flight_ = false;
  bool done_producing_ = false;
  bool finished_ = false;
};

// --- CoSimulate ------------------------------------------------------------

class CoSimReactor final
    : public grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>,
      public StreamBase {
 public:
  explicit CoSimReactor(ServiceCore* core) : core_(core) {
    core_->Register(this);
    if (core_->shutting_down()) {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      LogIfFailed("CoSimulate", "", Unavailable());
      Finish(Unavailable());
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    Actions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;
      if (!ok) {
        // The client closed its side (or the call ended): finish cleanly.
        client_done_ = true;
        FinishLocked(&act, stop_.load() ? stop_status_ : grpc::Status::OK);
      } else if (stop_.load()) {
        FinishLocked(&act, stop_status_);
      } else {
        grpc::Status s = TakeRequest();
        if (!s.ok()) {
          FinishLocked(&act, s);
        } else {
          scheduled_ = true;
          act.schedule = true;
        }
      }
    }
    Act(act);
  }

  void OnWriteDone(bool ok) override {
    Actions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      write_in_flight_ = false;
      if (finished_) return;
      if (!ok) StopLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
      if (stop_.load()) {
        FinishLocked(&act, stop_status_);
      } else {
        act.read = true;
      }
    }
    Act(act);
  }

  void OnCancel() override {
    Interrupt(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled"));
  }

  void OnDone() override {
    core_->Unregister(this);
    delete this;
  }

  void Interrupt(grpc::Status status) override {
    Actions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || stop_.load()) return;
      StopLocked(std::move(status));
      // Never finish here (the caller may hold the stream registry lock):
      // when only a read is pending, a quantum does it; otherwise the
      // running quantum or OnWriteDone does.
      if (!scheduled_ && !write_in_flight_) {
        scheduled_ = true;
        act.schedule = true;
      }
    }
    Act(act);
  }

 private:
  struct Actions {
    bool schedule = false;
    bool read = false;
    const v1::CoSimulateResponse* write = nullptr;
    bool finish = false;
    grpc::Status status;
  };

  void StopLocked(grpc::Status status) {
    if (stop_.load()) return;
    stop_status_ = std::move(status);
    stop_.store(true);
  }

  void FinishLocked(Actions* act, grpc::Status status) {
    if (finished_) return;
    finished_ = true;
    act->finish = true;
    act->status = std::move(status);
  }

  void Act(const Actions& act) {
    if (act.finish) {
      if (session_) {
        session_->Release(failure_);
        if (!failure_.ok()) {
          spdlog::error("cosimulation failed: session={} step={} error=\"{}\"",
                        session_->id(), session_->simulation()->step(),
                        failure_.message());
        } else {
          spdlog::info("cosimulation finished: session={} step={} t={} code={}",
                       session_->id(), session_->simulation()->step(),
                       session_->simulation()->time(), GrpcStatusCodeName(act.status.error_code()));
        }
      }
      if (failure_.ok()) {
        LogIfFailed("CoSimulate", session_ ? session_->id() : std::string(), act.status);
      }
      Finish(act.status);
      return;
    }
    if (act.write) StartWrite(act.write);
    if (act.read) StartRead(&request_);
    // The worker that steps a co-simulation polls for the master's next
    // step before sleeping (WorkerPool).
    if (act.schedule) core_->pool.Submit([this] { Quantum(); }, /*then_poll=*/true);
  }

  // Checks request_ (mu_ held); the first one attaches the session.
  grpc::Status TakeRequest() {
    if (!session_) {
      if (core_->shutting_down()) return Unavailable();
      if (grpc::Status s = CheckSessionId(request_.session_id()); !s.ok()) return s;
      auto session = core_->store.Find(request_.session_id());
      if (!session) return SessionNotFound(request_.session_id());
      attached_.store(session.get());
      Status s = session->Acquire("CoSimulate");
      if (!s.ok()) {
        attached_.store(nullptr);
        return ToGrpcStatus(s);
      }
      session_ = std::move(session);
      spdlog::info("cosimulation started: session={} from_step={}", session_->id(),
                   session_->simulation()->step());
    } else if (session_->deleted()) {
      return grpc::Status(grpc::StatusCode::CANCELLED,
                          "session " + session_->id() + " was deleted");
    }
    double h = request_.communication_step();
    if (!(h > 0) || !std::isfinite(h)) {
      return InvalidField("communication_step", "must be positive and finite");
    }
    communication_step_ = h;
    inputs_ = request_.inputs();
    begun_ = false;
    return grpc::Status::OK;
  }

  void Quantum() {
    if (stop_.load() || !session_) {
      Actions act;
      {
        std::lock_guard<std::mutex> lock(mu_);
        scheduled_ = false;
        FinishLocked(&act, stop_.load() ? stop_status_ : grpc::Status::OK);
      }
      Act(act);
      return;
    }
    Simulation* sim = session_->simulation();
    grpc::Status error;
    bool done = false;
    if (!stop_.load() && !begun_) {
      begun_ = true;
      frames_.Clear();
      error = ApplyInputs(sim, inputs_);
      if (error.ok()) {
        RunOptions options;
        options.until_time = sim->time() + communication_step_;
        options.every = std::numeric_limits<uint64_t>::max();
        options.emit_start = false;
        options.certificate = true;
        Status s = sim->BeginRun(options);
        if (!s.ok()) {
          std::vector<FieldViolation> v;
          if (!s.violations().empty()) {
            v.push_back({"communication_step", s.message()});
          }
          error = GrpcError(ToGrpcCode(s.code()), s.message(), v);
        }
      }
    }
    if (!stop_.load() && error.ok()) {
      QuantumBudget budget;
      for (;;) {
        if (stop_.load()) break;
        uint64_t chunk = budget.NextChunk();
        if (chunk == 0) break;
        Status s = sim->Advance(chunk, &frames_);
        budget.Took(chunk);
        if (!s.ok()) {
          failure_ = s;
          error = ToGrpcStatus(s);
          break;
        }
        if (sim->run_done()) {
          done = true;
          break;
        }
      }
    }
    if (done) {
      response_.Clear();
      if (!frames_.empty()) response_.mutable_frame()->Swap(frames_.Mutable(frames_.size() - 1));
      sim->GetCertificate(response_.mutable_certificate());
      frames_.Clear();
    }
    session_->Publish();
    Actions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      scheduled_ = false;
      if (!error.ok()) {
        FinishLocked(&act, error);
      } else if (stop_.load()) {
        FinishLocked(&act, stop_status_);
      } else if (done) {
        write_in_flight_ = true;
        act.write = &response_;
      } else {
        scheduled_ = true;  // requeue at the back: fairness
        act.schedule = true;
      }
    }
    Act(act);
  }

  ServiceCore* const core_;
  std::shared_ptr<Session> session_;
  v1::CoSimulateRequest request_;
  v1::CoSimulateResponse response_;

  // Owned by the quantum / the reaction that schedules it.
  double communication_step_ = 0;
  google::protobuf::Map<std::string, double> inputs_;
  bool begun_ = false;
  google::protobuf::RepeatedPtrField<v1::Frame> frames_;
  Status failure_;

  std::atomic<bool> stop_{false};
  std::mutex mu_;
  grpc::Status stop_status_;
  bool scheduled_ = false;
  bool write_in_flight_ = false;
  bool client_done_ = false;
  bool finished_ = false;
};

// Runs `work` on the pool and finishes the unary call with its status.
template <typename Work>
grpc::ServerUnaryReactor* OnPool(ServiceCore* core, grpc::CallbackServerContext* context,
                                 const char* rpc, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (core->shutting_down()) {
    LogIfFailed(rpc, "", Unavailable());
    reactor->Finish(Unavailable());
    return reactor;
  }
  core->pool.Submit([reactor, rpc, work = std::move(work)]() mutable {
    std::string session_id;
    grpc::Status status = work(&session_id);
    LogIfFailed(rpc, session_id, status);
    reactor->Finish(status);
  });
  return reactor;
}

// Finishes a unary call inline (cheap lookups only).
grpc::ServerUnaryReactor* Inline(grpc::CallbackServerContext* context, const char* rpc,
                                 const std::string& session_id, grpc::Status status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  LogIfFailed(rpc, session_id, status);
  reactor->Finish(std::move(status));
  return reactor;
}

}  // namespace

// --- ServiceCore -----------------------------------------------------------

ServiceCore::ServiceCore(const ServiceOptions& opts)
    : options(opts),
      store(opts.max_sessions, opts.session_idle_timeout),
      pool(opts.workers, opts.worker_spin) {}

void ServiceCore::Register(StreamBase* stream) {
  std::lock_guard<std::mutex> lock(streams_mu);
  streams.insert(stream);
}

void ServiceCore::Unregister(StreamBase* stream) {
  {
    std::lock_guard<std::mutex> lock(streams_mu);
    streams.erase(stream);
  }
  streams_cv.notify_all();
}

void ServiceCore::InterruptStreams(const Session* session, const grpc::Status& status) {
  // Interrupt never calls into gRPC with a lock held by gRPC, and never
  // runs OnDone inline, so holding streams_mu here is safe.
  std::lock_guard<std::mutex> lock(streams_mu);
  for (StreamBase* s : streams) {
    if (session == nullptr || s->attached() == session) s->Interrupt(status);
  }
}

// --- SimulatorService ------------------------------------------------------

SimulatorService::SimulatorService(const ServiceOptions& options)
    : core_(std::make_unique<ServiceCore>(options)) {
  core_->store.StartExpiry([](const Session& s) {
    spdlog::info("session expired: session={} step={}", s.id(), [&] {
      v1::Session p;
      s.ToProto(&p);
      return p.step();
    }());
  });
}

SimulatorService::~SimulatorService() { StopWorkers(); }

grpc::ServerUnaryReactor* SimulatorService::Validate(grpc::CallbackServerContext* context,
                                                     const v1::ValidateRequest* request,
                                                     v1::ValidateResponse* response) {
  return OnPool(core_.get(), context, "Validate", [request, response](std::string*) {
    *response->mutable_report() = tether::Validate(request->spec());
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulatorService::Evaluate(grpc::CallbackServerContext* context,
                                                     const v1::EvaluateRequest* request,
                                                     v1::EvaluateResponse* response) {
  return OnPool(core_.get(), context, "Evaluate", [request, response](std::string*) {
    std::vector<v1::Diagnostic> warnings;
    auto created = Simulation::Create(request->spec(), &warnings);
    if (!created.ok()) return ToGrpcStatus(created.status(), "spec.");
    std::unique_ptr<Simulation> sim = std::move(created).value();
    Status s;
    if (request->has_state()) {
      s = sim->SetState(request->state(), "state");
      if (!s.ok()) return ToGrpcStatus(s);
    }
    if (grpc::Status g = ApplyInputs(sim.get(), request->inputs()); !g.ok()) return g;
    s = sim->Evaluate(response->mutable_frame());
    if (!s.ok()) return ToGrpcStatus(s);
    for (auto& w : warnings) *response->add_warnings() = std::move(w);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulatorService::CreateSession(
    grpc::CallbackServerContext* context, const v1::CreateSessionRequest* request,
    v1::Session* response) {
  if (core_->shutting_down()) return Inline(context, "CreateSession", "", Unavailable());
  if (request->display_name().size() > kMaxDisplayNameBytes) {
    return Inline(context, "CreateSession", "",
                  InvalidField("display_name", "at most 256 bytes"));
  }
  if (Status s = core_->store.Reserve(); !s.ok()) {
    return Inline(context, "CreateSession", "", ToGrpcStatus(s));
  }
  ServiceCore* core = core_.get();
  return OnPool(core, context, "CreateSession",
                [core, request, response](std::string* session_id) {
    std::vector<v1::Diagnostic> warnings;
    auto created = Simulation::Create(request->spec(), &warnings);
    if (!created.ok()) {
      core->store.Unreserve();
      return ToGrpcStatus(created.status(), "spec.");
    }
    std::unique_ptr<Simulation> sim = std::move(created).value();
    auto session = core->store.Add(std::move(sim), request->display_name());
    *session_id = session->id();
    session->ToProto(response);
    for (auto& w : warnings) *response->add_warnings() = std::move(w);
    spdlog::info("session created: session={} coordinates={} constraints={}",
                 session->id(), response->coordinates_size(), response->constraints_size());
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulatorService::GetSession(grpc::CallbackServerContext* context,
                                                       const v1::GetSessionRequest* request,
                                                       v1::Session* response) {
  const std::string& id = request->session_id();
  if (core_->shutting_down()) return Inline(context, "GetSession", id, Unavailable());
  if (grpc::Status s = CheckSessionId(id); !s.ok()) return Inline(context, "GetSession", id, s);
  auto session = core_->store.Find(id);
  if (!session) return Inline(context, "GetSession", id, SessionNotFound(id));
  session->Touch();
  session->ToProto(response);
  return Inline(context, "GetSession", id, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SimulatorService::ListSessions(
    grpc::CallbackServerContext* context, const v1::ListSessionsRequest* request,
    v1::ListSessionsResponse* response) {
  if (core_->shutting_down()) return Inline(context, "ListSessions", "", Unavailable());
  std::vector<std::shared_ptr<Session>> page;
  std::string next;
  Status s = core_->store.List(request->page_size(), request->page_token(), &page, &next);
  if (!s.ok()) return Inline(context, "ListSessions", "", ToGrpcStatus(s));
  for (const auto& session : page) session->ToProto(response->add_sessions());
  response->set_next_page_token(next);
  return Inline(context, "ListSessions", "", grpc::Status::OK);
}

grpc::ServerUnaryReactor* SimulatorService::DeleteSession(
    grpc::CallbackServerContext* context, const v1::DeleteSessionRequest* request,
    v1::DeleteSessionResponse* response) {
  const std::string& id = request->session_id();
  if (core_->shutting_down()) return Inline(context, "DeleteSession", id, Unavailable());
  if (grpc::Status s = CheckSessionId(id); !s.ok()) {
    return Inline(context, "DeleteSession", id, s);
  }
  auto session = core_->store.Remove(id);
  if (!session) return Inline(context, "DeleteSession", id, SessionNotFound(id));
  core_->InterruptStreams(session.get(),
                          grpc::Status(grpc::StatusCode::CANCELLED,
                                       "session " + id + " was deleted"));
  spdlog::info("session deleted: session={}", id);
  return Inline(context, "DeleteSession", id, grpc::Status::OK);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* SimulatorService::Run(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  return new RunReactor(core_.get(), request);
}

grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>*
SimulatorService::CoSimulate(grpc::CallbackServerContext* context) {
  return new CoSimReactor(core_.get());
}

void SimulatorService::BeginShutdown() {
  if (core_->shutting_down_.exchange(true)) return;
  core_->InterruptStreams(nullptr, Unavailable());
}

bool SimulatorService::WaitForStreams(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(core_->streams_mu);
  return core_->streams_cv.wait_until(lock, deadline,
                                      [this] { return core_->streams.empty(); });
}

void SimulatorService::StopWorkers() { core_->pool.Stop(); }

}  // namespace tether::service
