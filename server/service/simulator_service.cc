#include "service/simulator_service.h"

#include "service/cosimulate_reactor.h"
#include "service/run_reactor.h"
#include "service/unary_handlers.h"

namespace tether::service {

grpc::ServerUnaryReactor* SimulatorService::Validate(grpc::CallbackServerContext* context,
                                                     const v1::ValidateRequest* request,
                                                     v1::ValidateResponse* response) {
  return HandleValidate(core_, context, request, response);
}

grpc::ServerUnaryReactor* SimulatorService::Evaluate(grpc::CallbackServerContext* context,
                                                     const v1::EvaluateRequest* request,
                                                     v1::EvaluateResponse* response) {
  return HandleEvaluate(core_, context, request, response);
}

grpc::ServerUnaryReactor* SimulatorService::CreateSession(
    grpc::CallbackServerContext* context, const v1::CreateSessionRequest* request,
    v1::Session* response) {
  return HandleCreateSession(core_, context, request, response);
}

grpc::ServerUnaryReactor* SimulatorService::GetSession(grpc::CallbackServerContext* context,
                                                       const v1::GetSessionRequest* request,
                                                       v1::Session* response) {
  return HandleGetSession(core_, context, request, response);
}

grpc::ServerUnaryReactor* SimulatorService::ListSessions(
    grpc::CallbackServerContext* context, const v1::ListSessionsRequest* request,
    v1::ListSessionsResponse* response) {
  return HandleListSessions(core_, context, request, response);
}

grpc::ServerUnaryReactor* SimulatorService::DeleteSession(
    grpc::CallbackServerContext* context, const v1::DeleteSessionRequest* request,
    v1::DeleteSessionResponse* response) {
  return HandleDeleteSession(core_, context, request, response);
}

// The reactors own themselves (deleted in OnDone).
grpc::ServerWriteReactor<grpc::ByteBuffer>* SimulatorService::Run(
    grpc::CallbackServerContext* /*context*/, const grpc::ByteBuffer* request) {
  return new RunReactor(core_, request);
}

grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>*
SimulatorService::CoSimulate(grpc::CallbackServerContext* /*context*/) {
  return new CoSimulateReactor(core_);
}

}  // namespace tether::service
