// Every method tether.v1.Simulator declares (read from the generated
// descriptor pool, so a method added to simulator.proto is covered without
// an edit here) is implemented by a real tether-server: an empty request
// through the generic stub must get anything but UNIMPLEMENTED, which is
// what gRPC answers for a method the service does not override (e.g. an RPC
// missing from TETHER_UNARY_RPCS).
#include <string>

#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include "service_test_fixture.h"
#include "support/raw_calls.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service_test {
namespace {

// "/tether.v1.Simulator/Method".
std::string MethodPath(const google::protobuf::MethodDescriptor& method) {
  return "/" + method.service()->full_name() + "/" + method.name();
}

// One call of `method` with an empty request: unary through RawUnary, any
// streaming method as one empty message then half-close (RawBidiOnce).
grpc::Status CallEmpty(const std::shared_ptr<grpc::Channel>& channel, const std::string& path,
                       bool streaming) {
  std::string response;
  return streaming ? test_support::RawBidiOnce(channel, path, "", &response)
                   : test_support::RawUnary(channel, path, "", &response);
}

TEST_F(ServiceTest, UnknownMethodIsUnimplemented) {
  // The probe below can tell: a method the server lacks is UNIMPLEMENTED,
  // both as a unary call and as a stream.
  for (bool streaming : {false, true}) {
    grpc::Status s = CallEmpty(client_->channel(), "/tether.v1.Simulator/NoSuchMethod", streaming);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED)
        << "streaming=" << streaming << ": " << s.error_message();
  }
}

TEST_F(ServiceTest, EveryDeclaredMethodIsImplemented) {
  // Referencing a message links simulator.pb.cc, which registers the file.
  ASSERT_NE(v1::RunRequest::descriptor(), nullptr);
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("tether.v1.Simulator");
  ASSERT_NE(service, nullptr) << "tether.v1.Simulator is not in the generated pool";
  // The unary methods plus Run, CoSimulate and RunEnsemble today; fewer means the pool
  // lookup went wrong, not that the server is complete.
  ASSERT_GE(service->method_count(), 8);
  int streaming_methods = 0;
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor& method = *service->method(i);
    const bool streaming = method.client_streaming() || method.server_streaming();
    streaming_methods += streaming;
    const std::string path = MethodPath(method);
    grpc::Status s = CallEmpty(client_->channel(), path, streaming);
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNIMPLEMENTED)
        << path << (streaming ? " (stream)" : " (unary)")
        << " is declared in simulator.proto but the server does not implement it: "
        << s.error_message();
    // No deadline or transport failure either: the server answered.
    EXPECT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << path;
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNAVAILABLE) << path;
  }
  EXPECT_EQ(streaming_methods, 3)
      << "expected Run, CoSimulate and RunEnsemble to be the streaming methods";
}

TEST_F(ServiceTest, UndecodableRequestIsInvalidArgumentWithAMessage) {
  // Bytes that are no protobuf message: a field 1 length prefix running past
  // the end. Every method (unary or stream) must say so, as
  // INVALID_ARGUMENT with a message that names the request type, not
  // gRPC's bare UNIMPLEMENTED or INTERNAL.
  ASSERT_NE(v1::RunRequest::descriptor(), nullptr);
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("tether.v1.Simulator");
  ASSERT_NE(service, nullptr);
  const std::string garbage("\x0a\xff\xff\xff\x0f\x01", 6);
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor& method = *service->method(i);
    const bool streaming = method.client_streaming() || method.server_streaming();
    const std::string path = MethodPath(method);
    std::string response;
    grpc::Status s = streaming
                         ? test_support::RawBidiOnce(client_->channel(), path, garbage, &response)
                         : test_support::RawUnary(client_->channel(), path, garbage, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << path << ": " << s.error_code() << " " << s.error_message();
    EXPECT_NE(s.error_message().find(method.input_type()->full_name()), std::string::npos)
        << path << ": " << s.error_message();
  }
}

}  // namespace
}  // namespace tether::service_test
