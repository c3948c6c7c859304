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

#include <google/protobuf/map.h>
#include <google/protobuf/repeated_ptr_field.h>
#include <grpcpp/support/server_callback.h>

#include "service/session_reactor.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {

// Created by SimulatorService::CoSimulate on a gRPC thread; deletes itself
// in OnDone (see SessionStreamReactor for the threading and the lease).
class CoSimulateReactor final
    : public SessionStreamReactor<
          grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>> {
 public:
  // Starts reading the first request; or finishes at once with UNAVAILABLE
  // when the server is shutting down.
  // `tenant`: the authenticated caller (SessionStreamReactor).
  CoSimulateReactor(ServiceCore* core, Tenant* tenant);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;

 private:
  struct CoSimActions : Actions {
    bool read = false;                              // StartRead(&request_)
    const v1::CoSimulateResponse* write = nullptr;  // StartWrite
  };

  // Carries out `act` without mu_. After a finish, `this` may be gone.
  void Act(const CoSimActions& act);
  // Checks request_ (mu_ held); the first one takes the session's lease.
  grpc::Status TakeRequest();
  void Quantum() override;
  void LogEnd(const grpc::Status& status) override;

  // Filled by the pending read, then read by TakeRequest (under mu_).
  v1::CoSimulateRequest request_;
  // Filled by the quantum, then held by the pending write.
  v1::CoSimulateResponse response_;

  // Set by TakeRequest, then owned by the quantum it schedules.
  double communication_step_ = 0;
  google::protobuf::Map<std::string, double> inputs_;
  bool begun_ = false;
  google::protobuf::RepeatedPtrField<v1::Frame> frames_;
};

}  // namespace tether::service
