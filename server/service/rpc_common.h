// Small pieces every Simulator handler and reactor uses: the statuses they
// share, the one log line per failed call, and applying a request's inputs.
#pragma once

#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/map.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "engine/simulation.h"
#include "service/tenant.h"

namespace tether::service {

// One log line per failed RPC (UNAUTHENTICATED ones at most 10 a second,
// the next admitted line saying "suppressed=K" for those dropped), naming the caller's tenant ("-"
// before the caller is known, e.g. a failed authentication; never a token) and the session ("-" for
// an empty id); nothing for OK.
void LogIfFailed(const char* rpc, const Tenant* tenant, const std::string& session_id,
                 const grpc::Status& status);

// UNAVAILABLE "the server is shutting down".
grpc::Status Unavailable();
// NOT_FOUND "no session 'ID'" (the id through QuoteForMessage).
grpc::Status SessionNotFound(const std::string& id);
// CANCELLED "session 'ID' was deleted".
grpc::Status SessionDeleted(const std::string& id);
// INVALID_ARGUMENT naming `field` when the session id `id` is empty.
grpc::Status CheckSessionId(const std::string& id, const char* field = "session_id");

// The request of a raw method (its bytes) parsed into `message`; bytes that
// are no such message are INVALID_ARGUMENT "the request is not a valid
// TYPE message (...)". Every method is raw for this reason: a typed method
// answers undecodable bytes with a bare UNIMPLEMENTED (unary) or ends its
// stream OK (a bidi read just fails), which tells the client nothing.
// Before parsing, the bytes' objects are counted (WalkWire): more than
// kMaxMessageObjects is RESOURCE_EXHAUSTED, with nothing parsed.
grpc::Status UndecodableRequest(const std::string& type, const grpc::Status& parsed);
// RESOURCE_EXHAUSTED when `bytes` would make more than kMaxMessageObjects
// objects as a `type` (engine/wire_walk.h: a 4 MiB request of empty
// repeated messages made 2.1 million, 328 MiB while it was parsed; OK for
// bytes that do not parse: the parse says so).
grpc::Status CheckRequestObjects(const grpc::ByteBuffer& bytes,
                                 const google::protobuf::Descriptor* type);
template <typename Message>
grpc::Status ParseRequest(const grpc::ByteBuffer& bytes, Message* message) {
  if (grpc::Status fits = CheckRequestObjects(bytes, Message::descriptor()); !fits.ok()) {
    return fits;
  }
  grpc::ByteBuffer copy(bytes);  // Deserialize consumes its buffer
  grpc::Status parsed = grpc::SerializationTraits<Message>::Deserialize(&copy, message);
  if (parsed.ok()) return parsed;
  return UndecodableRequest(Message::descriptor()->full_name(), parsed);
}

// Applies the inputs of a request (sorted by name so that errors and the
// order of SetInput never depend on map iteration order). Every name and
// value is checked before any is set; a bad one is INVALID_ARGUMENT naming
// the field "inputs[NAME]". Only for the holder of `sim` (a fresh simulation
// or the session's lease).
grpc::Status ApplyInputs(Simulation* sim, const google::protobuf::Map<std::string, double>& inputs);

}  // namespace tether::service
