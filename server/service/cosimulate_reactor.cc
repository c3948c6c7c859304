#include "service/cosimulate_reactor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include <grpcpp/impl/codegen/proto_utils.h>
#include <spdlog/spdlog.h>

#include "service/quantum_budget.h"
#include "service/rpc_common.h"
#include "service/status_mapping.h"
#include "tether/status_code_name.h"

namespace tether::service {

CoSimulateReactor::CoSimulateReactor(ServiceCore* core, Tenant* tenant,
                                     grpc::CallbackServerContext* context)
    : SessionStreamReactor(core, tenant, context, "CoSimulate", "the client cancelled",
                           // The worker that steps a co-simulation polls for
                           // the master's next step before sleeping.
                           /*poll_after_quantum=*/true) {
  RegisterStream();
  CoSimActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    scheduled_ = false;  // the constructor hands over to the first read
    if (core_->shutting_down()) {
      FinishLocked(&act, Unavailable());
    } else {
      act.read = true;
    }
  }
  Act(act);
}

void CoSimulateReactor::OnReadDone(bool ok) {
  CoSimActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    // Only an Interrupt queues a quantum while a read is pending; that
    // quantum ends the stream (ending it here too could free the reactor
    // under it).
    if (scheduled_) return;
    if (!ok) {
      // The client closed its side (or the call ended): finish cleanly.
      FinishLocked(&act, stopping() ? stop_status() : grpc::Status::OK);
    } else if (stopping()) {
      FinishLocked(&act, stop_status());
    } else {
      grpc::Status s = TakeRequest();
      if (!s.ok()) {
        FinishLocked(&act, std::move(s));
      } else {
        scheduled_ = true;
        act.schedule = true;
      }
    }
  }
  Act(act);
}

void CoSimulateReactor::OnWriteDone(bool ok) {
  CoSimActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    WriteDoneLocked();
    if (finished_) return;
    if (!ok) StopLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
    if (stopping()) {
      FinishLocked(&act, stop_status());
    } else {
      act.read = true;
    }
  }
  Act(act);
}

void CoSimulateReactor::Act(const CoSimActions& act) {
  if (ActOnEnd(act)) return;
  if (act.read) StartRead(&request_bytes_);
  if (act.schedule) Schedule();
}

void CoSimulateReactor::LogEnd(const grpc::Status& status) {
  if (session_) {
    Simulation* sim = session_->simulation();
    if (!failure_.ok()) {
      spdlog::error("cosimulation failed: tenant={} session={} step={} error=\"{}\"",
                    tenant_->name(), session_->id(), sim->step(), failure_.message());
    } else {
      spdlog::info("cosimulation finished: tenant={} session={} step={} t={} code={}",
                   tenant_->name(), session_->id(), sim->step(), sim->time(),
                   GrpcStatusCodeName(status.error_code()));
    }
  }
  if (failure_.ok()) {
    LogIfFailed("CoSimulate", tenant_, session_ ? session_->id() : std::string(), status);
  }
}

grpc::Status CoSimulateReactor::TakeRequest() {
  request_.Clear();
  if (grpc::Status parsed = ParseRequest(request_bytes_, &request_); !parsed.ok()) return parsed;
  if (!session_) {
    if (core_->shutting_down()) return Unavailable();
    if (grpc::Status s = CheckSessionId(request_.session_id()); !s.ok()) return s;
    if (request_.has_write_through() && request_.write_through() && !core_->shared()) {
      return InvalidField("write_through",
                          "expected unset or false without --session-store (no shared store to "
                          "write through to), found true");
    }
    write_through_ =
        request_.has_write_through() ? request_.write_through() : core_->write_through();
    if (grpc::Status s = AcquireSession(request_.session_id()); !s.ok()) return s;
    spdlog::info("cosimulation started: tenant={} session={} from_step={} write_through={}",
                 tenant_->name(), session_->id(), session_->simulation()->step(),
                 write_through_ ? "true" : "false");
  } else if (session_->deleted()) {
    return SessionDeleted(session_->id());
  }
  const double h = request_.communication_step();
  save_snapshot_ = request_.save_snapshot();
  restore_snapshot_id_ = request_.restore_snapshot_id();
  snapshot_label_ = request_.snapshot_label();
  restore_state_ = request_.has_restore_state();
  if (restore_state_) state_to_restore_.Swap(request_.mutable_restore_state());
  if (int{save_snapshot_} + int{restore_snapshot_id_ != 0} + int{restore_state_} > 1) {
    return InvalidField(restore_state_ ? "restore_state" : "restore_snapshot_id",
                        "expected one of save_snapshot, restore_snapshot_id and restore_state, "
                        "found more");
  }
  if (Command()) {
    const char* field = save_snapshot_              ? "save_snapshot"
                        : restore_snapshot_id_ != 0 ? "restore_snapshot_id"
                                                    : "restore_state";
    if (h != 0) {
      return InvalidField("communication_step", std::string("expected 0 with ") + field +
                                                    " (a snapshot command takes "
                                                    "no step), found " +
                                                    FormatNumber(h));
    }
    if (!request_.inputs().empty()) {
      return InvalidField("inputs", std::string("expected none with ") + field);
    }
    if (!request_.input_rates().empty()) {
      return InvalidField("input_rates", std::string("expected none with ") + field);
    }
    if (snapshot_label_.size() > 256) return InvalidField("snapshot_label", "at most 256 bytes");
  } else if (!(h > 0) || !std::isfinite(h)) {
    return InvalidField("communication_step", "must be positive and finite");
  }
  if (!v1::CoSimulateRequest::OnFailure_IsValid(request_.on_failure())) {
    return InvalidField("on_failure", "expected ON_FAILURE_ABORT or ON_FAILURE_DISCARD, found " +
                                          std::to_string(request_.on_failure()));
  }
  discard_on_failure_ = request_.on_failure() == v1::CoSimulateRequest::ON_FAILURE_DISCARD;
  communication_step_ = h;
  inputs_ = request_.inputs();
  if (grpc::Status s = TakeInputRates(); !s.ok()) return s;
  begun_ = false;
  return grpc::Status::OK;
}

