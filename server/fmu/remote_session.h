// The FMU's remote mode (README "FMU export"): a Tether session on a
// tether-server that an FMU instance advances instead of an in-process
// engine. One RemoteSession per FMU instance; it creates the session at
// fmi2ExitInitializationMode, keeps one CoSimulate stream open on it, and
// deletes every session it created when closed (fmi2Terminate, fmi2Reset,
// fmi2FreeInstance).
//
// FMU states are server-side snapshots (Mark: session and snapshot id),
// saved and restored inside the stream; a serialized state is the
// snapshot's ExportSession bytes, and a deserialized one a session
// imported from them (kept until the RemoteSession closes) with a snapshot
// of its start. A restore of a Mark of another of these sessions moves the
// stream to that session.
//
// The connection: the address, plus TLS and a bearer token from the
// environment variables `tether --server` reads (TETHER_TLS_CA,
// TETHER_CLIENT_TLS_CERT, TETHER_CLIENT_TLS_KEY, TETHER_TLS_SERVER_NAME,
// TETHER_TOKEN, TETHER_TOKEN_FILE, TETHER_ALLOW_PLAINTEXT_TOKEN).
// TETHER_TLS_CERT and TETHER_TLS_KEY, tether-server's own certificate and
// key, are read as the client's only when neither TETHER_CLIENT_TLS_* is
// set, with a deprecation warning (to Connect's `warn`). Unary calls have
// a deadline (kUnaryDeadline); each exchange on the stream has its own
// (StepDeadline: derived from the communication step, at most the
// ceiling TETHER_FMU_STEP_TIMEOUT), so a server that stops answering (a
// vanished host, a stopped process) makes the call an error naming the
// server within that time, and ends the stream. Both channels have HTTP/2
// keepalive (kKeepaliveEnvironment).
//
// Errors are Status values whose message names the call, the server
// address and the gRPC status ("server 127.0.0.1:1: CreateSession:
// UNAVAILABLE: ..."); NOT_FOUND keeps its code (a snapshot dropped beyond
// the server's --max-snapshots, a deleted session).
//
// The header has no gRPC types: a build without the service
// (TETHER_BUILD_SERVICE=OFF) has a Connect that says remote mode is not
// built.
//
// Threading: one FMU instance's; the FMI standard does not allow
// concurrent calls on one instance.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether::fmu {

// Deadline of each unary call (CreateSession, snapshots, export, import,
// delete).
inline constexpr std::chrono::seconds kUnaryDeadline{30};

// The deadline of one exchange on the stream: kStepDeadlineFloor plus
// kStepDeadlinePerSecond per second of communication step `h` (a step may
// run long), at most `ceiling`. The ceiling is the environment variable
// TETHER_FMU_STEP_TIMEOUT (seconds, > 0), else kDefaultStepTimeout.
inline constexpr const char* kStepTimeoutEnvironment = "TETHER_FMU_STEP_TIMEOUT";
inline constexpr std::chrono::seconds kDefaultStepTimeout{120};
inline constexpr std::chrono::seconds kStepDeadlineFloor{10};
inline constexpr double kStepDeadlinePerSecond = 100;
std::chrono::milliseconds StepDeadline(double h, std::chrono::milliseconds ceiling);

// HTTP/2 keepalive on both channels (client::ConnectOptions::keepalive_time):
// after K seconds without activity, between steps too, the FMU pings the
// server, and a ping not answered within T seconds closes the connection,
// so a vanished host is found within K + T (default 10 + 10 s) even while
// the master is not stepping; the next call is then an error naming the
// server at once (UNAVAILABLE: keepalive watchdog timeout). K: the
// environment variable TETHER_FMU_KEEPALIVE (seconds, 1..3600), else
// kDefaultKeepalive; T: TETHER_FMU_KEEPALIVE_TIMEOUT (seconds, > 0), else
// kDefaultKeepaliveTimeout. T is generous: a server on a loaded machine
// (or a niced one) may take seconds to answer a ping. tether-server
// permits client pings every second (server.cc).
inline constexpr const char* kKeepaliveEnvironment = "TETHER_FMU_KEEPALIVE";
inline constexpr const char* kKeepaliveTimeoutEnvironment = "TETHER_FMU_KEEPALIVE_TIMEOUT";
inline constexpr std::chrono::seconds kDefaultKeepalive{10};
inline constexpr std::chrono::seconds kDefaultKeepaliveTimeout{10};

// A server-side snapshot: what a remote FMU state points at.
struct RemoteMark {
  std::string session_id;
  uint64_t snapshot_id = 0;
};

// One communication step's outcome.
struct RemoteStep {
  bool discarded = false;
  double last_successful_time = 0;   // when discarded
  std::string discard_reason;        // when discarded
  v1::State state;                   // t, q, v after the step (or after the discard)
  double max_position_residual = 0;  // of the step's certificate (not when discarded)
  double position_bound = 0;
};

class RemoteSession {
 public:
  // A warning about the environment (a deprecated variable).
  using Warn = std::function<void(const std::string& message)>;
  // A session factory for `address` (connecting is lazy: the first call
  // connects). INVALID_ARGUMENT naming the environment variable for a bad
  // TLS or token option; UNAVAILABLE when the build has no gRPC client.
  // Warnings go to `warn`, or to stderr when it is empty.
  static StatusOr<std::unique_ptr<RemoteSession>> Connect(const std::string& address,
                                                          const Warn& warn = nullptr);
  virtual ~RemoteSession() = default;

  virtual const std::string& address() const = 0;
  // The session the stream advances ("" before Start).
  virtual const std::string& session_id() const = 0;

  // Creates the session of `spec` named `display_name`, moves it to
  // `state` when given (fmi2SetupExperiment's startTime), and opens the
  // stream.
  virtual Status Start(const v1::SimulationSpec& spec, const std::string& display_name,
                       const v1::State* state) = 0;
  // One communication step of `h` with every input's value (by name),
  // ON_FAILURE_DISCARD; `rates` (by name, none: held) ramp the inputs over
  // this step (CoSimulateRequest.input_rates).
  virtual Status Step(double h, const std::vector<std::pair<std::string, double>>& inputs,
                      const std::vector<std::pair<std::string, double>>& rates,
                      RemoteStep* out) = 0;
  // A snapshot of the current state, inside the stream.
  virtual Status Save(RemoteMark* mark) = 0;
  // Back to `mark` (moving the stream to its session when it is another);
  // *state is then the restored t, q, v.
  virtual Status Restore(const RemoteMark& mark, v1::State* state) = 0;
  // Deletes the snapshot (a session already deleted is no error).
  virtual Status Free(const RemoteMark& mark) = 0;
  // The snapshot's export bytes (ExportSession with its snapshot_id).
  virtual Status Export(const RemoteMark& mark, std::string* bytes) = 0;
  // Puts the stream's session in `state` (CoSimulateRequest.restore_state:
  // no session or snapshot is made); *out is then the restored t, q, v.
  virtual Status RestoreState(const v1::SimulationState& state, v1::State* out) = 0;
  // Ends the stream and deletes every session this object created; the
  // first error, the rest are still tried. Start may be called again.
  virtual Status Close() = 0;
};

}  // namespace tether::fmu
