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
#include "fmu/fmi2.h"
#include "fmu/fmu_state.h"
#include "fmu/instance.h"
#include "fmu/model_description.h"

namespace tether::fmu {
namespace {

// "file:///a/b%20c/" -> "/a/b c/"; "" when it is no local file URI.
std::string PathFromFileUri(std::string_view uri) {
  std::string_view rest;
  if (uri.substr(0, 7) == "file://") {
    rest = uri.substr(7);
    // An authority: empty or "localhost".
    if (rest.substr(0, 9) == "localhost") rest.remove_prefix(9);
    if (rest.empty() || rest[0] != '/') return "";
  } else if (uri.substr(0, 6) == "file:/") {
    rest = uri.substr(5);
  } else {
    return "";
  }
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%') {
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      if (i + 2 >= rest.size()) return "";  // "%" or "%X" at the end
      const int hi = hex(rest[i + 1]), lo = hex(rest[i + 2]);
      if (hi < 0 || lo < 0) return "";
      const char c = static_cast<char>(hi * 16 + lo);
      if (c == '\0') return "";
      path += c;
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

Instance* Cast(fmi2Component c) { return static_cast<Instance*>(c); }

// Runs `body` on a valid instance whose mode is one of `allowed`; any
// exception is an fmi2Error (fmi2Fatal for std::bad_alloc).
template <class F>
fmi2Status Guarded(fmi2Component c, const char* function, std::initializer_list<Mode> allowed,
                   F&& body) {
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

constexpr std::initializer_list<Mode> kAny = {Mode::kInstantiated, Mode::kInitialization,
                                              Mode::kStepComplete, Mode::kStepFailed,
                                              Mode::kTerminated};
constexpr std::initializer_list<Mode> kRunning = {Mode::kStepComplete, Mode::kStepFailed};

fmi2Status Unsupported(fmi2Component c, const char* function, const char* why) {
  return Guarded(c, function, kAny,
                 [&](Instance& inst) { return inst.Error(std::string(function) + ": " + why); });
}

// Checks a value-reference array against the variable list.
bool CheckRefs(const Instance& inst, const char* function, const fmi2ValueReference vr[],
               size_t nvr, const void* values) {
  if (nvr > 0 && (vr == nullptr || values == nullptr)) {
    inst.Error(std::string(function) + ": null value-reference or value array");
    return false;
  }
  for (size_t k = 0; k < nvr; ++k) {
    if (vr[k] >= inst.vars.size()) {
      inst.Error(std::string(function) + ": unknown valueReference " + std::to_string(vr[k]) +
                 " (this FMU has 0.." + std::to_string(inst.vars.size() - 1) + ")");
      return false;
    }
  }
  return true;
}

// Checks a String value-reference array: the String variables are
// kServerVariable (vars.size()) and kCertificateVariable (the next).
bool CheckStringRefs(const Instance& inst, const char* function, const fmi2ValueReference vr[],
                     size_t nvr, const void* values) {
  if (nvr > 0 && (vr == nullptr || values == nullptr)) {
    inst.Error(std::string(function) + ": null value-reference or value array");
    return false;
  }
  for (size_t k = 0; k < nvr; ++k) {
    if (vr[k] != inst.vars.size() && vr[k] != inst.vars.size() + 1) {
      inst.Error(std::string(function) + ": valueReference " + std::to_string(vr[k]) +
                 " is not a String variable (the String variables are " + kServerVariable + ", " +
                 std::to_string(inst.vars.size()) + ", and " + kCertificateVariable + ", " +
                 std::to_string(inst.vars.size() + 1) + ")");
      return false;
    }
  }
  return true;
}

// The name of String variable `vr` (CheckStringRefs passed).
const char* StringVariableName(const Instance& inst, fmi2ValueReference vr) {
  return vr == inst.vars.size() ? kServerVariable : kCertificateVariable;
}

// Get/Set of a type this FMU has no variables of.
fmi2Status NoVariablesOfType(fmi2Component c, const char* function, const char* type, size_t nvr) {
  return Guarded(c, function, kAny, [&](Instance& inst) {
    if (nvr == 0) return fmi2OK;
    return inst.Error(std::string(function) + ": this FMU has no " + type +
                      " variables (all are Real)");
  });
}

}  // namespace
}  // namespace tether::fmu

using tether::fmu::Guarded;
using tether::fmu::Instance;
using tether::fmu::kAny;
using tether::fmu::kRunning;
using tether::fmu::Mode;
using tether::fmu::SavedState;
using tether::fmu::VariableKind;

extern "C" {

const char* fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char* fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[]) {
  return Guarded(c, "fmi2SetDebugLogging", kAny, [&](Instance& inst) {
    for (size_t i = 0; i < nCategories; ++i) {
      const std::string cat = categories && categories[i] ? categories[i] : "";
      if (cat != "logAll" && cat != "logStatusError" && cat != "logStatusDiscard")
        return inst.Error("fmi2SetDebugLogging: unknown log category '" + cat + "'");
    }
    inst.debug = loggingOn != fmi2False;
    return fmi2OK;
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
    if (logger) logger(env, name, fmi2Error, "logStatusError", "%s", message.c_str());
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
    if (dir.back() != '/') dir += '/';
    const std::string path = dir + "spec.json";
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("fmi2Instantiate: cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    auto inst = std::make_unique<Instance>();
    inst->name = name;
    inst->logger = logger;
    inst->env = env;
    inst->debug = loggingOn != fmi2False;
    if (Status s = ParseSpecJson(text.str(), &inst->original_spec, path); !s.ok())
      return fail("fmi2Instantiate: " + s.message());
    const std::string guid = fmu::Guid(inst->original_spec);
    if (fmuGUID == nullptr || guid != fmuGUID) {
      return fail("fmi2Instantiate: GUID mismatch: the importer gave '" +
                  EscapeForMessage(fmuGUID ? fmuGUID : "") + "', resources/spec.json has '" + guid +
                  "' (modelDescription.xml and resources/spec.json are not of one FMU)");
    }
    auto created = Simulation::Create(inst->original_spec);
    if (!created.ok()) {
      std::string m =
          "fmi2Instantiate: the description does not compile: " + created.status().message();
      for (const auto& v : created.status().violations())
        m += "; " + v.field + ": " + v.description;
      return fail(m);
    }
    inst->original_model = (*created)->shared_model();
    // The remote mode's address baked in by `tether --server ADDR fmu`.
    if (std::ifstream server(dir + fmu::kServerResource, std::ios::binary); server) {
      std::getline(server, inst->server_start);
      while (!inst->server_start.empty() &&
             (inst->server_start.back() == '\r' || inst->server_start.back() == ' '))
        inst->server_start.pop_back();
    }
    inst->ResetToOriginal();
    inst->Debug("instantiated from " + path + " (" + std::to_string(inst->vars.size()) +
                " variables)");
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
  return Guarded(c, "fmi2Reset",
                 {Mode::kInstantiated, Mode::kInitialization, Mode::kStepComplete,
                  Mode::kStepFailed, Mode::kTerminated, Mode::kError},
                 [&](Instance& inst) {
                   inst.ResetToOriginal();
                   return fmi2OK;
                 });
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[]) {
  return Guarded(c, "fmi2GetReal", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckRefs(inst, "fmi2GetReal", vr, nvr, value)) return fmi2Error;
    if (fmi2Status s = inst.RefreshValues(); s != fmi2OK) return s;
    for (size_t k = 0; k < nvr; ++k) value[k] = inst.values[vr[k]];
    return fmi2OK;
  });
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[]) {
  return Guarded(c, "fmi2SetReal", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckRefs(inst, "fmi2SetReal", vr, nvr, value)) return fmi2Error;
    const bool before_init = inst.mode == Mode::kInstantiated || inst.mode == Mode::kInitialization;
    // Check every reference before changing anything.
    for (size_t k = 0; k < nvr; ++k) {
      const tether::fmu::Variable& v = inst.vars[vr[k]];
      if (!std::isfinite(value[k])) {
        return inst.Error("fmi2SetReal: " + v.name + ": expected a finite value, found " +
                          tether::FormatNumber(value[k]));
      }
      if (v.kind == VariableKind::kParameter && !before_init) {
        return inst.Error("fmi2SetReal: parameter " + v.name +
                          " is fixed: it can be set only before fmi2ExitInitializationMode");
      }
      if (v.kind != VariableKind::kParameter && v.kind != VariableKind::kInput) {
        return inst.Error("fmi2SetReal: " + v.name + " is an output: it cannot be set");
      }
      if (v.kind == VariableKind::kInput && inst.mode == Mode::kTerminated) {
        return inst.Error("fmi2SetReal: not allowed in state 'terminated'");
      }
    }
    for (size_t k = 0; k < nvr; ++k) {
      const tether::fmu::Variable& v = inst.vars[vr[k]];
      if (v.kind == VariableKind::kParameter) {
        auto* p = inst.spec.mutable_system()->mutable_parameters(v.index);
        if (p->value() != value[k] || std::signbit(p->value()) != std::signbit(value[k])) {
          p->set_value(value[k]);
          inst.parameters_changed = true;
        }
      } else {
        inst.inputs[static_cast<size_t>(v.index)] = value[k];
        tether::Status s = inst.sim->SetInput(v.name, value[k]);
        if (!s.ok()) return inst.Error("fmi2SetReal: " + s.message());
      }
    }
    inst.values_stale = true;
    return fmi2OK;
  });
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2GetInteger", "Integer", nvr);
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2GetBoolean", "Boolean", nvr);
}
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[]) {
  return Guarded(c, "fmi2GetString", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckStringRefs(inst, "fmi2GetString", vr, nvr, value)) return fmi2Error;
    for (size_t k = 0; k < nvr; ++k) {
      value[k] = vr[k] == inst.vars.size() ? inst.server_parameter.c_str()
                                           : inst.certificate_parameter.c_str();
    }
    return fmi2OK;
  });
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2SetInteger", "Integer", nvr);
}
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2SetBoolean", "Boolean", nvr);
}
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[]) {
  return Guarded(c, "fmi2SetString", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckStringRefs(inst, "fmi2SetString", vr, nvr, value)) return fmi2Error;
    for (size_t k = 0; k < nvr; ++k) {
      const std::string name = tether::fmu::StringVariableName(inst, vr[k]);
      if (inst.mode != Mode::kInstantiated && inst.mode != Mode::kInitialization) {
        return inst.Error("fmi2SetString: parameter " + name +
                          " is fixed: it can be set only before fmi2ExitInitializationMode");
      }
      if (value[k] == nullptr) {
        return inst.Error("fmi2SetString: " + name + ": expected a string, found a null pointer");
      }
      if (vr[k] != inst.vars.size()) {
        tether::v1::CertificateOptions options = inst.spec.certificate();
        if (!tether::fmu::SetCertificateParameter(value[k], &options)) {
          return inst.Error("fmi2SetString: " + name +
                            ": expected sampled, enclosed or off, found \"" +
                            std::string(value[k]).substr(0, 64) + "\"");
        }
      }
    }
    for (size_t k = 0; k < nvr; ++k) {
      if (vr[k] == inst.vars.size()) {
        inst.server_parameter = value[k];
        continue;
      }
      tether::v1::CertificateOptions* options = inst.spec.mutable_certificate();
      const std::string before = options->SerializeAsString();
      tether::fmu::SetCertificateParameter(value[k], options);
      inst.certificate_parameter = tether::fmu::CertificateParameter(*options);
      // The description changes: recompiled at the next use, as for a
      // parameter (ApplyParameters).
      if (options->SerializeAsString() != before) inst.parameters_changed = true;
    }
    return fmi2OK;
  });
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2GetFMUstate", {Mode::kStepComplete, Mode::kStepFailed, Mode::kTerminated},
                 [&](Instance& inst) {
                   if (FMUstate == nullptr) return inst.Error("fmi2GetFMUstate: FMUstate is null");
                   SavedState saved;
                   if (fmi2Status s = inst.Save(&saved); s != fmi2OK) return s;
                   auto* existing = static_cast<SavedState*>(*FMUstate);
                   if (existing != nullptr) {
                     inst.Free(*existing);
                     *existing = std::move(saved);  // FMI 2.0: overwrite a state passed in
                   } else {
                     *FMUstate = new SavedState(std::move(saved));
                   }
                   return fmi2OK;
                 });
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate) {
  return Guarded(c, "fmi2SetFMUstate", {Mode::kStepComplete, Mode::kStepFailed, Mode::kTerminated},
                 [&](Instance& inst) {
                   if (FMUstate == nullptr) return inst.Error("fmi2SetFMUstate: FMUstate is null");
                   return inst.Restore(*static_cast<SavedState*>(FMUstate));
                 });
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2FreeFMUstate",
                 {Mode::kInstantiated, Mode::kInitialization, Mode::kStepComplete,
                  Mode::kStepFailed, Mode::kTerminated, Mode::kError},
                 [&](Instance& inst) {
                   if (FMUstate == nullptr || *FMUstate == nullptr) return fmi2OK;
                   auto* saved = static_cast<SavedState*>(*FMUstate);
                   inst.Free(*saved);
                   delete saved;
                   *FMUstate = nullptr;
                   return fmi2OK;
                 });
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t* size) {
  return Guarded(c, "fmi2SerializedFMUstateSize", kAny, [&](Instance& inst) {
    if (FMUstate == nullptr || size == nullptr)
      return inst.Error("fmi2SerializedFMUstateSize: null argument");
    const std::string* bytes = nullptr;
    fmi2Status s =
        inst.Serialize(*static_cast<SavedState*>(FMUstate), "fmi2SerializedFMUstateSize", &bytes);
    if (s != fmi2OK) return s;
    *size = bytes->size();
    return fmi2OK;
  });
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                 size_t size) {
  return Guarded(c, "fmi2SerializeFMUstate", kAny, [&](Instance& inst) {
    if (FMUstate == nullptr || serializedState == nullptr)
      return inst.Error("fmi2SerializeFMUstate: null argument");
    const std::string* serialized = nullptr;
    fmi2Status s =
        inst.Serialize(*static_cast<SavedState*>(FMUstate), "fmi2SerializeFMUstate", &serialized);
    if (s != fmi2OK) return s;
    const std::string& bytes = *serialized;
    if (size != bytes.size()) {
      return inst.Error("fmi2SerializeFMUstate: size " + std::to_string(size) +
                        " is not the serialized size " + std::to_string(bytes.size()) +
                        " (fmi2SerializedFMUstateSize)");
    }
    std::memcpy(serializedState, bytes.data(), bytes.size());
    return fmi2OK;
  });
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2DeSerializeFMUstate", kAny, [&](Instance& inst) {
    if (FMUstate == nullptr || (serializedState == nullptr && size > 0))
      return inst.Error("fmi2DeSerializeFMUstate: null argument");
    SavedState saved;
    fmi2Status s = inst.Deserialize(std::string_view(serializedState, size), &saved);
    if (s != fmi2OK) return s;
    if (auto* existing = static_cast<SavedState*>(*FMUstate); existing != nullptr) {
      inst.Free(*existing);  // its snapshot, in remote mode
      *existing = std::move(saved);
    } else {
      *FMUstate = new SavedState(std::move(saved));
    }
    return fmi2OK;
  });
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                        size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
  return tether::fmu::Unsupported(c, "fmi2GetDirectionalDerivative",
                                  "not provided (providesDirectionalDerivative=\"false\")");
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[]) {
  return tether::fmu::Unsupported(c, "fmi2SetRealInputDerivatives",
                                  "inputs are held constant (canInterpolateInputs=\"false\")");
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[]) {
  return tether::fmu::Unsupported(c, "fmi2GetRealOutputDerivatives",
                                  "not provided (maxOutputDerivativeOrder=\"0\")");
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
  return Guarded(c, "fmi2DoStep", kRunning, [&](Instance& inst) {
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
    if (s != fmi2LastSuccessfulTime || value == nullptr) return fmi2Discard;
    *value = inst.last_successful_time;
    return fmi2OK;
  });
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* value) {
  return Guarded(c, "fmi2GetIntegerStatus", kAny, [&](Instance&) { return fmi2Discard; });
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean* value) {
  return Guarded(c, "fmi2GetBooleanStatus", kAny, [&](Instance& inst) {
    if (s != fmi2Terminated || value == nullptr) return fmi2Discard;
    // The FMU never asks to end the simulation.
    *value = fmi2False;
    return fmi2OK;
  });
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* value) {
  return Guarded(c, "fmi2GetStringStatus", kAny, [&](Instance&) { return fmi2Discard; });
}

}  // extern "C"
