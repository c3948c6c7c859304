// The FMU library's FMI 3.0 surface: the fmi3* functions an importer calls
// (fmi3.h; the list in fmi3_functions.inc). A thin layer over the same
// Instance as FMI 2 (instance.h) and the same bodies (api_common.h): it
// maps FMI 3's names, types and calling conventions (a native resource
// path, fmi3EnterInitializationMode's experiment, fmi3DoStep's out
// arguments, value arrays with their own lengths) onto them.
//
// Co-Simulation only, without event mode, clocks or early return, with
// intermediate update in process (instance.h, local_backend.cc):
// fmi3DoStep never returns early (earlyReturnAllowed is accepted and
// honoured by always completing or discarding the whole step), and the
// Model Exchange and Scheduled Execution functions answer fmi3Error (null
// for their instantiation). After an fmi3Discard the instance stays in
// Step Mode at lastSuccessfulTime (the state was put back to the last
// communication point; FMI 3.0 has no Step Failed state), so the importer
// may restore a state, step again or terminate; terminateSimulation is set
// when the same step was discarded Instance::max_discards times in a row
// (instance.h).
//
// Every variable is a scalar, numbered as in the FMI 2 FMU of the same
// description (model_description.h), plus the independent variable time.
//
// Every entry point catches every exception (Guarded, api_common.h).
#include <cmath>
#include <exception>
#include <memory>
#include <string>

#include "engine/status.h"
#include "fmu/api_common.h"
#include "fmu/fmi3.h"
#include "fmu/instance.h"

namespace tether::fmu {
namespace {

static_assert(static_cast<int>(fmi3OK) == fmi2OK && static_cast<int>(fmi3Warning) == fmi2Warning &&
                  static_cast<int>(fmi3Discard) == fmi2Discard &&
                  static_cast<int>(fmi3Error) == fmi2Error &&
                  static_cast<int>(fmi3Fatal) == fmi2Fatal,
              "fmi3Status and fmi2Status agree on OK..Fatal");
static_assert(sizeof(fmi3ValueReference) == sizeof(unsigned), "value references are unsigned");

fmi3Status S(fmi2Status s) { return static_cast<fmi3Status>(s); }

// FMI 3 passes the length of the value array beside that of the value
// references: every variable here is a scalar, so they must agree.
fmi2Status CheckScalars(Instance& inst, const char* function, size_t nvr, size_t nvalues) {
  if (nvr == nvalues) return fmi2OK;
  return inst.Error(std::string(function) + ": " + std::to_string(nvalues) + " values for " +
                    std::to_string(nvr) +
                    " value references (every variable of this FMU is a scalar)");
}

fmi3Status NotProvided(fmi3Instance c, const char* function, const char* why) {
  return S(Unsupported(c, function, why));
}

fmi3Instance FailInstantiation(fmi3LogMessageCallback log, fmi3InstanceEnvironment env,
                               const std::string& message) {
  if (log != nullptr) log(env, fmi3Error, "logStatusError", message.c_str());
  return nullptr;
}

constexpr const char* kNoEvents =
    "this FMU has no event mode, clocks or discrete states (hasEventMode=\"false\")";
constexpr const char* kCoSimulationOnly = "this FMU supports Co-Simulation only";

}  // namespace
}  // namespace tether::fmu

using tether::fmu::Guarded;
using tether::fmu::Instance;
using tether::fmu::kAny;
using tether::fmu::kAnyOrIntermediate;
using tether::fmu::kEvery;
using tether::fmu::kRunning;
using tether::fmu::Mode;
using tether::fmu::NotProvided;
using tether::fmu::S;

