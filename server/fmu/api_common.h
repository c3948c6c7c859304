// What the two C surfaces of the FMU library share: fmi2_api.cc (FMI 2.0)
// and fmi3_api.cc (FMI 3.0) are thin layers that map their types and
// names onto these functions, which check the arguments and the
// instance's state and do the work on the one Instance (instance.h). One
// body per concept for both standards: reading resources/spec.json and
// compiling, Float64/Real get and set, the String parameters, and the FMU
// states.
//
// `function` is the calling API function's name ("fmi2GetReal",
// "fmi3GetFloat64"): every error message names it. The statuses are
// fmi2Status; fmi3Status has the same values for OK..Fatal
// (fmi3_api.cc checks it at compile time).
//
// Threading: one caller per instance at a time, as the standard requires.
#pragma once

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "fmu/fmi2.h"
#include "fmu/instance.h"

namespace tether::fmu {

// "file:///a/b%20c/" -> "/a/b c/"; "" when it is no local file URI.
std::string PathFromFileUri(std::string_view uri);

inline Instance* Cast(void* c) { return static_cast<Instance*>(c); }

// Runs `body` on a valid instance whose mode is one of `allowed`; any
// exception is an fmi2Error (fmi2Fatal for std::bad_alloc).
template <class F>
fmi2Status Guarded(void* c, const char* function, std::initializer_list<Mode> allowed, F&& body) {
  Instance* inst = Cast(c);
  if (inst == nullptr) return fmi2Error;
  try {
    bool ok = false;
    for (Mode m : allowed) ok = ok || m == inst->mode;
    if (!ok) {
      return inst->Error(std::string(function) + ": not allowed in state '" + ModeName(inst->mode) +
                         "'");
    }
    return body(*inst);
  } catch (const std::bad_alloc&) {
    inst->mode = Mode::kError;
    inst->Log(fmi2Fatal, "logStatusError", std::string(function) + ": out of memory");
    return fmi2Fatal;
  } catch (const std::exception& e) {
    return inst->Error(std::string(function) + ": " + e.what());
  } catch (...) {
    return inst->Error(std::string(function) + ": unexpected exception");
  }
}

inline constexpr std::initializer_list<Mode> kAny = {Mode::kInstantiated, Mode::kInitialization,
                                                     Mode::kStepComplete, Mode::kStepFailed,
                                                     Mode::kTerminated};
inline constexpr std::initializer_list<Mode> kRunning = {Mode::kStepComplete, Mode::kStepFailed};
// fmi3GetFloat64 and fmi3SetFloat64: kAny and inside an intermediate update.
inline constexpr std::initializer_list<Mode> kAnyOrIntermediate = {
    Mode::kInstantiated, Mode::kInitialization, Mode::kStepComplete,
    Mode::kStepFailed,   Mode::kTerminated,     Mode::kIntermediateUpdate};
inline constexpr std::initializer_list<Mode> kEvery = {Mode::kInstantiated, Mode::kInitialization,
                                                       Mode::kStepComplete, Mode::kStepFailed,
                                                       Mode::kTerminated,   Mode::kError};

// A function this FMU does not provide: fmi2Error, logged with `why`.
fmi2Status Unsupported(void* c, const char* function, const char* why);
// Get/Set of a type this FMU has no variables of (nvr > 0 is an error).
fmi2Status NoVariablesOfType(void* c, const char* function, const char* type, size_t nvr);

// Reads `resource_dir`/spec.json (and server.txt), checks that its GUID is
// `token` and compiles it into `inst` (whose name, logger and fmi_version
// are set), which is then at the description's initial state. "" or the
// error (after `function`: ).
std::string LoadInstance(Instance& inst, std::string resource_dir, const char* token,
                         const char* function);

fmi2Status SetDebugLogging(Instance& inst, const char* function, bool on, size_t n,
                           const char* const categories[]);

// The Real (FMI 2) / Float64 (FMI 3) variables. With FMI 3, value
// reference TimeReference(inst) is the independent variable `time`.
unsigned TimeReference(const Instance& inst);
fmi2Status GetReals(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                    double value[]);
fmi2Status SetReals(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                    const double value[]);
// The String parameters tether.server and tether.certificate.
fmi2Status GetStrings(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                      const char* value[]);
fmi2Status SetStrings(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                      const char* const value[]);
// The Boolean parameter tether.project_start (value reference
// ProjectStartReference(inst)), through both APIs' Boolean types (FMI 2's
// int, FMI 3's bool): read anytime, set before ExitInitializationMode.
unsigned ProjectStartReference(const Instance& inst);
// False (logged) unless every reference is tether.project_start, and for
// `set` the instance is before initialization.
bool CheckBooleanAccess(const Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                        const void* values, bool set);
template <typename B>
fmi2Status GetBooleans(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                       B value[]) {
  if (!CheckBooleanAccess(inst, function, vr, nvr, value, false)) return fmi2Error;
  for (size_t k = 0; k < nvr; ++k) value[k] = inst.project_start ? B{1} : B{0};
  return fmi2OK;
}
template <typename B>
fmi2Status SetBooleans(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                       const B value[]) {
  if (!CheckBooleanAccess(inst, function, vr, nvr, value, true)) return fmi2Error;
  for (size_t k = 0; k < nvr; ++k) inst.project_start = value[k] != B{0};
  return fmi2OK;
}

// FMU states (fmu_state.h): `*state` is a SavedState* (a non-null one
// passed in is overwritten, as both standards allow).
fmi2Status GetState(Instance& inst, const char* function, void** state);
fmi2Status SetState(Instance& inst, const char* function, void* state);
fmi2Status FreeState(Instance& inst, const char* function, void** state);
fmi2Status SerializedStateSize(Instance& inst, const char* function, void* state, size_t* size);
fmi2Status SerializeState(Instance& inst, const char* function, void* state, void* bytes,
                          size_t size);
fmi2Status DeserializeState(Instance& inst, const char* function, const void* bytes, size_t size,
                            void** state);

}  // namespace tether::fmu
