// Simulator.RunEnsemble: a server-streaming call that runs every instance
// of an ensemble (engine/ensemble.h) to a common end time and streams one
// EnsembleInstanceResult per instance, in index order, with progress.
//
// The template is a description or an existing session (its description
// and current state, inputs included, copied under a brief lease; the
// session is not changed; FAILED_PRECONDITION while a Run or CoSimulate
// holds it).
//
// Scheduling: the template is compiled on the compile lane (as
// CreateSession's description is); then the instances run in quanta on the
// worker pool like a Run (QuantumBudget; one instance in progress at a
// time, carried between quanta, so a long instance never holds a worker
// for more than a quantum). An instance whose parameters differ from the
// template's is compiled inside its quantum (its compilation is bounded by
// --compile-max-* like any other; docs/ENSEMBLES.md).
//
// Limits: --ensemble-max-instances, --ensemble-max-instance-steps
// (instances x steps per call), one of the tenant's stream slots
// (--tenant-max-streams) for the call's length, and memory: the running
// instance's simulation and the template's compiled model are charged to
// the tenant's memory budget before the first instance starts
// (RESOURCE_EXHAUSTED when it is spent); finished results leave in
// messages charged like Run's.
//
// Backpressure: as Run's (kMaxBufferedMessages finished messages at most,
// stepping pauses until a write completes). Cancellation and deadlines: the
// client's cancel or the deadline stops the instance in progress within one
// evaluation (Simulation::SetInterrupt), and the call ends CANCELLED; the
// results already sent stand. Shutdown: as Interrupt.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "engine/ensemble.h"
#include "service/memory_budget.h"
#include "service/outbox_reactor.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// RunEnsembleRequest.results_per_message: 0 means the default.
inline constexpr uint32_t kDefaultResultsPerMessage = 64;
inline constexpr uint32_t kMaxResultsPerMessage = 4096;
// With no result to send, a progress message (done, total, no results)
// goes out after this long.
inline constexpr auto kEnsembleProgressInterval = std::chrono::seconds(1);

class EnsembleReactor final : public OutboxStreamReactor {
 public:
  // Checks the request, takes a stream slot and copies a session template
  // (lookups only); then queues the compilation on the compile lane, or
  // finishes at once with the error.
  EnsembleReactor(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                  const grpc::ByteBuffer* request);

 private:
  grpc::Status Start(const grpc::ByteBuffer* request);
  // On the compile lane, owning the stream like a quantum: compiles the
  // template, checks the ensemble, charges the memory; then decides.
  void Prepare();
  void Quantum() override;
  void LogEnd(const grpc::Status& status) override;
  // The message being filled, as bytes.
  grpc::ByteBuffer TakeMessage();

  // Set by the constructor, then read-only.
  v1::RunEnsembleRequest request_;
  v1::SimulationSpec spec_;  // the template (a session's: its current state)
  uint32_t per_message_ = kDefaultResultsPerMessage;
  std::size_t bytes_cap_ = 0;  // a message's results' bytes
  grpc::CallbackServerContext* const call_context_;
  bool holds_stream_ = false;  // a tenant stream slot, given back in LogEnd

  // Set by Prepare, then owned by the quantum (one at a time).
  std::unique_ptr<EnsembleRunner> runner_;
  std::unique_ptr<EnsembleReducer> reducer_;  // with request_.reduce()
  MemoryCharge run_charge_;
  std::unique_ptr<EnsembleInstanceRun> current_;
  uint64_t next_index_ = 0;
  v1::RunEnsembleResponse building_;
  std::chrono::steady_clock::time_point first_pending_, last_sent_;
};

}  // namespace tether::service
