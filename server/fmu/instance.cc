#include "fmu/instance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "engine/session_export.h"
#include "engine/status.h"
#include "fmu/fmu_state.h"
#include "fmu/start_projection.h"

namespace tether::fmu {

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kInstantiated: return "instantiated";
    case Mode::kInitialization: return "initialization mode";
    case Mode::kStepComplete: return "step complete";
    case Mode::kStepFailed: return "step failed (after fmi2Discard)";
    case Mode::kTerminated: return "terminated";
    case Mode::kError: return "error";
    case Mode::kIntermediateUpdate: return "intermediate update mode";
  }
  return "?";
}

std::string PrintfLiteral(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

Instance::Instance() = default;
Instance::~Instance() {
  // States the master did not free (fmi2FreeFMUstate): theirs is no longer a
  // use for them. A remote state's snapshot goes with the instance's session.
  for (const SavedState* saved : states) delete saved;
}

std::string Instance::Fn(std::string_view function) const {
  std::string f(function);
  if (fmi_version == 3) {
    if (auto at = f.find("FMUstate"); at != std::string::npos) f.replace(at, 8, "FMUState");
    if (f.rfind("DeSerialize", 0) == 0) f.replace(0, 11, "Deserialize");
  }
  return (fmi_version == 3 ? "fmi3" : "fmi2") + f;
}

void Instance::Log(fmi2Status status, const char* category, const std::string& message) const {
  if (fmi_version == 3) {
    // The statuses fmi2OK..fmi2Fatal are fmi3OK..fmi3Fatal (0..4; fmi2Pending
    // is never logged).
    if (logger3 != nullptr)
      logger3(env3, static_cast<fmi3Status>(status), category, message.c_str());
    return;
  }
  if (logger == nullptr) return;
  // The message is the format (PrintfLiteral): text from the description is
  // never a format, and masters that print the format see the message.
  logger(env, name.c_str(), status, category, PrintfLiteral(message).c_str());
}

fmi2Status Instance::Error(const std::string& message) const {
  Log(fmi2Error, "logStatusError", message);
  return fmi2Error;
}

void Instance::Debug(const std::string& message) const {
  if (debug) Log(fmi2OK, "logAll", message);
}

void Instance::ResetToOriginal() {
  if (backend) backend->Close(Fn("Reset").c_str());
  backend = LocalBackend(*this);
  server_parameter = server_start;
  spec = original_spec;
  certificate_parameter = CertificateParameter(spec.certificate());
  project_start = false;
  spec_sha256 = SpecSha256(spec);
  sim_spec = std::make_shared<const v1::SimulationSpec>(spec);
  parameters_changed = false;
  sim = Simulation::FromModel(spec, original_model);
  derivative_sim.reset();
  vars = Variables(*sim);
  inputs.clear();
  for (const auto& in : spec.system().inputs()) inputs.push_back(in.default_value());
  input_rates.assign(inputs.size(), 0.0);
  mode = Mode::kInstantiated;
  start_time.reset();
  stop_time.reset();
  last_successful_time = spec.initial().t();
  discards_in_a_row = 0;
  terminate_requested = false;
  if (const char* k = std::getenv(kMaxDiscardsEnvironment); k != nullptr && *k != '\0') {
    char* end = nullptr;
    const long n = std::strtol(k, &end, 10);
    if (*end == '\0' && n >= 1 && n <= 1000000) {
      max_discards = static_cast<int>(n);
    } else {
      Log(fmi2Warning, "logStatusError",
          std::string(kMaxDiscardsEnvironment) + ": expected an integer >= 1, found \"" +
              std::string(k).substr(0, 32) + "\"; using " + std::to_string(kDefaultMaxDiscards));
      max_discards = kDefaultMaxDiscards;
    }
  }
  max_position_residual = position_bound = 0;
  values.assign(vars.size(), 0.0);
  values_stale = true;
}

fmi2Status Instance::ApplyParameters() {
  if (!parameters_changed) return fmi2OK;
  std::vector<v1::Diagnostic> warnings;
  auto created = Simulation::Create(spec, &warnings);
  if (!created.ok()) {
    std::string m = "the description with the parameters set does not compile: " +
                    DescribeStatus(created.status());
    if (const std::string set = ChangedStartValues(); !set.empty()) {
      m += " (set since instantiation: " + set + ")";
    }
    return Error(m);
  }
  sim = std::move(*created);
  derivative_sim.reset();
  spec_sha256 = SpecSha256(spec);
  sim_spec = std::make_shared<const v1::SimulationSpec>(spec);
  parameters_changed = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status s = sim->SetInput(sim->input_names()[i], inputs[i]);
    if (!s.ok()) return Error(s.message());
  }
  values_stale = true;
  Debug("recompiled the description with the parameters set");
  // The cautions of the description as set (an inconsistent start above
  // all: a parameter or q0/v0 that moves the start off the constraints).
  for (const v1::Diagnostic& d : warnings)
    Log(fmi2Warning, "logStatusWarning",
        "with the parameters set: " + d.field() + ": " + d.message());
  return fmi2OK;
}

