// The FMI 2.0 Co-Simulation FMU of a Tether description, in process: the
// engine runs inside the importing process. One shared library serves every
// description: fmi2Instantiate reads resources/spec.json from
// fmuResourceLocation, checks that its GUID (fmu::Guid) is the one the
// importer read from modelDescription.xml, and compiles it.
//
// A communication step from t by h is one engine run with until_time =
// t + h (the last engine step is shortened to land on it; t is the
// engine's time on its step grid, the master's up to rounding), inputs
// held.
// The outputs are one evaluation at the state reached (Simulation::Evaluate:
// q, v, lambda and the description's outputs), so they are a function of
// the state and the inputs, and restoring a state restores them bit for bit.
//
// State machine (FMI 2.0 section 4.2.4, simplified): instantiated ->
// (fmi2EnterInitializationMode) initialization -> (fmi2ExitInitializationMode)
// stepComplete <-> stepFailed (a Discard) -> (fmi2Terminate) terminated;
// fmi2Reset goes back to instantiated from any of them. A call in a state
// that does not allow it is fmi2Error with a logged message. Unlike the
// standard's strict stepFailed state, fmi2DoStep may be retried after a
// Discard (the state was put back to the last communication point).
//
// Remote mode (remote_session.h): when the String parameter tether.server
// (set before fmi2ExitInitializationMode; its start value from
// resources/server.txt) or else the environment variable TETHER_FMU_SERVER
// names a tether-server, fmi2ExitInitializationMode creates a session of
// the description there and each fmi2DoStep is one CoSimulate exchange
// (ON_FAILURE_DISCARD) with every input's current value. The engine here
// then only evaluates: the values are one Simulation::Evaluate at the state
// (t, q, v) the server returns, with this instance's inputs, by the same
// code as in process, so both modes give the same bits. FMU states are
// server-side snapshots; serialized, they are the same bytes as in process
// (an export envelope tagged "tether-fmu-state 1"), so a state serialized in
// one mode is restored in the other. fmi2Terminate, fmi2Reset and
// fmi2FreeInstance delete the instance's sessions.
//
// Instances share nothing (the compiled model is per instance; in remote
// mode each has its own sessions and stream).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/simulation.h"
#include "fmu/fmi2.h"
#include "fmu/model_description.h"
#include "fmu/remote_session.h"
#include "tether/v1/simulation.pb.h"

namespace tether::fmu {

struct SavedState;

enum class Mode { kInstantiated, kInitialization, kStepComplete, kStepFailed, kTerminated, kError };

const char* ModeName(Mode m);

class Instance {
 public:
 public:
  std::string name;
  fmi2CallbackLogger logger = nullptr;
  fmi2ComponentEnvironment env = nullptr;
  bool debug = false;

  v1::SimulationSpec original_spec;  // resources/spec.json
  std::shared_ptr<const Model> original_model;
  v1::SimulationSpec spec;  // with the parameters set before initialization
  std::string spec_sha256;  // of `sim`'s description
  // `sim`'s description, shared with the FMU states taken from it.
  std::shared_ptr<const v1::SimulationSpec> sim_spec;
  bool parameters_changed = false;
  std::unique_ptr<Simulation> sim;
  std::vector<Variable> vars;
  std::vector<double> inputs;  // current values, by input index

  // Remote mode: the String parameter tether.server (and its start value
  // from resources/server.txt), the address chosen at
  // fmi2ExitInitializationMode ("" = in process) and the connection (null
  // in process, and after fmi2Terminate deleted the sessions).
  std::string server_parameter;
  std::string server_start;
  std::string server;
  std::unique_ptr<RemoteSession> remote;

  Mode mode = Mode::kInstantiated;
  std::optional<double> start_time;
  std::optional<double> stop_time;
  double last_successful_time = 0;
  double max_position_residual = 0;
  double position_bound = 0;
  // Values of the calculated variables at the current state and inputs
  // (by value reference); recomputed when stale.
  std::vector<double> values;
  bool values_stale = true;

  void Log(fmi2Status status, const char* category, const std::string& message) const;
  fmi2Status Error(const std::string& message) const;
  void Debug(const std::string& message) const;
  // The simulation at the description's initial state, with the default
  // inputs, from the original compiled model (no compilation).
  void ResetToOriginal();
  // Recompiles with the parameters set before initialization (once).
  fmi2Status ApplyParameters();
  // Evaluates the calculated variables at the current state and inputs.
  fmi2Status RefreshValues();
  // Remote mode: ends the stream and deletes the sessions (a failure is
  // logged as a warning: the instance goes on).
  void CloseRemote(const char* function);
  // The remote mode's address: the parameter, else the environment
  // variable; "" = in process.
  std::string ServerAddress() const;
  // Remote mode after fmi2Terminate: FMU states are gone with the sessions.
  bool RemoteClosed(const char* function) const;
  fmi2Status ExitInitialization();
  fmi2Status DoStep(double t, double h);
  // One communication step on the server (DoStep has checked t and h).
  fmi2Status DoStepRemote(double t, double h, double now);

  // FMU states (fmu_state.cc).
  fmi2Status Save(SavedState* saved);
  // Deletes a state's snapshot on the server (remote mode).
  void Free(const SavedState& saved);
  fmi2Status Restore(SavedState& saved);
  fmi2Status RestoreRemote(SavedState& saved);
  // Any state: a remote one is its snapshot's export (from the server, once)
  // with the inputs the instance had when it was saved, so the bytes are
  // those of the same state in process.
  fmi2Status Serialize(SavedState& saved, const char* function, const std::string** bytes);
  // A serialized state of this instance's description, checked in full
  // (envelope, description, figures, and the state restored into a scratch
  // simulation) so that fmi2SetFMUstate cannot fail on it later.
  fmi2Status Deserialize(std::string_view bytes, SavedState* saved);
};

}  // namespace tether::fmu
