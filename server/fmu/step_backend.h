// How an FMU instance (instance.h) runs its communication steps and keeps
// its FMU states: the two modes of README "FMU export".
//
// In process (local_backend.cc, the default): the engine in the importing
// process runs each step and an FMU state is the engine's saved state.
//
// Remote (remote_backend.cc, over remote_session.h): when the String
// parameter tether.server (set before fmi2ExitInitializationMode; its
// start value from resources/server.txt) or else the environment variable
// TETHER_FMU_SERVER names a tether-server, fmi2ExitInitializationMode
// creates a session of the description there and each fmi2DoStep is one
// CoSimulate exchange (ON_FAILURE_DISCARD) with every input's current
// value. The engine in process then only evaluates: the values are one
// Simulation::Evaluate at the state (t, q, v) the server returns, with the
// instance's inputs, by the same code as in process, so both modes give the
// same bits. FMU states are server-side snapshots; serialized, they are the
// same bytes as in process (fmu_state.h), so a state serialized in one mode
// is restored in the other. fmi2Terminate, fmi2Reset and fmi2FreeInstance
// delete the instance's sessions.
//
// The choice is made once per initialization (Instance::ExitInitialization;
// fmi2Reset goes back to in process) and the instance then calls through
// this interface, so no function asks which mode it is in. An interface
// with virtual calls rather than a std::variant: the instance's code (and
// fmu_state.cc) then needs neither backend's definition nor RemoteSession,
// the two are added to by different concerns (the engine's run, the
// stream's messages), and a virtual call per communication step or FMU
// state costs nothing next to an engine run or a round trip.
#pragma once

#include <memory>
#include <string>

#include "fmu/fmi2.h"
#include "tether/v1/simulation.pb.h"

namespace tether::fmu {

class Instance;
struct SavedState;

class StepBackend {
 public:
  virtual ~StepBackend() = default;

  // One communication step from t by h (Instance::DoStep has checked them;
  // `until` is t + h on the engine's step grid), then Instance::StepDone or
  // StepDiscarded.
  virtual fmi2Status Step(double t, double h, double until) = 0;
  // The backend's part of fmi2GetFMUstate (the instance has filled in the
  // description and the figures).
  virtual fmi2Status Save(SavedState* saved) = 0;
  // The backend's part of fmi2SetFMUstate: the simulation and the inputs
  // (the instance then takes the figures from `saved`). May give `saved` a
  // snapshot (remote mode).
  virtual fmi2Status Restore(SavedState& saved) = 0;
  // Lets go of a state's snapshot, if it has one here.
  virtual void Free(const SavedState& saved) = 0;
  // The export envelope of a state that is a snapshot on a server
  // (SavedState::remote()); `function` names the caller in errors.
  virtual fmi2Status Export(const SavedState& saved, const char* function,
                            v1::SessionExport* payload) = 0;
  // Lets go of the server, if any (fmi2Terminate, fmi2Reset; a failure is a
  // warning naming `function`). States on it are then gone.
  virtual void Close(const char* function) = 0;
};

// The engine in process.
std::unique_ptr<StepBackend> LocalBackend(Instance& inst);

// A session of the instance's description on the tether-server at
// `address`, at `start` when given (fmi2SetupExperiment's startTime).
fmi2Status OpenRemoteBackend(Instance& inst, const std::string& address, const v1::State* start,
                             std::unique_ptr<StepBackend>* backend);

}  // namespace tether::fmu