std::string DescribeStatus(const Status& status) {
  std::string m = status.message();
  for (const auto& v : status.violations()) {
    if (m.find(v.description) == std::string::npos) m += "; " + v.field + ": " + v.description;
  }
  return m;
}

std::string Instance::ChangedStartValues() const {
  std::string out;
  auto add = [&](const std::string& name, double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    out += (out.empty() ? "" : ", ") + name + " = " + text;
  };
  const v1::State& now = spec.initial();
  const v1::State& was = original_spec.initial();
  auto same = [](double a, double b) { return a == b && std::signbit(a) == std::signbit(b); };
  for (const Variable& v : vars) {
    const int i = v.index;
    switch (v.kind) {
      case VariableKind::kParameter:
        if (!same(spec.system().parameters(i).value(),
                  original_spec.system().parameters(i).value()))
          add(v.name, spec.system().parameters(i).value());
        break;
      case VariableKind::kStartCoordinate:
        if (!same(now.q(i), was.q(i))) add(v.name, now.q(i));
        break;
      case VariableKind::kStartVelocity: {
        // An empty v is all zero (made explicit when one is set).
        const double a = i < now.v_size() ? now.v(i) : 0.0, b = i < was.v_size() ? was.v(i) : 0.0;
        if (!same(a, b)) add(v.name, a);
        break;
      }
      default: break;
    }
  }
  return out;
}

fmi2Status Instance::RefreshValues() {
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
      case VariableKind::kAcceleration: values[r] = frame.a(i); break;
      case VariableKind::kStartCoordinate: values[r] = spec.initial().q(i); break;
      case VariableKind::kStartVelocity:
        values[r] = i < spec.initial().v_size() ? spec.initial().v(i) : 0.0;
        break;
    }
  }
  values_stale = false;
  return fmi2OK;
}

std::string Instance::ServerAddress() const {
  if (!server_parameter.empty()) return server_parameter;
  const char* env = std::getenv(kServerEnvironment);
  return env != nullptr ? env : "";
}

fmi2Status Instance::ProjectStartIfAsked() {
  if (!project_start) return fmi2OK;
  v1::State st = spec.initial();
  if (start_time) st.set_t(*start_time);
  const double tolerance = InitialConsistencyTolerance(spec.certificate());
  ProjectionResult r;
  if (Status s = ProjectStart(*sim, tolerance, &st, &r); !s.ok())
    return Error(std::string(kProjectStartVariable) + ": " + s.message());
  // The projection moved `sim`'s state: it is made again from the
  // description (with the projected start when the start was inconsistent).
  const bool consistent = r.position_before <= tolerance && r.velocity_before <= tolerance;
  if (!consistent) {
    st.set_t(spec.initial().t());
    *spec.mutable_initial() = st;
  }
  parameters_changed = true;
  if (consistent) return ApplyParameters();
  if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
  Log(fmi2Warning, "logStatusWarning",
      std::string(kProjectStartVariable) + ": projected the start onto the constraints: |g|_inf " +
          FormatNumber(r.position_before) + " -> " + FormatNumber(r.position_after) +
          ", |Gv + g_t|_inf " + FormatNumber(r.velocity_before) + " -> " +
          FormatNumber(r.velocity_after) + " (" + std::to_string(r.iterations) +
          " Newton iterations)");
  return fmi2OK;
}

fmi2Status Instance::ExitInitialization() {
  if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
  if (fmi2Status s = ProjectStartIfAsked(); s != fmi2OK) return s;
  std::optional<v1::State> moved;
  if (start_time && *start_time != spec.initial().t()) {
    v1::State st = spec.initial();
    st.set_t(*start_time);
    if (Status s = sim->SetState(st, "startTime"); !s.ok()) return Error(s.message());
    moved = st;
  }
  if (const std::string address = ServerAddress(); !address.empty()) {
    std::unique_ptr<StepBackend> remote;
    if (fmi2Status s = OpenRemoteBackend(*this, address, moved ? &*moved : nullptr, &remote);
        s != fmi2OK)
      return s;
    backend = std::move(remote);
  }
  // The certificate's figures start at the initial state's |g|.
  v1::Frame frame;
  if (Status s = sim->Evaluate(&frame); !s.ok())
    return Error("evaluation at the initial state failed: " + s.message());
  double g = 0;
  for (double e : frame.residuals().position()) g = std::max(g, std::fabs(e));
  max_position_residual = position_bound = spec.certificate().disabled() ? 0 : g;
  last_successful_time = sim->time();
  values_stale = true;
  mode = Mode::kStepComplete;
  return RefreshValues();
}

