// The unary methods of tether.v1.Simulator. Each converts the request,
// calls the engine or the session store, maps the status and finishes the
// call: inline on the gRPC thread when it only looks things up
// (Get/List/DeleteSession), on the worker pool when it compiles a spec
// (Validate, Evaluate, CreateSession). Every failed call logs one line.
// `tenant` is the authenticated caller (SimulatorService checks the token
// first): the session methods see and touch only its sessions.
//
// `request` and `response` belong to the call (RawUnaryReactor, raw_unary.h)
// and stay valid until the handler replies through its UnaryCall.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include "service/service_core.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// CreateSessionRequest.display_name, at most.
inline constexpr std::size_t kMaxDisplayNameBytes = 256;

// The unary methods, as X(Method, Request, Response) with the message
// types in tether::v1. SimulatorService overrides each Method by forwarding
// to its Handle##Method below, defined in unary_handlers.cc; so a new unary
// RPC is one line here plus its handler.
// The session-state methods (snapshots, export/import, updates) are in
// session_state_handlers.cc.
#define TETHER_UNARY_RPCS(X)                                       \
  X(Validate, ValidateRequest, ValidateResponse)                   \
  X(Evaluate, EvaluateRequest, EvaluateResponse)                   \
  X(CreateSession, CreateSessionRequest, Session)                  \
  X(GetSession, GetSessionRequest, Session)                        \
  X(ListSessions, ListSessionsRequest, ListSessionsResponse)       \
  X(DeleteSession, DeleteSessionRequest, DeleteSessionResponse)    \
  X(CreateSnapshot, CreateSnapshotRequest, Snapshot)               \
  X(ListSnapshots, ListSnapshotsRequest, ListSnapshotsResponse)    \
  X(RestoreSnapshot, RestoreSnapshotRequest, Session)              \
  X(DeleteSnapshot, DeleteSnapshotRequest, DeleteSnapshotResponse) \
  X(ExportSession, ExportSessionRequest, ExportSessionResponse)    \
  X(ImportSession, ImportSessionRequest, Session)                  \
  X(UpdateSession, UpdateSessionRequest, Session)

// How a handler ends its call: Reply exactly once, from any thread (gRPC
// thread or worker). With an OK status the response goes out; after Reply
// the call, its request and its response may be gone.
class UnaryCall {
 public:
  virtual void Reply(grpc::Status status) = 0;

 protected:
  ~UnaryCall() = default;
};

// void HandleValidate(ServiceCore* core, Tenant* tenant,
//     grpc::CallbackServerContext* context, const v1::ValidateRequest* request,
//     v1::ValidateResponse* response, UnaryCall* call);  and so on.
#define TETHER_DECLARE_UNARY_HANDLER(Method, Request, Response)                                \
  void Handle##Method(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context, \
                      const v1::Request* request, v1::Response* response, UnaryCall* call);
TETHER_UNARY_RPCS(TETHER_DECLARE_UNARY_HANDLER)
#undef TETHER_DECLARE_UNARY_HANDLER

// Shared by the handlers (unary_handlers.cc).
//
// Runs `work` (a compile) on the compile lane and replies with its status;
// `work(&session_id)` may name the session for the log line. When the lane
// refuses it (shutting down, --max-queued-compiles), `refused` runs before
// the reply (to give back what the caller holds).
// `request` (parsed, read by `work`) is charged to the memory budget while
// it waits and is compiled; RESOURCE_EXHAUSTED when it does not fit.
void OnCompileLane(ServiceCore* core, const Tenant* tenant, UnaryCall* call, const char* rpc,
                   const google::protobuf::Message& request,
                   std::function<grpc::Status(std::string*)> work,
                   std::function<void()> refused = {});
// The RESOURCE_EXHAUSTED of a compile the lane refused
// (ServiceCore::SubmitCompileIfRoom), naming the flag whose bound it hit.
grpc::Status CompileLaneRefusal(const ServiceOptions& options, WorkerPool::Admission admission);
// How a call's compilation runs: within the server's compile limits, and
// stopped when the client cancels, its deadline passes or the server shuts
// down.
CompileOptions CallCompileOptions(ServiceCore* core, grpc::CallbackServerContext* context);
// The status of a compilation that failed: the engine's (field paths under
// `prefix`), except that a cancel is reported as what caused it.
grpc::Status CompileFailed(ServiceCore* core, grpc::CallbackServerContext* context,
                           const Status& stopped, std::string_view prefix = "spec.");
// Replies inline (cheap lookups only), logging a failure.
void ReplyInline(UnaryCall* call, const Tenant* tenant, const char* rpc,
                 const std::string& session_id, grpc::Status status);

// Finishes a unary call `rpc` at once with `status` (a failed
// authentication), logging it.
grpc::ServerUnaryReactor* RefuseUnary(grpc::CallbackServerContext* context, const char* rpc,
                                      const grpc::Status& status);

}  // namespace tether::service
