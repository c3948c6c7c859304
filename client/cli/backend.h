// What carries out `tether validate|evaluate|run`: the engine in this process
// (offline) or a tether-server (--server ADDR). A backend only produces data
// (reports, frames, certificates, warnings, statuses); everything the user
// sees (messages, output files, formats, progress, exit codes, defaults) is
// the driver's (driver.h), so both backends give the same bytes by
// construction.
//
// Threading: a Backend and its Sessions are used by one thread (the CLI's
// main thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/output.h"
#include "engine/status.h"
#include "tether/v1/ensemble.pb.h"
#include "tether/v1/simulation.pb.h"

namespace tether::cli {

// The outcome of a backend call in the terms the driver reports it in: how
// it ends the process (kind), the status code's canonical name
// ("INVALID_ARGUMENT", ...), the message and the field violations, whose
// paths are the backend's ("system..." offline, "spec.system..." through a
// server, which names fields relative to its request).
struct [[nodiscard]] BackendStatus {
  enum class Kind {
    kOk,
    kBadInput,   // the description or the request is wrong (INVALID_ARGUMENT)
    kRunFailed,  // the simulation failed numerically (ABORTED)
    kFailure,    // anything else: unreachable server, I/O, NOT_FOUND, ...
  };
  Kind kind = Kind::kOk;
  std::string code;
  std::string message;
  std::vector<FieldViolation> violations;

  bool ok() const { return kind == Kind::kOk; }
};

// How far `tether run` goes and what it records, as the driver decided from
// the command line (defaults applied).
struct RunPlan {
  uint64_t steps = 0;                     // stop after this many steps (0: no limit)
  std::optional<double> until;            // stop at this absolute time
  uint64_t every = 1;                     // frames at run steps 0, every, 2*every, ... and the last
                                          // (0: none but the last, only with output_interval)
  std::optional<double> output_interval;  // also frames at t0 + k * output_interval
  bool certificate = true;                // record the residual certificate
};

// A compiled description positioned at its initial state, ready for one run.
class Session {
 public:
  // What the driver needs before the run: the column names of the csv
  // output, the start of the run (for --until and the progress bar) and the
  // WARNING diagnostics of the compilation.
  struct Info {
    ColumnNames names;
    double start_time = 0;
    uint64_t start_step = 0;  // frames carry absolute step numbers
    std::vector<v1::Diagnostic> warnings;
  };

  // Receives the frames of the run, in order.
  using FrameCallback = std::function<void(const v1::Frame&)>;

  virtual ~Session() = default;
  virtual const Info& info() const = 0;
  // Fixes the run; errors that need no frame computed may show here or in
  // Stream (a server only checks the plan when the run starts).
  virtual BackendStatus Begin(const RunPlan& plan) = 0;
  // Runs the plan given to Begin, handing every frame to `on_frame`. A run
  // that fails numerically delivers the frames computed before the failure
  // and returns kRunFailed. `certificate` receives the certificate of the
  // run's window when the plan asked for one and it was recorded (also for
  // a failed run), and is left empty otherwise.
  virtual BackendStatus Stream(const FrameCallback& on_frame,
                               std::optional<v1::Certificate>* certificate) = 0;
  // Releases what the session holds (a server-side session); called once,
  // after the run, whatever its outcome.
  virtual BackendStatus Close() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The validation report of `spec` (an invalid spec is a report with
  // valid() == false, not an error).
  virtual BackendStatus Validate(const v1::SimulationSpec& spec, v1::ValidationReport* report) = 0;
  // One evaluation at the initial state. `warnings` receives the WARNING
  // diagnostics of the compilation when it succeeded, also when the
  // evaluation itself then fails.
  virtual BackendStatus Evaluate(const v1::SimulationSpec& spec, v1::Frame* frame,
                                 std::vector<v1::Diagnostic>* warnings) = 0;
  // Compiles `spec` into a session at its initial state.
  virtual BackendStatus Open(const v1::SimulationSpec& spec, std::unique_ptr<Session>* session) = 0;

  // `tether ensemble`: every instance of plan.ensemble run to plan.until,
  // each result handed to `on_result` in index order (engine/ensemble.h).
  // Offline on plan.workers threads; a server chooses its own.
  struct EnsemblePlan {
    v1::EnsembleSpec ensemble;
    double until = 0;
    bool certificate = true;
    int workers = 1;
    bool lanes = true;                      // offline: the lane path where it applies
    bool fast_functions = false;            // its vectorised functions (FAST)
    std::optional<double> output_interval;  // each instance's frames on a grid
    bool reduce = false;                    // ... reduced over the instances
  };
  using ResultCallback = std::function<void(const v1::EnsembleInstanceResult&)>;
  // With plan.reduce, *reduction is filled once every result was handed
  // over (each then without its frames).
  virtual BackendStatus RunEnsemble(const v1::SimulationSpec& spec, const EnsemblePlan& plan,
                                    const ResultCallback& on_result,
                                    v1::EnsembleReduction* reduction) = 0;
};

// The engine in this process (offline_backend.cc).
std::unique_ptr<Backend> MakeOfflineBackend();

}  // namespace tether::cli
