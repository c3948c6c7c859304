// One FMI 2.0 or 3.0 Co-Simulation FMU instance of a Tether description:
// what fmi2Instantiate or fmi3InstantiateCoSimulation makes (fmi2_api.cc
// and fmi3_api.cc, the extern "C" surfaces, check the arguments and call in
// here, through the bodies they share in api_common.h; fmi_version names
// the functions in messages and picks the logger; the FMI 2 names below
// have their FMI 3 counterparts). One shared library serves every
// description: fmi2Instantiate reads resources/spec.json from
// fmuResourceLocation, checks that its GUID (fmu::Guid) is the one the
// importer read from modelDescription.xml, and compiles it.
//
// A communication step from t by h is one engine run with until_time =
// t + h (the last engine step is shortened to land on it; t is the
// engine's time on its step grid, the master's up to rounding), inputs
// held: in process, or on a tether-server (step_backend.h, the two ways of
// stepping, chosen at fmi2ExitInitializationMode).
// The outputs are one evaluation at the state reached (Simulation::Evaluate:
// q, v, lambda and the description's outputs), so they are a function of
// the state and the inputs, and restoring a state restores them bit for bit.
// FMU states (fmi2GetFMUstate, serialization) are in fmu_state.h.
//
// State machine (FMI 2.0 section 4.2.4): instantiated ->
// (fmi2EnterInitializationMode) initialization -> (fmi2ExitInitializationMode)
// stepComplete -> (fmi2DoStep answering fmi2Discard) stepFailed ->
// (fmi2Terminate) terminated; fmi2Reset goes back to instantiated from any
// of them. A call in a state that does not allow it is fmi2Error with a
// logged message. In stepFailed, as the standard's table says, fmi2DoStep
// and the setters are not allowed; the getters, the status queries
// (fmi2GetBooleanStatus(fmi2Terminated), fmi2GetRealStatus
// (fmi2LastSuccessfulTime)), FMU states, fmi2Terminate, fmi2Reset and
// fmi2FreeInstance are, and fmi2SetFMUstate makes the instance
// stepComplete again (the master's rollback). In stepFailed
// fmi2GetBooleanStatus(fmi2Terminated) is true: the FMU cannot go on from
// there by itself, and masters that do not restore states (FMPy's
// simulate_fmu, the Reference FMUs' fmusim: on fmi2Discard they read
// fmi2Terminated, stop at fmi2LastSuccessfulTime when it is true and step
// on when it is false) end there with their results instead of an
// fmi2Error. FMI 3.0 has no Step Failed state: fmi3_api.cc puts the
// instance back in step mode after a discard, where a retry is allowed up
// to max_discards times in a row; then the FMU asks to terminate
// (terminate_requested).
//
// Instances share nothing (the compiled model is per instance; in remote
// mode each has its own sessions and stream). Threading: one caller at a
// time, as the FMI standard requires of an instance.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "engine/simulation.h"
#include "fmu/fmi2.h"
#include "fmu/fmi3.h"
#include "fmu/model_description.h"
#include "fmu/step_backend.h"
#include "tether/v1/simulation.pb.h"

namespace tether {
struct KktJacobian;
}

namespace tether::fmu {

struct SavedState;

// kIntermediateUpdate: inside the master's intermediateUpdate callback,
// which fmi3DoStep calls (FMI 3.0's Intermediate Update Mode; only
// fmi3GetFloat64 and fmi3SetFloat64 are allowed there, as the callback's
// flags say).
enum class Mode {
  kInstantiated,
  kInitialization,
  kStepComplete,
  kStepFailed,
  kTerminated,
  kError,
  kIntermediateUpdate
};

const char* ModeName(Mode m);

// `text` as a printf format that prints `text`: every '%' doubled. FMI 2's
// logger takes a format and variadic arguments; the FMU passes the message
// as the format, with no arguments, so that a master that formats it (C,
// vsnprintf) and one that prints the format as it is (FMPy and any Python
// master through ctypes, which cannot reach variadic arguments) both show
// the message, not "%s".
std::string PrintfLiteral(std::string_view text);

// A status for a message: its message, then each field violation whose
// description the message does not already carry ("field: description").
// (A compile failure's message is often its one violation's description.)
std::string DescribeStatus(const Status& status);

class Instance {
 public:
  Instance();
  ~Instance();

