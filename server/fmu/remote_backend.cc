// The remote step backend (step_backend.h): a session of the description
// on a tether-server (remote_session.h), one CoSimulate exchange a
// communication step; FMU states are server-side snapshots.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "engine/status.h"
#include "fmu/fmu_state.h"
#include "fmu/instance.h"
#include "fmu/remote_session.h"
#include "fmu/step_backend.h"

namespace tether::fmu {
namespace {

class Remote final : public StepBackend {
 public:
  Remote(Instance& inst, std::string server, std::unique_ptr<RemoteSession> session)
      : inst_(inst), server_(std::move(server)), session_(std::move(session)) {}

  // One communication step on the server; the engine here then only
  // evaluates at the state it returns.
  fmi2Status Step(double t, double h, double) override {
    Simulation& sim = *inst_.sim;
    // The server's engine cannot call the master back inside its step (a
    // round trip per stage): an intermediate update with variables to
    // exchange runs in process only. A callback without them is not called.
    if (inst_.intermediate_update != nullptr &&
        std::find(inst_.intermediate_required.begin(), inst_.intermediate_required.end(), true) !=
            inst_.intermediate_required.end()) {
      return inst_.Error(inst_.Fn("DoStep") +
                         ": intermediate update (requiredIntermediateVariables "
                         "given) runs in process only; " +
                         server_ +
                         " steps without calling back (unset tether.server and "
                         "TETHER_FMU_SERVER, or give no requiredIntermediateVariables)");
    }
    std::vector<std::pair<std::string, double>> values;
    for (size_t i = 0; i < inst_.inputs.size(); ++i)
      values.emplace_back(sim.input_names()[i], inst_.inputs[i]);
    // The master's input ramps over this step (fmi2SetRealInputDerivatives):
    // every input's rate, zeros included, so the server forms the same
    // vector Local::Step gives Simulation::SetInputRates (the same bits).
    std::vector<std::pair<std::string, double>> rates;
    if (inst_.InputsRamp()) {
      // Checked here by the engine's own rule (one finite rate per input),
      // with the message of the in-process mode, before the server would
      // end the stream on it.
      Status s = sim.SetInputRates(inst_.input_rates);
      (void)sim.SetInputRates({});
      if (!s.ok()) return inst_.Error(inst_.Fn("DoStep") + ": " + s.message());
      for (size_t i = 0; i < inst_.input_rates.size(); ++i)
        rates.emplace_back(sim.input_names()[i], inst_.input_rates[i]);
    }
    RemoteStep step;
    if (Status s = session_->Step(h, values, rates, &step); !s.ok()) {
      inst_.mode = Mode::kError;
      return inst_.Error(inst_.Fn("DoStep") + ": " + s.message());
    }
    if (step.discarded) {
      // The server put the session back to the last communication point.
      return inst_.StepDiscarded(t, h, " on " + server_, step.last_successful_time,
                                 step.discard_reason);
    }
    if (Status s = sim.SetState(step.state, "frame"); !s.ok()) {
      inst_.mode = Mode::kError;
      return inst_.Error(inst_.Fn("DoStep") + ": the state " + server_ +
                         " returned: " + s.message());
    }
    inst_.StepDone(step.max_position_residual, step.position_bound);
    inst_.Debug(inst_.Fn("DoStep") + ": t = " + FormatNumber(sim.time()) + " on " + server_);
    return fmi2OK;
  }

  // A snapshot, with the instance's inputs (the snapshot holds the last
  // step's).
  fmi2Status Save(SavedState* saved) override {
    if (Closed(inst_.Fn("GetFMUstate"))) return fmi2Error;
    saved->inputs = inst_.inputs;
    if (Status s = session_->Save(&saved->mark); !s.ok())
      return inst_.Error(inst_.Fn("GetFMUstate") + ": " + s.message());
    return fmi2OK;
  }

