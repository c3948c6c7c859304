// An FMU instance's states (FMI 2.0 section 2.1.8): what fmi2GetFMUstate
// saves and fmi2SetFMUstate restores (Instance::Save, Restore), and their
// serialized form (Instance::Serialize, Deserialize; fmu_state.cc).
//
// In process an FMU state is the engine's saved state
// (Simulation::SaveState) plus the two running certificate maxima; in
// remote mode (step_backend.h) it is a server-side snapshot plus the
// maxima and the instance's inputs. Serialized, either is the session
// export envelope (engine/session_export.h) of the description and the
// engine's state, the maxima as hexadecimal floating point (exact) in
// display_name after kStateTag: a remote state's bytes are its snapshot's
// export re-tagged, so they are those of the same state in process, and a
// state serialized in one mode is restored in the other.
// fmi2DeSerializeFMUstate checks the bytes in full (envelope, description,
// figures, and the state restored into a scratch simulation) so that
// fmi2SetFMUstate cannot fail on them later.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fmu/remote_session.h"
#include "tether/v1/simulation.pb.h"

namespace tether::fmu {

// The serialized state's display_name: the FMU's running certificate
// figures, as hexadecimal floating point (exact), after this tag.
inline constexpr std::string_view kStateTag = "tether-fmu-state 1";

// What an FMU state (fmi2GetFMUstate) holds.
struct SavedState {
  // The description the state belongs to (with the parameters it ran with).
  std::shared_ptr<const v1::SimulationSpec> spec;
  std::string spec_sha256;
  // In process, and a deserialized state: the engine's state.
  v1::SimulationState state;
  double max_position_residual = 0;
  double position_bound = 0;
  // Remote mode: the server-side snapshot (snapshot_id 0: none; a
  // deserialized state never has one: its engine state is restored into
  // the instance's session, CoSimulateRequest.restore_state) and the
  // instance's inputs when saved (the snapshot holds the last step's).
  RemoteMark mark;
  std::vector<double> inputs;
  // The serialized bytes, once made (a state never changes).
  std::string serialized;
  bool remote() const { return mark.snapshot_id != 0; }
};

// The serialized bytes of a state that is not a snapshot (in process, and
// a deserialized state): its description and engine state, tagged.
std::string EncodeState(const SavedState& saved);

}  // namespace tether::fmu