extern "C" {

const char* fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean loggingOn, size_t nCategories,
                               const fmi3String categories[]) {
  return S(Guarded(instance, "fmi3SetDebugLogging", kAny, [&](Instance& inst) {
    return tether::fmu::SetDebugLogging(inst, "fmi3SetDebugLogging", loggingOn, nCategories,
                                        categories);
  }));
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String instanceName, fmi3String instantiationToken,
                                          fmi3String resourcePath, fmi3Boolean visible,
                                          fmi3Boolean loggingOn,
                                          fmi3InstanceEnvironment instanceEnvironment,
                                          fmi3LogMessageCallback logMessage) {
  return tether::fmu::FailInstantiation(
      logMessage, instanceEnvironment,
      std::string("fmi3InstantiateModelExchange: ") + tether::fmu::kCoSimulationOnly);
}

fmi3Instance fmi3InstantiateScheduledExecution(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage, fmi3ClockUpdateCallback clockUpdate,
    fmi3LockPreemptionCallback lockPreemption, fmi3UnlockPreemptionCallback unlockPreemption) {
  return tether::fmu::FailInstantiation(
      logMessage, instanceEnvironment,
      std::string("fmi3InstantiateScheduledExecution: ") + tether::fmu::kCoSimulationOnly);
}

fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3Boolean eventModeUsed,
    fmi3Boolean earlyReturnAllowed, const fmi3ValueReference requiredIntermediateVariables[],
    size_t nRequiredIntermediateVariables, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage, fmi3IntermediateUpdateCallback intermediateUpdate) {
  using namespace tether;
  constexpr const char* kFn = "fmi3InstantiateCoSimulation";
  auto fail = [&](const std::string& message) {
    return fmu::FailInstantiation(logMessage, instanceEnvironment,
                                  std::string(kFn) + ": " + message);
  };
  try {
    if (instanceName == nullptr || *instanceName == '\0')
      return fail("instanceName must be a non-empty string");
    if (eventModeUsed) return fail(std::string("eventModeUsed is true but ") + fmu::kNoEvents);
    if (nRequiredIntermediateVariables > 0 && intermediateUpdate == nullptr) {
      return fail("requiredIntermediateVariables given without an intermediateUpdate callback");
    }
    if (nRequiredIntermediateVariables > 0 && requiredIntermediateVariables == nullptr)
      return fail("requiredIntermediateVariables is null, nRequiredIntermediateVariables > 0");
    // earlyReturnAllowed: accepted; fmi3DoStep never returns early.
    if (resourcePath == nullptr || *resourcePath == '\0')
      return fail("resourcePath is required (the FMU reads resources/spec.json)");
    auto inst = std::make_unique<Instance>();
    inst->fmi_version = 3;
    inst->name = instanceName;
    inst->logger3 = logMessage;
    inst->env3 = instanceEnvironment;
    inst->debug = loggingOn;
    const std::string error = fmu::LoadInstance(*inst, resourcePath, instantiationToken, kFn);
    if (!error.empty()) return fail(error);
    // Intermediate update (instance.h): the required variables must be
    // inputs, outputs or time (intermediateUpdate="true" in
    // modelDescription.xml).
    inst->intermediate_update = intermediateUpdate;
    inst->intermediate_required.assign(inst->vars.size() + 1, false);
    for (size_t k = 0; k < nRequiredIntermediateVariables; ++k) {
      const fmi3ValueReference vr = requiredIntermediateVariables[k];
      if (vr > inst->vars.size() ||
          (vr < inst->vars.size() && fmu::IsParameter(inst->vars[vr].kind))) {
        return fail("requiredIntermediateVariables[" + std::to_string(k) + "]: value reference " +
                    std::to_string(vr) +
                    " is not an input, an output or time (the variables with "
                    "intermediateUpdate=\"true\")");
      }
      inst->intermediate_required[vr] = true;
      if (vr < inst->vars.size() && inst->vars[vr].kind == fmu::VariableKind::kInput)
        inst->intermediate_inputs = true;
    }
    return inst.release();
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("unexpected exception");
  }
}

void fmi3FreeInstance(fmi3Instance instance) {
  try {
    delete static_cast<Instance*>(instance);
  } catch (...) {
  }
}