  fmi2Status Restore(SavedState& saved) override {
    if (Closed(inst_.Fn("SetFMUstate"))) return fmi2Error;
    Simulation& sim = *inst_.sim;
    v1::State state;
    // A deserialized state (or one taken in process) is its engine state,
    // kept in the instance: restoring it puts the instance's own session in
    // it, so it costs the server no session or snapshot (the server's
    // --max-sessions and --max-snapshots do not count it) until used, and
    // then only the exchange. Chosen over an imported session per state
    // (which counted against --max-sessions until the instance was freed)
    // and over a snapshot of the instance's session made at
    // deserialization (which --max-snapshots could drop, losing a state
    // the master holds as bytes).
    const bool own = !saved.remote();
    if (own) saved.inputs.assign(saved.state.inputs().begin(), saved.state.inputs().end());
    if (Status s = own ? session_->RestoreState(saved.state, &state)
                       : session_->Restore(saved.mark, &state);
        !s.ok()) {
      std::string m = inst_.Fn("SetFMUstate") + ": " + s.message();
      if (s.code() == StatusCode::kNotFound) {
        m += " (the snapshot was dropped, as the server keeps at most --max-snapshots "
             "per session, 64 by default, and drops the oldest; or its session was deleted "
             "by fmi2Reset: this FMU state is gone; the instance is still at t = " +
             FormatNumber(sim.time()) + ")";
        return inst_.Error(m);
      }
      inst_.mode = Mode::kError;
      return inst_.Error(m);
    }
    if (Status s = sim.SetState(state, "frame"); !s.ok()) {
      inst_.mode = Mode::kError;
      return inst_.Error(inst_.Fn("SetFMUstate") + ": the state " + server_ +
                         " returned: " + s.message());
    }
    inst_.inputs = saved.inputs;
    for (size_t i = 0; i < inst_.inputs.size(); ++i) {
      if (Status s = sim.SetInput(sim.input_names()[i], inst_.inputs[i]); !s.ok())
        return inst_.Error(inst_.Fn("SetFMUstate") + ": " + s.message());
    }
    return fmi2OK;
  }

  // Deletes a state's snapshot on the server.
  void Free(const SavedState& saved) override {
    if (!session_ || !saved.remote()) return;
    if (Status s = session_->Free(saved.mark); !s.ok())
      inst_.Log(fmi2Warning, "logStatusError", inst_.Fn("FreeFMUstate") + ": " + s.message());
  }

  // The snapshot's export, from the server.
  fmi2Status Export(const SavedState& saved, const char* function,
                    v1::SessionExport* payload) override {
    if (Closed(function)) return fmi2Error;
    std::string exported;
    if (Status s = session_->Export(saved.mark, &exported); !s.ok())
      return inst_.Error(std::string(function) + ": " + s.message());
    if (Status s = DecodeSessionExport(exported, payload, "ExportSessionResponse.data"); !s.ok())
      return inst_.Error(std::string(function) + ": the server's export: " + s.message());
    return fmi2OK;
  }

  // Ends the stream and deletes the sessions (a failure is logged as a
  // warning: the instance goes on).
  void Close(const char* function) override {
    if (!session_) return;
    if (Status s = session_->Close(); !s.ok())
      inst_.Log(fmi2Warning, "logStatusError", std::string(function) + ": " + s.message());
    session_.reset();
  }

 private:
  // After fmi2Terminate: FMU states are gone with the sessions.
  bool Closed(const std::string& function) const {
    if (session_) return false;
    inst_.Error(function + ": the remote session on " + server_ +
                " was deleted by fmi2Terminate (and its FMU states with it)");
    return true;
  }

  Instance& inst_;
  const std::string server_;
  // Null after Close.
  std::unique_ptr<RemoteSession> session_;
};

}  // namespace

fmi2Status OpenRemoteBackend(Instance& inst, const std::string& address, const v1::State* start,
                             std::unique_ptr<StepBackend>* backend) {
  // A deprecated variable's warning: to the logger, else stderr.
  auto warn = [&inst](const std::string& message) {
    if (inst.logger != nullptr) {
      inst.Log(fmi2Warning, "logStatusError", inst.Fn("ExitInitializationMode") + ": " + message);
    } else {
      std::fprintf(stderr, "tether-fmi2: %s\n", message.c_str());
    }
  };
  auto connected = RemoteSession::Connect(address, warn);
  if (!connected.ok())
    return inst.Error(inst.Fn("ExitInitializationMode") + ": " + connected.status().message());
  std::unique_ptr<RemoteSession> session = std::move(connected).value();
  if (Status s = session->Start(inst.spec, inst.name, start); !s.ok())
    return inst.Error(inst.Fn("ExitInitializationMode") + ": " + s.message());
  inst.Debug("remote mode: session " + session->session_id() + " on " + address);
  *backend = std::make_unique<Remote>(inst, address, std::move(session));
  return fmi2OK;
}

}  // namespace tether::fmu
