#include "service/rpc_common.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "service/status_mapping.h"
#include "tether/status_code_name.h"

namespace tether::service {

void LogIfFailed(const char* rpc, const std::string& session_id, const grpc::Status& status) {
  if (status.ok()) return;
  spdlog::warn("rpc {} failed: session={} code={} message=\"{}\"", rpc,
               session_id.empty() ? "-" : session_id, GrpcStatusCodeName(status.error_code()),
               status.error_message());
}

grpc::Status Unavailable() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
}

grpc::Status SessionNotFound(const std::string& id) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND, "no session " + id);
}

grpc::Status SessionDeleted(const std::string& id) {
  return grpc::Status(grpc::StatusCode::CANCELLED, "session " + id + " was deleted");
}

grpc::Status CheckSessionId(const std::string& id, const char* field) {
  if (id.empty()) return InvalidField(field, "required");
  return grpc::Status::OK;
}

grpc::Status ApplyInputs(Simulation* sim,
                         const google::protobuf::Map<std::string, double>& inputs) {
  std::vector<std::pair<std::string, double>> sorted(inputs.begin(), inputs.end());
  std::sort(sorted.begin(), sorted.end());
  const auto& names = sim->input_names();
  for (const auto& [name, value] : sorted) {
    bool known = std::find(names.begin(), names.end(), name) != names.end();
    if (!known || !std::isfinite(value)) {
      // The engine's message names the input and lists the valid ones.
      Status s = sim->SetInput(name, value);
      std::string description = s.ok() ? "invalid input" : s.message();
      return GrpcError(grpc::StatusCode::INVALID_ARGUMENT, description,
                       {FieldViolation{"inputs[" + name + "]", description}});
    }
  }
  for (const auto& [name, value] : sorted) {
    Status s = sim->SetInput(name, value);
    if (!s.ok()) {
      return GrpcError(ToGrpcCode(s.code()), s.message(),
                       {FieldViolation{"inputs[" + name + "]", s.message()}});
    }
  }
  return grpc::Status::OK;
}

}  // namespace tether::service