fmi3Status fmi3EnterInitializationMode(fmi3Instance instance, fmi3Boolean toleranceDefined,
                                       fmi3Float64 tolerance, fmi3Float64 startTime,
                                       fmi3Boolean stopTimeDefined, fmi3Float64 stopTime) {
  return S(
      Guarded(instance, "fmi3EnterInitializationMode", {Mode::kInstantiated}, [&](Instance& inst) {
        if (!std::isfinite(startTime))
          return inst.Error("fmi3EnterInitializationMode: startTime must be finite");
        if (stopTimeDefined && !(stopTime > startTime)) {
          return inst.Error("fmi3EnterInitializationMode: stopTime must be later than startTime");
        }
        inst.start_time = startTime;
        if (stopTimeDefined) inst.stop_time = stopTime;
        // The tolerance is not used: the integrator's method and
        // step size are the description's.
        inst.mode = Mode::kInitialization;
        return fmi2OK;
      }));
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance instance) {
  return S(Guarded(instance, "fmi3ExitInitializationMode", {Mode::kInitialization},
                   [&](Instance& inst) { return inst.ExitInitialization(); }));
}

fmi3Status fmi3EnterEventMode(fmi3Instance instance) {
  return NotProvided(instance, "fmi3EnterEventMode", tether::fmu::kNoEvents);
}

fmi3Status fmi3Terminate(fmi3Instance instance) {
  return S(Guarded(instance, "fmi3Terminate", kRunning, [&](Instance& inst) {
    inst.Terminate();
    return fmi2OK;
  }));
}

fmi3Status fmi3Reset(fmi3Instance instance) {
  return S(Guarded(instance, "fmi3Reset", kEvery, [&](Instance& inst) {
    inst.ResetToOriginal();
    return fmi2OK;
  }));
}

fmi3Status fmi3GetFloat64(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, fmi3Float64 values[], size_t nValues) {
  return S(Guarded(instance, "fmi3GetFloat64", kAnyOrIntermediate, [&](Instance& inst) {
    if (auto s = tether::fmu::CheckScalars(inst, "fmi3GetFloat64", nValueReferences, nValues);
        s != fmi2OK)
      return s;
    return tether::fmu::GetReals(inst, "fmi3GetFloat64", valueReferences, nValueReferences, values);
  }));
}

fmi3Status fmi3SetFloat64(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, const fmi3Float64 values[], size_t nValues) {
  return S(Guarded(instance, "fmi3SetFloat64", kAnyOrIntermediate, [&](Instance& inst) {
    if (auto s = tether::fmu::CheckScalars(inst, "fmi3SetFloat64", nValueReferences, nValues);
        s != fmi2OK)
      return s;
    return tether::fmu::SetReals(inst, "fmi3SetFloat64", valueReferences, nValueReferences, values);
  }));
}

fmi3Status fmi3GetString(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, fmi3String values[], size_t nValues) {
  return S(Guarded(instance, "fmi3GetString", kAny, [&](Instance& inst) {
    if (auto s = tether::fmu::CheckScalars(inst, "fmi3GetString", nValueReferences, nValues);
        s != fmi2OK)
      return s;
    return tether::fmu::GetStrings(inst, "fmi3GetString", valueReferences, nValueReferences,
                                   values);
  }));
}

fmi3Status fmi3GetBoolean(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, fmi3Boolean values[], size_t nValues) {
  return S(Guarded(instance, "fmi3GetBoolean", kAny, [&](Instance& inst) {
    if (auto s = tether::fmu::CheckScalars(inst, "fmi3GetBoolean", nValueReferences, nValues);
        s != fmi2OK)
      return s;
    return tether::fmu::GetBooleans(inst, "fmi3GetBoolean", valueReferences, nValueReferences,
                                    values);
  }));
}

