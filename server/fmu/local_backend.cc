// The in-process step backend (step_backend.h): the engine in the
// importing process runs each communication step, and an FMU state is the
// engine's saved state.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/simulation.h"
#include "engine/status.h"
#include "fmu/fmu_state.h"
#include "fmu/instance.h"
#include "fmu/step_backend.h"

namespace tether::fmu {
namespace {

// A frame sink that keeps nothing: the outputs are evaluated at the end.
class NullSink final : public FrameSink {
 public:
  void Add(const FrameView&) override {}
};

class Local final : public StepBackend {
 public:
  explicit Local(Instance& inst) : inst_(inst) {}

  // One engine run to `until`; a failure puts the state back to the last
  // communication point.
  fmi2Status Step(double t, double h, double until) override {
    Simulation& sim = *inst_.sim;
    const double now = sim.time();
    v1::SimulationState before;
    sim.SaveState(&before);
    RunOptions run;
    run.until_time = until;
    run.every = UINT64_MAX;
    run.emit_start = false;
    run.certificate = true;
    // The master's input ramps over this step (fmi2SetRealInputDerivatives),
    // or its inputs at the engine's own times (FMI 3.0's intermediate
    // update, the source below).
    Status s = inst_.InputsRamp() ? sim.SetInputRates(inst_.input_rates) : Status::Ok();
    const bool intermediate = inst_.intermediate_update != nullptr;
    const Simulation::InputSource source = [this](double t, double* u) {
      inst_.IntermediateUpdate(t, true, false, false);
      for (size_t k = 0; k < inst_.inputs.size(); ++k) u[k] = inst_.inputs[k];
    };
    const Simulation::InputSource* inputs_from_master =
        intermediate && inst_.intermediate_inputs ? &source : nullptr;
    if (s.ok() && inputs_from_master) s = sim.SetInputSource(inputs_from_master);
    if (!s.ok()) return inst_.Error(inst_.Fn("DoStep") + ": " + s.message());
    s = sim.BeginRun(run);
    NullSink sink;
    if (!intermediate) {
      while (s.ok() && !sim.run_done()) s = sim.Advance(uint64_t{1} << 20, &sink);
    } else {
      // One engine step at a time, the master called at each completed
      // one (intermediateStepFinished: the values are those at that
      // state, with the inputs as last set; the source is off meanwhile so
      // that the evaluation behind them calls no one back). The run's
      // acceleration there is evaluated again with the same state and
      // inputs, so the trajectory's bits do not change.
      while (s.ok() && !sim.run_done()) {
        s = sim.Advance(1, &sink);
        if (!s.ok()) break;
        if (inputs_from_master) (void)sim.SetInputSource(nullptr);
        inst_.values_stale = true;
        inst_.IntermediateUpdate(sim.time(), inst_.intermediate_inputs, true, true);
        if (inst_.mode == Mode::kError) {
          s = Status(StatusCode::kFailedPrecondition, "the instance failed in intermediateUpdate");
          break;
        }
        if (inputs_from_master) s = sim.SetInputSource(inputs_from_master);
      }
    }
    // The outputs at the new communication point see the inputs as set (u,
    // the value fmi2GetReal returns), not the ramp's end.
    (void)sim.SetInputRates({});
    (void)sim.SetInputSource(nullptr);
    if (!s.ok()) {
      // Back to the last communication point.
      Status r = sim.RestoreState(before);
      inst_.values_stale = true;
      if (!r.ok()) {
        inst_.mode = Mode::kError;
        return inst_.Error(inst_.Fn("DoStep") +
                           ": could not restore the state after a failed step: " + r.message());
      }
      if (s.code() == StatusCode::kAborted) return inst_.StepDiscarded(t, h, "", now, s.message());
      return inst_.Error(inst_.Fn("DoStep") + ": " + s.message());
    }
    v1::Certificate cert;
    sim.GetCertificate(&cert);
    inst_.StepDone(cert.max_position_residual(), cert.position_bound());
    inst_.Debug(inst_.Fn("DoStep") + ": t = " + FormatNumber(sim.time()) + " after " +
                std::to_string(cert.steps()) + " engine steps");
    return fmi2OK;
  }

  fmi2Status Save(SavedState* saved) override {
    inst_.sim->SaveState(&saved->state);
    return fmi2OK;
  }

  fmi2Status Restore(SavedState& saved) override {
    if (saved.remote()) {
      return inst_.Error(inst_.Fn("SetFMUstate") +
                         ": the state is a snapshot on a tether-server and this instance "
                         "runs in process (serialize it to move it between modes)");
    }
    if (Status s = inst_.sim->RestoreState(saved.state); !s.ok())
      return inst_.Error(inst_.Fn("SetFMUstate") + ": " + s.message());
    inst_.inputs.assign(saved.state.inputs().begin(), saved.state.inputs().end());
    return fmi2OK;
  }

  // A remote state here is a snapshot of the sessions of an earlier
  // initialization, which fmi2Reset deleted.
  void Free(const SavedState&) override {}

  fmi2Status Export(const SavedState& saved, const char* function, v1::SessionExport*) override {
    return inst_.Error(std::string(function) + ": the state is a snapshot on " +
                       saved.mark.session_id +
                       "'s server and this instance is not connected to it");
  }

  void Close(const char*) override {}

 private:
  Instance& inst_;
};

}  // namespace

std::unique_ptr<StepBackend> LocalBackend(Instance& inst) { return std::make_unique<Local>(inst); }

}  // namespace tether::fmu
