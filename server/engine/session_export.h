// Portable session bytes: a description and a SimulationState in a
// versioned, checksummed envelope. ExportSession / ImportSession carry them
// between servers, --state-dir keeps one file of them per session, and the
// FMU's serialized states are the same bytes.
//
// The envelope (all integers little-endian):
//
//   offset  size  field
//        0     8  magic "TETHERSX"
//        8     2  major version (kExportMajor): an importer refuses another
//       10     2  minor version (kExportMinor): additions an older importer
//                 of the same major may ignore (protobuf's unknown fields)
//       12     4  payload length P
//       16     P  payload: v1::SessionExport, deterministic serialization
//   16 + P    32  SHA-256 of bytes [0, 16 + P)
//
// The SHA-256 catches any corruption or truncation; the payload's
// spec_sha256 (the SHA-256 of the spec's deterministic serialization) makes
// an import refuse a spec that is not the one the state belongs to.
//
// Threading: plain functions of their arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/simulation.h"
#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether {

inline constexpr uint16_t kExportMajor = 1;
inline constexpr uint16_t kExportMinor = 0;
// Largest payload Decode accepts (the description's own limits are far
// below it; this bounds the allocation a hostile length could ask for).
inline constexpr uint32_t kMaxExportPayload = 256u << 20;

// SHA-256 (32 raw bytes) of the spec's deterministic serialization.
std::string SpecSha256(const v1::SimulationSpec& spec);

// The envelope around `payload` (whose spec_sha256 is filled in here).
std::string EncodeSessionExport(v1::SessionExport payload);

// The bytes of a simulation: its spec, its SaveState and `display_name`.
std::string ExportSimulation(const Simulation& simulation, std::string_view display_name = {});

// Checks and unwraps an envelope. INVALID_ARGUMENT with one violation on
// `field` saying what is wrong (too short, not an export, another major
// version, a length that disagrees with the size, a checksum mismatch, an
// undecodable payload, a spec that does not match its hash); `out` is then
// unspecified.
Status DecodeSessionExport(std::string_view bytes, v1::SessionExport* out,
                           std::string_view field = "data");

// Decodes, compiles the spec within `options` and restores the state: a
// simulation that continues bit for bit as the exported one would.
// Decode's errors, the spec's compile errors (field paths under
// "<field>.spec") and the state's (under "<field>.state").
StatusOr<std::unique_ptr<Simulation>> ImportSimulation(std::string_view bytes,
                                                       const CompileOptions& options = {},
                                                       std::string* display_name = nullptr,
                                                       std::string_view field = "data");

}  // namespace tether
