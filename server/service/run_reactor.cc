#include "service/run_reactor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/slice.h>
#include <spdlog/spdlog.h>

#include "service/quantum_budget.h"
#include "service/rpc_common.h"
#include "service/status_mapping.h"

namespace tether::service {
namespace {

using Clock = std::chrono::steady_clock;

// Bytes added to the first frame's size to bound every frame of the run.
inline constexpr std::size_t kFrameSizeSlack = 64;

}  // namespace

RunReactor::RunReactor(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                       const grpc::ByteBuffer* request)
    : OutboxStreamReactor(core, tenant, context, "Run", "the client cancelled the run",
                          /*poll_after_quantum=*/false) {
  RegisterStream();
  OutboxActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    grpc::Status s = Start(request);
    if (!s.ok()) {
      scheduled_ = false;
      FinishLocked(&act, std::move(s));
    } else {
      spdlog::info(
          "run started: tenant={} session={} from_step={} steps={} until_time={}", tenant_->name(),
          session_->id(), session_->simulation()->step(), request_.steps(),
          request_.has_until_time() ? std::to_string(request_.until_time()) : std::string("-"));
      act.schedule = true;  // the first quantum (scheduled_ is already true)
    }
  }
  Act(act);
}

grpc::Status RunReactor::Start(const grpc::ByteBuffer* request) {
  if (core_->shutting_down()) return Unavailable();
  if (grpc::Status parsed = ParseRequest(*request, &request_); !parsed.ok()) return parsed;
  const auto& r = request_;
  if (grpc::Status s = CheckSessionId(r.session_id()); !s.ok()) return s;
  if (r.steps() == 0 && !r.has_until_time()) {
    return InvalidField("steps", "at least one of steps and until_time must be set");
  }
  if (r.has_until_time() && !std::isfinite(r.until_time())) {
    return InvalidField("until_time", "must be finite");
  }
  if (r.frames_per_message() > kMaxFramesPerMessage) {
    return InvalidField("frames_per_message", "at most " + std::to_string(kMaxFramesPerMessage));
  }
  frames_per_message_ =
      r.frames_per_message() == 0 ? kDefaultFramesPerMessage : r.frames_per_message();
  include_certificate_ = r.has_include_certificate() ? r.include_certificate() : true;
  // With an output grid, every = 0 means no per-step frames (BeginRun
  // checks output_interval).
  every_ = r.every() == 0 && !r.has_output_interval() ? 1 : r.every();
  // Room for the certificate and framing in the last message.
  frame_bytes_cap_ = std::max<std::size_t>(core_->options().max_message_bytes / 4 * 3, 1);
  return AcquireSession(r.session_id());
}

void RunReactor::LogEnd(const grpc::Status& status) {
  if (session_) {
    Simulation* sim = session_->simulation();
    if (!failure_.ok()) {
      spdlog::error("run failed: tenant={} session={} step={} error=\"{}\"", tenant_->name(),
                    session_->id(), sim->step(), failure_.message());
    } else if (status.ok()) {
      spdlog::info("run finished: tenant={} session={} step={} t={}", tenant_->name(),
                   session_->id(), sim->step(), sim->time());
    } else {
      spdlog::info("run stopped: tenant={} session={} step={} t={} reason=\"{}\"", tenant_->name(),
                   session_->id(), sim->step(), sim->time(), status.error_message());
    }
  }
  if (failure_.ok()) LogIfFailed("Run", tenant_, request_.session_id(), status);
}

Status RunReactor::ReserveOutbox(const Simulation& sim) {
  // A frame's encoded size is at most its doubles, 8 bytes each, plus the
  // tags, lengths and its step (packed repeated fields: a tag and a length
  // a field; 128 bytes cover them and the entry's own).
  const auto n = [](const std::vector<std::string>& names) {
    return static_cast<int64_t>(names.size());
  };
  const int64_t nq = n(sim.coordinate_names()), nc = n(sim.constraint_names());
  const int64_t frame = 8 * (3 * nq + 3 * nc + n(sim.output_names())) + 128;
  // The frames the run can make at most, where the request says (a run of
  // 5 steps needs no room for 256 frames): its steps over `every`, or its
  // output grid's times, and the start.
  // Both kinds add up when both are asked for.
  constexpr double kUnbounded = std::numeric_limits<double>::infinity();
  double by_step = 2;  // every = 0: the start and the last
  if (every_ > 0) {
    by_step =
        request_.steps() > 0 ? static_cast<double>(request_.steps() / every_) + 2 : kUnbounded;
  }
  double by_time = 0;
  if (request_.has_output_interval()) {
    by_time = kUnbounded;
    if (request_.has_until_time() && request_.output_interval() > 0) {
      const double grid = (request_.until_time() - sim.time()) / request_.output_interval() + 2;
      if (std::isfinite(grid)) by_time = std::max(grid, 1.0);
    }
  }
  const double most = by_step + by_time;
  const double per_message = std::min(static_cast<double>(frames_per_message_), most);
  // A message's frames: at most that many, and at most frame_bytes_cap_
  // unless one frame alone is more (PerMessage).
  const int64_t cap = static_cast<int64_t>(frame_bytes_cap_);
  const int64_t frames = std::max(
      static_cast<int64_t>(std::min(static_cast<double>(cap), per_message * frame)), frame);
  // Depth: up to kMaxBufferedMessages small messages, but not more than
  // kOutboxBytes of large ones beyond two (one written, one waiting: large
  // messages keep the writer busy without more).
  max_buffered_ = static_cast<std::size_t>(
      std::clamp<int64_t>(kOutboxBytes / frames, 2, static_cast<int64_t>(kMaxBufferedMessages)));
  // The last message's certificate: its figures and texts (8 KiB) and a
  // constraint's figures and name (512 bytes each: 25 figures and a name
  // of at most 128 bytes).
  const int64_t certificate = include_certificate_ ? 8192 + 512 * nc : 0;
  // The outbox never holds more than the run's frames either.
  const double all = most * static_cast<double>(frame);
  const int64_t messages = static_cast<int64_t>(max_buffered_ + 1) * frames;
  const int64_t bytes =
      (all < static_cast<double>(messages) ? static_cast<int64_t>(all) : messages) + certificate;
  return core_->memory().Charge(tenant_, bytes,
                                "a Run stream's outbox (" + std::to_string(max_buffered_) +
                                    " messages waiting for the reader and one being filled, " +
                                    FormatBytes(frames) + " each at frames_per_message " +
                                    std::to_string(frames_per_message_) + ")",
                                &outbox_reserve_);
}

