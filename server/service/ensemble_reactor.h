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
// worker pool like a Run (QuantumBudget). One call's instances run in
// parallel: the stream's quantum (the *main lane*, scheduled_ as for Run)
// and up to workers - 1 *helper lanes*, each a task of the tenant on the
// pool that claims the next instance, advances it for a quantum, carries
// it between quanta and requeues itself at the back of the tenant's queue
// (so the pool's fairness between tenants is kept: a lane is one more
// task of this tenant, and another tenant's task takes the next free
// worker). A finished result waits in `done_results_` until the main lane
// collects it in index order into messages; an instance is claimed only
// within kClaimWindowPerLane x lanes of the next one to collect, which
// bounds the results waiting. Each instance runs on a simulation of its
// own whichever lane runs it, so its bits do not depend on the lanes
// (docs/ENSEMBLES.md). A helper lane with nothing to claim ends; the main
// lane starts lanes again when there is. The stream does not end while a
// helper lane runs (HelpersRunningLocked): the last one to stop decides.
// Lanes: where the engine's lane path applies (EnsembleRunner::group_size()
// is 8), the unit a lane claims is a group of eight consecutive instances
// (EnsembleRunner::StartGroup), carried between quanta and advanced in
// chunks like an instance (EnsembleGroupRun::Advance: the same bits as one
// by one and as unchunked, whatever the chunks); a chunk of the lane group
// costs 8 instance steps a step in the quantum's accounting
// (QuantumBudget::NextChunk's unit), so 8 x a quantum's group steps <=
// kQuantumMaxSteps. Otherwise every instance runs alone, a group of one
// (docs/ENSEMBLES.md, "Lanes").
// An instance whose parameters differ from the template's is compiled
// inside its quantum (its compilation is bounded by --compile-max-* like
// any other; docs/ENSEMBLES.md).
//
// Limits: --ensemble-max-instances, --ensemble-max-instance-steps
// (instances x steps per call), one of the tenant's stream slots
// (--tenant-max-streams) for the call's length, and memory: the running
// instances' simulations (a group's eight per lane) and the template's
// compiled model are charged to
// the tenant's memory budget before the first instance starts
// (RESOURCE_EXHAUSTED when it is spent); finished results leave in
// messages charged like Run's.
//
// Backpressure: as Run's (kMaxBufferedMessages finished messages at most,
// stepping pauses until a write completes). Cancellation and deadlines: the
// client's cancel or the deadline stops the instance in progress within one
// evaluation (Simulation::SetInterrupt), or a group on the lane path
// within its chunk (the stop is seen between chunks, a chunk being at most
// what is left of a quantum), and the call ends CANCELLED; the results
// already sent stand. Shutdown: when the grace runs out (Drain), the
// instances and groups in progress stop and are dropped, every result
// already computed that follows the last one sent without a gap is sent,
// then the call ends UNAVAILABLE saying how many were sent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "engine/ensemble.h"
#include "service/memory_budget.h"
#include "service/outbox_reactor.h"
#include "service/quantum_budget.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// RunEnsembleRequest.results_per_message: 0 means the default.
inline constexpr uint32_t kDefaultResultsPerMessage = 64;
inline constexpr uint32_t kMaxResultsPerMessage = 4096;
// With no result to send, a progress message (done, total, no results)
// goes out after this long.
inline constexpr auto kEnsembleProgressInterval = std::chrono::seconds(1);
// Instances claimed ahead of the next one to collect, per lane (times the
// group size with groups).
inline constexpr uint64_t kClaimWindowPerLane = 4;

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
  bool HelpersRunningLocked() const override { return lanes_ > 0; }

  // A helper lane's claim in progress (a group, or one instance),
  // carried between its quanta.
  struct Lane {
    std::unique_ptr<EnsembleGroupRun> run;
  };
  // Without mu_: starts the next claim, instances [next_claim_,
  // next_claim_ + group_) (the last may be short), or nullptr when none
  // may be claimed now (all claimed, the window is full, the call is
  // ending).
  std::unique_ptr<EnsembleGroupRun> Claim();
  // Advances `run` by a chunk of at most `chunk` instance steps (a
  // multiple of its step_cost()) and records them in `budget`; the count
  // of its results once it is done, else 0 (more to do, or interrupted).
  uint64_t AdvanceChunk(EnsembleGroupRun* run, uint64_t chunk, QuantumBudget* budget);
  // With mu_: an instance may be claimed (the call goes on, instances are
  // left, the window of kClaimWindowPerLane x group_ x lanes is not full).
  bool MayClaimLocked() const;
  // Without mu_: hands finished instances' results to the main lane and
  // decides (which wakes a paused main lane). Not after the lane has ended.
  void Deliver(v1::EnsembleInstanceResult* results, int count);
  // Queues helper lanes up to max_lanes_ when instances are left to claim.
  void StartLanes();
  // One quantum of a helper lane on a worker; requeues itself or ends.
  void LaneQuantum(const std::shared_ptr<Lane>& lane);
  // The main lane: adds a result, in index order, to the message being
  // filled (and the reductions); false when it alone is over the message
  // limit (final_status_ is then set).
  bool Collect(v1::EnsembleInstanceResult&& result, std::vector<grpc::ByteBuffer>* ready);
  bool stopped_or_draining() const { return stopping() || draining_.load(); }
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
  std::unique_ptr<EnsembleGroupRun> current_;  // the main lane's claim in progress
  uint64_t max_lanes_ = 0;                     // helper lanes at most
  uint64_t group_ = 1;                         // instances a claim takes: 8 with groups, else 1
  // Guarded by mu_ (written by the main lane, read by Claim).
  uint64_t next_index_ = 0;  // the next result to collect
  // Guarded by mu_.
  uint64_t next_claim_ = 0;                                      // the next instance to start
  uint64_t lanes_ = 0;                                           // helper lanes queued or running
  std::map<uint64_t, v1::EnsembleInstanceResult> done_results_;  // not yet collected
  v1::RunEnsembleResponse building_;
  std::chrono::steady_clock::time_point first_pending_, last_sent_;
};

}  // namespace tether::service
