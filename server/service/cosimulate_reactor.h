// Simulator.CoSimulate: a bidirectional stream in lockstep with a master.
// Each request sets inputs and asks for one communication step; the reply
// is the frame at the step's end and its certificate. The first request
// names the session and takes its lease for the whole stream.
//
// One thing is pending at a time: a read (waiting for the master), a
// quantum (stepping), or a write (the step's reply); so the stream holds one
// request and one response and needs no buffer bounds. (An Interrupt may
// queue a quantum beside a pending read: that quantum ends the stream.)
#pragma once

#include <string>
#include <vector>

#include <google/protobuf/map.h>
#include <google/protobuf/repeated_ptr_field.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "service/session_reactor.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// Created by SimulatorService::CoSimulate on a gRPC thread; deletes itself
// in OnDone (see SessionStreamReactor for the threading and the lease).
class CoSimulateReactor final
    : public SessionStreamReactor<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>> {
 public:
  // Starts reading the first request; or finishes at once with UNAVAILABLE
  // when the server is shutting down.
  // `tenant`: the authenticated caller (SessionStreamReactor).
  CoSimulateReactor(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;

 private:
  struct CoSimActions : Actions {
    bool read = false;  // StartRead(&request_bytes_)
    bool any() const { return Actions::any() || read; }
  };

  // Carries out `act` without mu_. After a finish, `this` may be gone.
  void Act(const CoSimActions& act);
  // Parses and checks request_bytes_ (mu_ held); the first request takes
  // the session's lease.
  grpc::Status TakeRequest();
  void Quantum() override;
  // ON_FAILURE_DISCARD: undoes the failed step (before_step_) and fills
  // response_ (discarded, the attempt's certificate, the frame there).
  grpc::Status Discard(const Status& failure);
  // save_snapshot / restore_snapshot_id: carries it out and fills
  // response_ (the snapshot, the frame at the session's state).
  grpc::Status SnapshotCommand();
  // Checks request_.input_rates() against the session's inputs into
  // input_rates_ (INVALID_ARGUMENT naming "input_rates[NAME]").
  grpc::Status TakeInputRates();
  void LogEnd(const grpc::Status& status) override;

  // The stream is raw (ParseRequest in rpc_common.h says why): the pending
  // read fills request_bytes_, which TakeRequest parses into request_ (under
  // mu_); the quantum builds response_ and encodes it into response_bytes_,
  // which the pending write holds.
  grpc::ByteBuffer request_bytes_;
  v1::CoSimulateRequest request_;
  v1::CoSimulateResponse response_;
  grpc::ByteBuffer response_bytes_;

  // Set by TakeRequest, then owned by the quantum it schedules.
  double communication_step_ = 0;
  google::protobuf::Map<std::string, double> inputs_;
  // CoSimulateRequest.input_rates: one rate per input of the session's
  // model, in its order (0 for an input not named); empty: held. Applied
  // for this step only (ramps_ while the simulation has them).
  std::vector<double> input_rates_;
  bool ramps_ = false;
  bool discard_on_failure_ = false;  // ON_FAILURE_DISCARD
  // Each response waits for the state in the shared store (the first
  // request's write_through, else --write-through); set before the session.
  bool write_through_ = false;
  // A snapshot command instead of a step (communication_step 0).
  bool save_snapshot_ = false;
  std::string snapshot_label_;
  uint64_t restore_snapshot_id_ = 0;
  bool restore_state_ = false;  // CoSimulateRequest.restore_state, moved here:
  v1::SimulationState state_to_restore_;
  bool Command() const { return save_snapshot_ || restore_snapshot_id_ != 0 || restore_state_; }
  bool begun_ = false;
  google::protobuf::RepeatedPtrField<v1::Frame> frames_;
  // ON_FAILURE_DISCARD: the state before the step, to go back to.
  v1::SimulationState before_step_;
};

}  // namespace tether::service
