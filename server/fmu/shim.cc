// The FMU's binaries/linux64/<modelIdentifier>.so: a small library without
// the engine that forwards every fmi2* call to the engine's FMU library,
// libtether-fmi2.so.1 (fmi2_api.cc), beside it in the FMU.
//
// Why: the engine holds protobuf messages, whose descriptors register in
// the process's one libprotobuf. Two copies of the engine in one process
// (two Tether FMUs, each dlopen()ed from its own directory) would register
// the same descriptors twice, which protobuf answers with an abort. So the
// first Tether FMU loads its libtether-fmi2.so.1 by path, and every later
// one finds that copy by its soname (dlopen of the bare soname matches a
// loaded library's DT_SONAME) and uses it: one engine per process, serving
// every Tether FMU's instances, which share nothing but the code.
//
// The engine library is loaded at the first fmi2Instantiate and never
// unloaded. fmi2GetVersion and fmi2GetTypesPlatform answer without it.
#include <mutex>
#include <string>

#include "fmu/engine_loader.h"
#include "fmu/fmi2.h"

namespace {

using tether::fmu_shim::kEngineSoname;

struct Engine {
  void* handle = nullptr;
  std::string error;
#define TETHER_FMI2_SHIM_FN(name) decltype(&::name) name = nullptr;
#include "fmu/fmi2_functions.inc"
#undef TETHER_FMI2_SHIM_FN
};

const Engine& LoadEngine() {
  static Engine engine;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = tether::fmu_shim::OpenEngine(&engine.error);
    if (h == nullptr) return;
    std::string missing;
#define TETHER_FMI2_SHIM_FN(name)                                         \
  engine.name = reinterpret_cast<decltype(engine.name)>(dlsym(h, #name)); \
  if (engine.name == nullptr) missing += " " #name;
#include "fmu/fmi2_functions.inc"
#undef TETHER_FMI2_SHIM_FN
    if (!missing.empty()) {
      engine.error = std::string("the engine library ") + kEngineSoname + " lacks" + missing;
      return;
    }
    engine.handle = h;
  });
  return engine;
}

// The loaded engine (only reached with a component, which fmi2Instantiate
// made through it).
const Engine& E() { return LoadEngine(); }

}  // namespace

extern "C" {

const char* fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char* fmi2GetVersion(void) { return fmi2Version; }

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions* functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn) {
  const Engine& e = LoadEngine();
  if (e.handle == nullptr) {
    if (functions != nullptr && functions->logger != nullptr) {
      functions->logger(functions->componentEnvironment, instanceName ? instanceName : "",
                        fmi2Error, "logStatusError", "fmi2Instantiate: %s", e.error.c_str());
    }
    return nullptr;
  }
  return e.fmi2Instantiate(instanceName, fmuType, fmuGUID, fmuResourceLocation, functions, visible,
                           loggingOn);
}

// Every other function needs a component, hence a loaded engine; without
// one (a null component) the call is an error, as the engine would say.
#define TETHER_CHECKED(call)                                     \
  do {                                                           \
    if (c == nullptr || E().handle == nullptr) return fmi2Error; \
    return E().call;                                             \
  } while (0)

void fmi2FreeInstance(fmi2Component c) {
  if (c != nullptr && E().handle != nullptr) E().fmi2FreeInstance(c);
}
fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[]) {
  TETHER_CHECKED(fmi2SetDebugLogging(c, loggingOn, nCategories, categories));
}
fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
  TETHER_CHECKED(
      fmi2SetupExperiment(c, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime));
}
fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
  TETHER_CHECKED(fmi2EnterInitializationMode(c));
}
fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  TETHER_CHECKED(fmi2ExitInitializationMode(c));
}
fmi2Status fmi2Terminate(fmi2Component c) { TETHER_CHECKED(fmi2Terminate(c)); }
fmi2Status fmi2Reset(fmi2Component c) { TETHER_CHECKED(fmi2Reset(c)); }
fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[]) {
  TETHER_CHECKED(fmi2GetReal(c, vr, nvr, value));
}
fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[]) {
  TETHER_CHECKED(fmi2GetInteger(c, vr, nvr, value));
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[]) {
  TETHER_CHECKED(fmi2GetBoolean(c, vr, nvr, value));
}
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[]) {
  TETHER_CHECKED(fmi2GetString(c, vr, nvr, value));
}
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[]) {
  TETHER_CHECKED(fmi2SetReal(c, vr, nvr, value));
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[]) {
  TETHER_CHECKED(fmi2SetInteger(c, vr, nvr, value));
}
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[]) {
  TETHER_CHECKED(fmi2SetBoolean(c, vr, nvr, value));
}
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[]) {
  TETHER_CHECKED(fmi2SetString(c, vr, nvr, value));
}
fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  TETHER_CHECKED(fmi2GetFMUstate(c, FMUstate));
}
fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate) {
  TETHER_CHECKED(fmi2SetFMUstate(c, FMUstate));
}
fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  TETHER_CHECKED(fmi2FreeFMUstate(c, FMUstate));
}
fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t* size) {
  TETHER_CHECKED(fmi2SerializedFMUstateSize(c, FMUstate, size));
}
fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                 size_t size) {
  TETHER_CHECKED(fmi2SerializeFMUstate(c, FMUstate, serializedState, size));
}
fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate* FMUstate) {
  TETHER_CHECKED(fmi2DeSerializeFMUstate(c, serializedState, size, FMUstate));
}
fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                        size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
  TETHER_CHECKED(fmi2GetDirectionalDerivative(c, vUnknown_ref, nUnknown, vKnown_ref, nKnown,
                                              dvKnown, dvUnknown));
}
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[]) {
  TETHER_CHECKED(fmi2SetRealInputDerivatives(c, vr, nvr, order, value));
}
fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[]) {
  TETHER_CHECKED(fmi2GetRealOutputDerivatives(c, vr, nvr, order, value));
}
fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
  TETHER_CHECKED(fmi2DoStep(c, currentCommunicationPoint, communicationStepSize,
                            noSetFMUStatePriorToCurrentPoint));
}
fmi2Status fmi2CancelStep(fmi2Component c) { TETHER_CHECKED(fmi2CancelStep(c)); }
fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status* value) {
  TETHER_CHECKED(fmi2GetStatus(c, s, value));
}
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* value) {
  TETHER_CHECKED(fmi2GetRealStatus(c, s, value));
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* value) {
  TETHER_CHECKED(fmi2GetIntegerStatus(c, s, value));
}
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean* value) {
  TETHER_CHECKED(fmi2GetBooleanStatus(c, s, value));
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* value) {
  TETHER_CHECKED(fmi2GetStringStatus(c, s, value));
}

}  // extern "C"
