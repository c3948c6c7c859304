// tether-server's standard services: grpc.health.v1 (through the client
// library) and server reflection (raw bytes through the generic stub).
#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include "service_test_fixture.h"
#include "support/raw_calls.h"

namespace tether::service_test {
namespace {

TEST_F(ServiceTest, HealthServing) {
  client::HealthStatus health = client::HealthStatus::kUnknown;
  grpc::Status s = client_->Health("", 30s, &health);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(health, client::HealthStatus::kServing);
  // Per-service status too.
  health = client::HealthStatus::kUnknown;
  s = client_->Health("tether.v1.Simulator", 30s, &health);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(health, client::HealthStatus::kServing);
}

TEST_F(ServiceTest, ReflectionListsSimulator) {
  // ServerReflectionRequest{list_services: ""} = field 7, empty string.
  std::string resp;
  grpc::Status s = test_support::RawBidiOnce(
      client_->channel(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      std::string("\x3a\x00", 2), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_NE(resp.find("tether.v1.Simulator"), std::string::npos);
}

// A client with no local copy of health.proto: it asks reflection for the
// file that defines grpc.health.v1.Health, builds the messages from the
// descriptor it gets, and calls Check with them. Before the server linked
// the health descriptor, reflection answered NOT_FOUND here.
TEST_F(ServiceTest, HealthResolvesThroughReflection) {
  using google::protobuf::UnknownFieldSet;
  // ServerReflectionRequest{file_containing_symbol = 4: "grpc.health.v1.Health"}.
  const std::string symbol = "grpc.health.v1.Health";
  std::string request = std::string(1, '\x22') + static_cast<char>(symbol.size()) + symbol;
  std::string response;
  grpc::Status s = test_support::RawBidiOnce(
      client_->channel(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", request,
      &response);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // ServerReflectionResponse.file_descriptor_response = 4
  //   { repeated bytes file_descriptor_proto = 1 }; error_response = 7.
  UnknownFieldSet fields;
  ASSERT_TRUE(fields.ParseFromString(response));
  google::protobuf::DescriptorPool pool;
  bool got_file = false;
  for (int i = 0; i < fields.field_count(); ++i) {
    ASSERT_NE(fields.field(i).number(), 7) << "reflection answered with an error_response";
    if (fields.field(i).number() != 4) continue;
    UnknownFieldSet files;
    ASSERT_TRUE(files.ParseFromString(fields.field(i).length_delimited()));
    for (int j = 0; j < files.field_count(); ++j) {
      google::protobuf::FileDescriptorProto file;
      ASSERT_TRUE(file.ParseFromString(files.field(j).length_delimited()));
      ASSERT_NE(pool.BuildFile(file), nullptr) << file.name();
      got_file = true;
    }
  }
  ASSERT_TRUE(got_file);
  const auto* service = pool.FindServiceByName(symbol);
  ASSERT_NE(service, nullptr);
  const auto* check = service->FindMethodByName("Check");
  ASSERT_NE(check, nullptr);

  google::protobuf::DynamicMessageFactory factory(&pool);
  std::unique_ptr<google::protobuf::Message> req(factory.GetPrototype(check->input_type())->New());
  req->GetReflection()->SetString(req.get(), check->input_type()->FindFieldByName("service"),
                                  "tether.v1.Simulator");
  std::string reply_bytes;
  s = test_support::RawUnary(client_->channel(), "/" + symbol + "/Check", req->SerializeAsString(),
                             &reply_bytes);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::unique_ptr<google::protobuf::Message> reply(
      factory.GetPrototype(check->output_type())->New());
  ASSERT_TRUE(reply->ParseFromString(reply_bytes));
  const auto* status_field = check->output_type()->FindFieldByName("status");
  ASSERT_NE(status_field, nullptr);
  EXPECT_EQ(reply->GetReflection()->GetEnum(*reply, status_field)->name(), "SERVING");
}

}  // namespace
}  // namespace tether::service_test
