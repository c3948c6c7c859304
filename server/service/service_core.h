// The state every handler and reactor of the Simulator service shares: the
// options, the sessions, the worker pool and the registry of open streams,
// and the graceful shutdown of all of them.
//
// Threads: gRPC's threads only run reactions (convert the request, look up
// the session, queue work, start writes). Compiling specs and stepping
// simulations happen on the fixed WorkerPool, in bounded quanta that requeue
// themselves, so many sessions progress fairly and no reaction ever blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <unordered_set>
#include <utility>

#include <grpcpp/support/status.h>

#include "service/server_options.h"
#include "service/session_store.h"
#include "service/worker_pool.h"

namespace tether::service {

// A Run or CoSimulate stream, as the core sees it: something to interrupt
// at shutdown or when its session is deleted.
class StreamBase {
 public:
  virtual ~StreamBase() = default;
  // Ends the stream with `status` after the message being written, if any.
  // Any thread; called with the core's registry lock held, so it must
  // neither finish the call inline nor take that lock.
  virtual void Interrupt(grpc::Status status) = 0;
  // The session whose lease the stream holds or is taking (nullptr before).
  const Session* attached() const { return attached_.load(); }

 protected:
  std::atomic<const Session*> attached_{nullptr};
};

class ServiceCore {
 public:
  // Starts the workers (options.workers 0: one per hardware thread) and the
  // idle-session expiry.
  explicit ServiceCore(const ServiceOptions& options);
  // StopWorkers(), then the session store (and its expiry thread) goes.
  ~ServiceCore();
  ServiceCore(const ServiceCore&) = delete;
  ServiceCore& operator=(const ServiceCore&) = delete;

  // The options in force (workers resolved to a count).
  const ServiceOptions& options() const { return options_; }
  SessionStore& sessions() { return store_; }
  // Queues `task` on the worker pool (WorkerPool::Submit). Tasks queued
  // after StopWorkers still run (on the stopping thread).
  void Submit(std::function<void()> task, bool then_poll = false) {
    pool_.Submit(std::move(task), then_poll);
  }

  // Open streams. A stream registers before it checks shutting_down() (so
  // that BeginShutdown either is seen by the check or interrupts it) and
  // unregisters in OnDone, just before it is deleted.
  void Register(StreamBase* stream);
  void Unregister(StreamBase* stream);
  // Interrupts the streams attached to `session` (every stream when nullptr).
  void InterruptStreams(const Session* session, const grpc::Status& status);

  // --- Graceful shutdown (TetherServer::Shutdown runs the steps in order) ---
  // True once BeginShutdown has run: new calls get UNAVAILABLE.
  bool shutting_down() const { return shutting_down_.load(); }
  // Step 1: new calls get UNAVAILABLE; open streams end with UNAVAILABLE
  // after the message they are writing. Idempotent.
  void BeginShutdown();
  // Step 2: waits until every stream has ended or `deadline`; true when all
  // ended.
  bool WaitForStreams(std::chrono::steady_clock::time_point deadline);
  // Step 3 (after grpc::Server::Shutdown): runs what is queued and joins
  // the workers. Idempotent.
  void StopWorkers();

 private:
  const ServiceOptions options_;
  SessionStore store_;
  WorkerPool pool_;

  std::atomic<bool> shutting_down_{false};
  std::mutex streams_mu_;
  std::condition_variable streams_cv_;
  std::unordered_set<StreamBase*> streams_;  // guarded by streams_mu_
};

}  // namespace tether::service