fmi3Status fmi3SetBoolean(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                          size_t nValueReferences, const fmi3Boolean values[], size_t nValues) {
  return S(Guarded(instance, "fmi3SetBoolean", kAny, [&](Instance& inst) {
    if (auto s = tether::fmu::CheckScalars(inst, "fmi3SetBoolean", nValueReferences, nValues);
        s != fmi2OK)
      return s;
    return tether::fmu::SetBooleans(inst, "fmi3SetBoolean", valueReferences, nValueReferences,
                                    values);
  }));
}

fmi3Status fmi3SetString(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, const fmi3String values[], size_t nValues) {
  return S(Guarded(instance, "fmi3SetString", kAny, [&](Instance& inst) {
    if (auto s = tether::fmu::CheckScalars(inst, "fmi3SetString", nValueReferences, nValues);
        s != fmi2OK)
      return s;
    return tether::fmu::SetStrings(inst, "fmi3SetString", valueReferences, nValueReferences,
                                   values);
  }));
}

// The types this FMU has no variables of.
#define TETHER_FMI3_NO_VARIABLES(T)                                                         \
  fmi3Status fmi3Get##T(fmi3Instance instance, const fmi3ValueReference valueReferences[],  \
                        size_t nValueReferences, fmi3##T values[], size_t nValues) {        \
    return S(tether::fmu::NoVariablesOfType(instance, "fmi3Get" #T, #T, nValueReferences)); \
  }                                                                                         \
  fmi3Status fmi3Set##T(fmi3Instance instance, const fmi3ValueReference valueReferences[],  \
                        size_t nValueReferences, const fmi3##T values[], size_t nValues) {  \
    return S(tether::fmu::NoVariablesOfType(instance, "fmi3Set" #T, #T, nValueReferences)); \
  }
TETHER_FMI3_NO_VARIABLES(Float32)
TETHER_FMI3_NO_VARIABLES(Int8)
TETHER_FMI3_NO_VARIABLES(UInt8)
TETHER_FMI3_NO_VARIABLES(Int16)
TETHER_FMI3_NO_VARIABLES(UInt16)
TETHER_FMI3_NO_VARIABLES(Int32)
TETHER_FMI3_NO_VARIABLES(UInt32)
TETHER_FMI3_NO_VARIABLES(Int64)
TETHER_FMI3_NO_VARIABLES(UInt64)
#undef TETHER_FMI3_NO_VARIABLES

fmi3Status fmi3GetBinary(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, size_t valueSizes[], fmi3Binary values[],
                         size_t nValues) {
  return S(tether::fmu::NoVariablesOfType(instance, "fmi3GetBinary", "Binary", nValueReferences));
}
fmi3Status fmi3SetBinary(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                         size_t nValueReferences, const size_t valueSizes[],
                         const fmi3Binary values[], size_t nValues) {
  return S(tether::fmu::NoVariablesOfType(instance, "fmi3SetBinary", "Binary", nValueReferences));
}
fmi3Status fmi3GetClock(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                        size_t nValueReferences, fmi3Clock values[]) {
  return S(tether::fmu::NoVariablesOfType(instance, "fmi3GetClock", "Clock", nValueReferences));
}
fmi3Status fmi3SetClock(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                        size_t nValueReferences, const fmi3Clock values[]) {
  return S(tether::fmu::NoVariablesOfType(instance, "fmi3SetClock", "Clock", nValueReferences));
}

fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance instance,
                                               fmi3ValueReference valueReference,
                                               size_t* nDependencies) {
  return NotProvided(instance, "fmi3GetNumberOfVariableDependencies",
                     "the dependencies are not given (modelDescription.xml lists none)");
}
fmi3Status fmi3GetVariableDependencies(fmi3Instance instance, fmi3ValueReference dependent,
                                       size_t elementIndicesOfDependent[],
                                       fmi3ValueReference independents[],
                                       size_t elementIndicesOfIndependents[],
                                       fmi3DependencyKind dependencyKinds[], size_t nDependencies) {
  return NotProvided(instance, "fmi3GetVariableDependencies",
                     "the dependencies are not given (modelDescription.xml lists none)");
}

constexpr std::initializer_list<Mode> kWithState = {Mode::kStepComplete, Mode::kStepFailed,
                                                    Mode::kTerminated};

fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState* FMUState) {
  return S(Guarded(instance, "fmi3GetFMUState", kWithState, [&](Instance& inst) {
    return tether::fmu::GetState(inst, "fmi3GetFMUState", FMUState);
  }));
}
fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState FMUState) {
  return S(Guarded(instance, "fmi3SetFMUState", kWithState, [&](Instance& inst) {
    return tether::fmu::SetState(inst, "fmi3SetFMUState", FMUState);
  }));
}
fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState* FMUState) {
  return S(Guarded(instance, "fmi3FreeFMUState", kEvery, [&](Instance& inst) {
    return tether::fmu::FreeState(inst, "fmi3FreeFMUState", FMUState);
  }));
}
fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState FMUState, size_t* size) {
  return S(Guarded(instance, "fmi3SerializedFMUStateSize", kAny, [&](Instance& inst) {
    return tether::fmu::SerializedStateSize(inst, "fmi3SerializedFMUStateSize", FMUState, size);
  }));
}
fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState FMUState,
                                 fmi3Byte serializedState[], size_t size) {
  return S(Guarded(instance, "fmi3SerializeFMUState", kAny, [&](Instance& inst) {
    return tether::fmu::SerializeState(inst, "fmi3SerializeFMUState", FMUState, serializedState,
                                       size);
  }));
}
fmi3Status fmi3DeserializeFMUState(fmi3Instance instance, const fmi3Byte serializedState[],
                                   size_t size, fmi3FMUState* FMUState) {
  return S(Guarded(instance, "fmi3DeserializeFMUState", kAny, [&](Instance& inst) {
    return tether::fmu::DeserializeState(inst, "fmi3DeserializeFMUState", serializedState, size,
                                         FMUState);
  }));
}

