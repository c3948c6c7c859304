#include "service/run_reactor.h"

#include <algorithm>
#include <cmath>
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
    Status s = sim->BeginRun(options);
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
      room = outbox_.size() + ready.size() < kMaxBufferedMessages;
    }
    if (room) ready.push_back(TakeMessage());
  }
  if (done) {
    // The last message: the remaining frames and the window's certificate.
    if (encoder_.frames() > 0 || (include_certificate_ && begun_)) {
      if (include_certificate_ && begun_) {
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
