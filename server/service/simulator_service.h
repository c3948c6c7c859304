// tether.v1.Simulator on the gRPC callback API: the wiring from each method
// to its handler. The unary methods are in unary_handlers.h, the streams in
// run_reactor.h, cosimulate_reactor.h and ensemble_reactor.h; what they share (sessions, the
// worker pool, the open streams, shutdown) is the ServiceCore.
//
// Every method authenticates its caller first (ServiceCore::auth(),
// Authenticator::AuthenticateCall in service/auth.h): without a verified
// client certificate (under mTLS) or a valid bearer token (when tokens are
// configured) the call ends at once with UNAUTHENTICATED, before any
// request is looked at; else the handler or reactor gets the caller's
// tenant.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include "service/raw_unary.h"
#include "service/service_core.h"
#include "service/status_mapping.h"
#include "service/unary_handlers.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service {

// Every method is raw (ParseRequest in rpc_common.h says why): the unary
// ones through RawUnaryReactor to their typed handlers, Run because its
// responses are encoded without building message objects (RunResponseEncoder),
// CoSimulate parsing each request itself. The base is
// WithRawCallbackMethod_<each unary method><...<CoSimulate<Run<Service>>>...>,
// spelled out from TETHER_UNARY_RPCS so that a new unary RPC is raw too. (On
// Service, not CallbackService: a raw CoSimulate cannot override the typed
// one, their signatures differ only in the return type.)
#define TETHER_RAW_BASE_OPEN(Method, Request, Response) \
  v1::Simulator::WithRawCallbackMethod_##Method <
#define TETHER_RAW_BASE_CLOSE(Method, Request, Response) >
using SimulatorServiceBase =
    TETHER_UNARY_RPCS(TETHER_RAW_BASE_OPEN) v1::Simulator::WithRawCallbackMethod_CoSimulate<
        v1::Simulator::WithRawCallbackMethod_Run<v1::Simulator::WithRawCallbackMethod_RunEnsemble<
            v1::Simulator::Service>>> TETHER_UNARY_RPCS(TETHER_RAW_BASE_CLOSE);
#undef TETHER_RAW_BASE_OPEN
#undef TETHER_RAW_BASE_CLOSE

class SimulatorService final : public SimulatorServiceBase {
 public:
  // `core` outlives the service.
  explicit SimulatorService(ServiceCore* core) : core_(core) {}

  // The unary methods (TETHER_UNARY_RPCS): authenticated, decoded and
  // forwarded to their handlers.
#define TETHER_OVERRIDE_UNARY(Method, Request, Response)                                          \
  grpc::ServerUnaryReactor* Method(grpc::CallbackServerContext* context,                          \
                                   const grpc::ByteBuffer* request, grpc::ByteBuffer* response)   \
      override {                                                                                  \
    StatusOr<Tenant*> tenant = core_->auth().AuthenticateCall(*context);                          \
    if (!tenant.ok()) return RefuseUnary(context, #Method, ToGrpcStatus(tenant.status()));        \
    return RawUnaryReactor<v1::Request, v1::Response>::Start(core_, *tenant, context, request,    \
                                                             response, #Method, &Handle##Method); \
  }
  TETHER_UNARY_RPCS(TETHER_OVERRIDE_UNARY)
#undef TETHER_OVERRIDE_UNARY

  // The streams; their reactors own themselves (deleted in OnDone).
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Run(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* request) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* CoSimulate(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* RunEnsemble(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request) override;

 private:
  ServiceCore* const core_;
};

}  // namespace tether::service