grpc::Status CoSimulateReactor::TakeInputRates() {
  input_rates_.clear();
  if (request_.input_rates().empty()) return grpc::Status::OK;
  const auto& names = session_->simulation()->input_names();
  input_rates_.assign(names.size(), 0.0);
  for (const auto& [name, rate] : request_.input_rates()) {
    const auto it = std::find(names.begin(), names.end(), name);
    const std::string field = "input_rates[" + EscapeForMessage(name) + "]";
    if (it == names.end()) {
      std::string valid;
      for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
      return InvalidField(field, "expected the name of an input (" +
                                     (valid.empty() ? std::string("the system has none") : valid) +
                                     "), found " + QuoteForMessage(name));
    }
    if (!std::isfinite(rate)) {
      return InvalidField(field, "expected a finite rate, found " + FormatNumber(rate));
    }
    input_rates_[static_cast<size_t>(it - names.begin())] = rate;
  }
  return grpc::Status::OK;
}

void CoSimulateReactor::Quantum() {
  if (stopping() || !session_) {
    // Queued by an Interrupt (a read may still be pending).
    CoSimActions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      scheduled_ = false;
      FinishLocked(&act, stopping() ? stop_status() : grpc::Status::OK);
    }
    if (act.any()) Act(act);  // a worker's last act (session_reactor.h)
    return;
  }
  grpc::Status error;
  bool done = false;
  if (Command()) {
    error = SnapshotCommand();
    done = error.ok();
  } else if (!stopping() && !begun_) {
    Simulation* sim = session_->simulation();
    begun_ = true;
    frames_.Clear();
    if (discard_on_failure_) sim->SaveState(&before_step_);
    error = ApplyInputs(sim, inputs_);
    if (error.ok() && !input_rates_.empty()) {
      // The ramps of this step only (cleared below once it ends).
      if (Status s = sim->SetInputRates(input_rates_); !s.ok()) {
        error = GrpcError(ToGrpcCode(s.code()), s.message(),
                          {FieldViolation{"input_rates", s.message()}});
      } else {
        ramps_ = true;
      }
    }
    if (error.ok()) {
      RunOptions options;
      options.until_time = sim->grid_time() + communication_step_;
      options.every = std::numeric_limits<uint64_t>::max();
      options.emit_start = false;
      options.certificate = true;
      Status s = sim->BeginRun(options);
      if (!s.ok() && discard_on_failure_ && s.code() == StatusCode::kAborted) {
        // The evaluation at the start failed with the new inputs.
        error = Discard(s);
        done = error.ok();
      } else if (!s.ok()) {
        // BeginRun's violations are about the stop time, which is this
        // request's communication_step: named so, in its own words.
        std::vector<FieldViolation> v;
        std::string message = s.message();
        if (!s.violations().empty()) {
          message = "communication_step: " + s.violations()[0].description;
          v.push_back({"communication_step", s.violations()[0].description});
        }
        error = GrpcError(ToGrpcCode(s.code()), message, v);
      }
    }
  }
  Simulation* sim = session_->simulation();
  bool discarded = done && !Command();
  if (!done && !stopping() && error.ok()) {
    QuantumBudget budget;
    // A stop reaches a long step within one evaluation (the step is then
    // abandoned, the state stays at the last one, and the stream ends as
    // for a stop between chunks).
    sim->SetInterrupt([this] { return stopping(); });
    for (;;) {
      if (stopping()) break;
      uint64_t chunk = budget.NextChunk();
      if (chunk == 0) break;
      Status s = sim->Advance(chunk, &frames_);
      budget.Took(chunk);
      if (s.code() == StatusCode::kCancelled) break;  // interrupted: not a failure
      if (!s.ok() && discard_on_failure_ && s.code() == StatusCode::kAborted) {
        error = Discard(s);
        discarded = done = error.ok();
        break;
      }
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
    sim->SetInterrupt({});
  }
  if (ramps_ && (done || !error.ok() || stopping())) {
    // The step is over (completed, discarded, failed or abandoned): the
    // session holds its inputs again, as after any other step.
    (void)session_->simulation()->SetInputRates({});
    ramps_ = false;
  }
  if (done && !discarded && !Command()) {
    response_.Clear();
    if (!frames_.empty()) response_.mutable_frame()->Swap(frames_.Mutable(frames_.size() - 1));
    sim->GetCertificate(response_.mutable_certificate());
  }
  if (done) {
    frames_.Clear();
    bool own_buffer = false;
    response_bytes_.Clear();  // the previous step's, sent; Serialize wants none
    grpc::Status encoded = grpc::SerializationTraits<v1::CoSimulateResponse>::Serialize(
        response_, &response_bytes_, &own_buffer);
    if (!encoded.ok()) error = std::move(encoded);
  }
  session_->Publish();
  if (done && error.ok() && write_through_) {
    // Write-through (--write-through, or the stream's write_through): the
    // response waits until the state after this step is in the shared
    // store, so an acknowledged step is never lost.
    if (Status s = core_->PersistNow(*session_); !s.ok()) error = ToGrpcStatus(s);
  }
  CoSimActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    scheduled_ = false;
    if (!error.ok()) {
      FinishLocked(&act, error);
    } else if (stopping()) {
      FinishLocked(&act, stop_status());
    } else if (done) {
      StartWriteLocked(&response_bytes_);
    } else {
      scheduled_ = true;  // requeue at the back: fairness
      act.schedule = true;
    }
  }
  if (act.any()) Act(act);  // a worker's last act (session_reactor.h)
}

