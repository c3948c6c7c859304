// The FMU library's extern "C" surface: the fmi2* functions an importer
// calls (fmi2.h; the list in fmi2_functions.inc, the version script
// fmi2.exports). Each checks its arguments and the instance's state (Mode,
// instance.h), maps what the instance answers to an fmi2Status and logs
// errors through the importer's logger; the work is the instance's
// (instance.h: stepping and values; fmu_state.h: FMU states).
//
// Every entry point catches every exception: nothing propagates into the
// importer (Guarded: std::bad_alloc is fmi2Fatal, any other exception
// fmi2Error).
#include <cmath>
#include <cstring>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <string_view>

#include "engine/spec_json.h"
#include "engine/status.h"
#include "fmu/api_common.h"
#include "fmu/fmi2.h"
#include "fmu/fmu_state.h"
#include "fmu/instance.h"
#include "fmu/model_description.h"

using tether::fmu::Guarded;
using tether::fmu::Instance;
using tether::fmu::kAny;
using tether::fmu::kEvery;
using tether::fmu::kRunning;
using tether::fmu::Mode;

extern "C" {

const char* fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char* fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[]) {
  return Guarded(c, "fmi2SetDebugLogging", kAny, [&](Instance& inst) {
    return tether::fmu::SetDebugLogging(inst, "fmi2SetDebugLogging", loggingOn != fmi2False,
                                        nCategories, categories);
  });
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions* functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn) {
  using namespace tether;
  fmi2CallbackLogger logger = functions ? functions->logger : nullptr;
  fmi2ComponentEnvironment env = functions ? functions->componentEnvironment : nullptr;
  const char* name = instanceName ? instanceName : "";
  auto fail = [&](const std::string& message) -> fmi2Component {
    if (logger) logger(env, name, fmi2Error, "logStatusError", fmu::PrintfLiteral(message).c_str());
    return nullptr;
  };
  try {
    if (instanceName == nullptr || *instanceName == '\0')
      return fail("fmi2Instantiate: instanceName must be a non-empty string");
    if (fmuType != fmi2CoSimulation)
      return fail("fmi2Instantiate: this FMU supports Co-Simulation only (fmuType " +
                  std::to_string(static_cast<int>(fmuType)) + ")");
    if (fmuResourceLocation == nullptr)
      return fail(
          "fmi2Instantiate: fmuResourceLocation is required (the FMU reads "
          "resources/spec.json)");
    std::string dir = fmu::PathFromFileUri(fmuResourceLocation);
    if (dir.empty()) {
      return fail("fmi2Instantiate: fmuResourceLocation '" + EscapeForMessage(fmuResourceLocation) +
                  "': expected a file:// URI of the FMU's resources directory");
    }
    auto inst = std::make_unique<Instance>();
    inst->name = name;
    inst->logger = logger;
    inst->env = env;
    inst->debug = loggingOn != fmi2False;
    const std::string error = fmu::LoadInstance(*inst, dir, fmuGUID, "fmi2Instantiate");
    if (!error.empty()) return fail("fmi2Instantiate: " + error);
    return inst.release();
  } catch (const std::exception& e) {
    return fail(std::string("fmi2Instantiate: ") + e.what());
  } catch (...) {
    return fail("fmi2Instantiate: unexpected exception");
  }
}

void fmi2FreeInstance(fmi2Component c) {
  try {
    delete static_cast<Instance*>(c);
  } catch (...) {
  }
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
  return Guarded(c, "fmi2SetupExperiment", {Mode::kInstantiated}, [&](Instance& inst) {
    if (!std::isfinite(startTime))
      return inst.Error("fmi2SetupExperiment: startTime must be finite");
    if (stopTimeDefined && !(stopTime > startTime))
      return inst.Error("fmi2SetupExperiment: stopTime must be later than startTime");
    inst.start_time = startTime;
    if (stopTimeDefined) inst.stop_time = stopTime;
    // The tolerance is not used: the integrator's method and step size are
    // the description's.
    return fmi2OK;
  });
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
  return Guarded(c, "fmi2EnterInitializationMode", {Mode::kInstantiated}, [&](Instance& inst) {
    inst.mode = Mode::kInitialization;
    return fmi2OK;
  });
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  return Guarded(c, "fmi2ExitInitializationMode", {Mode::kInitialization},
                 [&](Instance& inst) { return inst.ExitInitialization(); });
}

fmi2Status fmi2Terminate(fmi2Component c) {
  return Guarded(c, "fmi2Terminate", kRunning, [&](Instance& inst) {
    inst.Terminate();
    return fmi2OK;
  });
}

