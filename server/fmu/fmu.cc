// The FMI 2.0 Co-Simulation FMU of a Tether description, in process: the
// engine runs inside the importing process. One shared library serves every
// description: fmi2Instantiate reads resources/spec.json from
// fmuResourceLocation, checks that its GUID (fmu::Guid) is the one the
// importer read from modelDescription.xml, and compiles it.
//
// A communication step from t by h is one engine run with until_time =
// t + h (the last engine step is shortened to land on it; t is the
// engine's time on its step grid, the master's up to rounding), inputs
// held.
// The outputs are one evaluation at the state reached (Simulation::Evaluate:
// q, v, lambda and the description's outputs), so they are a function of
// the state and the inputs, and restoring a state restores them bit for bit.
//
// State machine (FMI 2.0 section 4.2.4, simplified): instantiated ->
// (fmi2EnterInitializationMode) initialization -> (fmi2ExitInitializationMode)
// stepComplete <-> stepFailed (a Discard) -> (fmi2Terminate) terminated;
// fmi2Reset goes back to instantiated from any of them. A call in a state
// that does not allow it is fmi2Error with a logged message. Unlike the
// standard's strict stepFailed state, fmi2DoStep may be retried after a
// Discard (the state was put back to the last communication point).
//
// Remote mode (remote_session.h): when the String parameter tether.server
// (set before fmi2ExitInitializationMode; its start value from
// resources/server.txt) or else the environment variable TETHER_FMU_SERVER
// names a tether-server, fmi2ExitInitializationMode creates a session of
// the description there and each fmi2DoStep is one CoSimulate exchange
// (ON_FAILURE_DISCARD) with every input's current value. The engine here
// then only evaluates: the values are one Simulation::Evaluate at the state
// (t, q, v) the server returns, with this instance's inputs, by the same
// code as in process, so both modes give the same bits. FMU states are
// server-side snapshots; serialized, they are the same bytes as in process
// (an export envelope tagged "tether-fmu-state 1"), so a state serialized in
// one mode is restored in the other. fmi2Terminate, fmi2Reset and
// fmi2FreeInstance delete the instance's sessions.
//
// Every entry point catches every exception: nothing propagates into the
// importer. Instances share nothing (the compiled model is per instance;
// in remote mode each has its own sessions and stream).
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "engine/status.h"
#include "fmu/fmi2.h"
#include "fmu/model_description.h"
#include "fmu/remote_session.h"
#include "tether/v1/simulation.pb.h"

namespace tether::fmu {
namespace {

// The serialized state's display_name: the FMU's running certificate
// figures, as hexadecimal floating point (exact), after this tag.
constexpr std::string_view kStateTag = "tether-fmu-state 1";

enum class Mode { kInstantiated, kInitialization, kStepComplete, kStepFailed, kTerminated, kError };

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kInstantiated: return "instantiated";
    case Mode::kInitialization: return "initialization mode";
    case Mode::kStepComplete: return "step complete";
    case Mode::kStepFailed: return "step failed (after fmi2Discard)";
    case Mode::kTerminated: return "terminated";
    case Mode::kError: return "error";
  }
  return "?";
}

// What an FMU state (fmi2GetFMUstate) holds.
struct SavedState {
  // The description the state belongs to (with the parameters it ran with).
  std::shared_ptr<const v1::SimulationSpec> spec;
  std::string spec_sha256;
  // In process, and a deserialized state: the engine's state.
  v1::SimulationState state;
  double max_position_residual = 0;
  double position_bound = 0;
  // Remote mode: the server-side snapshot (snapshot_id 0: none yet; a
  // deserialized state gets one when first restored) and the instance's
  // inputs when saved (the snapshot holds the last step's).
  RemoteMark mark;
  std::vector<double> inputs;
  // The serialized bytes, once made (a state never changes).
  std::string serialized;
  bool remote() const { return mark.snapshot_id != 0; }
};

// A frame sink that keeps nothing: the outputs are evaluated at the end.
class NullSink final : public FrameSink {
 public:
  void Add(const FrameView&) override {}
};

std::string Hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

class Instance {
 public:
  std::string name;
  fmi2CallbackLogger logger = nullptr;
  fmi2ComponentEnvironment env = nullptr;
  bool debug = false;

  v1::SimulationSpec original_spec;  // resources/spec.json
  std::shared_ptr<const Model> original_model;
  v1::SimulationSpec spec;  // with the parameters set before initialization
  std::string spec_sha256;  // of `sim`'s description
  // `sim`'s description, shared with the FMU states taken from it.
  std::shared_ptr<const v1::SimulationSpec> sim_spec;
  bool parameters_changed = false;
  std::unique_ptr<Simulation> sim;
  std::vector<Variable> vars;
  std::vector<double> inputs;  // current values, by input index

  // Remote mode: the String parameter tether.server (and its start value
  // from resources/server.txt), the address chosen at
  // fmi2ExitInitializationMode ("" = in process) and the connection (null
  // in process, and after fmi2Terminate deleted the sessions).
  std::string server_parameter;
  std::string server_start;
  std::string server;
  std::unique_ptr<RemoteSession> remote;

  Mode mode = Mode::kInstantiated;
  std::optional<double> start_time;
  std::optional<double> stop_time;
  double last_successful_time = 0;
  double max_position_residual = 0;
  double position_bound = 0;
  // Values of the calculated variables at the current state and inputs
  // (by value reference); recomputed when stale.
  std::vector<double> values;
  bool values_stale = true;