grpc::Status CoSimulateReactor::Discard(const Status& failure) {
  Simulation* sim = session_->simulation();
  response_.Clear();
  sim->GetCertificate(response_.mutable_certificate());  // the attempt's
  if (Status s = sim->RestoreState(before_step_, "state"); !s.ok()) {
    // Cannot happen (a state this simulation saved); fail as before.
    failure_ = failure;
    return ToGrpcStatus(failure);
  }
  if (Status s = sim->Evaluate(response_.mutable_frame()); !s.ok()) {
    failure_ = s;
    return ToGrpcStatus(s);
  }
  response_.set_discarded(true);
  response_.set_last_successful_time(sim->time());
  response_.set_discard_reason(failure.message());
  spdlog::info("cosimulation step discarded: tenant={} session={} t={} reason=\"{}\"",
               tenant_->name(), session_->id(), sim->time(), failure.message());
  return grpc::Status::OK;
}

grpc::Status CoSimulateReactor::SnapshotCommand() {
  response_.Clear();
  if (save_snapshot_) {
    if (Status s = session_->SaveSnapshot(snapshot_label_, core_->options().max_snapshots,
                                          response_.mutable_snapshot());
        !s.ok()) {
      return ToGrpcStatus(s);
    }
  } else if (restore_state_) {
    // Checked in full by RestoreState; the simulation is unchanged on error.
    // A state that passes those checks must also evaluate (q = (1e200, 0)
    // is finite, but its constraint is not): otherwise the session goes
    // back to where it was and the request is INVALID_ARGUMENT, as
    // UpdateSession's state (the evaluation below failed the session at the
    // bogus state and lost the one before it).
    Simulation* sim = session_->simulation();
    v1::SimulationState before;
    sim->SaveState(&before);
    if (Status s = sim->RestoreState(state_to_restore_, "restore_state"); !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (Status e = sim->Evaluate(response_.mutable_frame()); !e.ok()) {
      response_.Clear();
      if (Status back = sim->RestoreState(before, "state"); !back.ok()) {
        failure_ = back;  // cannot happen: a state this simulation saved
        return ToGrpcStatus(back);
      }
      const std::string m = "the restored state cannot be evaluated: " + e.message();
      return ToGrpcStatus(InvalidArgument("restore_state: " + m, {{"restore_state.state", m}}));
    }
    return grpc::Status::OK;
  } else if (Status s = session_->RestoreSnapshot(restore_snapshot_id_); !s.ok()) {
    return ToGrpcStatus(s);
  }
  // After a restore: the simulation it may have replaced.
  Simulation* sim = session_->simulation();
  if (Status s = sim->Evaluate(response_.mutable_frame()); !s.ok()) {
    failure_ = s;
    return ToGrpcStatus(s);
  }
  return grpc::Status::OK;
}

}  // namespace tether::service
