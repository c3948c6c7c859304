#include "service/simulator_service.h"

#include "service/cosimulate_reactor.h"
#include "service/run_reactor.h"

namespace tether::service {

grpc::ServerWriteReactor<grpc::ByteBuffer>* SimulatorService::Run(
    grpc::CallbackServerContext* /*context*/, const grpc::ByteBuffer* request) {
  return new RunReactor(core_, request);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SimulatorService::CoSimulate(
    grpc::CallbackServerContext* /*context*/) {
  return new CoSimulateReactor(core_);
}

}  // namespace tether::service
