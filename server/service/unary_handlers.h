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
#define TETHER_UNARY_RPCS(X)                                 \
  X(Validate, ValidateRequest, ValidateResponse)             \
  X(Evaluate, EvaluateRequest, EvaluateResponse)             \
  X(CreateSession, CreateSessionRequest, Session)            \
  X(GetSession, GetSessionRequest, Session)                  \
  X(ListSessions, ListSessionsRequest, ListSessionsResponse) \
  X(DeleteSession, DeleteSessionRequest, DeleteSessionResponse)

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

// Finishes a unary call `rpc` at once with `status` (a failed
// authentication), logging it.
grpc::ServerUnaryReactor* RefuseUnary(grpc::CallbackServerContext* context, const char* rpc,
                                      const grpc::Status& status);

}  // namespace tether::service
