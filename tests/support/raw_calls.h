// Calls that bypass the client library on purpose: raw bytes through
// grpc::GenericStub, for requests no typed client can send (malformed
// messages) and for services the client library does not wrap (server
// reflection). Part of tether_test_support.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/support/status.h>

namespace tether::test_support {

// One unary call of `method` ("/package.Service/Method") with `request` as
// the serialized request; on OK, `response` holds the serialized response.
grpc::Status RawUnary(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const std::string& request, std::string* response,
                      std::chrono::milliseconds deadline = std::chrono::seconds(30));

// One request, then half-close, then one response on a bidirectional
// `method`; `response` is appended the response's bytes when one arrived.
grpc::Status RawBidiOnce(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                         const std::string& request, std::string* response,
                         std::chrono::milliseconds deadline = std::chrono::seconds(30));

}  // namespace tether::test_support
