// The offline backend: the engine (engine/simulation.h) in this process.
#include <memory>
#include <utility>
#include <vector>

#include "cli/backend.h"
#include "engine/ensemble.h"
#include "engine/simulation.h"

namespace tether::cli {
namespace {

BackendStatus FromEngine(const Status& status) {
  BackendStatus out;
  switch (status.code()) {
    case StatusCode::kOk: return out;
    case StatusCode::kInvalidArgument: out.kind = BackendStatus::Kind::kBadInput; break;
    // A compile limit names the expression that exceeds it: the
    // description's fault (exit 2), unlike a server's session cap.
    case StatusCode::kResourceExhausted:
      out.kind = status.violations().empty() ? BackendStatus::Kind::kFailure
                                             : BackendStatus::Kind::kBadInput;
      break;
    case StatusCode::kAborted: out.kind = BackendStatus::Kind::kRunFailed; break;
    default: out.kind = BackendStatus::Kind::kFailure; break;
  }
  out.code = StatusCodeName(status.code());
  out.message = status.message();
  out.violations = status.violations();
  return out;
}

// The one place the engine compiles a description for the CLI. `warnings`
// receives the WARNING diagnostics only when compiling succeeded.
BackendStatus Compile(const v1::SimulationSpec& spec, std::unique_ptr<Simulation>* simulation,
                      std::vector<v1::Diagnostic>* warnings) {
  std::vector<v1::Diagnostic> found;
  StatusOr<std::unique_ptr<Simulation>> created = Simulation::Create(spec, &found);
  if (!created.ok()) return FromEngine(created.status());
  *simulation = std::move(created).value();
  *warnings = std::move(found);
  return FromEngine(Status::Ok());
}

class OfflineSession : public Session {
 public:
  OfflineSession(std::unique_ptr<Simulation> simulation, std::vector<v1::Diagnostic> warnings)
      : sim_(std::move(simulation)) {
    info_.names = {sim_->coordinate_names(), sim_->constraint_names(), sim_->output_names()};
    info_.start_time = sim_->time();
    info_.start_step = sim_->step();
    info_.warnings = std::move(warnings);
  }

  const Info& info() const override { return info_; }

  BackendStatus Begin(const RunPlan& plan) override {
    RunOptions run;
    run.steps = plan.steps;
    run.until_time = plan.until;
    run.every = plan.every;
    run.output_interval = plan.output_interval;
    run.certificate = plan.certificate;
    certificate_ = plan.certificate;
    return FromEngine(sim_->BeginRun(run));
  }

  BackendStatus Stream(const FrameCallback& on_frame,
                       std::optional<v1::Certificate>* certificate) override {
    google::protobuf::RepeatedPtrField<v1::Frame> frames;
    Status failure;
    while (sim_->run_active()) {
      // At most 1024 frames held at a time: an output grid far finer than
      // the step (output_interval 1e-300) emits without end within one
      // step, and held them all (std::bad_alloc, exit 134).
      failure = sim_->Advance(1024, &frames, /*max_frames=*/1024);
      for (const v1::Frame& frame : frames) on_frame(frame);
      frames.Clear();
      if (!failure.ok()) break;
    }
    certificate->reset();
    if (certificate_) {
      // None recorded (the description's certificate.disabled): no
      // certificate, as a server sends none.
      v1::Certificate recorded;
      sim_->GetCertificate(&recorded);
      if (recorded.ByteSizeLong() > 0) *certificate = std::move(recorded);
    }
    return FromEngine(failure);
  }

  BackendStatus Close() override { return {}; }

 private:
  std::unique_ptr<Simulation> sim_;
  Info info_;
  bool certificate_ = false;  // the plan asked for a certificate
};

class OfflineBackend : public Backend {
 public:
  BackendStatus Validate(const v1::SimulationSpec& spec, v1::ValidationReport* report) override {
    *report = tether::Validate(spec);
    return {};
  }

  BackendStatus Evaluate(const v1::SimulationSpec& spec, v1::Frame* frame,
                         std::vector<v1::Diagnostic>* warnings) override {
    std::unique_ptr<Simulation> sim;
    BackendStatus status = Compile(spec, &sim, warnings);
    if (!status.ok()) return status;
    return FromEngine(sim->Evaluate(frame));
  }

  BackendStatus Open(const v1::SimulationSpec& spec, std::unique_ptr<Session>* session) override {
    std::unique_ptr<Simulation> sim;
    std::vector<v1::Diagnostic> warnings;
    BackendStatus status = Compile(spec, &sim, &warnings);
    if (!status.ok()) return status;
    *session = std::make_unique<OfflineSession>(std::move(sim), std::move(warnings));
    return {};
  }

  BackendStatus RunEnsemble(const v1::SimulationSpec& spec, const EnsemblePlan& plan,
                            const ResultCallback& on_result,
                            v1::EnsembleReduction* reduction) override {
    EnsembleOptions options;
    options.until_time = plan.until;
    options.certificate = plan.certificate;
    options.lanes = plan.lanes;
    options.fast_functions = plan.fast_functions;
    options.output_interval = plan.output_interval;
    // The engine's default limits, the server's defaults too
    // (--ensemble-max-instances), so offline and remote refuse alike.
    auto runner = EnsembleRunner::Create(spec, plan.ensemble, options);
    if (!runner.ok()) return FromEngine(runner.status());
    // The server's reductions (EnsembleReactor): fed in index order, each
    // result then without its frames.
    std::unique_ptr<EnsembleReducer> reducer;
    if (plan.reduce) reducer = std::make_unique<EnsembleReducer>(spec, options);
    tether::RunEnsemble(**runner, plan.workers, [&](v1::EnsembleInstanceResult&& r) {
      if (reducer) reducer->Add(&r);
      on_result(r);
    });
    if (reducer && reduction != nullptr) reducer->Fill(reduction);
    return {};
  }
};

}  // namespace

std::unique_ptr<Backend> MakeOfflineBackend() { return std::make_unique<OfflineBackend>(); }

}  // namespace tether::cli
