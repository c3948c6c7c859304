#include "service/ensemble_reactor.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/support/slice.h>
#include <spdlog/spdlog.h>

#include "service/quantum_budget.h"
#include "service/rpc_common.h"
#include "service/run_reactor.h"
#include "service/status_mapping.h"
#include "service/unary_handlers.h"

namespace tether::service {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

EnsembleReactor::EnsembleReactor(ServiceCore* core, Tenant* tenant,
                                 grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request)
    : OutboxStreamReactor(core, tenant, context, "RunEnsemble", "the client cancelled the ensemble",
                          /*poll_after_quantum=*/false),
      call_context_(context) {
  RegisterStream();
  OutboxActions act;
  bool compile = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    grpc::Status s = Start(request);
    if (!s.ok()) {
      scheduled_ = false;
      FinishLocked(&act, std::move(s));
    } else {
      compile = true;  // Prepare owns the stream (scheduled_ stays true)
    }
  }
  if (compile) {
    // The compile lane's bounds (--max-queued-compiles and the tenant's
    // share) hold for ensembles as for the unary compiles.
    const WorkerPool::Admission admission =
        core_->SubmitCompileIfRoom([this] { Prepare(); }, tenant_);
    if (admission == WorkerPool::Admission::kQueued) return;
    std::lock_guard<std::mutex> lock(mu_);
    scheduled_ = false;
    FinishLocked(&act, CompileLaneRefusal(core_->options(), admission));
  }
  Act(act);
}

grpc::Status EnsembleReactor::Start(const grpc::ByteBuffer* request) {
  if (core_->shutting_down()) return Unavailable();
  if (grpc::Status parsed = ParseRequest(*request, &request_); !parsed.ok()) return parsed;
  const auto& r = request_;
  if (r.results_per_message() > kMaxResultsPerMessage) {
    return InvalidField("results_per_message",
                        "expected at most " + std::to_string(kMaxResultsPerMessage) + ", found " +
                            std::to_string(r.results_per_message()));
  }
  per_message_ = r.results_per_message() == 0 ? kDefaultResultsPerMessage : r.results_per_message();
  bytes_cap_ = std::max<std::size_t>(core_->options().max_message_bytes / 4 * 3, 1);
  if (!std::isfinite(r.until_time())) return InvalidField("until_time", "must be finite");
  if (!v1::EnsembleFunctions_IsValid(r.functions())) {
    return InvalidField("functions",
                        "expected ENSEMBLE_FUNCTIONS_EXACT (1) or "
                        "ENSEMBLE_FUNCTIONS_FAST (2), found " +
                            std::to_string(r.functions()));
  }
  if (r.reduce() && !r.has_output_interval()) {
    return InvalidField("reduce", "reductions are per output time: expected an output_interval");
  }
  switch (r.template_case()) {
    case v1::RunEnsembleRequest::kSpec: spec_ = r.spec(); break;
    case v1::RunEnsembleRequest::kSessionId: {
      if (grpc::Status s = CheckSessionId(r.session_id()); !s.ok()) return s;
      std::shared_ptr<Session> session;
      // FindSession: with a shared store, a session this replica does not
      // hold is loaded from it, as for every other session call.
      if (grpc::Status s = core_->FindSession(r.session_id(), tenant_, &session); !s.ok()) {
        return s;
      }
      // A brief lease: the description, the current state and the inputs'
      // values become the template; the session is not changed.
      if (Status s = session->Acquire("RunEnsemble", /*allow_failed=*/false); !s.ok()) {
        return ToGrpcStatus(s);
      }
      const Simulation* sim = session->simulation();
      spec_ = sim->spec();
      sim->GetState(spec_.mutable_initial());
      v1::SimulationState saved;
      sim->SaveState(&saved);
      for (int i = 0; i < saved.inputs_size() && i < spec_.system().inputs_size(); ++i) {
        spec_.mutable_system()->mutable_inputs(i)->set_default_value(saved.inputs(i));
      }
      session->Release();
      break;
    }
    default: return InvalidField("template", "expected spec or session_id, found neither");
  }
  if (Status s = tenant_->AcquireStream(); !s.ok()) return ToGrpcStatus(s);
  holds_stream_ = true;
  return grpc::Status::OK;
}

