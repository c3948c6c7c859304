// The bodies both C surfaces share (api_common.h).
#include "fmu/api_common.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <utility>

#include "engine/spec_json.h"
#include "engine/status.h"
#include "fmu/fmu_state.h"
#include "fmu/model_description.h"

namespace tether::fmu {

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

unsigned TimeReference(const Instance& inst) { return static_cast<unsigned>(inst.vars.size() + 3); }
unsigned ProjectStartReference(const Instance& inst) {
  return static_cast<unsigned>(inst.vars.size() + 2);
}

bool CheckBooleanAccess(const Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                        const void* values, bool set) {
  if (nvr > 0 && (vr == nullptr || values == nullptr)) {
    inst.Error(std::string(function) + ": null value-reference or value array");
    return false;
  }
  for (size_t k = 0; k < nvr; ++k) {
    if (vr[k] != ProjectStartReference(inst)) {
      inst.Error(std::string(function) + ": valueReference " + std::to_string(vr[k]) +
                 " is not a Boolean variable (the one Boolean variable is " +
                 kProjectStartVariable + ", " + std::to_string(ProjectStartReference(inst)) + ")");
      return false;
    }
  }
  if (set && nvr > 0 && inst.mode != Mode::kInstantiated && inst.mode != Mode::kInitialization) {
    inst.Error(std::string(function) + ": parameter " + kProjectStartVariable +
               " is fixed: it can be set only before " + inst.Fn("ExitInitializationMode"));
    return false;
  }
  return true;
}

namespace {

// Checks a value-reference array against the variable list.
bool CheckRefs(const Instance& inst, const char* function, const unsigned vr[], size_t nvr,
               const void* values) {
  if (nvr > 0 && (vr == nullptr || values == nullptr)) {
    inst.Error(std::string(function) + ": null value-reference or value array");
    return false;
  }
  for (size_t k = 0; k < nvr; ++k) {
    if (inst.fmi_version == 3 && vr[k] == TimeReference(inst)) continue;
    if (vr[k] >= inst.vars.size()) {
      inst.Error(
          std::string(function) + ": unknown valueReference " + std::to_string(vr[k]) +
          " (this FMU's " + (inst.fmi_version == 3 ? "Float64" : "Real") + " variables are 0.." +
          std::to_string(inst.vars.size() - 1) +
          (inst.fmi_version == 3 ? " and time, " + std::to_string(TimeReference(inst)) : "") + ")");
      return false;
    }
  }
  return true;
}

// Checks a String value-reference array: the String variables are
// kServerVariable (vars.size()) and kCertificateVariable (the next).
bool CheckStringRefs(const Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                     const void* values) {
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
const char* StringVariableName(const Instance& inst, unsigned vr) {
  return vr == inst.vars.size() ? kServerVariable : kCertificateVariable;
}

}  // namespace

fmi2Status Unsupported(void* c, const char* function, const char* why) {
  return Guarded(c, function, kAny,
                 [&](Instance& inst) { return inst.Error(std::string(function) + ": " + why); });
}

// Get/Set of a type this FMU has no variables of.
fmi2Status NoVariablesOfType(void* c, const char* function, const char* type, size_t nvr) {
  return Guarded(c, function, kAny, [&](Instance& inst) {
    if (nvr == 0) return fmi2OK;
    return inst.Error(std::string(function) + ": this FMU has no " + type + " variables (all are " +
                      (inst.fmi_version == 3 ? "Float64" : "Real") + ")");
  });
}

std::string LoadInstance(Instance& inst, std::string dir, const char* token, const char* function) {
  if (dir.back() != '/') dir += '/';
  const std::string path = dir + "spec.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read " + path;
  std::stringstream text;
  text << in.rdbuf();
  if (Status s = ParseSpecJson(text.str(), &inst.original_spec, path); !s.ok()) return s.message();
  const std::string guid = Guid(inst.original_spec);
  const char* what = inst.fmi_version == 3 ? "instantiationToken" : "GUID";
  if (token == nullptr || guid != token) {
    return std::string(what) + " mismatch: the importer gave '" +
           EscapeForMessage(token ? token : "") + "', resources/spec.json has '" + guid +
           "' (modelDescription.xml and resources/spec.json are not of one FMU)";
  }
  auto created = Simulation::Create(inst.original_spec);
  if (!created.ok()) {
    return "the description does not compile: " + DescribeStatus(created.status());
  }
  inst.original_model = (*created)->shared_model();
  // The remote mode's address baked in by `tether --server ADDR fmu`.
  if (std::ifstream server(dir + kServerResource, std::ios::binary); server) {
    std::getline(server, inst.server_start);
    while (!inst.server_start.empty() &&
           (inst.server_start.back() == '\r' || inst.server_start.back() == ' '))
      inst.server_start.pop_back();
  }
  inst.ResetToOriginal();
  for (const std::string& name : UnusedParameters(inst.original_spec))
    inst.Log(fmi2Warning, "logStatusWarning", UnusedParameterWarning(name));
  inst.Debug(std::string(function) + ": instantiated from " + path + " (" +
             std::to_string(inst.vars.size()) + " variables)");
  return "";
}

fmi2Status SetDebugLogging(Instance& inst, const char* function, bool on, size_t n,
                           const char* const categories[]) {
  for (size_t i = 0; i < n; ++i) {
    const std::string cat = categories && categories[i] ? categories[i] : "";
    if (cat != "logAll" && cat != "logStatusError" && cat != "logStatusDiscard")
      return inst.Error(std::string(function) + ": unknown log category '" + cat + "'");
  }
  inst.debug = on;
  return fmi2OK;
}

// Inside the master's intermediateUpdate callback (Mode::kIntermediateUpdate):
// whether the callback's flags allow `what` ("get", "set") of these
// variables: each one of requiredIntermediateVariables, and for a set an
// input (FMI 3.0's Intermediate Update Mode).
bool IntermediateAccessAllowed(Instance& inst, const char* function, const unsigned vr[],
                               size_t nvr, bool set) {
  const bool allowed = set ? inst.intermediate_set : inst.intermediate_get;
  if (!allowed) {
    inst.Error(std::string(function) + ": not allowed in this intermediate update (" +
               (set ? "intermediateVariableSetRequested" : "intermediateVariableGetAllowed") +
               " is false" +
               (set ? ": inputs are set at the evaluations inside a step"
                    : ": values are read at completed engine steps, intermediateStepFinished "
                      "true") +
               ")");
    return false;
  }
  for (size_t k = 0; k < nvr; ++k) {
    const bool required =
        vr[k] < inst.intermediate_required.size() && inst.intermediate_required[vr[k]];
    const std::string name = vr[k] < inst.vars.size() ? inst.vars[vr[k]].name : "time";
    if (!required) {
      inst.Error(std::string(function) + ": " + name +
                 " is not one of the requiredIntermediateVariables given to "
                 "fmi3InstantiateCoSimulation");
      return false;
    }
    if (set && (vr[k] >= inst.vars.size() || inst.vars[vr[k]].kind != VariableKind::kInput)) {
      inst.Error(std::string(function) + ": " + name +
                 " is not an input: only inputs are set in an intermediate update");
      return false;
    }
  }
  return true;
}

fmi2Status GetReals(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                    double value[]) {
  if (!CheckRefs(inst, function, vr, nvr, value)) return fmi2Error;
  if (inst.mode == Mode::kIntermediateUpdate &&
      !IntermediateAccessAllowed(inst, function, vr, nvr, false))
    return fmi2Error;
  if (fmi2Status s = inst.RefreshValues(); s != fmi2OK) return s;
  for (size_t k = 0; k < nvr; ++k)
    value[k] = vr[k] < inst.vars.size() ? inst.values[vr[k]] : inst.sim->time();
  return fmi2OK;
}

fmi2Status SetReals(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                    const double value[]) {
  if (!CheckRefs(inst, function, vr, nvr, value)) return fmi2Error;
  if (inst.mode == Mode::kIntermediateUpdate &&
      !IntermediateAccessAllowed(inst, function, vr, nvr, true))
    return fmi2Error;
  // FMI 2.0's stepFailed state (after fmi2Discard) allows no setter (FMI
  // 3.0 has no such state: fmi3DoStep leaves a discarded step in Step Mode).
  if (nvr > 0 && inst.mode == Mode::kStepFailed) {
    return inst.Error(std::string(function) +
                      ": not allowed in state 'stepFailed' (after fmi2Discard): restore an FMU "
                      "state (fmi2SetFMUstate) first");
  }
  const bool before_init = inst.mode == Mode::kInstantiated || inst.mode == Mode::kInitialization;
  // Check every reference before changing anything.
  for (size_t k = 0; k < nvr; ++k) {
    if (vr[k] >= inst.vars.size())
      return inst.Error(std::string(function) +
                        ": time is the independent variable: it cannot be set");
    const Variable& v = inst.vars[vr[k]];
    if (!std::isfinite(value[k])) {
      return inst.Error(std::string(function) + ": " + v.name +
                        ": expected a finite value, found " + FormatNumber(value[k]));
    }
    if (IsParameter(v.kind) && !before_init) {
      return inst.Error(std::string(function) + ": parameter " + v.name +
                        " is fixed: it can be set only before " +
                        inst.Fn("ExitInitializationMode"));
    }
    if (!IsParameter(v.kind) && v.kind != VariableKind::kInput) {
      return inst.Error(std::string(function) + ": " + v.name + " is an output: it cannot be set");
    }
    if (v.kind == VariableKind::kInput && inst.mode == Mode::kTerminated) {
      return inst.Error(std::string(function) + ": not allowed in state 'terminated'");
    }
  }
  for (size_t k = 0; k < nvr; ++k) {
    const Variable& v = inst.vars[vr[k]];
    if (IsParameter(v.kind)) {
      // The value as it is, and how to set it.
      double now = 0;
      std::function<void(double)> assign;
      if (v.kind == VariableKind::kParameter) {
        v1::Parameter* p = inst.spec.mutable_system()->mutable_parameters(v.index);
        now = p->value();
        assign = [p](double x) { p->set_value(x); };
      } else {
        // spec.initial.q has one value per coordinate (validated); an empty
        // v means all zero, made explicit before one is set.
        v1::State* initial = inst.spec.mutable_initial();
        const int n = static_cast<int>(inst.sim->coordinate_names().size());
        if (v.kind == VariableKind::kStartVelocity && initial->v_size() == 0)
          for (int i = 0; i < n; ++i) initial->add_v(0.0);
        auto* values =
            v.kind == VariableKind::kStartCoordinate ? initial->mutable_q() : initial->mutable_v();
        now = values->Get(v.index);
        assign = [values, i = v.index](double x) { values->Set(i, x); };
      }
      if (now != value[k] || std::signbit(now) != std::signbit(value[k])) {
        assign(value[k]);
        inst.parameters_changed = true;
      }
    } else {
      inst.inputs[static_cast<size_t>(v.index)] = value[k];
      Status s = inst.sim->SetInput(v.name, value[k]);
      if (!s.ok()) return inst.Error(std::string(function) + ": " + s.message());
    }
  }
  inst.values_stale = true;
  return fmi2OK;
}

fmi2Status GetStrings(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                      const char* value[]) {
  if (!CheckStringRefs(inst, function, vr, nvr, value)) return fmi2Error;
  for (size_t k = 0; k < nvr; ++k) {
    value[k] = vr[k] == inst.vars.size() ? inst.server_parameter.c_str()
                                         : inst.certificate_parameter.c_str();
  }
  return fmi2OK;
}

fmi2Status SetStrings(Instance& inst, const char* function, const unsigned vr[], size_t nvr,
                      const char* const value[]) {
  if (!CheckStringRefs(inst, function, vr, nvr, value)) return fmi2Error;
  for (size_t k = 0; k < nvr; ++k) {
    const std::string name = StringVariableName(inst, vr[k]);
    if (inst.mode != Mode::kInstantiated && inst.mode != Mode::kInitialization) {
      return inst.Error(std::string(function) + ": parameter " + name +
                        " is fixed: it can be set only before " +
                        inst.Fn("ExitInitializationMode"));
    }
    if (value[k] == nullptr) {
      return inst.Error(std::string(function) + ": " + name +
                        ": expected a string, found a null pointer");
    }
    if (vr[k] != inst.vars.size()) {
      v1::CertificateOptions options = inst.spec.certificate();
      if (!SetCertificateParameter(value[k], &options)) {
        return inst.Error(std::string(function) + ": " + name +
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
    v1::CertificateOptions* options = inst.spec.mutable_certificate();
    const std::string before = options->SerializeAsString();
    SetCertificateParameter(value[k], options);
    inst.certificate_parameter = CertificateParameter(*options);
    // The description changes: recompiled at the next use, as for a
    // parameter (ApplyParameters).
    if (options->SerializeAsString() != before) inst.parameters_changed = true;
  }
  return fmi2OK;
}

namespace {

// The state `state` points to when this instance made it and has not freed
// it (Instance::states); else null, with an fmi2Error logged naming
// `function`. Nothing is read through a pointer that is not in the set.
SavedState* OwnState(Instance& inst, const char* function, void* state) {
  auto* saved = static_cast<SavedState*>(state);
  if (inst.states.count(saved) != 0) return saved;
  inst.Error(std::string(function) + (inst.fmi_version == 3 ? ": FMUState" : ": FMUstate") +
             " is not a state of this instance (made by another instance, or "
             "already freed): a state is restored, serialized or freed by the instance whose " +
             inst.Fn("GetFMUstate") + " or " + inst.Fn("DeSerializeFMUstate") +
             " made it; to move a state to another instance, serialize it (" +
             inst.Fn("SerializeFMUstate") + ")");
  return nullptr;
}

// `*state` (null: a new state) replaced by `saved`: GetState's and
// DeserializeState's "overwrite the state passed in".
fmi2Status StoreState(Instance& inst, const char* function, SavedState saved, void** state) {
  if (*state == nullptr) {
    auto made = std::make_unique<SavedState>(std::move(saved));
    inst.states.insert(made.get());
    *state = made.release();
    return fmi2OK;
  }
  SavedState* existing = OwnState(inst, function, *state);
  if (existing == nullptr) {
    inst.Free(saved);  // its snapshot, in remote mode
    return fmi2Error;
  }
  inst.Free(*existing);  // its snapshot, in remote mode
  *existing = std::move(saved);
  return fmi2OK;
}

}  // namespace

fmi2Status GetState(Instance& inst, const char* function, void** state) {
  if (state == nullptr) return inst.Error(std::string(function) + ": FMUstate is null");
  SavedState saved;
  if (fmi2Status s = inst.Save(&saved); s != fmi2OK) return s;
  return StoreState(inst, function, std::move(saved), state);
}

fmi2Status SetState(Instance& inst, const char* function, void* state) {
  if (state == nullptr) return inst.Error(std::string(function) + ": FMUstate is null");
  SavedState* saved = OwnState(inst, function, state);
  if (saved == nullptr) return fmi2Error;
  return inst.Restore(*saved);
}

fmi2Status FreeState(Instance& inst, const char* function, void** state) {
  if (state == nullptr || *state == nullptr) return fmi2OK;
  SavedState* saved = OwnState(inst, function, *state);
  if (saved == nullptr) return fmi2Error;
  inst.Free(*saved);
  inst.states.erase(saved);
  delete saved;
  *state = nullptr;
  return fmi2OK;
}

fmi2Status SerializedStateSize(Instance& inst, const char* function, void* state, size_t* size) {
  if (state == nullptr || size == nullptr)
    return inst.Error(std::string(function) + ": null argument");
  SavedState* saved = OwnState(inst, function, state);
  if (saved == nullptr) return fmi2Error;
  const std::string* bytes = nullptr;
  fmi2Status s = inst.Serialize(*saved, function, &bytes);
  if (s != fmi2OK) return s;
  *size = bytes->size();
  return fmi2OK;
}

fmi2Status SerializeState(Instance& inst, const char* function, void* state, void* out,
                          size_t size) {
  if (state == nullptr || out == nullptr)
    return inst.Error(std::string(function) + ": null argument");
  SavedState* saved = OwnState(inst, function, state);
  if (saved == nullptr) return fmi2Error;
  const std::string* serialized = nullptr;
  fmi2Status s = inst.Serialize(*saved, function, &serialized);
  if (s != fmi2OK) return s;
  const std::string& bytes = *serialized;
  if (size != bytes.size()) {
    return inst.Error(std::string(function) + ": size " + std::to_string(size) +
                      " is not the serialized size " + std::to_string(bytes.size()) + " (" +
                      inst.Fn("SerializedFMUstateSize") + ")");
  }
  std::memcpy(out, bytes.data(), bytes.size());
  return fmi2OK;
}

fmi2Status DeserializeState(Instance& inst, const char* function, const void* bytes, size_t size,
                            void** state) {
  if (state == nullptr || (bytes == nullptr && size > 0))
    return inst.Error(std::string(function) + ": null argument");
  SavedState saved;
  fmi2Status s = inst.Deserialize(std::string_view(static_cast<const char*>(bytes), size), &saved);
  if (s != fmi2OK) return s;
  return StoreState(inst, function, std::move(saved), state);
}

}  // namespace tether::fmu
