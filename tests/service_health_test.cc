// tether-server's standard services: grpc.health.v1 (through the client
// library) and server reflection (raw bytes through the generic stub).
#include <string>

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

}  // namespace
}  // namespace tether::service_test
