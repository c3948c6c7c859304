// Simulator.Run: a server-streaming call that advances a session by a
// number of steps or up to a time, streaming its frames.
//
// Run is registered as a raw method: the request arrives as bytes (parsed
// here) and the responses leave as bytes written by RunResponseEncoder, so
// no v1::Frame message is ever built.
//
// Backpressure: OutboxStreamReactor's (outbox_reactor.h): at most
// max_buffered_ finished RunResponses (8 small ones, 2 large ones) plus the
// one being filled, and stepping stops until a write completes; memory
// stays bounded behind a slow reader. Before the run begins, that outbox's
// most is taken from the memory budget (ReserveOutbox): a Run that does not
// fit is RESOURCE_EXHAUSTED, and no message is forced past the budget.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "service/outbox_reactor.h"
#include "service/run_response_encoder.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// A Run's frames wait at most about this long for their message to fill
// (plus a quantum): sparse frames (a large `every`) still stream as they
// are computed instead of arriving with the run's end.
inline constexpr auto kMaxFrameDelay = std::chrono::milliseconds(50);
// RunRequest.frames_per_message: 0 means kDefaultFramesPerMessage.
inline constexpr uint32_t kDefaultFramesPerMessage = 256;
inline constexpr uint32_t kMaxFramesPerMessage = 65536;

// Created by SimulatorService::Run on a gRPC thread; deletes itself in
// OnDone (see SessionStreamReactor for the threading and the lease).
class RunReactor final : public OutboxStreamReactor {
 public:
  // Checks the request and takes the session's lease (only lookups, no
  // stepping), then queues the first quantum; or finishes at once with the
  // error.
  // `tenant`: the authenticated caller (SessionStreamReactor).
  // `context`: the call's (SessionStreamReactor).
  RunReactor(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
             const grpc::ByteBuffer* request);

  // Drain (OutboxStreamReactor): the run ends at the next quantum as if it
  // had reached its end: the frames computed so far, then the certificate
  // of the partial window, then the drain's status (with the step).

 private:
  // The constructor's checks, with mu_ held.
  grpc::Status Start(const grpc::ByteBuffer* request);
  void Quantum() override;
  void LogEnd(const grpc::Status& status) override;
  // Frames per message: the request's count, within the byte cap once a
  // frame's size is known (one frame until then).
  std::size_t PerMessage() const;
  // The message being filled, as bytes, into a new buffer for gRPC.
  grpc::ByteBuffer TakeMessage();

  // Set by the constructor, then read-only.
  v1::RunRequest request_;
  uint32_t frames_per_message_ = kDefaultFramesPerMessage;
  bool include_certificate_ = true;
  uint64_t every_ = 1;
  std::size_t frame_bytes_cap_ = 0;
  // Takes what this stream's outbox can hold from the memory budget
  // (outbox_reserve_), before the run begins: RESOURCE_EXHAUSTED when it
  // does not fit, so that many streams whose readers stopped cannot take
  // the server past its budget (each used to force its messages in).
  Status ReserveOutbox(const Simulation& sim);
  // The bytes of waiting messages beyond two that a stream may hold.
  static constexpr int64_t kOutboxBytes = 4 << 20;

  // Owned by the quantum (one at a time).
  bool begun_ = false;
  bool running_ = false;        // BeginRun succeeded: the run has a window to certify
  RunResponseEncoder encoder_;  // the message being filled
  std::chrono::steady_clock::time_point first_pending_;  // when its first frame was added
  std::size_t frame_bound_ = 0;  // serialized bytes of any frame (0: unknown)
};

}  // namespace tether::service
