#include "engine/spec_json.h"

#include <fstream>
#include <sstream>

#include <google/protobuf/util/json_util.h>

namespace tether {

namespace {
constexpr size_t kMaxSpecBytes = 64u << 20;  // 64 MiB
}

Status ParseSpecJson(std::string_view json, v1::SimulationSpec* spec, std::string_view source) {
  if (json.size() > kMaxSpecBytes) {
    return InvalidArgument(std::string(source) + ": description is " + std::to_string(json.size()) +
                           " bytes; at most " + std::to_string(kMaxSpecBytes) + " are accepted");
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  options.case_insensitive_enum_parsing = false;
  spec->Clear();
  auto status = google::protobuf::util::JsonStringToMessage(json, spec, options);
  if (!status.ok()) {
    std::string message(status.message());
    return InvalidArgument(std::string(source) + ": not a valid SimulationSpec in protobuf JSON: " +
                               message,
                           {{std::string(source), message}});
  }
  return Status::Ok();
}

Status LoadSpecFile(const std::string& path, v1::SimulationSpec* spec) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, path + ": cannot open the description file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kNotFound, path + ": read error");
  return ParseSpecJson(buffer.str(), spec, path);
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = false;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace tether