  void Log(fmi2Status status, const char* category, const std::string& message) const {
    if (logger == nullptr) return;
    // The message goes through "%s": text from the description is never a
    // format string.
    logger(env, name.c_str(), status, category, "%s", message.c_str());
  }
  fmi2Status Error(const std::string& message) const {
    Log(fmi2Error, "logStatusError", message);
    return fmi2Error;
  }
  void Debug(const std::string& message) const {
    if (debug) Log(fmi2OK, "logAll", message);
  }

  // The simulation at the description's initial state, with the default
  // inputs, from the original compiled model (no compilation).
  void ResetToOriginal() {
    CloseRemote("fmi2Reset");
    server_parameter = server_start;
    server.clear();
    spec = original_spec;
    spec_sha256 = SpecSha256(spec);
    sim_spec = std::make_shared<const v1::SimulationSpec>(spec);
    parameters_changed = false;
    sim = Simulation::FromModel(spec, original_model);
    vars = Variables(*sim);
    inputs.clear();
    for (const auto& in : spec.system().inputs()) inputs.push_back(in.default_value());
    mode = Mode::kInstantiated;
    start_time.reset();
    stop_time.reset();
    last_successful_time = spec.initial().t();
    max_position_residual = position_bound = 0;
    values.assign(vars.size(), 0.0);
    values_stale = true;
  }

