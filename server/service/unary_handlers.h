// The unary methods of tether.v1.Simulator. Each converts the request,
// calls the engine or the session store, maps the status and finishes the
// call: inline on the gRPC thread when it only looks things up
// (Get/List/DeleteSession), on the worker pool when it compiles a spec
// (Validate, Evaluate, CreateSession). Every failed call logs one line.
//
// `request` and `response` belong to gRPC and stay valid until the
// returned reactor is finished.
#pragma once

#include <cstddef>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include "service/service_core.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// CreateSessionRequest.display_name, at most.
inline constexpr std::size_t kMaxDisplayNameBytes = 256;

grpc::ServerUnaryReactor* HandleValidate(ServiceCore* core,
                                         grpc::CallbackServerContext* context,
                                         const v1::ValidateRequest* request,
                                         v1::ValidateResponse* response);
grpc::ServerUnaryReactor* HandleEvaluate(ServiceCore* core,
                                         grpc::CallbackServerContext* context,
                                         const v1::EvaluateRequest* request,
                                         v1::EvaluateResponse* response);
grpc::ServerUnaryReactor* HandleCreateSession(ServiceCore* core,
                                              grpc::CallbackServerContext* context,
                                              const v1::CreateSessionRequest* request,
                                              v1::Session* response);
grpc::ServerUnaryReactor* HandleGetSession(ServiceCore* core,
                                           grpc::CallbackServerContext* context,
                                           const v1::GetSessionRequest* request,
                                           v1::Session* response);
grpc::ServerUnaryReactor* HandleListSessions(ServiceCore* core,
                                             grpc::CallbackServerContext* context,
                                             const v1::ListSessionsRequest* request,
                                             v1::ListSessionsResponse* response);
// Also interrupts the streams holding the session (CANCELLED).
grpc::ServerUnaryReactor* HandleDeleteSession(ServiceCore* core,
                                              grpc::CallbackServerContext* context,
                                              const v1::DeleteSessionRequest* request,
                                              v1::DeleteSessionResponse* response);

}  // namespace tether::service
