// Fuzz target: portable session bytes (engine/session_export.h):
// DecodeSessionExport on the raw input, and ImportSimulation on the input
// read as a SessionExport payload in a valid envelope (the checksum would
// otherwise stop every mutation at the door).
//
// Damaged bytes are refused with INVALID_ARGUMENT naming a field under
// "data" (or the compile's RESOURCE_EXHAUSTED), never a crash. What imports
// saves back the state it restored (SaveState round-trips through the
// bytes) and runs a few steps or fails with ABORTED.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <google/protobuf/repeated_ptr_field.h>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "fuzz_check.h"
#include "tether/v1/simulation.pb.h"

namespace {

// As compile_evaluate_fuzz: larger systems are valid but slow to step
// under the sanitizers.
constexpr int kMaxFuzzCoordinates = 16;

void CheckRefusal(const tether::Status& s) {
  TETHER_FUZZ_CHECK(!s.ok(), "an Ok refusal");
  TETHER_FUZZ_CHECK(!s.message().empty(), "a refusal without a message");
  if (s.code() == tether::StatusCode::kInvalidArgument) {
    TETHER_FUZZ_CHECK(!s.violations().empty(), "INVALID_ARGUMENT without a field: %s",
                      s.message().c_str());
    TETHER_FUZZ_CHECK(s.violations()[0].field.rfind("data", 0) == 0, "a field outside data: %s",
                      s.violations()[0].field.c_str());
  } else {
    TETHER_FUZZ_CHECK(s.code() == tether::StatusCode::kResourceExhausted, "unexpected refusal: %s",
                      s.ToString().c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kFuzzMaxInputBytes) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  tether::v1::SessionExport decoded;
  const tether::Status raw = tether::DecodeSessionExport(bytes, &decoded);
  if (!raw.ok()) CheckRefusal(raw);

  tether::v1::SessionExport payload;
  if (!payload.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (payload.spec().system().coordinates_size() > kMaxFuzzCoordinates) return 0;
  const std::string envelope = tether::EncodeSessionExport(payload);
  auto imported = tether::ImportSimulation(envelope);
  if (!imported.ok()) {
    CheckRefusal(imported.status());
    return 0;
  }
  tether::Simulation& sim = **imported;
  // The restored state is the one sent (v may be empty: at rest).
  tether::v1::SimulationState saved;
  sim.SaveState(&saved);
  TETHER_FUZZ_CHECK(saved.step() == payload.state().step(), "the step counter changed");
  TETHER_FUZZ_CHECK(saved.state().q_size() == payload.state().state().q_size(), "q's length");
  // Exported again, it imports to the same state.
  auto again = tether::ImportSimulation(tether::ExportSimulation(sim));
  TETHER_FUZZ_CHECK(again.ok(), "a re-export does not import: %s",
                    again.status().ToString().c_str());
  tether::v1::SimulationState saved_again;
  (*again)->SaveState(&saved_again);
  TETHER_FUZZ_CHECK(saved_again.SerializeAsString() == saved.SerializeAsString(),
                    "the state does not round-trip");
  tether::RunOptions options;
  options.steps = 3;
  tether::Status s = sim.BeginRun(options);
  google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
  while (s.ok() && sim.run_active()) s = sim.Advance(1, &frames);
  TETHER_FUZZ_CHECK(s.ok() || s.code() == tether::StatusCode::kAborted ||
                        s.code() == tether::StatusCode::kInvalidArgument,
                    "a run ended with %s", s.ToString().c_str());
  return 0;
}