  // The API the instance was made through (fmi2_api.cc or fmi3_api.cc,
  // the thin layers over this class): it names the functions in messages
  // (Fn) and chooses the logger. Both APIs share every other line here.
  int fmi_version = 2;
  std::string name;
  fmi2CallbackLogger logger = nullptr;  // FMI 2
  fmi2ComponentEnvironment env = nullptr;
  fmi3LogMessageCallback logger3 = nullptr;  // FMI 3
  fmi3InstanceEnvironment env3 = nullptr;
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
  // fmi2SetRealInputDerivatives' first derivatives, by input index (all 0:
  // held): the next fmi2DoStep ramps each input u + rate (t - t_c) over its
  // step (Simulation::SetInputRates). Cleared by a completed step (the
  // next communication point needs its own), fmi2Reset and a restored
  // state; kept over a discarded step, whose retry starts at the same t_c.
  std::vector<double> input_rates;

  // FMI 3.0's intermediate update (the intermediateUpdate callback and the
  // requiredIntermediateVariables of fmi3InstantiateCoSimulation; null:
  // none). In process, fmi3DoStep runs the engine one step at a time and
  // calls it (local_backend.cc): at every evaluation inside a step (each
  // stage, the certificate's sample) with intermediateVariableSetRequested
  // when a required variable is an input, so the master sets the inputs at
  // the engine's own times (FMI 3.0's input interpolation: the standard
  // dropped fmi2SetRealInputDerivatives for this), and at every completed
  // engine step with intermediateStepFinished and
  // intermediateVariableGetAllowed (the values there are those of a
  // communication point at that time). canReturnEarly is always false.
  // Remote mode cannot call back inside the server's step: fmi3DoStep is
  // fmi3Error there while a callback is given.
  fmi3IntermediateUpdateCallback intermediate_update = nullptr;
  std::vector<bool> intermediate_required;  // by value reference (time last)
  bool intermediate_inputs = false;         // some required variable is an input
  // What the callback in progress allows (Mode::kIntermediateUpdate).
  bool intermediate_set = false;
  bool intermediate_get = false;
  Mode mode_before_intermediate = Mode::kStepComplete;
  // Calls the callback at `t` with its flags, in Mode::kIntermediateUpdate.
  void IntermediateUpdate(double t, bool set_requested, bool get_allowed, bool step_finished);

  // Remote mode: the String parameter tether.server and its start value
  // from resources/server.txt.
  std::string server_parameter;
  std::string server_start;
  // The String parameter tether.certificate (model_description.h), as
  // fmi2GetString returns it; its value is spec.certificate's.
  std::string certificate_parameter;
  // The Boolean parameter tether.project_start (model_description.h): at
  // ExitInitialization, an inconsistent start is projected onto the
  // constraints (start_projection.h), which then is the start of the
  // description the FMU runs (spec.initial), remote mode included.
  bool project_start = false;
  // How communication steps run and FMU states are kept: in process until
  // fmi2ExitInitializationMode chooses (step_backend.h); never null after
  // ResetToOriginal.
  std::unique_ptr<StepBackend> backend;

  Mode mode = Mode::kInstantiated;
  std::optional<double> start_time;
  std::optional<double> stop_time;
  double last_successful_time = 0;
  // A way out for masters that retry a discarded step unchanged forever
  // (an older FMPy's simulate_fmu did): after max_discards discards of
  // steps from the same communication point in a row, the FMU asks to
  // terminate (fmi2GetBooleanStatus(fmi2Terminated) true, fmi3DoStep's
  // terminateSimulation true) and refuses further steps from there. A
  // completed step or a restored state starts the count again.
  // max_discards: the environment variable TETHER_FMU_MAX_DISCARDS (>= 1),
  // else kDefaultMaxDiscards, read at instantiation.
  static constexpr int kDefaultMaxDiscards = 3;
  int max_discards = kDefaultMaxDiscards;
  int discards_in_a_row = 0;
  bool terminate_requested = false;
  double max_position_residual = 0;
  double position_bound = 0;
  // fmi2/fmi3GetDirectionalDerivative's model (directional_derivative.cc):
  // the description `sim` runs, compiled again with its sensitivity tape
  // on the first call (engine/sensitivity.h); dropped when `sim` is
  // replaced (ResetToOriginal, ApplyParameters). It never steps.
  std::unique_ptr<Simulation> derivative_sim;

  // Values of the calculated variables at the current state and inputs
  // (by value reference); recomputed when stale.
  std::vector<double> values;
  bool values_stale = true;

  // "fmi2" or "fmi3" + `function` as that API spells it ("DoStep",
  // "SetFMUstate": FMI 3 writes FMUState and Deserialize).
  std::string Fn(std::string_view function) const;
  void Log(fmi2Status status, const char* category, const std::string& message) const;
  fmi2Status Error(const std::string& message) const;
  void Debug(const std::string& message) const;