  // Recompiles with the parameters set before initialization (once).
  fmi2Status ApplyParameters() {
    if (!parameters_changed) return fmi2OK;
    auto created = Simulation::Create(spec);
    if (!created.ok()) {
      std::string m =
          "the description with the parameters set does not compile: " + created.status().message();
      for (const auto& v : created.status().violations())
        m += "; " + v.field + ": " + v.description;
      return Error(m);
    }
    sim = std::move(*created);
    spec_sha256 = SpecSha256(spec);
    sim_spec = std::make_shared<const v1::SimulationSpec>(spec);
    parameters_changed = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Status s = sim->SetInput(sim->input_names()[i], inputs[i]);
      if (!s.ok()) return Error(s.message());
    }
    values_stale = true;
    Debug("recompiled the description with the parameters set");
    return fmi2OK;
  }

  // Evaluates the calculated variables at the current state and inputs.
  fmi2Status RefreshValues() {
    if (!values_stale) return fmi2OK;
    if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
    v1::Frame frame;
    Status s = sim->Evaluate(&frame);
    if (!s.ok()) return Error("evaluation at the current state failed: " + s.message());
    for (size_t r = 0; r < vars.size(); ++r) {
      const Variable& v = vars[r];
      const int i = v.index;
      switch (v.kind) {
        case VariableKind::kParameter: values[r] = spec.system().parameters(i).value(); break;
        case VariableKind::kInput: values[r] = inputs[static_cast<size_t>(i)]; break;
        case VariableKind::kOutput: values[r] = frame.outputs(i); break;
        case VariableKind::kCoordinate: values[r] = frame.q(i); break;
        case VariableKind::kVelocity: values[r] = frame.v(i); break;
        case VariableKind::kMultiplier: values[r] = frame.lambda(i); break;
        case VariableKind::kMaxPositionResidual: values[r] = max_position_residual; break;
        case VariableKind::kPositionBound: values[r] = position_bound; break;
      }
    }
    values_stale = false;
    return fmi2OK;
  }

  // Remote mode: ends the stream and deletes the sessions (a failure is
  // logged as a warning: the instance goes on).
  void CloseRemote(const char* function) {
    if (!remote) return;
    if (Status s = remote->Close(); !s.ok())
      Log(fmi2Warning, "logStatusError", std::string(function) + ": " + s.message());
    remote.reset();
  }

  // The remote mode's address: the parameter, else the environment
  // variable; "" = in process.
  std::string ServerAddress() const {
    if (!server_parameter.empty()) return server_parameter;
    const char* env = std::getenv(kServerEnvironment);
    return env != nullptr ? env : "";
  }

  // Remote mode after fmi2Terminate: FMU states are gone with the sessions.
  bool RemoteClosed(const char* function) const {
    if (server.empty() || remote) return false;
    Error(std::string(function) + ": the remote session on " + server +
          " was deleted by fmi2Terminate (and its FMU states with it)");
    return true;
  }

  fmi2Status ExitInitialization() {
    if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
    std::optional<v1::State> moved;
    if (start_time && *start_time != spec.initial().t()) {
      v1::State st = spec.initial();
      st.set_t(*start_time);
      if (Status s = sim->SetState(st, "startTime"); !s.ok()) return Error(s.message());
      moved = st;
    }
    if (const std::string address = ServerAddress(); !address.empty()) {
      // A deprecated variable's warning: to the logger, else stderr.
      auto warn = [this](const std::string& message) {
        if (logger != nullptr) {
          Log(fmi2Warning, "logStatusError", "fmi2ExitInitializationMode: " + message);
        } else {
          std::fprintf(stderr, "tether-fmi2: %s\n", message.c_str());
        }
      };
      auto connected = RemoteSession::Connect(address, warn);
      if (!connected.ok())
        return Error("fmi2ExitInitializationMode: " + connected.status().message());
      std::unique_ptr<RemoteSession> session = std::move(connected).value();
      if (Status s = session->Start(spec, name, moved ? &*moved : nullptr); !s.ok())
        return Error("fmi2ExitInitializationMode: " + s.message());
      remote = std::move(session);
      server = address;
      Debug("remote mode: session " + remote->session_id() + " on " + server);
    }
    // The certificate's figures start at the initial state's |g|.
    v1::Frame frame;
    if (Status s = sim->Evaluate(&frame); !s.ok())
      return Error("evaluation at the initial state failed: " + s.message());
    double g = 0;
    for (double e : frame.residuals().position()) g = std::max(g, std::fabs(e));
    max_position_residual = position_bound = g;
    last_successful_time = sim->time();
    values_stale = true;
    mode = Mode::kStepComplete;
    return RefreshValues();
  }

  fmi2Status DoStep(double t, double h) {
    if (!(std::isfinite(t) && std::isfinite(h) && h > 0)) {
      return Error(
          "fmi2DoStep: expected a finite currentCommunicationPoint and "
          "communicationStepSize > 0, found t = " +
          FormatNumber(t) + ", h = " + FormatNumber(h));
    }
    const double now = sim->time();
    if (std::fabs(t - now) > 1e-9 * std::max(1.0, std::fabs(now))) {
      return Error("fmi2DoStep: currentCommunicationPoint " + FormatNumber(t) +
                   " is not the FMU's current time " + FormatNumber(now));
    }
    // From the engine's own time (its step grid's, Simulation::grid_time),
    // not the master's t (equal up to the master's rounding): with h a
    // multiple of the description's step size, the engine steps are those
    // of `tether run`, bit for bit, however many communication steps.
    const double until = sim->grid_time() + h;
    if (stop_time && until > *stop_time + 1e-12 * std::max(1.0, std::fabs(*stop_time))) {
      return Error("fmi2DoStep: t + h = " + FormatNumber(until) + " is past the stopTime " +
                   FormatNumber(*stop_time) + " given to fmi2SetupExperiment");
    }
    if (remote) return DoStepRemote(t, h, now);
    v1::SimulationState before;
    sim->SaveState(&before);
    RunOptions run;
    run.until_time = until;
    run.every = UINT64_MAX;
    run.emit_start = false;
    run.certificate = true;
    Status s = sim->BeginRun(run);
    NullSink sink;
    while (s.ok() && !sim->run_done()) s = sim->Advance(uint64_t{1} << 20, &sink);
    if (!s.ok()) {
      // Back to the last communication point.
      Status r = sim->RestoreState(before);
      values_stale = true;
      if (!r.ok()) {
        mode = Mode::kError;
        return Error("fmi2DoStep: could not restore the state after a failed step: " + r.message());
      }
      if (s.code() == StatusCode::kAborted) {
        mode = Mode::kStepFailed;
        last_successful_time = now;
        Log(fmi2Discard, "logStatusDiscard",
            "fmi2DoStep from t = " + FormatNumber(t) + " by h = " + FormatNumber(h) +
                " failed numerically (the state stays at t = " + FormatNumber(now) +
                "): " + s.message());
        return fmi2Discard;
      }
      return Error("fmi2DoStep: " + s.message());
    }
    v1::Certificate cert;
    sim->GetCertificate(&cert);
    max_position_residual = std::max(max_position_residual, cert.max_position_residual());
    position_bound = std::max(position_bound, cert.position_bound());
    last_successful_time = sim->time();
    mode = Mode::kStepComplete;
    values_stale = true;
    Debug("fmi2DoStep: t = " + FormatNumber(sim->time()) + " after " +
          std::to_string(cert.steps()) + " engine steps");
    return fmi2OK;
  }

  // One communication step on the server (DoStep has checked t and h).
  fmi2Status DoStepRemote(double t, double h, double now) {
    std::vector<std::pair<std::string, double>> values;
    for (size_t i = 0; i < inputs.size(); ++i)
      values.emplace_back(sim->input_names()[i], inputs[i]);
    RemoteStep step;
    if (Status s = remote->Step(h, values, &step); !s.ok()) {
      mode = Mode::kError;
      return Error("fmi2DoStep: " + s.message());
    }
    if (step.discarded) {
      // The server put the session back to the last communication point.
      mode = Mode::kStepFailed;
      last_successful_time = step.last_successful_time;
      Log(fmi2Discard, "logStatusDiscard",
          "fmi2DoStep from t = " + FormatNumber(t) + " by h = " + FormatNumber(h) +
              " failed numerically on " + server + " (the state stays at t = " +
              FormatNumber(step.last_successful_time) + "): " + step.discard_reason);
      return fmi2Discard;
    }
    if (Status s = sim->SetState(step.state, "frame"); !s.ok()) {
      mode = Mode::kError;
      return Error("fmi2DoStep: the state " + server + " returned: " + s.message());
    }
    max_position_residual = std::max(max_position_residual, step.max_position_residual);
    position_bound = std::max(position_bound, step.position_bound);
    last_successful_time = sim->time();
    mode = Mode::kStepComplete;
    values_stale = true;
    Debug("fmi2DoStep: t = " + FormatNumber(sim->time()) + " on " + server);
    return fmi2OK;
  }

  fmi2Status Save(SavedState* saved) {
    if (RemoteClosed("fmi2GetFMUstate")) return fmi2Error;
    saved->spec = sim_spec;
    saved->spec_sha256 = spec_sha256;
    saved->max_position_residual = max_position_residual;
    saved->position_bound = position_bound;
    if (remote) {
      saved->inputs = inputs;
      if (Status s = remote->Save(&saved->mark); !s.ok())
        return Error("fmi2GetFMUstate: " + s.message());
      return fmi2OK;
    }
    sim->SaveState(&saved->state);
    return fmi2OK;
  }

  // Deletes a state's snapshot on the server (remote mode).
  void Free(const SavedState& saved) {
    if (!remote || !saved.remote()) return;
    if (Status s = remote->Free(saved.mark); !s.ok())
      Log(fmi2Warning, "logStatusError", "fmi2FreeFMUstate: " + s.message());
  }

  fmi2Status Restore(SavedState& saved) {
    if (saved.spec_sha256 != spec_sha256) {
      return Error(
          "fmi2SetFMUstate: the state belongs to another description (or other "
          "parameter values) than this instance's");
    }
    if (RemoteClosed("fmi2SetFMUstate")) return fmi2Error;
    if (remote) return RestoreRemote(saved);
    if (saved.remote()) {
      return Error(
          "fmi2SetFMUstate: the state is a snapshot on a tether-server and this instance "
          "runs in process (serialize it to move it between modes)");
    }
    if (Status s = sim->RestoreState(saved.state); !s.ok())
      return Error("fmi2SetFMUstate: " + s.message());
    inputs.assign(saved.state.inputs().begin(), saved.state.inputs().end());
    max_position_residual = saved.max_position_residual;
    position_bound = saved.position_bound;
    last_successful_time = sim->time();
    mode = Mode::kStepComplete;
    values_stale = true;
    return fmi2OK;
  }

  fmi2Status RestoreRemote(SavedState& saved) {
    if (!saved.remote()) {
      // A deserialized state (or one taken in process): a session of its
      // own on the server, made once.
      const std::string bytes = Serialize(saved);
      if (Status s = remote->Import(bytes, name, &saved.mark); !s.ok())
        return Error("fmi2SetFMUstate: " + s.message());
      saved.inputs.assign(saved.state.inputs().begin(), saved.state.inputs().end());
    }
    v1::State state;
    if (Status s = remote->Restore(saved.mark, &state); !s.ok()) {
      std::string m = "fmi2SetFMUstate: " + s.message();
      if (s.code() == StatusCode::kNotFound) {
        m += " (the snapshot was dropped, as the server keeps at most --max-snapshots "
             "per session, 64 by default, and drops the oldest; or its session was deleted "
             "by fmi2Reset: this FMU state is gone; the instance is still at t = " +
             FormatNumber(sim->time()) + ")";
        return Error(m);
      }
      mode = Mode::kError;
      return Error(m);
    }
    if (Status s = sim->SetState(state, "frame"); !s.ok()) {
      mode = Mode::kError;
      return Error("fmi2SetFMUstate: the state " + server + " returned: " + s.message());
    }
    inputs = saved.inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (Status s = sim->SetInput(sim->input_names()[i], inputs[i]); !s.ok())
        return Error("fmi2SetFMUstate: " + s.message());
    }
    max_position_residual = saved.max_position_residual;
    position_bound = saved.position_bound;
    last_successful_time = sim->time();
    mode = Mode::kStepComplete;
    values_stale = true;
    return fmi2OK;
  }

  // The export envelope (engine/session_export.h) of a saved state: the
  // description, the engine's state and the figures in display_name.
  static std::string Tagged(v1::SessionExport payload, const SavedState& saved) {
    payload.set_display_name(std::string(kStateTag) + " " + Hex(saved.max_position_residual) + " " +
                             Hex(saved.position_bound));
    return EncodeSessionExport(std::move(payload));
  }

  // In process (and a deserialized state).
  static std::string Serialize(const SavedState& saved) {
    v1::SessionExport payload;
    *payload.mutable_spec() = *saved.spec;
    *payload.mutable_state() = saved.state;
    return Tagged(std::move(payload), saved);
  }

  // Any state: a remote one is its snapshot's export (from the server, once)
  // with the inputs the instance had when it was saved, so the bytes are
  // those of the same state in process.
  fmi2Status Serialize(SavedState& saved, const char* function, const std::string** bytes) {
    if (!saved.serialized.empty()) {
      *bytes = &saved.serialized;
      return fmi2OK;
    }
    if (!saved.remote()) {
      saved.serialized = Serialize(saved);
      *bytes = &saved.serialized;
      return fmi2OK;
    }
    if (RemoteClosed(function)) return fmi2Error;
    if (!remote) {
      return Error(std::string(function) + ": the state is a snapshot on " + saved.mark.session_id +
                   "'s server and this instance is not connected to it");
    }
    std::string exported;
    if (Status s = remote->Export(saved.mark, &exported); !s.ok())
      return Error(std::string(function) + ": " + s.message());
    v1::SessionExport payload;
    if (Status s = DecodeSessionExport(exported, &payload, "ExportSessionResponse.data"); !s.ok())
      return Error(std::string(function) + ": the server's export: " + s.message());
    payload.mutable_state()->mutable_inputs()->Assign(saved.inputs.begin(), saved.inputs.end());
    saved.serialized = Tagged(std::move(payload), saved);
    *bytes = &saved.serialized;
    return fmi2OK;
  }

  // A serialized state of this instance's description, checked in full
  // (envelope, description, figures, and the state restored into a scratch
  // simulation) so that fmi2SetFMUstate cannot fail on it later.
  fmi2Status Deserialize(std::string_view bytes, SavedState* saved) {
    // Parameters set in initialization mode: compare with the description
    // they make.
    if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
    v1::SessionExport payload;
    Status s = DecodeSessionExport(bytes, &payload, "serializedState");
    if (!s.ok()) {
      std::string m = "fmi2DeSerializeFMUstate: not a valid serialized state: " + s.message();
      return Error(m);
    }
    if (payload.spec_sha256() != spec_sha256) {
      return Error(
          "fmi2DeSerializeFMUstate: the state belongs to another description (or "
          "other parameter values) than this instance's");
    }
    std::istringstream tag(payload.display_name());
    std::string w1, w2, a, b;
    tag >> w1 >> w2 >> a >> b;
    char* end1 = nullptr;
    char* end2 = nullptr;
    const double m = std::strtod(a.c_str(), &end1);
    const double p = std::strtod(b.c_str(), &end2);
    if (w1 + " " + w2 != kStateTag || a.empty() || b.empty() || *end1 != '\0' || *end2 != '\0') {
      return Error(
          "fmi2DeSerializeFMUstate: the bytes are a Tether session export but not an "
          "FMU state (no '" +
          std::string(kStateTag) + "' figures)");
    }
    auto scratch = Simulation::FromModel(*sim_spec, sim->shared_model());
    if (Status r = scratch->RestoreState(payload.state(), "serializedState.state"); !r.ok())
      return Error("fmi2DeSerializeFMUstate: " + r.message());
    saved->spec = sim_spec;
    saved->spec_sha256 = payload.spec_sha256();
    saved->state = payload.state();
    saved->max_position_residual = m;
    saved->position_bound = p;
    return fmi2OK;
  }
};

