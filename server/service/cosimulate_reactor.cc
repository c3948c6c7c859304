#include "service/cosimulate_reactor.h"

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

CoSimulateReactor::CoSimulateReactor(ServiceCore* core, Tenant* tenant)
    : SessionStreamReactor(core, tenant, "CoSimulate", "the client cancelled",
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
    write_in_flight_ = false;
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
  if (act.finish) {
    EndStream(act.status);
    return;
  }
  if (act.write) StartWrite(act.write);
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
    if (grpc::Status s = AcquireSession(request_.session_id()); !s.ok()) return s;
    spdlog::info("cosimulation started: tenant={} session={} from_step={}", tenant_->name(),
                 session_->id(), session_->simulation()->step());
  } else if (session_->deleted()) {
    return SessionDeleted(session_->id());
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

void CoSimulateReactor::Quantum() {
  if (stopping() || !session_) {
    // Queued by an Interrupt (a read may still be pending).
    CoSimActions act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      scheduled_ = false;
      FinishLocked(&act, stopping() ? stop_status() : grpc::Status::OK);
    }
    Act(act);
    return;
  }
  Simulation* sim = session_->simulation();
  grpc::Status error;
  bool done = false;
  if (!stopping() && !begun_) {
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
  if (!stopping() && error.ok()) {
    QuantumBudget budget;
    for (;;) {
      if (stopping()) break;
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
    bool own_buffer = false;
    response_bytes_.Clear();  // the previous step's, sent; Serialize wants none
    grpc::Status encoded = grpc::SerializationTraits<v1::CoSimulateResponse>::Serialize(
        response_, &response_bytes_, &own_buffer);
    if (!encoded.ok()) error = std::move(encoded);
  }
  session_->Publish();
  CoSimActions act;
  {
    std::lock_guard<std::mutex> lock(mu_);
    scheduled_ = false;
    if (!error.ok()) {
      FinishLocked(&act, error);
    } else if (stopping()) {
      FinishLocked(&act, stop_status());
    } else if (done) {
      WriteStartingLocked();
      act.write = &response_bytes_;
    } else {
      scheduled_ = true;  // requeue at the back: fairness
      act.schedule = true;
    }
  }
  Act(act);
}

}  // namespace tether::service