fmi3Status fmi3GetDirectionalDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[],
                                        size_t nUnknowns, const fmi3ValueReference knowns[],
                                        size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                        fmi3Float64 sensitivity[], size_t nSensitivity) {
  constexpr const char* kFn = "fmi3GetDirectionalDerivative";
  return S(Guarded(instance, kFn, kAny, [&](Instance& inst) {
    // Scalars: one seed per known, one sensitivity per unknown.
    if (auto s = tether::fmu::CheckScalars(inst, kFn, nKnowns, nSeed); s != fmi2OK) return s;
    if (auto s = tether::fmu::CheckScalars(inst, kFn, nUnknowns, nSensitivity); s != fmi2OK)
      return s;
    return inst.DirectionalDerivative(kFn, unknowns, nUnknowns, knowns, nKnowns, seed, sensitivity);
  }));
}
fmi3Status fmi3GetAdjointDerivative(fmi3Instance instance, const fmi3ValueReference unknowns[],
                                    size_t nUnknowns, const fmi3ValueReference knowns[],
                                    size_t nKnowns, const fmi3Float64 seed[], size_t nSeed,
                                    fmi3Float64 sensitivity[], size_t nSensitivity) {
  constexpr const char* kFn = "fmi3GetAdjointDerivative";
  return S(Guarded(instance, kFn, kAny, [&](Instance& inst) {
    // Scalars: one seed per unknown, one sensitivity per known.
    if (auto s = tether::fmu::CheckScalars(inst, kFn, nUnknowns, nSeed); s != fmi2OK) return s;
    if (auto s = tether::fmu::CheckScalars(inst, kFn, nKnowns, nSensitivity); s != fmi2OK) return s;
    return inst.DirectionalDerivative(kFn, unknowns, nUnknowns, knowns, nKnowns, seed, sensitivity,
                                      /*adjoint=*/true);
  }));
}