// "file:///a/b%20c/" -> "/a/b c/"; "" when it is no local file URI.
std::string PathFromFileUri(std::string_view uri) {
  std::string_view rest;
  if (uri.substr(0, 7) == "file://") {
    rest = uri.substr(7);
    // An authority: empty or "localhost".
    if (rest.substr(0, 9) == "localhost") rest.remove_prefix(9);
    if (rest.empty() || rest[0] != '/') return "";
  } else if (uri.substr(0, 6) == "file:/") {
    rest = uri.substr(5);
  } else {
    return "";
  }
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%') {
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      if (i + 2 >= rest.size()) return "";  // "%" or "%X" at the end
      const int hi = hex(rest[i + 1]), lo = hex(rest[i + 2]);
      if (hi < 0 || lo < 0) return "";
      const char c = static_cast<char>(hi * 16 + lo);
      if (c == '\0') return "";
      path += c;
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

Instance* Cast(fmi2Component c) { return static_cast<Instance*>(c); }

// Runs `body` on a valid instance whose mode is one of `allowed`; any
// exception is an fmi2Error (fmi2Fatal for std::bad_alloc).
template <class F>
fmi2Status Guarded(fmi2Component c, const char* function, std::initializer_list<Mode> allowed,
                   F&& body) {
  Instance* inst = Cast(c);
  if (inst == nullptr) return fmi2Error;
  try {
    bool ok = false;
    for (Mode m : allowed) ok = ok || m == inst->mode;
    if (!ok) {
      return inst->Error(std::string(function) + ": not allowed in state '" + ModeName(inst->mode) +
                         "'");
    }
    return body(*inst);
  } catch (const std::bad_alloc&) {
    inst->mode = Mode::kError;
    inst->Log(fmi2Fatal, "logStatusError", std::string(function) + ": out of memory");
    return fmi2Fatal;
  } catch (const std::exception& e) {
    return inst->Error(std::string(function) + ": " + e.what());
  } catch (...) {
    return inst->Error(std::string(function) + ": unexpected exception");
  }
}

constexpr std::initializer_list<Mode> kAny = {Mode::kInstantiated, Mode::kInitialization,
                                              Mode::kStepComplete, Mode::kStepFailed,
                                              Mode::kTerminated};
constexpr std::initializer_list<Mode> kRunning = {Mode::kStepComplete, Mode::kStepFailed};

fmi2Status Unsupported(fmi2Component c, const char* function, const char* why) {
  return Guarded(c, function, kAny,
                 [&](Instance& inst) { return inst.Error(std::string(function) + ": " + why); });
}

// Checks a value-reference array against the variable list.
bool CheckRefs(const Instance& inst, const char* function, const fmi2ValueReference vr[],
               size_t nvr, const void* values) {
  if (nvr > 0 && (vr == nullptr || values == nullptr)) {
    inst.Error(std::string(function) + ": null value-reference or value array");
    return false;
  }
  for (size_t k = 0; k < nvr; ++k) {
    if (vr[k] >= inst.vars.size()) {
      inst.Error(std::string(function) + ": unknown valueReference " + std::to_string(vr[k]) +
                 " (this FMU has 0.." + std::to_string(inst.vars.size() - 1) + ")");
      return false;
    }
  }
  return true;
}

// Checks a String value-reference array: only kServerVariable is a String.
bool CheckStringRefs(const Instance& inst, const char* function, const fmi2ValueReference vr[],
                     size_t nvr, const void* values) {
  if (nvr > 0 && (vr == nullptr || values == nullptr)) {
    inst.Error(std::string(function) + ": null value-reference or value array");
    return false;
  }
  for (size_t k = 0; k < nvr; ++k) {
    if (vr[k] != inst.vars.size()) {
      inst.Error(std::string(function) + ": valueReference " + std::to_string(vr[k]) +
                 " is not a String variable (the one String variable, " + kServerVariable +
                 ", is " + std::to_string(inst.vars.size()) + ")");
      return false;
    }
  }
  return true;
}

// Get/Set of a type this FMU has no variables of.
fmi2Status NoVariablesOfType(fmi2Component c, const char* function, const char* type, size_t nvr) {
  return Guarded(c, function, kAny, [&](Instance& inst) {
    if (nvr == 0) return fmi2OK;
    return inst.Error(std::string(function) + ": this FMU has no " + type +
                      " variables (all are Real)");
  });
}

}  // namespace
}  // namespace tether::fmu