void EnsembleReactor::Prepare() {
  grpc::Status failed;
  if (stopping()) {
    // Ends below with the stop's status.
  } else {
    EnsembleLimits limits;
    limits.max_instances = core_->options().ensemble_max_instances;
    limits.max_instance_steps = core_->options().ensemble_max_instance_steps;
    // Every result must fit a message (Collect): a larger bound is refused
    // before anything runs.
    limits.max_result_bytes = core_->options().max_message_bytes - 64;
    limits.max_compilations = core_->options().ensemble_max_compilations;
    EnsembleOptions options;
    options.until_time = request_.until_time();
    options.certificate =
        request_.has_include_certificate() ? request_.include_certificate() : true;
    if (request_.has_output_interval()) options.output_interval = request_.output_interval();
    options.fast_functions = request_.functions() == v1::ENSEMBLE_FUNCTIONS_FAST;
    options.compile_gate = core_->ensemble_compile_gate();
    auto runner = EnsembleRunner::Create(spec_, request_.ensemble(), options, limits,
                                         CallCompileOptions(core_, call_context_), "ensemble");
    if (!runner.ok()) {
      const Status& s = runner.status();
      // The template's own violations (system..., initial...) are named
      // under "spec." in the request; the ensemble's and the times' are
      // already the request's paths.
      const bool of_template =
          request_.template_case() == v1::RunEnsembleRequest::kSpec &&
          s.code() == StatusCode::kInvalidArgument && !s.violations().empty() &&
          s.violations()[0].field.rfind("ensemble", 0) != 0 &&
          s.violations()[0].field != "until_time" && s.violations()[0].field != "output_interval";
      failed = of_template ? ToGrpcStatus(s, "spec.") : CompileFailed(core_, call_context_, s, "");
    } else {
      runner_ = std::move(*runner);
      // Groups of eight where the lane path applies, whatever the steps
      // (a group is advanced in chunks); else instance by instance
      // (docs/ENSEMBLES.md, "Lanes").
      group_ = static_cast<uint64_t>(runner_->group_size());
      // One lane per worker, at most one per claim (a group or an instance).
      max_lanes_ = std::min<uint64_t>(std::max<std::size_t>(core_->options().workers, 1),
                                      (runner_->size() + group_ - 1) / group_) -
                   1;
      // The reductions' accumulators, sized before they are made (they
      // may be far over the limit: one request of 10^6 output times and
      // 4096 outputs asked for 131 GB).
      const int64_t reducer_bytes =
          request_.reduce() ? EnsembleReducer::HeapBytesFor(spec_, options) : 0;
      if (reducer_bytes > static_cast<int64_t>(bytes_cap_ / 2)) {
        failed = InvalidField("output_interval",
                              "the reductions (times x q, v and outputs) would take " +
                                  std::to_string(reducer_bytes) + " bytes, over half the " +
                                  "message limit (--max-message-bytes); expected a larger "
                                  "output_interval");
      } else if (request_.reduce()) {
        reducer_ = std::make_unique<EnsembleReducer>(spec_, options);
      }
      // The running instances (one per lane, or a group's eight per lane),
      // the template's model and, with parameters varied, the cache's
      // (models of the same size), the reductions' accumulators, and the
      // results claimed and not yet sent (being computed or waiting in
      // done_results_: at most the claim window, each within the runner's
      // heap bound, frames included).
      const int64_t window = static_cast<int64_t>(kClaimWindowPerLane * group_ * (max_lanes_ + 1));
      const int64_t bytes =
          static_cast<int64_t>((max_lanes_ + 1) * group_) * runner_->instance_bytes() +
          runner_->max_models() * runner_->model_bytes() + reducer_bytes +
          window * runner_->result_heap_bound();
      if (failed.ok()) {
        Status s = core_->memory().Charge(
            tenant_, bytes, "RunEnsemble's running instances, models, reductions and results",
            &run_charge_);
        if (!s.ok()) failed = ToGrpcStatus(s);
      }
    }
  }
  spdlog::info("ensemble started: tenant={} instances={} lanes={} group={} until_time={} status={}",
               tenant_->name(), runner_ ? runner_->size() : 0, max_lanes_ + 1, group_,
               request_.until_time(), failed.ok() ? "ok" : failed.error_message());
  OutboxActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed.ok()) {
      final_status_ = failed;
      done_producing_ = true;
    }
    last_sent_ = Clock::now();
    DecideLocked(&act, /*in_quantum=*/true);
  }
  if (act.any()) Act(act);  // a worker's last act (session_reactor.h)
}

void EnsembleReactor::LogEnd(const grpc::Status& status) {
  if (holds_stream_) {
    holds_stream_ = false;
    tenant_->ReleaseStream();
  }
  const uint64_t total = runner_ ? runner_->size() : 0;
  if (status.ok()) {
    spdlog::info("ensemble finished: tenant={} instances={}", tenant_->name(), total);
  } else {
    spdlog::info("ensemble stopped: tenant={} done={} of {} reason=\"{}\"", tenant_->name(),
                 next_index_, total, status.error_message());
  }
  LogIfFailed("RunEnsemble", tenant_, request_.session_id(), status);
}