fmi3Status fmi3EnterConfigurationMode(fmi3Instance instance) {
  return NotProvided(instance, "fmi3EnterConfigurationMode",
                     "this FMU has no structural parameters");
}
fmi3Status fmi3ExitConfigurationMode(fmi3Instance instance) {
  return NotProvided(instance, "fmi3ExitConfigurationMode",
                     "this FMU has no structural parameters");
}
fmi3Status fmi3GetIntervalDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                  size_t nValueReferences, fmi3Float64 intervals[],
                                  fmi3IntervalQualifier qualifiers[]) {
  return NotProvided(instance, "fmi3GetIntervalDecimal", tether::fmu::kNoEvents);
}
fmi3Status fmi3GetIntervalFraction(fmi3Instance instance,
                                   const fmi3ValueReference valueReferences[],
                                   size_t nValueReferences, fmi3UInt64 counters[],
                                   fmi3UInt64 resolutions[], fmi3IntervalQualifier qualifiers[]) {
  return NotProvided(instance, "fmi3GetIntervalFraction", tether::fmu::kNoEvents);
}
fmi3Status fmi3GetShiftDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                               size_t nValueReferences, fmi3Float64 shifts[]) {
  return NotProvided(instance, "fmi3GetShiftDecimal", tether::fmu::kNoEvents);
}
fmi3Status fmi3GetShiftFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                size_t nValueReferences, fmi3UInt64 counters[],
                                fmi3UInt64 resolutions[]) {
  return NotProvided(instance, "fmi3GetShiftFraction", tether::fmu::kNoEvents);
}
fmi3Status fmi3SetIntervalDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                  size_t nValueReferences, const fmi3Float64 intervals[]) {
  return NotProvided(instance, "fmi3SetIntervalDecimal", tether::fmu::kNoEvents);
}
fmi3Status fmi3SetIntervalFraction(fmi3Instance instance,
                                   const fmi3ValueReference valueReferences[],
                                   size_t nValueReferences, const fmi3UInt64 counters[],
                                   const fmi3UInt64 resolutions[]) {
  return NotProvided(instance, "fmi3SetIntervalFraction", tether::fmu::kNoEvents);
}
fmi3Status fmi3SetShiftDecimal(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                               size_t nValueReferences, const fmi3Float64 shifts[]) {
  return NotProvided(instance, "fmi3SetShiftDecimal", tether::fmu::kNoEvents);
}
fmi3Status fmi3SetShiftFraction(fmi3Instance instance, const fmi3ValueReference valueReferences[],
                                size_t nValueReferences, const fmi3UInt64 counters[],
                                const fmi3UInt64 resolutions[]) {
  return NotProvided(instance, "fmi3SetShiftFraction", tether::fmu::kNoEvents);
}
fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance instance) {
  return NotProvided(instance, "fmi3EvaluateDiscreteStates", tether::fmu::kNoEvents);
}
fmi3Status fmi3UpdateDiscreteStates(fmi3Instance instance, fmi3Boolean* discreteStatesNeedUpdate,
                                    fmi3Boolean* terminateSimulation,
                                    fmi3Boolean* nominalsOfContinuousStatesChanged,
                                    fmi3Boolean* valuesOfContinuousStatesChanged,
                                    fmi3Boolean* nextEventTimeDefined, fmi3Float64* nextEventTime) {
  return NotProvided(instance, "fmi3UpdateDiscreteStates", tether::fmu::kNoEvents);
}