fmi2Status fmi2Reset(fmi2Component c) {
  return Guarded(c, "fmi2Reset", kEvery, [&](Instance& inst) {
    inst.ResetToOriginal();
    return fmi2OK;
  });
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[]) {
  return Guarded(c, "fmi2GetReal", kAny, [&](Instance& inst) {
    return tether::fmu::GetReals(inst, "fmi2GetReal", vr, nvr, value);
  });
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[]) {
  return Guarded(c, "fmi2SetReal", kAny, [&](Instance& inst) {
    return tether::fmu::SetReals(inst, "fmi2SetReal", vr, nvr, value);
  });
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2GetInteger", "Integer", nvr);
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[]) {
  return Guarded(c, "fmi2GetBoolean", kAny, [&](Instance& inst) {
    return tether::fmu::GetBooleans(inst, "fmi2GetBoolean", vr, nvr, value);
  });
}
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[]) {
  return Guarded(c, "fmi2GetString", kAny, [&](Instance& inst) {
    return tether::fmu::GetStrings(inst, "fmi2GetString", vr, nvr, value);
  });
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2SetInteger", "Integer", nvr);
}
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[]) {
  return Guarded(c, "fmi2SetBoolean", kAny, [&](Instance& inst) {
    return tether::fmu::SetBooleans(inst, "fmi2SetBoolean", vr, nvr, value);
  });
}
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[]) {
  return Guarded(c, "fmi2SetString", kAny, [&](Instance& inst) {
    return tether::fmu::SetStrings(inst, "fmi2SetString", vr, nvr, value);
  });
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  return Guarded(
      c, "fmi2GetFMUstate", {Mode::kStepComplete, Mode::kStepFailed, Mode::kTerminated},
      [&](Instance& inst) { return tether::fmu::GetState(inst, "fmi2GetFMUstate", FMUstate); });
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate) {
  return Guarded(
      c, "fmi2SetFMUstate", {Mode::kStepComplete, Mode::kStepFailed, Mode::kTerminated},
      [&](Instance& inst) { return tether::fmu::SetState(inst, "fmi2SetFMUstate", FMUstate); });
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2FreeFMUstate", kEvery, [&](Instance& inst) {
    return tether::fmu::FreeState(inst, "fmi2FreeFMUstate", FMUstate);
  });
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t* size) {
  return Guarded(c, "fmi2SerializedFMUstateSize", kAny, [&](Instance& inst) {
    return tether::fmu::SerializedStateSize(inst, "fmi2SerializedFMUstateSize", FMUstate, size);
  });
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                 size_t size) {
  return Guarded(c, "fmi2SerializeFMUstate", kAny, [&](Instance& inst) {
    return tether::fmu::SerializeState(inst, "fmi2SerializeFMUstate", FMUstate, serializedState,
                                       size);
  });
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2DeSerializeFMUstate", kAny, [&](Instance& inst) {
    return tether::fmu::DeserializeState(inst, "fmi2DeSerializeFMUstate", serializedState, size,
                                         FMUstate);
  });
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                        size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
  return Guarded(c, "fmi2GetDirectionalDerivative", kAny, [&](Instance& inst) {
    return inst.DirectionalDerivative("fmi2GetDirectionalDerivative", vUnknown_ref, nUnknown,
                                      vKnown_ref, nKnown, dvKnown, dvUnknown);
  });
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[]) {
  // As fmi2SetReal of an input (FMI 2.0 section 4.2.4's table).
  return Guarded(
      c, "fmi2SetRealInputDerivatives",
      {Mode::kInstantiated, Mode::kInitialization, Mode::kStepComplete}, [&](Instance& inst) {
        return inst.SetInputDerivatives("fmi2SetRealInputDerivatives", vr, nvr, order, value);
      });
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[]) {
  return Guarded(c, "fmi2GetRealOutputDerivatives",
                 {Mode::kStepComplete, Mode::kStepFailed, Mode::kTerminated}, [&](Instance& inst) {
                   return inst.OutputDerivatives("fmi2GetRealOutputDerivatives", vr, nvr, order,
                                                 value);
                 });
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
  return Guarded(c, "fmi2DoStep", kRunning, [&](Instance& inst) {
    // FMI 2.0's stepFailed state (section 4.2.4) allows no fmi2DoStep:
    // only the status queries, the getters, FMU states (a restored state is
    // stepComplete again), fmi2Terminate, fmi2Reset and fmi2FreeInstance.
    if (inst.mode == Mode::kStepFailed) {
      return inst.Error(
          "fmi2DoStep: not allowed in state 'stepFailed' (the last step was discarded, "
          "fmi2Discard): restore an FMU state saved before it (fmi2SetFMUstate) and step again, "
          "or terminate (fmi2Terminate) or reset (fmi2Reset)");
    }
    return inst.DoStep(currentCommunicationPoint, communicationStepSize);
  });
}

fmi2Status fmi2CancelStep(fmi2Component c) {
  return tether::fmu::Unsupported(c, "fmi2CancelStep",
                                  "fmi2DoStep runs synchronously and never returns fmi2Pending");
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status* value) {
  return Guarded(c, "fmi2GetStatus", kAny, [&](Instance& inst) {
    // Only asynchronous steps (fmi2Pending) have a status here.
    return fmi2Discard;
  });
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* value) {
  return Guarded(c, "fmi2GetRealStatus", kAny, [&](Instance& inst) {
    if (value == nullptr) {
      // An error, as every null output argument is (not a status kind this
      // FMU does not answer, which is fmi2Discard).
      return inst.Error("fmi2GetRealStatus: null value pointer");
    }
    if (s != fmi2LastSuccessfulTime) return fmi2Discard;
    *value = inst.last_successful_time;
    return fmi2OK;
  });
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* value) {
  return Guarded(c, "fmi2GetIntegerStatus", kAny, [&](Instance&) { return fmi2Discard; });
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean* value) {
  return Guarded(c, "fmi2GetBooleanStatus", kAny, [&](Instance& inst) {
    if (value == nullptr) {
      return inst.Error("fmi2GetBooleanStatus: null value pointer");
    }
    if (s != fmi2Terminated) return fmi2Discard;
    // True in stepFailed (instance.h: the FMU cannot go on from there by
    // itself; masters that step on after a discard unless the FMU asks to
    // terminate, FMPy's and fmusim's, stop there with their results), and
    // once the same step was discarded max_discards times in a row.
    *value = inst.mode == Mode::kStepFailed || inst.terminate_requested ? fmi2True : fmi2False;
    return fmi2OK;
  });
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* value) {
  return Guarded(c, "fmi2GetStringStatus", kAny, [&](Instance&) { return fmi2Discard; });
}

}  // extern "C"
