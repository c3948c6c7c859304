// tether.v1.Simulator on the gRPC callback API: the wiring from each method
// to its handler. The unary methods are in unary_handlers.h, the streams in
// run_reactor.h and cosimulate_reactor.h; what they share (sessions, the
// worker pool, the open streams, shutdown) is the ServiceCore.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include "service/service_core.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service {

// Run is a raw callback method (its responses are encoded without building
// message objects, see RunResponseEncoder); every other method is typed.
class SimulatorService final
    : public v1::Simulator::WithRawCallbackMethod_Run<v1::Simulator::CallbackService> {
 public:
  // `core` outlives the service.
  explicit SimulatorService(ServiceCore* core) : core_(core) {}

  grpc::ServerUnaryReactor* Validate(grpc::CallbackServerContext* context,
                                     const v1::ValidateRequest* request,
                                     v1::ValidateResponse* response) override;
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* context,
                                     const v1::EvaluateRequest* request,
                                     v1::EvaluateResponse* response) override;
  grpc::ServerUnaryReactor* CreateSession(grpc::CallbackServerContext* context,
                                          const v1::CreateSessionRequest* request,
                                          v1::Session* response) override;
  grpc::ServerUnaryReactor* GetSession(grpc::CallbackServerContext* context,
                                       const v1::GetSessionRequest* request,
                                       v1::Session* response) override;
  grpc::ServerUnaryReactor* ListSessions(grpc::CallbackServerContext* context,
                                         const v1::ListSessionsRequest* request,
                                         v1::ListSessionsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteSession(grpc::CallbackServerContext* context,
                                          const v1::DeleteSessionRequest* request,
                                          v1::DeleteSessionResponse* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Run(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) override;
  grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>*
  CoSimulate(grpc::CallbackServerContext* context) override;

 private:
  ServiceCore* const core_;
};

}  // namespace tether::service
