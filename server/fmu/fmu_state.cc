#include "fmu/fmu_state.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "engine/status.h"
#include "fmu/instance.h"

namespace tether::fmu {
namespace {

std::string Hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

// The export envelope (engine/session_export.h) of a saved state: the
// description, the engine's state and the figures in display_name.
std::string Tagged(v1::SessionExport payload, const SavedState& saved) {
  payload.set_display_name(std::string(kStateTag) + " " + Hex(saved.max_position_residual) + " " +
                           Hex(saved.position_bound));
  return EncodeSessionExport(std::move(payload));
}

}  // namespace

std::string EncodeState(const SavedState& saved) {
  v1::SessionExport payload;
  *payload.mutable_spec() = *saved.spec;
  *payload.mutable_state() = saved.state;
  return Tagged(std::move(payload), saved);
}

fmi2Status Instance::Save(SavedState* saved) {
  if (RemoteClosed("fmi2GetFMUstate")) return fmi2Error;
  saved->spec = sim_spec;
  saved->spec_sha256 = spec_sha256;
  saved->max_position_residual = max_position_residual;
  saved->position_bound = position_bound;
  if (remote) {
    saved->inputs = inputs;
    if (Status s = remote->Save(&saved->mark); !s.ok())
      return Error("fmi2GetFMUstate: " + s.message());
    return fmi2OK;
  }
  sim->SaveState(&saved->state);
  return fmi2OK;
}

// Deletes a state's snapshot on the server (remote mode).
void Instance::Free(const SavedState& saved) {
  if (!remote || !saved.remote()) return;
  if (Status s = remote->Free(saved.mark); !s.ok())
    Log(fmi2Warning, "logStatusError", "fmi2FreeFMUstate: " + s.message());
}

fmi2Status Instance::Restore(SavedState& saved) {
  if (saved.spec_sha256 != spec_sha256) {
    return Error(
        "fmi2SetFMUstate: the state belongs to another description (or other "
        "parameter values) than this instance's");
  }
  if (RemoteClosed("fmi2SetFMUstate")) return fmi2Error;
  if (remote) return RestoreRemote(saved);
  if (saved.remote()) {
    return Error(
        "fmi2SetFMUstate: the state is a snapshot on a tether-server and this instance "
        "runs in process (serialize it to move it between modes)");
  }
  if (Status s = sim->RestoreState(saved.state); !s.ok())
    return Error("fmi2SetFMUstate: " + s.message());
  inputs.assign(saved.state.inputs().begin(), saved.state.inputs().end());
  max_position_residual = saved.max_position_residual;
  position_bound = saved.position_bound;
  last_successful_time = sim->time();
  mode = Mode::kStepComplete;
  values_stale = true;
  return fmi2OK;
}

fmi2Status Instance::RestoreRemote(SavedState& saved) {
  if (!saved.remote()) {
    // A deserialized state (or one taken in process): a session of its
    // own on the server, made once.
    const std::string bytes = EncodeState(saved);
    if (Status s = remote->Import(bytes, name, &saved.mark); !s.ok())
      return Error("fmi2SetFMUstate: " + s.message());
    saved.inputs.assign(saved.state.inputs().begin(), saved.state.inputs().end());
  }
  v1::State state;
  if (Status s = remote->Restore(saved.mark, &state); !s.ok()) {
    std::string m = "fmi2SetFMUstate: " + s.message();
    if (s.code() == StatusCode::kNotFound) {
      m += " (the snapshot was dropped, as the server keeps at most --max-snapshots "
           "per session, 64 by default, and drops the oldest; or its session was deleted "
           "by fmi2Reset: this FMU state is gone; the instance is still at t = " +
           FormatNumber(sim->time()) + ")";
      return Error(m);
    }
    mode = Mode::kError;
    return Error(m);
  }
  if (Status s = sim->SetState(state, "frame"); !s.ok()) {
    mode = Mode::kError;
    return Error("fmi2SetFMUstate: the state " + server + " returned: " + s.message());
  }
  inputs = saved.inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (Status s = sim->SetInput(sim->input_names()[i], inputs[i]); !s.ok())
      return Error("fmi2SetFMUstate: " + s.message());
  }
  max_position_residual = saved.max_position_residual;
  position_bound = saved.position_bound;
  last_successful_time = sim->time();
  mode = Mode::kStepComplete;
  values_stale = true;
  return fmi2OK;
}

// Any state: a remote one is its snapshot's export (from the server, once)
// with the inputs the instance had when it was saved, so the bytes are
// those of the same state in process.
fmi2Status Instance::Serialize(SavedState& saved, const char* function, const std::string** bytes) {
  if (!saved.serialized.empty()) {
    *bytes = &saved.serialized;
    return fmi2OK;
  }
  if (!saved.remote()) {
    saved.serialized = EncodeState(saved);
    *bytes = &saved.serialized;
    return fmi2OK;
  }
  if (RemoteClosed(function)) return fmi2Error;
  if (!remote) {
    return Error(std::string(function) + ": the state is a snapshot on " + saved.mark.session_id +
                 "'s server and this instance is not connected to it");
  }
  std::string exported;
  if (Status s = remote->Export(saved.mark, &exported); !s.ok())
    return Error(std::string(function) + ": " + s.message());
  v1::SessionExport payload;
  if (Status s = DecodeSessionExport(exported, &payload, "ExportSessionResponse.data"); !s.ok())
    return Error(std::string(function) + ": the server's export: " + s.message());
  payload.mutable_state()->mutable_inputs()->Assign(saved.inputs.begin(), saved.inputs.end());
  saved.serialized = Tagged(std::move(payload), saved);
  *bytes = &saved.serialized;
  return fmi2OK;
}

// A serialized state of this instance's description, checked in full
// (envelope, description, figures, and the state restored into a scratch
// simulation) so that fmi2SetFMUstate cannot fail on it later.
fmi2Status Instance::Deserialize(std::string_view bytes, SavedState* saved) {
  // Parameters set in initialization mode: compare with the description
  // they make.
  if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
  v1::SessionExport payload;
  Status s = DecodeSessionExport(bytes, &payload, "serializedState");
  if (!s.ok()) {
    std::string m = "fmi2DeSerializeFMUstate: not a valid serialized state: " + s.message();
    return Error(m);
  }
  if (payload.spec_sha256() != spec_sha256) {
    return Error(
        "fmi2DeSerializeFMUstate: the state belongs to another description (or "
        "other parameter values) than this instance's");
  }
  std::istringstream tag(payload.display_name());
  std::string w1, w2, a, b;
  tag >> w1 >> w2 >> a >> b;
  char* end1 = nullptr;
  char* end2 = nullptr;
  const double m = std::strtod(a.c_str(), &end1);
  const double p = std::strtod(b.c_str(), &end2);
  if (w1 + " " + w2 != kStateTag || a.empty() || b.empty() || *end1 != '\0' || *end2 != '\0') {
    return Error(
        "fmi2DeSerializeFMUstate: the bytes are a Tether session export but not an "
        "FMU state (no '" +
        std::string(kStateTag) + "' figures)");
  }
  auto scratch = Simulation::FromModel(*sim_spec, sim->shared_model());
  if (Status r = scratch->RestoreState(payload.state(), "serializedState.state"); !r.ok())
    return Error("fmi2DeSerializeFMUstate: " + r.message());
  saved->spec = sim_spec;
  saved->spec_sha256 = payload.spec_sha256();
  saved->state = payload.state();
  saved->max_position_residual = m;
  saved->position_bound = p;
  return fmi2OK;
}

}  // namespace tether::fmu
