// Reading descriptions from the protobuf JSON mapping, and printing
// messages as JSON with every field (defaults included).
#pragma once

#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether {

// Parses a SimulationSpec from JSON. Unknown fields, malformed JSON and
// wrong types are INVALID_ARGUMENT naming the place. `source` names the
// input in messages (e.g. the file name).
Status ParseSpecJson(std::string_view json, v1::SimulationSpec* spec,
                     std::string_view source = "spec");

// Reads a file and parses it as above (NOT_FOUND when it cannot be read).
Status LoadSpecFile(const std::string& path, v1::SimulationSpec* spec);

// One-line JSON with every field printed (defaults included), field names in
// lowerCamelCase as the protobuf JSON mapping prescribes.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace tether