using tether::fmu::Guarded;
using tether::fmu::Instance;
using tether::fmu::kAny;
using tether::fmu::kRunning;
using tether::fmu::Mode;
using tether::fmu::SavedState;
using tether::fmu::VariableKind;

extern "C" {

const char* fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char* fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                               const fmi2String categories[]) {
  return Guarded(c, "fmi2SetDebugLogging", kAny, [&](Instance& inst) {
    for (size_t i = 0; i < nCategories; ++i) {
      const std::string cat = categories && categories[i] ? categories[i] : "";
      if (cat != "logAll" && cat != "logStatusError" && cat != "logStatusDiscard")
        return inst.Error("fmi2SetDebugLogging: unknown log category '" + cat + "'");
    }
    inst.debug = loggingOn != fmi2False;
    return fmi2OK;
  });
}

fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                              fmi2String fmuResourceLocation,
                              const fmi2CallbackFunctions* functions, fmi2Boolean visible,
                              fmi2Boolean loggingOn) {
  using namespace tether;
  fmi2CallbackLogger logger = functions ? functions->logger : nullptr;
  fmi2ComponentEnvironment env = functions ? functions->componentEnvironment : nullptr;
  const char* name = instanceName ? instanceName : "";
  auto fail = [&](const std::string& message) -> fmi2Component {
    if (logger) logger(env, name, fmi2Error, "logStatusError", "%s", message.c_str());
    return nullptr;
  };
  try {
    if (instanceName == nullptr || *instanceName == '\0')
      return fail("fmi2Instantiate: instanceName must be a non-empty string");
    if (fmuType != fmi2CoSimulation)
      return fail("fmi2Instantiate: this FMU supports Co-Simulation only (fmuType " +
                  std::to_string(static_cast<int>(fmuType)) + ")");
    if (fmuResourceLocation == nullptr)
      return fail(
          "fmi2Instantiate: fmuResourceLocation is required (the FMU reads "
          "resources/spec.json)");
    std::string dir = fmu::PathFromFileUri(fmuResourceLocation);
    if (dir.empty()) {
      return fail("fmi2Instantiate: fmuResourceLocation '" + EscapeForMessage(fmuResourceLocation) +
                  "': expected a file:// URI of the FMU's resources directory");
    }
    if (dir.back() != '/') dir += '/';
    const std::string path = dir + "spec.json";
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("fmi2Instantiate: cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    auto inst = std::make_unique<Instance>();
    inst->name = name;
    inst->logger = logger;
    inst->env = env;
    inst->debug = loggingOn != fmi2False;
    if (Status s = ParseSpecJson(text.str(), &inst->original_spec, path); !s.ok())
      return fail("fmi2Instantiate: " + s.message());
    const std::string guid = fmu::Guid(inst->original_spec);
    if (fmuGUID == nullptr || guid != fmuGUID) {
      return fail("fmi2Instantiate: GUID mismatch: the importer gave '" +
                  EscapeForMessage(fmuGUID ? fmuGUID : "") + "', resources/spec.json has '" + guid +
                  "' (modelDescription.xml and resources/spec.json are not of one FMU)");
    }
    auto created = Simulation::Create(inst->original_spec);
    if (!created.ok()) {
      std::string m =
          "fmi2Instantiate: the description does not compile: " + created.status().message();
      for (const auto& v : created.status().violations())
        m += "; " + v.field + ": " + v.description;
      return fail(m);
    }
    inst->original_model = (*created)->shared_model();
    // The remote mode's address baked in by `tether --server ADDR fmu`.
    if (std::ifstream server(dir + fmu::kServerResource, std::ios::binary); server) {
      std::getline(server, inst->server_start);
      while (!inst->server_start.empty() &&
             (inst->server_start.back() == '\r' || inst->server_start.back() == ' '))
        inst->server_start.pop_back();
    }
    inst->ResetToOriginal();
    inst->Debug("instantiated from " + path + " (" + std::to_string(inst->vars.size()) +
                " variables)");
    return inst.release();
  } catch (const std::exception& e) {
    return fail(std::string("fmi2Instantiate: ") + e.what());
  } catch (...) {
    return fail("fmi2Instantiate: unexpected exception");
  }
}

void fmi2FreeInstance(fmi2Component c) {
  try {
    delete static_cast<Instance*>(c);
  } catch (...) {
  }
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                               fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
  return Guarded(c, "fmi2SetupExperiment", {Mode::kInstantiated}, [&](Instance& inst) {
    if (!std::isfinite(startTime))
      return inst.Error("fmi2SetupExperiment: startTime must be finite");
    if (stopTimeDefined && !(stopTime > startTime))
      return inst.Error("fmi2SetupExperiment: stopTime must be later than startTime");
    inst.start_time = startTime;
    if (stopTimeDefined) inst.stop_time = stopTime;
    // The tolerance is not used: the integrator's method and step size are
    // the description's.
    return fmi2OK;
  });
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
  return Guarded(c, "fmi2EnterInitializationMode", {Mode::kInstantiated}, [&](Instance& inst) {
    inst.mode = Mode::kInitialization;
    return fmi2OK;
  });
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  return Guarded(c, "fmi2ExitInitializationMode", {Mode::kInitialization},
                 [&](Instance& inst) { return inst.ExitInitialization(); });
}

fmi2Status fmi2Terminate(fmi2Component c) {
  return Guarded(c, "fmi2Terminate", kRunning, [&](Instance& inst) {
    inst.CloseRemote("fmi2Terminate");
    inst.mode = Mode::kTerminated;
    return fmi2OK;
  });
}

fmi2Status fmi2Reset(fmi2Component c) {
  return Guarded(c, "fmi2Reset",
                 {Mode::kInstantiated, Mode::kInitialization, Mode::kStepComplete,
                  Mode::kStepFailed, Mode::kTerminated, Mode::kError},
                 [&](Instance& inst) {
                   inst.ResetToOriginal();
                   return fmi2OK;
                 });
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       fmi2Real value[]) {
  return Guarded(c, "fmi2GetReal", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckRefs(inst, "fmi2GetReal", vr, nvr, value)) return fmi2Error;
    if (fmi2Status s = inst.RefreshValues(); s != fmi2OK) return s;
    for (size_t k = 0; k < nvr; ++k) value[k] = inst.values[vr[k]];
    return fmi2OK;
  });
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                       const fmi2Real value[]) {
  return Guarded(c, "fmi2SetReal", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckRefs(inst, "fmi2SetReal", vr, nvr, value)) return fmi2Error;
    const bool before_init = inst.mode == Mode::kInstantiated || inst.mode == Mode::kInitialization;
    // Check every reference before changing anything.
    for (size_t k = 0; k < nvr; ++k) {
      const tether::fmu::Variable& v = inst.vars[vr[k]];
      if (!std::isfinite(value[k])) {
        return inst.Error("fmi2SetReal: " + v.name + ": expected a finite value, found " +
                          tether::FormatNumber(value[k]));
      }
      if (v.kind == VariableKind::kParameter && !before_init) {
        return inst.Error("fmi2SetReal: parameter " + v.name +
                          " is fixed: it can be set only before fmi2ExitInitializationMode");
      }
      if (v.kind != VariableKind::kParameter && v.kind != VariableKind::kInput) {
        return inst.Error("fmi2SetReal: " + v.name + " is an output: it cannot be set");
      }
      if (v.kind == VariableKind::kInput && inst.mode == Mode::kTerminated) {
        return inst.Error("fmi2SetReal: not allowed in state 'terminated'");
      }
    }
    for (size_t k = 0; k < nvr; ++k) {
      const tether::fmu::Variable& v = inst.vars[vr[k]];
      if (v.kind == VariableKind::kParameter) {
        auto* p = inst.spec.mutable_system()->mutable_parameters(v.index);
        if (p->value() != value[k] || std::signbit(p->value()) != std::signbit(value[k])) {
          p->set_value(value[k]);
          inst.parameters_changed = true;
        }
      } else {
        inst.inputs[static_cast<size_t>(v.index)] = value[k];
        tether::Status s = inst.sim->SetInput(v.name, value[k]);
        if (!s.ok()) return inst.Error("fmi2SetReal: " + s.message());
      }
    }
    inst.values_stale = true;
    return fmi2OK;
  });
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Integer value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2GetInteger", "Integer", nvr);
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          fmi2Boolean value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2GetBoolean", "Boolean", nvr);
}
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         fmi2String value[]) {
  return Guarded(c, "fmi2GetString", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckStringRefs(inst, "fmi2GetString", vr, nvr, value)) return fmi2Error;
    for (size_t k = 0; k < nvr; ++k) value[k] = inst.server_parameter.c_str();
    return fmi2OK;
  });
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Integer value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2SetInteger", "Integer", nvr);
}
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                          const fmi2Boolean value[]) {
  return tether::fmu::NoVariablesOfType(c, "fmi2SetBoolean", "Boolean", nvr);
}
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                         const fmi2String value[]) {
  return Guarded(c, "fmi2SetString", kAny, [&](Instance& inst) {
    if (!tether::fmu::CheckStringRefs(inst, "fmi2SetString", vr, nvr, value)) return fmi2Error;
    if (inst.mode != Mode::kInstantiated && inst.mode != Mode::kInitialization) {
      return inst.Error(std::string("fmi2SetString: parameter ") + tether::fmu::kServerVariable +
                        " is fixed: it can be set only before fmi2ExitInitializationMode");
    }
    for (size_t k = 0; k < nvr; ++k) {
      if (value[k] == nullptr) {
        return inst.Error(std::string("fmi2SetString: ") + tether::fmu::kServerVariable +
                          ": expected a string, found a null pointer");
      }
    }
    for (size_t k = 0; k < nvr; ++k) inst.server_parameter = value[k];
    return fmi2OK;
  });
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2GetFMUstate", {Mode::kStepComplete, Mode::kStepFailed, Mode::kTerminated},
                 [&](Instance& inst) {
                   if (FMUstate == nullptr) return inst.Error("fmi2GetFMUstate: FMUstate is null");
                   SavedState saved;
                   if (fmi2Status s = inst.Save(&saved); s != fmi2OK) return s;
                   auto* existing = static_cast<SavedState*>(*FMUstate);
                   if (existing != nullptr) {
                     inst.Free(*existing);
                     *existing = std::move(saved);  // FMI 2.0: overwrite a state passed in
                   } else {
                     *FMUstate = new SavedState(std::move(saved));
                   }
                   return fmi2OK;
                 });
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate FMUstate) {
  return Guarded(c, "fmi2SetFMUstate", {Mode::kStepComplete, Mode::kStepFailed, Mode::kTerminated},
                 [&](Instance& inst) {
                   if (FMUstate == nullptr) return inst.Error("fmi2SetFMUstate: FMUstate is null");
                   return inst.Restore(*static_cast<SavedState*>(FMUstate));
                 });
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2FreeFMUstate",
                 {Mode::kInstantiated, Mode::kInitialization, Mode::kStepComplete,
                  Mode::kStepFailed, Mode::kTerminated, Mode::kError},
                 [&](Instance& inst) {
                   if (FMUstate == nullptr || *FMUstate == nullptr) return fmi2OK;
                   auto* saved = static_cast<SavedState*>(*FMUstate);
                   inst.Free(*saved);
                   delete saved;
                   *FMUstate = nullptr;
                   return fmi2OK;
                 });
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate FMUstate, size_t* size) {
  return Guarded(c, "fmi2SerializedFMUstateSize", kAny, [&](Instance& inst) {
    if (FMUstate == nullptr || size == nullptr)
      return inst.Error("fmi2SerializedFMUstateSize: null argument");
    const std::string* bytes = nullptr;
    fmi2Status s =
        inst.Serialize(*static_cast<SavedState*>(FMUstate), "fmi2SerializedFMUstateSize", &bytes);
    if (s != fmi2OK) return s;
    *size = bytes->size();
    return fmi2OK;
  });
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate FMUstate, fmi2Byte serializedState[],
                                 size_t size) {
  return Guarded(c, "fmi2SerializeFMUstate", kAny, [&](Instance& inst) {
    if (FMUstate == nullptr || serializedState == nullptr)
      return inst.Error("fmi2SerializeFMUstate: null argument");
    const std::string* serialized = nullptr;
    fmi2Status s =
        inst.Serialize(*static_cast<SavedState*>(FMUstate), "fmi2SerializeFMUstate", &serialized);
    if (s != fmi2OK) return s;
    const std::string& bytes = *serialized;
    if (size != bytes.size()) {
      return inst.Error("fmi2SerializeFMUstate: size " + std::to_string(size) +
                        " is not the serialized size " + std::to_string(bytes.size()) +
                        " (fmi2SerializedFMUstateSize)");
    }
    std::memcpy(serializedState, bytes.data(), bytes.size());
    return fmi2OK;
  });
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte serializedState[], size_t size,
                                   fmi2FMUstate* FMUstate) {
  return Guarded(c, "fmi2DeSerializeFMUstate", kAny, [&](Instance& inst) {
    if (FMUstate == nullptr || (serializedState == nullptr && size > 0))
      return inst.Error("fmi2DeSerializeFMUstate: null argument");
    SavedState saved;
    fmi2Status s = inst.Deserialize(std::string_view(serializedState, size), &saved);
    if (s != fmi2OK) return s;
    if (auto* existing = static_cast<SavedState*>(*FMUstate); existing != nullptr) {
      inst.Free(*existing);  // its snapshot, in remote mode
      *existing = std::move(saved);
    } else {
      *FMUstate = new SavedState(std::move(saved));
    }
    return fmi2OK;
  });
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                        size_t nUnknown, const fmi2ValueReference vKnown_ref[],
                                        size_t nKnown, const fmi2Real dvKnown[],
                                        fmi2Real dvUnknown[]) {
  return tether::fmu::Unsupported(c, "fmi2GetDirectionalDerivative",
                                  "not provided (providesDirectionalDerivative=\"false\")");
}

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[]) {
  return tether::fmu::Unsupported(c, "fmi2SetRealInputDerivatives",
                                  "inputs are held constant (canInterpolateInputs=\"false\")");
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[]) {
  return tether::fmu::Unsupported(c, "fmi2GetRealOutputDerivatives",
                                  "not provided (maxOutputDerivativeOrder=\"0\")");
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint,
                      fmi2Real communicationStepSize,
                      fmi2Boolean noSetFMUStatePriorToCurrentPoint) {
  return Guarded(c, "fmi2DoStep", kRunning, [&](Instance& inst) {
    return inst.DoStep(currentCommunicationPoint, communicationStepSize);
  });
}

