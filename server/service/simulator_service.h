// tether.v1.Simulator on the gRPC callback API.
//
// Threads: gRPC's threads only run reactions (convert the request, look up
// the session, queue work, start writes). Compiling specs and stepping
// simulations happen on a fixed WorkerPool, in bounded quanta that requeue
// themselves, so many sessions progress fairly and no reaction ever blocks.
// Streams apply backpressure: a Run keeps at most kMaxBufferedMessages
// finished RunResponses (including the one being written) plus the one it is
// filling, and stops stepping until a write completes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include <grpcpp/grpcpp.h>

#include "service/session_store.h"
#include "service/worker_pool.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service {

struct ServiceOptions {
  std::size_t workers = 1;
  // How long a worker polls after a co-simulation step (WorkerPool).
  std::chrono::microseconds worker_spin{1000};
  std::size_t max_sessions = 1000;
  // Largest message sent or received; Run splits its frames to stay below.
  std::size_t max_message_bytes = 4 * 1024 * 1024;
  // Idle sessions are deleted after this long (0: never).
  std::chrono::milliseconds session_idle_timeout{0};
};

// Limits of one quantum of stepping (whichever is reached first).
inline constexpr uint64_t kQuantumMaxSteps = 8192;
inline constexpr auto kQuantumMaxTime = std::chrono::microseconds(2000);
// RunResponses buffered per Run stream, the one being written included.
inline constexpr std::size_t kMaxBufferedMessages = 8;
// A Run paused on a full buffer resumes once the writer has drained it to
// this many, so that each wake-up of a worker fills several messages
// instead of one per completed write.
inline constexpr std::size_t kResumeBufferedMessages = 4;
// A Run's frames wait at most about this long for their message to fill
// (plus a quantum): sparse frames (a large `every`) still stream as they
// are computed instead of arriving with the run's end.
inline constexpr auto kMaxFrameDelay = std::chrono::milliseconds(50);
inline constexpr uint32_t kDefaultFramesPerMessage = 256;
inline constexpr uint32_t kMaxFramesPerMessage = 65536;
inline constexpr std::size_t kMaxDisplayNameBytes = 256;

// A Run or CoSimulate stream, as the service sees it (for shutdown and
// DeleteSession).
class StreamBase {
 public:
  virtual ~StreamBase() = default;
  // Ends the stream with `status` after the message being written, if any.
  virtual void Interrupt(grpc::Status status) = 0;
  const Session* attached() const { return attached_.load(); }

 protected:
  std::atomic<const Session*> attached_{nullptr};
};

// State shared by the handlers and reactors.
struct ServiceCore {
  explicit ServiceCore(const ServiceOptions& options);

  bool shutting_down() const { return shutting_down_.load(); }
  void Register(StreamBase* stream);
  void Unregister(StreamBase* stream);
  // Interrupts the streams attached to `session`.
  void InterruptStreams(const Session* session, const grpc::Status& status);

  const ServiceOptions options;
  SessionStore store;
  WorkerPool pool;

  std::atomic<bool> shutting_down_{false};
  std::mutex streams_mu;
  std::condition_variable streams_cv;
  std::unordered_set<StreamBase*> streams;
};

// Run is a raw callback method (its responses are encoded without building
// message objects, see RunResponseEncoder); every other method is typed.
class SimulatorService final
    : public v1::Simulator::WithRawCallbackMethod_Run<v1::Simulator::CallbackService> {
 public:
  explicit SimulatorService(const ServiceOptions& options);
  ~SimulatorService() override;

  grpc::ServerUnaryReactor* Validate(grpc::CallbackServerContext* context,
                                     const v1::ValidateRequest* request,
                                     v1::ValidateResponse* response) override;
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* context,
                                     const v1::EvaluateRequest* request,
                                     v1::EvaluateResponse* response) override;
  grpc::ServerUnaryReactor* CreateSession(grpc::CallbackServerContext* context,
                                          const v1::CreateSessionRequest* request,
                                          v1::Session* response) override;
  grpc::ServerUnaryReactor* GetSession(grpc::CallbackServerContext* context,
                                       const v1::GetSessionRequest* request,
                                       v1::Session* response) override;
  grpc::ServerUnaryReactor* ListSessions(grpc::CallbackServerContext* context,
                                         const v1::ListSessionsRequest* request,
                                         v1::ListSessionsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteSession(grpc::CallbackServerContext* context,
                                          const v1::DeleteSessionRequest* request,
                                          v1::DeleteSessionResponse* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Run(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) override;
  grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>*
  CoSimulate(grpc::CallbackServerContext* context) override;

  // Graceful shutdown, step 1: new calls get UNAVAILABLE; open streams end
  // with UNAVAILABLE after the message they are writing.
  void BeginShutdown();
  // Step 2: waits until every stream has ended or `deadline`; true when all
  // ended.
  bool WaitForStreams(std::chrono::steady_clock::time_point deadline);
  // Step 3 (after grpc::Server::Shutdown): runs what is queued and joins
  // the workers.
  void StopWorkers();

  std::size_t session_count() const { return core_->store.size(); }

 private:
  std::unique_ptr<ServiceCore> core_;
};

}  // namespace tether::service
