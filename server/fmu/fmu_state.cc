#include "fmu/fmu_state.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "engine/status.h"
#include "fmu/instance.h"
#include "fmu/step_backend.h"

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
  saved->spec = sim_spec;
  saved->spec_sha256 = spec_sha256;
  saved->max_position_residual = max_position_residual;
  saved->position_bound = position_bound;
  return backend->Save(saved);
}

void Instance::Free(const SavedState& saved) { backend->Free(saved); }

fmi2Status Instance::Restore(SavedState& saved) {
  if (saved.spec_sha256 != spec_sha256) {
    return Error(Fn("SetFMUstate") +
                 ": the state belongs to another description (or other "
                 "parameter values) than this instance's");
  }
  if (fmi2Status s = backend->Restore(saved); s != fmi2OK) return s;
  max_position_residual = saved.max_position_residual;
  position_bound = saved.position_bound;
  last_successful_time = sim->time();
  mode = Mode::kStepComplete;
  discards_in_a_row = 0;
  terminate_requested = false;
  std::fill(input_rates.begin(), input_rates.end(), 0.0);  // no part of a state
  values_stale = true;
  return fmi2OK;
}

// Any state: a remote one is its snapshot's export (from the server, once)
// with the inputs the instance had when it was saved, so the bytes are
// those of the same state in process.
fmi2Status Instance::Serialize(SavedState& saved, const char* function, const std::string** bytes) {
  if (saved.serialized.empty()) {
    if (!saved.remote()) {
      saved.serialized = EncodeState(saved);
    } else {
      v1::SessionExport payload;
      if (fmi2Status s = backend->Export(saved, function, &payload); s != fmi2OK) return s;
      payload.mutable_state()->mutable_inputs()->Assign(saved.inputs.begin(), saved.inputs.end());
      saved.serialized = Tagged(std::move(payload), saved);
    }
  }
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
    std::string m = Fn("DeSerializeFMUstate") + ": not a valid serialized state: " + s.message();
    return Error(m);
  }
  if (payload.spec_sha256() != spec_sha256) {
    return Error(Fn("DeSerializeFMUstate") +
                 ": the state belongs to another description (or "
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
    return Error(Fn("DeSerializeFMUstate") +
                 ": the bytes are a Tether session export but not an "
                 "FMU state (no '" +
                 std::string(kStateTag) + "' figures)");
  }
  auto scratch = Simulation::FromModel(*sim_spec, sim->shared_model());
  if (Status r = scratch->RestoreState(payload.state(), "serializedState.state"); !r.ok())
    return Error(Fn("DeSerializeFMUstate") + ": " + r.message());
  saved->spec = sim_spec;
  saved->spec_sha256 = payload.spec_sha256();
  saved->state = payload.state();
  saved->max_position_residual = m;
  saved->position_bound = p;
  return fmi2OK;
}

}  // namespace tether::fmu
