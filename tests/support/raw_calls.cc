#include "support/raw_calls.h"

#include <future>
#include <vector>

#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

namespace tether::test_support {
namespace {

void AppendBytes(grpc::ByteBuffer* buffer, std::string* out) {
  std::vector<grpc::Slice> slices;
  if (!buffer->Dump(&slices).ok()) return;
  for (const grpc::Slice& s : slices) {
    out->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
}

}  // namespace

grpc::Status RawUnary(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const std::string& request, std::string* response,
                      std::chrono::milliseconds deadline) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1), response_buffer;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request_buffer, &response_buffer,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status status = done.get_future().get();
  if (status.ok()) {
    response->clear();
    AppendBytes(&response_buffer, response);
  }
  return status;
}

grpc::Status RawBidiOnce(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                         const std::string& request, std::string* response,
                         std::chrono::milliseconds deadline) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::CompletionQueue cq;
  void* tag;
  bool ok;
  // Each operation is waited for before the next; the tags only label them.
  auto call = stub.PrepareCall(&context, method, &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  cq.Next(&tag, &ok);
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1), response_buffer;
  call->Write(request_buffer, reinterpret_cast<void*>(2));
  cq.Next(&tag, &ok);
  call->WritesDone(reinterpret_cast<void*>(3));
  cq.Next(&tag, &ok);
  call->Read(&response_buffer, reinterpret_cast<void*>(4));
  cq.Next(&tag, &ok);
  const bool read_ok = ok;
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  if (read_ok) AppendBytes(&response_buffer, response);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

}  // namespace tether::test_support
