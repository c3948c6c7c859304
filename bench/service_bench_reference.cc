#include "service_bench_reference.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "service_bench_common.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service_bench {
namespace {

// --- Realistic payloads (from the engine, on the benchmark's spec) -----------

struct Payloads {
  v1::Frame frame;                  // a frame at step ~50000
  v1::Certificate run_certificate;  // certificate of a Run window
  v1::CoSimulateResponse cosim;     // a CoSimulate response (10 steps)
};

Payloads MakePayloads(const v1::SimulationSpec& spec) {
  Payloads p;
  auto created = tether::Simulation::Create(spec);
  if (!created.ok()) Die(created.status().message());
  std::unique_ptr<tether::Simulation> sim = std::move(created).value();
  tether::RunOptions run;
  run.steps = 50000;
  run.every = 50000;
  run.emit_start = false;
  run.certificate = true;
  if (auto s = sim->BeginRun(run); !s.ok()) Die(s.message());
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  while (!sim->run_done()) {
    if (auto s = sim->Advance(10000, &frames); !s.ok()) Die(s.message());
  }
  if (frames.empty()) Die("engine emitted no frame");
  p.frame = frames.Get(frames.size() - 1);
  sim->GetCertificate(&p.run_certificate);
  // One communication step of 10 steps.
  EngineCommunicationStep(sim.get(), 10 * spec.integrator().step_size(), &frames,
                          p.cosim.mutable_certificate());
  if (!frames.empty()) *p.cosim.mutable_frame() = frames.Get(frames.size() - 1);
  return p;
}

// --- The reference servers ---------------------------------------------------

// Run: streams the frames a session's first Run of the request would emit
// (steps / every + 1, plus the last step) in RunResponses of frames_per_message
// copies of one frame, the last one with the remaining frames and the
// certificate.
class RefRunReactor final : public grpc::ServerWriteReactor<v1::RunResponse> {
 public:
  RefRunReactor(const Payloads* p, const v1::RunRequest& r) {
    const uint64_t every = r.every() == 0 ? 1 : r.every();
    remaining_ = r.steps() / every + 1 + (r.steps() % every != 0 ? 1 : 0);
    per_message_ = r.frames_per_message() == 0 ? 256 : r.frames_per_message();
    certificate_ = r.has_include_certificate() ? r.include_certificate() : true;
    p_ = p;
    full_.mutable_frames()->Reserve(static_cast<int>(per_message_));
    for (uint32_t i = 0; i < per_message_; ++i) *full_.add_frames() = p->frame;
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    } else if (wrote_last_) {
      Finish(grpc::Status::OK);
    } else {
      Next();
    }
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (remaining_ > per_message_) {
      remaining_ -= per_message_;
      StartWrite(&full_);
      return;
    }
    for (uint64_t i = 0; i < remaining_; ++i) *last_.add_frames() = p_->frame;
    if (certificate_) *last_.mutable_certificate() = p_->run_certificate;
    remaining_ = 0;
    wrote_last_ = true;
    StartWrite(&last_);
  }

  const Payloads* p_;
  uint64_t remaining_ = 0;
  uint32_t per_message_ = 256;
  bool certificate_ = true;
  bool wrote_last_ = false;
  v1::RunResponse full_, last_;
};

// CoSimulate as a ping-pong: one response per request, empty when the first
// request's session_id is "empty", else a precomputed response of Tether's
// size.
class RefEchoReactor final
    : public grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse> {
 public:
  explicit RefEchoReactor(const Payloads* p) : p_(p) { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    if (first_) {
      first_ = false;
      if (request_.session_id() != "empty") response_ = p_->cosim;
    }
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  const Payloads* p_;
  bool first_ = true;
  v1::CoSimulateRequest request_;
  v1::CoSimulateResponse response_;
};

class ReferenceService final : public v1::Simulator::CallbackService {
 public:
  explicit ReferenceService(Payloads p) : p_(std::move(p)) {}
  grpc::ServerWriteReactor<v1::RunResponse>* Run(grpc::CallbackServerContext*,
                                                 const v1::RunRequest* r) override {
    return new RefRunReactor(&p_, *r);
  }
  grpc::ServerBidiReactor<v1::CoSimulateRequest, v1::CoSimulateResponse>* CoSimulate(
      grpc::CallbackServerContext*) override {
    return new RefEchoReactor(&p_);
  }

 private:
  const Payloads p_;
};

}  // namespace

int ServeReference(const std::string& spec_path) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  v1::SimulationSpec spec;
  if (auto s = tether::LoadSpecFile(spec_path, &spec); !s.ok()) Die(s.message());
  ReferenceService service(MakePayloads(spec));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(4 * 1024 * 1024);
  builder.SetMaxSendMessageSize(4 * 1024 * 1024);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) Die("reference server cannot listen on 127.0.0.1:0");
  std::printf("listening on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  return 0;
}

}  // namespace tether::service_bench