// Model Exchange: not this FMU's interface.
#define TETHER_FMI3_ME(name, parameters)                                 \
  fmi3Status name parameters {                                           \
    return NotProvided(instance, #name, tether::fmu::kCoSimulationOnly); \
  }
TETHER_FMI3_ME(fmi3EnterContinuousTimeMode, (fmi3Instance instance))
TETHER_FMI3_ME(fmi3CompletedIntegratorStep,
               (fmi3Instance instance, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                fmi3Boolean* enterEventMode, fmi3Boolean* terminateSimulation))
TETHER_FMI3_ME(fmi3SetTime, (fmi3Instance instance, fmi3Float64 time))
TETHER_FMI3_ME(fmi3SetContinuousStates,
               (fmi3Instance instance, const fmi3Float64 continuousStates[],
                size_t nContinuousStates))
TETHER_FMI3_ME(fmi3GetContinuousStateDerivatives,
               (fmi3Instance instance, fmi3Float64 derivatives[], size_t nContinuousStates))
TETHER_FMI3_ME(fmi3GetEventIndicators,
               (fmi3Instance instance, fmi3Float64 eventIndicators[], size_t nEventIndicators))
TETHER_FMI3_ME(fmi3GetContinuousStates,
               (fmi3Instance instance, fmi3Float64 continuousStates[], size_t nContinuousStates))
TETHER_FMI3_ME(fmi3GetNominalsOfContinuousStates,
               (fmi3Instance instance, fmi3Float64 nominals[], size_t nContinuousStates))
TETHER_FMI3_ME(fmi3GetNumberOfEventIndicators, (fmi3Instance instance, size_t* nEventIndicators))
TETHER_FMI3_ME(fmi3GetNumberOfContinuousStates, (fmi3Instance instance, size_t* nContinuousStates))
TETHER_FMI3_ME(fmi3ActivateModelPartition,
               (fmi3Instance instance, fmi3ValueReference clockReference,
                fmi3Float64 activationTime))
#undef TETHER_FMI3_ME

fmi3Status fmi3EnterStepMode(fmi3Instance instance) {
  return NotProvided(instance, "fmi3EnterStepMode",
                     "without event mode the instance is in Step Mode after "
                     "fmi3ExitInitializationMode");
}

fmi3Status fmi3GetOutputDerivatives(fmi3Instance instance,
                                    const fmi3ValueReference valueReferences[],
                                    size_t nValueReferences, const fmi3Int32 orders[],
                                    fmi3Float64 values[], size_t nValues) {
  constexpr const char* kFn = "fmi3GetOutputDerivatives";
  return S(Guarded(instance, kFn, {Mode::kStepComplete, Mode::kTerminated}, [&](Instance& inst) {
    if (auto s = tether::fmu::CheckScalars(inst, kFn, nValueReferences, nValues); s != fmi2OK)
      return s;
    static_assert(sizeof(fmi3Int32) == sizeof(int), "orders are ints");
    return inst.OutputDerivatives(kFn, valueReferences, nValueReferences,
                                  reinterpret_cast<const int*>(orders), values);
  }));
}

fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 currentCommunicationPoint,
                      fmi3Float64 communicationStepSize,
                      fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                      fmi3Boolean* eventHandlingNeeded, fmi3Boolean* terminateSimulation,
                      fmi3Boolean* earlyReturn, fmi3Float64* lastSuccessfulTime) {
  return S(Guarded(instance, "fmi3DoStep", kRunning, [&](Instance& inst) {
    const fmi2Status s = inst.DoStep(currentCommunicationPoint, communicationStepSize);
    // Never an event, never an early return: the step is done whole or
    // discarded whole (the state back at the last communication point,
    // which lastSuccessfulTime then is).
    if (eventHandlingNeeded != nullptr) *eventHandlingNeeded = fmi3False;
    if (terminateSimulation != nullptr) *terminateSimulation = inst.terminate_requested;
    if (earlyReturn != nullptr) *earlyReturn = fmi3False;
    // lastSuccessfulTime in the master's time: t + h for a completed step,
    // t for a discarded one (the state was put back there).
    if (lastSuccessfulTime != nullptr) {
      *lastSuccessfulTime = s == fmi2OK        ? currentCommunicationPoint + communicationStepSize
                            : s == fmi2Discard ? currentCommunicationPoint
                                               : inst.last_successful_time;
    }
    // FMI 3.0 has no Step Failed state: after a discard the instance is in
    // Step Mode at lastSuccessfulTime.
    if (inst.mode == Mode::kStepFailed) inst.mode = Mode::kStepComplete;
    return s;
  }));
}

}  // extern "C"
