// A unary method registered raw: its request arrives as bytes and its
// response leaves as bytes, so that bytes which are no message get
// INVALID_ARGUMENT naming the request type (ParseRequest) instead of the
// bare UNIMPLEMENTED a typed method answers. The handlers stay typed
// (unary_handlers.h); this is the one place where bytes become messages and
// back for them.
#pragma once

#include <utility>

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "service/rpc_common.h"
#include "service/unary_handlers.h"

namespace tether::service {

// One unary call: its typed request and response and the reactor gRPC
// drives. Created by Start on a gRPC thread, it deletes itself in OnDone,
// which gRPC calls once the reply has gone out (or the call died); the
// handler's Reply may come from a worker, and nothing touches the call
// after it (Finish may lead to OnDone on another thread at once).
template <typename Request, typename Response>
class RawUnaryReactor final : public grpc::ServerUnaryReactor, public UnaryCall {
 public:
  using Handler = void (*)(ServiceCore*, Tenant*, grpc::CallbackServerContext*, const Request*,
                           Response*, UnaryCall*);

  // `response` is gRPC's, valid until the call is done.
  static grpc::ServerUnaryReactor* Start(ServiceCore* core, Tenant* tenant,
                                         grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response, const char* rpc,
                                         Handler handler) {
    auto* call = new RawUnaryReactor(core, response);
    if (grpc::Status parsed = ParseRequest(*request, &call->request_); !parsed.ok()) {
      LogIfFailed(rpc, tenant, "", parsed);
      call->Reply(std::move(parsed));
      return call;
    }
    handler(core, tenant, context, &call->request_, &call->response_, call);
    return call;
  }

  void Reply(grpc::Status status) override {
    if (status.ok()) {
      bool own_buffer = false;
      grpc::Status serialized =
          grpc::SerializationTraits<Response>::Serialize(response_, response_bytes_, &own_buffer);
      if (!serialized.ok()) status = std::move(serialized);  // INTERNAL from protobuf
    }
    Finish(std::move(status));
  }

  void OnDone() override {
    core_->UnaryDone();
    delete this;
  }

 private:
  RawUnaryReactor(ServiceCore* core, grpc::ByteBuffer* response_bytes)
      : core_(core), response_bytes_(response_bytes) {
    core_->UnaryStarted();
  }

  ServiceCore* const core_;
  Request request_;
  Response response_;
  grpc::ByteBuffer* const response_bytes_;
};

}  // namespace tether::service
