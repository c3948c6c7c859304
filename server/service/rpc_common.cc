#include "service/rpc_common.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/wire_walk.h"
#include "service/logging.h"
#include "service/session_store.h"
#include "service/status_mapping.h"
#include "tether/status_code_name.h"

namespace tether::service {
namespace {

// A logged status message is cut after this many bytes.
constexpr std::size_t kMaxLoggedMessageBytes = 4096;

// Refusals a client can cause at will are logged at most this many lines a
// second: refused authentications (before the client is known) and quota
// refusals (RESOURCE_EXHAUSTED: a full compile queue, a memory budget), per
// tenant, so one tenant's flood neither fills the disk nor hides another's.
constexpr uint64_t kRefusedLinesPerSecond = 10;

}  // namespace

void LogIfFailed(const char* rpc, const Tenant* tenant, const std::string& session_id,
                 const grpc::Status& status) {
  if (status.ok()) return;
  std::string suppressed_note;
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
      status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    // Kinds: the code, and the tenant for quota refusals (tenants are a
    // fixed set, from the tokens file).
    static LogThrottle refused(kRefusedLinesPerSecond);
    std::string kind = GrpcStatusCodeName(status.error_code());
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && tenant) {
      kind += "/" + tenant->name();
    }
    uint64_t suppressed = 0;
    if (!refused.Admit(kind, &suppressed)) return;
    if (suppressed > 0) suppressed_note = " suppressed=" + std::to_string(suppressed);
  }
  // The id is the client's, and the message may echo client text: both
  // escaped, so that one failure stays one log line.
  spdlog::warn("rpc {} failed: tenant={} session={} code={} message=\"{}\"{}", rpc,
               tenant ? tenant->name() : std::string("-"),
               session_id.empty() ? "-" : EscapeForMessage(session_id),
               GrpcStatusCodeName(status.error_code()),
               EscapeForMessage(status.error_message(), kMaxLoggedMessageBytes), suppressed_note);
}

grpc::Status Unavailable() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
}

grpc::Status CheckRequestObjects(const grpc::ByteBuffer& bytes,
                                 const google::protobuf::Descriptor* type) {
  // One slice as it is (the usual small message), else joined into one.
  grpc::Slice slice;
  if (!bytes.TrySingleSlice(&slice).ok() && !bytes.DumpToSingleSlice(&slice).ok()) {
    return grpc::Status::OK;  // the parse reports it
  }
  const std::string_view wire(reinterpret_cast<const char*>(slice.begin()), slice.size());
  int64_t budget = kMaxMessageObjects;
  if (WalkWire(type, wire, &budget) != WireFit::kOverBudget) return grpc::Status::OK;
  // RunEnsemble's explicit instances are where a valid request meets it:
  // each takes one object and one per value (docs/ENSEMBLES.md, "Limits").
  const std::string ensemble =
      type->name() == "RunEnsembleRequest"
          ? "; an ensemble's explicit instances of k values take k + 1 each (at most " +
                std::to_string(kMaxMessageObjects / 3) +
                " of two values a request): send several requests, or use sweeps and draws"
          : "";
  return GrpcError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                   "the request holds more than " + std::to_string(kMaxMessageObjects) +
                       " messages, list elements and unknown fields (a " + type->full_name() +
                       " of " + std::to_string(bytes.Length()) +
                       " bytes); nothing of it was parsed" + ensemble,
                   {},
                   ErrorSubject{"", "request objects",
                                "at most " + std::to_string(kMaxMessageObjects) +
                                    " messages, list elements and unknown fields a request"});
}

grpc::Status UndecodableRequest(const std::string& type, const grpc::Status& parsed) {
  return GrpcError(
      grpc::StatusCode::INVALID_ARGUMENT,
      "the request is not a valid " + type + " message (" + parsed.error_message() + ")");
}

grpc::Status SessionNotFound(const std::string& id) {
  return GrpcError(grpc::StatusCode::NOT_FOUND, "no session " + QuoteForMessage(id), {},
                   SessionSubject(id, "no such session"));
}

grpc::Status SessionDeleted(const std::string& id) {
  return grpc::Status(grpc::StatusCode::CANCELLED,
                      "session " + QuoteForMessage(id) + " was deleted");
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
                       {FieldViolation{"inputs[" + EscapeForMessage(name) + "]", description}});
    }
  }
  for (const auto& [name, value] : sorted) {
    Status s = sim->SetInput(name, value);
    if (!s.ok()) {
      return GrpcError(ToGrpcCode(s.code()), s.message(),
                       {FieldViolation{"inputs[" + EscapeForMessage(name) + "]", s.message()}});
    }
  }
  return grpc::Status::OK;
}

}  // namespace tether::service