grpc::ByteBuffer EnsembleReactor::TakeMessage() {
  building_.set_done(next_index_);
  building_.set_total(runner_->size());
  building_.set_seed(runner_->seed());
  building_.set_functions(runner_->fast_functions() ? v1::ENSEMBLE_FUNCTIONS_FAST
                                                    : v1::ENSEMBLE_FUNCTIONS_EXACT);
  const std::string bytes = building_.SerializeAsString();
  building_.Clear();
  last_sent_ = Clock::now();
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

bool EnsembleReactor::MayClaimLocked() const {
  return !stopped_or_draining() && !done_producing_ && next_claim_ < runner_->size() &&
         next_claim_ < next_index_ + kClaimWindowPerLane * group_ * (max_lanes_ + 1);
}

std::unique_ptr<EnsembleGroupRun> EnsembleReactor::Claim() {
  uint64_t first;
  int count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!MayClaimLocked()) return nullptr;
    first = next_claim_;
    count = static_cast<int>(std::min<uint64_t>(group_, runner_->size() - next_claim_));
    next_claim_ += static_cast<uint64_t>(count);
  }
  std::unique_ptr<EnsembleGroupRun> run = runner_->StartGroup(first, count);
  run->SetInterrupt([this] { return stopped_or_draining(); });
  return run;
}

uint64_t EnsembleReactor::AdvanceChunk(EnsembleGroupRun* run, uint64_t chunk,
                                       QuantumBudget* budget) {
  // chunk is a multiple of the claim's cost estimate (group_), which is
  // at least what a step costs now: whole steps, within the chunk.
  const uint64_t before = run->work();
  const bool finished = run->Advance(chunk / run->step_cost());
  budget->Took(std::max<uint64_t>(run->work() - before, 1));
  if (!finished) return 0;
  return static_cast<uint64_t>(run->count());
}

void EnsembleReactor::Deliver(v1::EnsembleInstanceResult* results, int count) {
  OutboxActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < count; ++i) {
      const uint64_t index = results[i].index();
      done_results_.emplace(index, std::move(results[i]));
    }
    progress_ += count;
    DecideLocked(&act, /*in_quantum=*/false);
  }
  Act(act);  // never the end: the calling lane still counts in lanes_
}

void EnsembleReactor::StartLanes() {
  uint64_t start = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_or_draining() || done_producing_ || next_claim_ >= runner_->size()) return;
    start = max_lanes_ - lanes_;
    lanes_ += start;
  }
  for (uint64_t i = 0; i < start; ++i) {
    auto lane = std::make_shared<Lane>();
    core_->Submit([this, lane] { LaneQuantum(lane); }, false, tenant_);
  }
}

void EnsembleReactor::LaneQuantum(const std::shared_ptr<Lane>& lane) {
  QuantumBudget budget;
  bool again = false;
  for (;;) {
    if (stopped_or_draining()) break;
    // The next chunk in instance steps, whole steps of what runs (before
    // a claim, a group's).
    const uint64_t chunk = budget.NextChunk(lane->run ? lane->run->step_cost() : group_);
    if (chunk == 0) {
      again = true;
      break;
    }
    if (!lane->run) {
      lane->run = Claim();
      if (!lane->run) break;
    }
    const uint64_t finished = AdvanceChunk(lane->run.get(), chunk, &budget);
    if (finished == 0) {
      if (lane->run->interrupted()) break;
      continue;
    }
    std::vector<v1::EnsembleInstanceResult> results(finished);
    lane->run->TakeResults(results.data());
    Deliver(results.data(), static_cast<int>(finished));
    lane->run.reset();
  }
  if (again) {
    // At the back of the tenant's queue: other tenants' work goes first.
    core_->Submit([this, lane] { LaneQuantum(lane); }, false, tenant_);
    return;
  }
  lane->run.reset();  // an instance stopped by a stop or the drain is dropped
  OutboxActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --lanes_;
    // An event for a main lane that paused waiting for the lanes (the
    // drain waits for lanes_ == 0): without it, a lane ending between the
    // main lane's look at lanes_ and its EndQuantum would leave the main
    // lane starved with no lane left to wake it.
    ++progress_;
    DecideLocked(&act, /*in_quantum=*/false);
  }
  if (act.any()) Act(act);  // a worker's last act (session_reactor.h): `this` may be gone
}

