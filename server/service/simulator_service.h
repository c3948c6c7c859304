// tether.v1.Simulator on the gRPC callback API: the wiring from each method
// to its handler. The unary methods are in unary_handlers.h, the streams in
// run_reactor.h and cosimulate_reactor.h; what they share (sessions, the
// worker pool, the open streams, shutdown) is the ServiceCore.
//
// Every method authenticates its caller first (ServiceCore::auth(),
// service/auth.h): without a valid bearer token (when tokens are
// configured) the call ends at once with UNAUTHENTICATED, before any
// request is looked at; else the handler or reactor gets the caller's
// tenant.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include "service/service_core.h"
#include "service/status_mapping.h"
#include "service/unary_handlers.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service {

// Run is a raw callback method (its responses are encoded without building
// message objects, see RunResponseEncoder); every other method is typed.
class SimulatorService final
    : public v1::Simulator::WithRawCallbackMethod_Run<v1::Simulator::CallbackService> {
 public:
  // `core` outlives the service.
  explicit SimulatorService(ServiceCore* core) : core_(core) {}

  // The unary methods (TETHER_UNARY_RPCS), each forwarded to its handler.
#define TETHER_OVERRIDE_UNARY(Method, Request, Response)                                          \
  grpc::ServerUnaryReactor* Method(grpc::CallbackServerContext* context,                          \
                                   const v1::Request* request, v1::Response* response) override { \
    StatusOr<Tenant*> tenant = core_->auth().Authenticate(context->client_metadata());            \
    if (!tenant.ok()) return RefuseUnary(context, #Method, ToGrpcStatus(tenant.status()));        \
    return Handle##Method(core_, *tenant, context, request, response);                            \
  }
  TETHER_UNARY_RPCS(TETHER_OVERRIDE_UNARY)
#undef TETHER_OVERRIDE_UNARY

  // The streams; their reactors own themselves (deleted in OnDone).
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Run(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* request) override;
  grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>* CoSimulate(
      grpc::CallbackServerContext* context) override;

 private:
  ServiceCore* const core_;
};

}  // namespace tether::service
