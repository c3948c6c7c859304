// What an FMU of a description exposes, shared by the `tether fmu` command
// (which writes modelDescription.xml) and the FMU library (which answers
// fmi2GetReal/fmi2SetReal by value reference): both build the variable list
// from the same compiled description with Variables(), so the numbering
// cannot drift apart.
//
// Value references are the positions in that list (0, 1, ...), and the
// ScalarVariable index in the XML is the position + 1. The order:
//   parameters (causality parameter, variability fixed, initial exact),
//   inputs (causality input, variability continuous, start = default_value),
//   the description's outputs, then "q.<coordinate>", "v.<coordinate>",
//   "lambda.<constraint>", "certificate.max_position_residual",
//   "certificate.position_bound" and "a.<coordinate>" (the accelerations,
//   after them so that the earlier value references are those of the FMUs
//   before them) (all causality output, continuous, initial calculated),
//   then the initial state as parameters, "q0.<coordinate>" and
//   "v0.<coordinate>" (causality parameter, variability fixed, initial
//   exact, start = spec.initial's q and v; last, for the same reason):
//   setting them before initialization starts the run there, as
//   `tether run` of the description with that spec.initial would.
//
// After them comes one String variable, kServerVariable (causality
// parameter, variability fixed, initial exact), whose value reference is
// the number of Real variables: the address of a tether-server for the
// remote mode, "" for in process (README "FMU export").
//
// Threading: plain functions of their arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/simulation.h"
#include "tether/v1/simulation.pb.h"

namespace tether::fmu {

enum class VariableKind {
  kParameter,            // spec.system.parameters[index]
  kInput,                // spec.system.inputs[index]
  kOutput,               // spec.system.outputs[index]
  kCoordinate,           // q[index]
  kVelocity,             // v[index]
  kMultiplier,           // lambda[index]
  kMaxPositionResidual,  // running max of the certificates' max_position_residual
  kPositionBound,        // running max of the certificates' position_bound
  kAcceleration,         // a[index] (after the certificate's two)
  kStartCoordinate,      // spec.initial.q[index], a parameter
  kStartVelocity,        // spec.initial.v[index] (0 when v is empty), a parameter
};

// A variable a master sets only before initialization: the description's
// parameters and the initial state.
inline bool IsParameter(VariableKind kind) {
  return kind == VariableKind::kParameter || kind == VariableKind::kStartCoordinate ||
         kind == VariableKind::kStartVelocity;
}

struct Variable {
  std::string name;
  VariableKind kind;
  int index = 0;
  double start = 0;  // parameters (IsParameter) and inputs only
  std::string description;
};

// The remote mode's address: the String parameter, its start value (a
// file in the FMU's resources/, written by `tether --server ADDR fmu`; no
// file = ""), and the environment variable used when the parameter is "".
inline constexpr const char* kServerVariable = "tether.server";
inline constexpr const char* kServerResource = "server.txt";
inline constexpr const char* kServerEnvironment = "TETHER_FMU_SERVER";
// How many discards of steps from one communication point in a row make
// the FMU ask to terminate (Instance::max_discards).
inline constexpr const char* kMaxDiscardsEnvironment = "TETHER_FMU_MAX_DISCARDS";

// The residual certificate, a String parameter (value reference: the one
// after kServerVariable's): "sampled", "enclosed" or "off", starting at
// the description's certificate options; setting it before
// fmi2ExitInitializationMode sets certificate.mode / certificate.disabled.
inline constexpr const char* kCertificateVariable = "tether.certificate";
// The parameter's value for `options`.
const char* CertificateParameter(const v1::CertificateOptions& options);
// Sets `options` from a parameter value; false (options unchanged) when the
// value is none of the three.
bool SetCertificateParameter(std::string_view value, v1::CertificateOptions* options);

// The Boolean parameter (value reference: the one after
// kCertificateVariable's; FMI 3's time follows it) that asks the FMU to
// project the start onto the constraints at ExitInitializationMode when it
// is inconsistent (fmu/start_projection.h), instead of only warning. Start
// value false.
inline constexpr const char* kProjectStartVariable = "tether.project_start";
inline constexpr const char* kProjectStartDescription =
    "at initialization, project an inconsistent start (q0, v0 and the parameters as set) onto "
    "g(q) = 0 and G v + g_t = 0 (minimum-norm Newton correction) instead of only warning";

// The Real variables of `sim`'s description, in value-reference order.
std::vector<Variable> Variables(const Simulation& sim);

// Whether a description's parameter, input or output may not be called
// `name` in an FMU of FMI `version`: the first parts of the FMU's own
// structured names (q, v, a, lambda, q0, v0, certificate, tether) and, in
// FMI 3.0, its independent variable `time`. ReservedFmuNames lists them.
bool IsReservedFmuName(std::string_view name, int version);
std::string ReservedFmuNames(int version);

// The names of the description's parameters that nothing reads: no
// expression of the system (energies, forces, constraints, outputs,
// definitions, mass matrix entries written as expressions, the mechanism's
// expression fields) names them, so setting them as FMU parameters changes
// nothing. A parameter counts as read when its name appears as an
// identifier in any string field of spec.system other than names (an
// over-approximation: it never warns about a parameter that is read).
// `tether fmu` prints them and the FMU logs them at instantiation.
std::vector<std::string> UnusedParameters(const v1::SimulationSpec& spec);
// The warning both print for one of them: what was found, what to do.
std::string UnusedParameterWarning(std::string_view name);

// "{8-4-4-4-12 hex}" from the first 16 bytes of SpecSha256(spec): the same
// description always gives the same GUID, and fmi2Instantiate checks it
// against the resources/spec.json it reads.
std::string Guid(const v1::SimulationSpec& spec);

// FMI 2's canInterpolateInputs: the description has inputs
// (Simulation::SetInputRates, every method and certificate).
bool CanInterpolateInputs(const v1::SimulationSpec& spec);

// A C identifier made from `name` (letters, digits and '_'; other bytes
// become '_'; a leading digit gets a '_' before it; "" gives "tether_model").
std::string ModelIdentifier(std::string_view name);

// Text for an XML attribute value or element content: & < > " ' as entity
// references, tab/newline/carriage return as character references (so that
// attribute-value normalisation keeps them), other C0 control characters and
// DEL (not allowed in XML 1.0) as '?'. Bytes >= 0x80 pass unchanged.
std::string EscapeXml(std::string_view text);

// modelDescription.xml for an FMI 2.0 Co-Simulation FMU of `sim`'s
// description (fmiVersion "2.0", GUID Guid(spec), DefaultExperiment from the
// spec's initial time and step size), `server` the start value of
// kServerVariable.
std::string ModelDescriptionXml(const Simulation& sim, std::string_view model_identifier,
                                std::string_view model_name, std::string_view server = {});

// modelDescription.xml for an FMI 3.0 Co-Simulation FMU of the same
// description (fmiVersion "3.0", instantiationToken Guid(spec)): the same
// variables with the same value references, all scalars (Float64, and the
// two String parameters, the Boolean tether.project_start), then the
// independent variable "time" (value
// reference: the one after tether.project_start's). Scalars rather than
// arrays for q, v and lambda: an FMI 3.0 array has one unit and one
// description for all its elements, where a description's coordinates mix
// lengths and angles and each has its own name; and the value references
// stay those of the FMI 2.0 FMU, so a master can swap one for the other.
// The description has no units (Tether is unit-agnostic: the proto's
// fields give none), so no variable declares one.
std::string ModelDescriptionXml3(const Simulation& sim, std::string_view model_identifier,
                                 std::string_view model_name, std::string_view server = {});

}  // namespace tether::fmu
