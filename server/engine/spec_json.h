// Reading descriptions from the protobuf JSON mapping, and printing
// messages as JSON with every field (defaults included).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether {

// The largest description ParseSpecJson takes (64 MiB).
inline constexpr std::size_t kMaxSpecJsonBytes = std::size_t{64} << 20;

// Parses a SimulationSpec from JSON. Unknown fields, malformed JSON and
// wrong types are INVALID_ARGUMENT naming the place; more than
// kMaxSpecJsonBytes is INVALID_ARGUMENT too. `source` names the input in
// messages (e.g. the file name).
Status ParseSpecJson(std::string_view json, v1::SimulationSpec* spec,
                     std::string_view source = "spec");

// Reads the file at `path` into *out, never more than `max_bytes` of it:
// NOT_FOUND naming the path when it is a directory or cannot be opened or
// read ("PATH: is a directory; expected WHAT", WHAT e.g. "a description
// file"), INVALID_ARGUMENT when it holds more than `max_bytes`, found
// without reading further (a pipe, /dev/stdin or /dev/zero ends there
// too, in bounded time and memory).
Status ReadFileBounded(const std::string& path, std::size_t max_bytes, std::string_view what,
                       std::string* out);

// Reads a file (ReadFileBounded, at most kMaxSpecJsonBytes) and parses it
// as above (NOT_FOUND when it cannot be read).
Status LoadSpecFile(const std::string& path, v1::SimulationSpec* spec);

// One-line JSON with every field printed (defaults included), field names in
// lowerCamelCase as the protobuf JSON mapping prescribes.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace tether
