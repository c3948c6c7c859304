#include "service/simulator_service.h"

#include <utility>

#include "service/cosimulate_reactor.h"
#include "service/ensemble_reactor.h"
#include "service/rpc_common.h"
#include "service/run_reactor.h"

namespace tether::service {
namespace {

// A stream refused before it starts (a failed authentication): finishes in
// its constructor, deletes itself in OnDone.
template <class GrpcReactor>
class RefusedStream final : public GrpcReactor {
 public:
  RefusedStream(const char* rpc, grpc::Status status) {
    LogIfFailed(rpc, nullptr, "", status);
    this->Finish(std::move(status));
  }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* SimulatorService::Run(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  StatusOr<Tenant*> tenant = core_->auth().AuthenticateCall(*context);
  if (!tenant.ok()) {
    return new RefusedStream<grpc::ServerWriteReactor<grpc::ByteBuffer>>(
        "Run", ToGrpcStatus(tenant.status()));
  }
  return new RunReactor(core_, *tenant, context, request);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SimulatorService::CoSimulate(
    grpc::CallbackServerContext* context) {
  StatusOr<Tenant*> tenant = core_->auth().AuthenticateCall(*context);
  if (!tenant.ok()) {
    return new RefusedStream<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>(
        "CoSimulate", ToGrpcStatus(tenant.status()));
  }
  return new CoSimulateReactor(core_, *tenant, context);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* SimulatorService::RunEnsemble(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  StatusOr<Tenant*> tenant = core_->auth().AuthenticateCall(*context);
  if (!tenant.ok()) {
    return new RefusedStream<grpc::ServerWriteReactor<grpc::ByteBuffer>>(
        "RunEnsemble", ToGrpcStatus(tenant.status()));
  }
  return new EnsembleReactor(core_, *tenant, context, request);
}

}  // namespace tether::service