std::size_t RunReactor::PerMessage() const {
  if (frame_bound_ == 0) return 1;
  return std::clamp<std::size_t>(frame_bytes_cap_ / frame_bound_, 1, frames_per_message_);
}

grpc::ByteBuffer RunReactor::TakeMessage() {
  const std::string& bytes = encoder_.bytes();
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer buffer(&slice, 1);
  encoder_.Clear();
  return buffer;
}

void RunReactor::Quantum() {
  Simulation* sim = session_->simulation();
  std::vector<grpc::ByteBuffer> ready;
  bool done = false;
  bool blocked = false;      // stopped for lack of buffer room
  uint64_t writes_seen = 0;  // progress_ (completed writes) when room was last checked
  if (!stopping() && !begun_ && !draining_.load()) {
    begun_ = true;
    RunOptions options;
    options.steps = request_.steps();
    if (request_.has_until_time()) options.until_time = request_.until_time();
    options.every = every_;
    if (request_.has_output_interval()) options.output_interval = request_.output_interval();
    // Frames never repeat: only a session's first run emits step 0.
    options.emit_start = sim->step() == 0;
    options.certificate = include_certificate_;
    Status s = ReserveOutbox(*sim);
    if (s.ok()) s = sim->BeginRun(options);
    running_ = s.ok();
    if (!s.ok()) {
      final_status_ = ToGrpcStatus(s);
      done = true;
    }
  }
  if (!stopping() && !done) {
    QuantumBudget budget;
    // A stop or the drain reaches a long step within one evaluation; the
    // step is then abandoned (the state stays at the last one) and the
    // branches below end the stream as for a stop between chunks.
    sim->SetInterrupt([this] { return stopping() || draining_.load(); });
    for (;;) {
      if (stopping() || draining_.load()) break;
      if (session_->deleted()) {
        std::lock_guard<std::mutex> lock(mu_);
        StopLocked(SessionDeleted(session_->id()));
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
        writes_seen = progress_;
      }
      if (buffered >= max_buffered_) {
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
      // Only steps count: the run's first chunk, which may only emit its
      // first frame (PerMessage() is 1 until a frame's size is known), must
      // not make the next chunk look free (it then took several 0.6 s steps
      // of a 600-coordinate model in one quantum).
      budget.Took(sim->step() - step_before);
      if (before == 0 && encoder_.frames() > 0) first_pending_ = Clock::now();
      if (frame_bound_ == 0 && encoder_.frames() > 0) {
        // Frames of one run differ only in varints and in scalars that
        // proto3 omits when zero: this bounds every later one.
        frame_bound_ = encoder_.first_entry_size() + kFrameSizeSlack;
      }
      if (s.code() == StatusCode::kCancelled) break;  // interrupted: not a failure
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
    sim->SetInterrupt({});
  }
  if (!done && !stopping() && draining_.load()) {
    // The shutdown grace ran out: the run ends here like a finished one
    // (every computed frame, the partial window's certificate), with the
    // drain's status.
    done = true;
    std::lock_guard<std::mutex> lock(mu_);
    final_status_ = grpc::Status(
        drain_status_.error_code(),
        drain_status_.error_message() + ": the run stopped at step " + std::to_string(sim->step()) +
            "; every frame computed was sent, and the last message carries the certificate of "
            "the partial window");
  }
  if (!done && encoder_.frames() > 0 && Clock::now() - first_pending_ >= kMaxFrameDelay) {
    // Sparse frames go out without waiting for a full message, when the
    // buffer has room for one more.
    bool room;
    {
      std::lock_guard<std::mutex> lock(mu_);
      room = outbox_.size() + ready.size() < max_buffered_;
    }
    if (room) ready.push_back(TakeMessage());
  }
  if (done) {
    // The last message: the remaining frames and the window's certificate.
    // A run refused before it began (its options, the memory budget) has
    // no window to certify: the status alone, no empty certificate.
    if (encoder_.frames() > 0 || (include_certificate_ && running_)) {
      if (include_certificate_ && running_) {
        v1::Certificate certificate;
        sim->GetCertificate(&certificate);
        encoder_.AddCertificate(certificate);
      }
      ready.push_back(TakeMessage());
    }
  }
  session_->Publish();
  spdlog::debug("quantum: session={} step={} ready={} building={} done={}", session_->id(),
                sim->step(), ready.size(), encoder_.frames(), done);
  EndQuantum(&ready, done, blocked, writes_seen);
}

}  // namespace tether::service