bool EnsembleReactor::Collect(v1::EnsembleInstanceResult&& result,
                              std::vector<grpc::ByteBuffer>* ready) {
  if (reducer_) reducer_->Add(&result);  // in index order; takes the frames
  // A message ends before its results' bytes pass the cap; a result alone
  // over the message limit (its frames) ends the call.
  const std::size_t bytes = result.ByteSizeLong();
  if (bytes > core_->options().max_message_bytes - 64) {
    final_status_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "output_interval: instance " + std::to_string(result.index()) +
                                     "'s frames take " + std::to_string(bytes) +
                                     " bytes, over the message limit of " +
                                     std::to_string(core_->options().max_message_bytes) +
                                     " (--max-message-bytes); expected a larger output_interval");
    return false;
  }
  if (building_.results_size() > 0 && building_.ByteSizeLong() + bytes > bytes_cap_) {
    ready->push_back(TakeMessage());
  }
  if (building_.results_size() == 0) first_pending_ = Clock::now();
  *building_.add_results() = std::move(result);
  return true;
}

void EnsembleReactor::Quantum() {
  std::vector<grpc::ByteBuffer> ready;
  bool done = false;
  bool blocked = false;        // no buffer room, or waiting for the helper lanes
  uint64_t progress_seen = 0;  // progress_ when the main lane last looked
  if (!stopping() && runner_) {
    StartLanes();
    QuantumBudget budget;
    const uint64_t n = runner_->size();
    for (;;) {
      if (stopping()) break;
      std::size_t buffered;
      bool lanes_idle;
      std::optional<v1::EnsembleInstanceResult> next;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (next_index_ >= n) {
          done = true;
          break;
        }
        buffered = outbox_.size() + ready.size();
        progress_seen = progress_;
        lanes_idle = lanes_ == 0;
        auto it = done_results_.find(next_index_);
        if (buffered < kMaxBufferedMessages && it != done_results_.end()) {
          next = std::move(it->second);
          done_results_.erase(it);
          ++next_index_;
        }
      }
      if (buffered >= kMaxBufferedMessages) {
        blocked = true;
        break;
      }
      if (static_cast<uint32_t>(building_.results_size()) >= per_message_) {
        // The result taken (if any) goes into the next message.
        ready.push_back(TakeMessage());
      }
      if (next) {
        if (!Collect(std::move(*next), &ready)) {
          done = true;
          break;
        }
        continue;
      }
      if (draining_.load()) {
        // The shutdown grace ran out: once the helper lanes have stopped,
        // what they delivered without a gap is collected above, and the
        // call ends with it.
        current_.reset();
        if (!lanes_idle) {
          blocked = true;
          break;
        }
        std::lock_guard<std::mutex> lock(mu_);
        final_status_ = grpc::Status(
            drain_status_.error_code(),
            drain_status_.error_message() + ": the results of instances 0 to " +
                std::to_string(next_index_) + " (excluded) of " + std::to_string(n) +
                " were sent, every one computed in index order; the rest were not run");
        done = true;
        break;
      }
      const uint64_t chunk = budget.NextChunk(current_ ? current_->step_cost() : group_);
      if (chunk == 0) break;
      if (!current_) {
        current_ = Claim();
        if (!current_) {
          // Everything left is claimed by the helper lanes (or the window
          // is full): a delivery wakes this lane.
          blocked = true;
          break;
        }
      }
      const uint64_t finished = AdvanceChunk(current_.get(), chunk, &budget);
      if (finished == 0) continue;  // more to do, or interrupted (a stop or the drain): seen above
      std::vector<v1::EnsembleInstanceResult> results(finished);
      current_->TakeResults(results.data());
      current_.reset();
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& result : results) {
        const uint64_t index = result.index();
        done_results_.emplace(index, std::move(result));
      }
    }
  }
  if (stopping()) current_.reset();
  const auto now = Clock::now();
  if (!runner_) {
    // Only a stop queues a quantum before Prepare succeeded: it ends below.
  } else if (done) {
    // The rest (with done == total when all ran), and the reductions.
    if (reducer_ && final_status_.ok()) reducer_->Fill(building_.mutable_reduction());
    ready.push_back(TakeMessage());
  } else if (!stopping()) {
    const bool late = building_.results_size() > 0 ? now - first_pending_ >= kMaxFrameDelay
                                                   : now - last_sent_ >= kEnsembleProgressInterval;
    std::lock_guard<std::mutex> lock(mu_);
    if (late && outbox_.size() + ready.size() < kMaxBufferedMessages) {
      ready.push_back(TakeMessage());
    }
  }
  EndQuantum(&ready, done, blocked, progress_seen);
}

}  // namespace tether::service