fmi2Status Instance::DoStep(double t, double h) {
  if (!(std::isfinite(t) && std::isfinite(h) && h > 0)) {
    return Error(Fn("DoStep") +
                 ": expected a finite currentCommunicationPoint and "
                 "communicationStepSize > 0, found t = " +
                 FormatNumber(t) + ", h = " + FormatNumber(h));
  }
  const double now = sim->time();
  if (terminate_requested) {
    return Error(Fn("DoStep") + ": the step from t = " + FormatNumber(now) + " was discarded " +
                 std::to_string(discards_in_a_row) +
                 " times in a row, and the FMU asked to terminate (" + kMaxDiscardsEnvironment +
                 " = " + std::to_string(max_discards) +
                 "); restore an earlier state, reset or terminate");
  }
  if (std::fabs(t - now) > 1e-9 * std::max(1.0, std::fabs(now))) {
    return Error(Fn("DoStep") + ": currentCommunicationPoint " + FormatNumber(t) +
                 " is not the FMU's current time " + FormatNumber(now));
  }
  // From the engine's own time (its step grid's, Simulation::grid_time),
  // not the master's t (equal up to the master's rounding): with h a
  // multiple of the description's step size, the engine steps are those
  // of `tether run`, bit for bit, however many communication steps.
  const double until = sim->grid_time() + h;
  // Refused here for both backends (a remote one would end its stream on
  // the server's refusal): a step that rounds away or that the fixed step
  // cannot count (1e300 s of h = 1e-3 never returned).
  if (Status s = sim->CheckUntilTime(until); !s.ok()) {
    return Error(Fn("DoStep") + ": communicationStepSize " + FormatNumber(h) +
                 " from t = " + FormatNumber(now) + ": " +
                 (s.violations().empty() ? s.message() : s.violations()[0].description));
  }
  if (stop_time && until > *stop_time + 1e-12 * std::max(1.0, std::fabs(*stop_time))) {
    return Error(Fn("DoStep") + ": t + h = " + FormatNumber(until) + " is past the stopTime " +
                 FormatNumber(*stop_time) + " given to " +
                 (fmi_version == 3 ? "fmi3EnterInitializationMode" : "fmi2SetupExperiment"));
  }
  return backend->Step(t, h, until);
}

void Instance::IntermediateUpdate(double t, bool set_requested, bool get_allowed,
                                  bool step_finished) {
  mode_before_intermediate = mode;
  mode = Mode::kIntermediateUpdate;
  intermediate_set = set_requested;
  intermediate_get = get_allowed;
  fmi3Boolean early_return_requested = fmi3False;
  fmi3Float64 early_return_time = t;
  // canReturnEarly false: what the master answers in the last two is not read.
  intermediate_update(env3, t, set_requested, get_allowed, step_finished, fmi3False,
                      &early_return_requested, &early_return_time);
  intermediate_set = intermediate_get = false;
  // An instance the master broke inside (an error) stays broken.
  if (mode == Mode::kIntermediateUpdate) mode = mode_before_intermediate;
}

bool Instance::InputsRamp() const {
  for (double r : input_rates)
    if (r != 0) return true;
  return false;
}

void Instance::Terminate() {
  backend->Close(Fn("Terminate").c_str());
  mode = Mode::kTerminated;
}

fmi2Status Instance::StepDone(double step_max_position_residual, double step_position_bound) {
  max_position_residual = std::max(max_position_residual, step_max_position_residual);
  position_bound = std::max(position_bound, step_position_bound);
  last_successful_time = sim->time();
  mode = Mode::kStepComplete;
  values_stale = true;
  discards_in_a_row = 0;
  std::fill(input_rates.begin(), input_rates.end(), 0.0);
  return fmi2OK;
}

fmi2Status Instance::StepDiscarded(double t, double h, const std::string& where, double stays_at,
                                   const std::string& reason) {
  mode = Mode::kStepFailed;
  last_successful_time = stays_at;
  if (++discards_in_a_row >= max_discards) terminate_requested = true;
  Log(fmi2Discard, "logStatusDiscard",
      Fn("DoStep") + " from t = " + FormatNumber(t) + " by h = " + FormatNumber(h) +
          " failed numerically" + where + " (the state stays at t = " + FormatNumber(stays_at) +
          "): " + reason +
          (terminate_requested ? "; discarded " + std::to_string(discards_in_a_row) +
                                     " times in a row: the FMU asks to terminate"
                               : ""));
  return fmi2Discard;
}

}  // namespace tether::fmu