fmi2Status fmi2CancelStep(fmi2Component c) {
  return tether::fmu::Unsupported(c, "fmi2CancelStep",
                                  "fmi2DoStep runs synchronously and never returns fmi2Pending");
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status* value) {
  return Guarded(c, "fmi2GetStatus", kAny, [&](Instance& inst) {
    // Only asynchronous steps (fmi2Pending) have a status here.
    return fmi2Discard;
  });
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* value) {
  return Guarded(c, "fmi2GetRealStatus", kAny, [&](Instance& inst) {
    if (s != fmi2LastSuccessfulTime || value == nullptr) return fmi2Discard;
    *value = inst.last_successful_time;
    return fmi2OK;
  });
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* value) {
  return Guarded(c, "fmi2GetIntegerStatus", kAny, [&](Instance&) { return fmi2Discard; });
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean* value) {
  return Guarded(c, "fmi2GetBooleanStatus", kAny, [&](Instance& inst) {
    if (s != fmi2Terminated || value == nullptr) return fmi2Discard;
    // The FMU never asks to end the simulation.
    *value = fmi2False;
    return fmi2OK;
  });
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* value) {
  return Guarded(c, "fmi2GetStringStatus", kAny, [&](Instance&) { return fmi2Discard; });
}

}  // extern "C"