  // The simulation at the description's initial state, with the default
  // inputs, from the original compiled model (no compilation); in process.
  void ResetToOriginal();
  // Recompiles with the parameters set before initialization (once).
  fmi2Status ApplyParameters();
  // The tunable variables set to other values than the description's
  // (parameters, q0.*, v0.*), for a message: "q0.x = 1e+308, l = 2"; ""
  // when none is.
  std::string ChangedStartValues() const;
  // Evaluates the calculated variables at the current state and inputs.
  fmi2Status RefreshValues();
  // The Jacobians at the current state and inputs (engine/sensitivity.h),
  // compiling derivative_sim on the first call.
  fmi2Status JacobianHere(const char* function, KktJacobian* j);
  // Chooses the backend (remote when ServerAddress() names a server) and
  // starts the certificate's figures; first, with project_start, projects
  // an inconsistent start (ProjectStartIfAsked).
  fmi2Status ExitInitialization();
  // Checks t and h, then one communication step on the backend.
  fmi2Status DoStep(double t, double h);
  // fmi2/fmi3GetDirectionalDerivative (directional_derivative.cc): the
  // unknowns' partials at the current state and inputs, along `seed` over
  // the knowns (inputs, q.* and v.*), exact through the KKT solve; with
  // `adjoint`, fmi3GetAdjointDerivative's J^T seed (seed over the
  // unknowns, sensitivity over the knowns).
  fmi2Status DirectionalDerivative(const char* function, const unsigned unknowns[],
                                   size_t n_unknowns, const unsigned knowns[], size_t n_knowns,
                                   const double seed[], double sensitivity[], bool adjoint = false);
  // fmi2GetRealOutputDerivatives / fmi3GetOutputDerivatives
  // (directional_derivative.cc): the first time derivatives of output
  // variables at the current state along its motion, exact: d/dq . v +
  // d/dv . a + d/du . input_rates + d/dt, with a and the partials of a and
  // lambda through the differentiated KKT solve. q.*' = v, v.*' = a; the
  // certificate's figures change only at communication points (0).
  fmi2Status OutputDerivatives(const char* function, const unsigned vr[], size_t nvr,
                               const int order[], double value[]);
  // fmi2SetRealInputDerivatives: first derivatives of inputs (order 1).
  fmi2Status SetInputDerivatives(const char* function, const unsigned vr[], size_t nvr,
                                 const int order[], const double value[]);
  bool InputsRamp() const;
  // The partials d unknown_k / d known_c, row-major (n_unknowns x n_knowns).
  fmi2Status PartialDerivatives(const char* function, const unsigned unknowns[], size_t n_unknowns,
                                const unsigned knowns[], size_t n_knowns,
                                std::vector<double>* partials);
  // fmi2Terminate: the backend lets go of the server (remote mode).
  void Terminate();

  // A step the backend completed: the figures of its certificate.
  fmi2Status StepDone(double step_max_position_residual, double step_position_bound);
  // A step the backend discarded, the state back at `stays_at`
  // (`where`: "" in process, " on ADDRESS" remote).
  fmi2Status StepDiscarded(double t, double h, const std::string& where, double stays_at,
                           const std::string& reason);

  // FMU states (fmu_state.cc).
  //
  // The states this instance made (fmi2GetFMUstate, fmi2DeSerializeFMUstate)
  // and has not freed. A state belongs to the instance that made it (FMI 2.0
  // section 2.1.8, FMI 3.0 section 2.2.6.4: another instance takes it as
  // serialized bytes): one passed in must be among these, so that another
  // instance's state, a freed one or a stray pointer is fmi2Error with a
  // logged message instead of undefined behaviour (api_common.cc,
  // OwnState). fmi2FreeInstance deletes those left.
  std::unordered_set<const SavedState*> states;
  fmi2Status Save(SavedState* saved);
  void Free(const SavedState& saved);
  fmi2Status Restore(SavedState& saved);
  // The serialized bytes of any state (made once, kept in `saved`).
  fmi2Status Serialize(SavedState& saved, const char* function, const std::string** bytes);
  fmi2Status Deserialize(std::string_view bytes, SavedState* saved);

 private:
  // The remote mode's address: the parameter, else the environment
  // variable; "" = in process.
  std::string ServerAddress() const;
  // With project_start and an inconsistent start (|g| or |Gv + g_t| above
  // the description's consistency tolerance, at the start time): the
  // projected start replaces spec.initial (recompiled as for a parameter),
  // logged as a warning with the residuals before and after.
  fmi2Status ProjectStartIfAsked();
};

}  // namespace tether::fmu
