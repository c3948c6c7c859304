#include "fmu/model_description.h"

#include <cstdio>
#include <set>
#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "engine/integration_methods.h"
#include "engine/session_export.h"
#include "engine/status.h"

namespace tether::fmu {

namespace {
constexpr std::string_view kReservedFmuNames[] = {"q",  "v",  "a",           "lambda",
                                                  "q0", "v0", "certificate", "tether"};
}  // namespace

bool IsReservedFmuName(std::string_view name, int version) {
  for (std::string_view r : kReservedFmuNames)
    if (name == r) return true;
  return version == 3 && name == "time";
}

std::string ReservedFmuNames(int version) {
  std::string out;
  for (std::string_view r : kReservedFmuNames) out += (out.empty() ? "" : ", ") + std::string(r);
  return out + (version == 3 ? " and time" : "");
}

std::vector<Variable> Variables(const Simulation& sim) {
  const v1::SystemSpec& sys = sim.spec().system();
  std::vector<Variable> vars;
  for (int i = 0; i < sys.parameters_size(); ++i) {
    vars.push_back({sys.parameters(i).name(), VariableKind::kParameter, i,
                    sys.parameters(i).value(), "parameter (fixed: set it before initialization)"});
  }
  for (int i = 0; i < sys.inputs_size(); ++i) {
    vars.push_back({sys.inputs(i).name(), VariableKind::kInput, i, sys.inputs(i).default_value(),
                    "input, held constant over each communication step (FMI 2: ramped when "
                    "given its derivative)"});
  }
  for (int i = 0; i < sys.outputs_size(); ++i) {
    vars.push_back({sys.outputs(i).name(), VariableKind::kOutput, i, 0,
                    "output: " + sys.outputs(i).expression()});
  }
  const auto& coords = sim.coordinate_names();
  for (size_t i = 0; i < coords.size(); ++i) {
    vars.push_back({"q." + coords[i], VariableKind::kCoordinate, static_cast<int>(i), 0,
                    "coordinate " + coords[i]});
  }
  for (size_t i = 0; i < coords.size(); ++i) {
    vars.push_back({"v." + coords[i], VariableKind::kVelocity, static_cast<int>(i), 0,
                    "velocity der(" + coords[i] + ")"});
  }
  const auto& constraints = sim.constraint_names();
  for (size_t i = 0; i < constraints.size(); ++i) {
    std::string expr = static_cast<int>(i) < sys.constraints_size()
                           ? ": " + sys.constraints(static_cast<int>(i)).expression() + " = 0"
                           : "";
    vars.push_back({"lambda." + constraints[i], VariableKind::kMultiplier, static_cast<int>(i), 0,
                    "Lagrange multiplier of constraint " + constraints[i] + expr});
  }
  vars.push_back({"certificate.max_position_residual", VariableKind::kMaxPositionResidual, 0, 0,
                  "max |g| over every step since initialization (and at the initial state); "
                  "0 when tether.certificate is off"});
  vars.push_back({"certificate.position_bound", VariableKind::kPositionBound, 0, 0,
                  "the certificate's bound on |g| over every step since initialization "
                  "(max over the communication steps); 0 when tether.certificate is off"});
  for (size_t i = 0; i < coords.size(); ++i) {
    vars.push_back({"a." + coords[i], VariableKind::kAcceleration, static_cast<int>(i), 0,
                    "acceleration der(v." + coords[i] + ") at the current state and inputs"});
  }
  const v1::State& initial = sim.spec().initial();
  for (size_t i = 0; i < coords.size(); ++i) {
    const int k = static_cast<int>(i);
    vars.push_back(
        {"q0." + coords[i], VariableKind::kStartCoordinate, k,
         k < initial.q_size() ? initial.q(k) : 0.0,
         "initial value of coordinate " + coords[i] + " (fixed: set it before initialization)"});
  }
  for (size_t i = 0; i < coords.size(); ++i) {
    const int k = static_cast<int>(i);
    vars.push_back(
        {"v0." + coords[i], VariableKind::kStartVelocity, k,
         k < initial.v_size() ? initial.v(k) : 0.0,
         "initial velocity der(" + coords[i] + ") (fixed: set it before initialization)"});
  }
  return vars;
}

namespace {

bool IsIdentifierByte(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_';
}

// Adds the identifiers of `text` to `names`.
void CollectIdentifiers(std::string_view text, std::set<std::string, std::less<>>* names) {
  size_t i = 0;
  while (i < text.size()) {
    if (!IsIdentifierByte(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && IsIdentifierByte(text[j])) ++j;
    names->emplace(text.substr(i, j - i));
    i = j;
  }
}

// The identifiers in every string field of `message` and its sub-messages,
// except the fields that name things (a parameter named like an output is
// not read by it) and the coordinates' names.
void CollectExpressionIdentifiers(const google::protobuf::Message& message,
                                  std::set<std::string, std::less<>>* names) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->name() == "name" || f->name() == "coordinates") continue;
    if (f->type() == FieldDescriptor::TYPE_STRING) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(message, f); ++i)
          CollectIdentifiers(r->GetRepeatedString(message, f, i), names);
      } else {
        CollectIdentifiers(r->GetString(message, f), names);
      }
    } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(message, f); ++i)
          CollectExpressionIdentifiers(r->GetRepeatedMessage(message, f, i), names);
      } else {
        CollectExpressionIdentifiers(r->GetMessage(message, f), names);
      }
    }
  }
}

}  // namespace

std::vector<std::string> UnusedParameters(const v1::SimulationSpec& spec) {
  std::set<std::string, std::less<>> read;
  CollectExpressionIdentifiers(spec.system(), &read);
  std::vector<std::string> unused;
  for (const v1::Parameter& p : spec.system().parameters())
    if (!read.contains(p.name())) unused.push_back(p.name());
  return unused;
}

std::string UnusedParameterWarning(std::string_view name) {
  return "parameter '" + std::string(name) +
         "' is exported as an FMU parameter but no expression of the description reads it: "
         "setting it changes nothing (a mass written as a number in system.masses, for "
         "example); to make it settable, use it in an expression (for a mass: "
         "system.masses.expressions, e.g. [\"m\", \"m\"])";
}

bool CanInterpolateInputs(const v1::SimulationSpec& spec) {
  return spec.system().inputs_size() > 0;
}

std::string Guid(const v1::SimulationSpec& spec) {
  const std::string sha = SpecSha256(spec);
  std::string hex;
  char buf[3];
  for (size_t i = 0; i < 16 && i < sha.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(sha[i]));
    hex += buf;
  }
  return "{" + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12) + "}";
}

std::string ModelIdentifier(std::string_view name) {
  std::string id;
  for (char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_';
    id += ok ? ch : '_';
  }
  if (id.empty()) return "tether_model";
  if (id[0] >= '0' && id[0] <= '9') id.insert(id.begin(), '_');
  return id;
}

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default: out += (u < 0x20 || u == 0x7f) ? '?' : ch;
    }
  }
  return out;
}

namespace {

// One element's start tag, attributes escaped, in order.
class Tag {
 public:
  explicit Tag(std::string_view name) : text_("<" + std::string(name)) {}
  Tag& Attr(std::string_view name, std::string_view value) {
    text_ += " " + std::string(name) + "=\"" + EscapeXml(value) + "\"";
    return *this;
  }
  std::string Open() const { return text_ + ">"; }
  std::string Empty() const { return text_ + "/>"; }

 private:
  std::string text_;
};

const char* Causality(VariableKind kind) {
  if (IsParameter(kind)) return "parameter";
  switch (kind) {
    case VariableKind::kInput: return "input";
    default: return "output";
  }
}

// The log categories both versions declare (the same element in FMI 2.0
// and 3.0).
std::string LogCategories() {
  std::string x = "  <LogCategories>\n";
  const char* categories[][2] = {
      {"logStatusError", "errors (always logged)"},
      {"logStatusDiscard", "a step that failed numerically (always logged)"},
      {"logStatusWarning",
       "cautions: parameters nothing reads, a start made inconsistent (always logged)"},
      {"logAll", "calls and steps (with debug logging on)"}};
  for (const auto& c : categories)
    x += "    " + Tag("Category").Attr("name", c[0]).Attr("description", c[1]).Empty() + "\n";
  return x + "  </LogCategories>\n";
}

// The DefaultExperiment element (the same in FMI 2.0 and 3.0).
std::string DefaultExperiment(const v1::SimulationSpec& spec) {
  Tag experiment("DefaultExperiment");
  experiment.Attr("startTime", FormatNumber(spec.initial().t()));
  if (spec.integrator().step_size() > 0)
    experiment.Attr("stepSize", FormatNumber(spec.integrator().step_size()));
  return "  " + experiment.Empty() + "\n";
}

constexpr const char* kModelDescriptionText =
    "Tether constrained mechanical system (in-process engine, or a session on "
    "the tether-server named by tether.server)";
constexpr const char* kServerDescription =
    "address of a tether-server (host:port) to run a session on; empty: in process, unless the "
    "environment variable ";
constexpr const char* kCertificateDescription =
    "the residual certificate of every communication step: sampled, enclosed (proven bounds, "
    "several times the cost) or off (no certificate, nothing computed for it)";

}  // namespace

const char* CertificateParameter(const v1::CertificateOptions& options) {
  if (options.disabled()) return "off";
  return options.mode() == v1::CertificateOptions::ENCLOSED ? "enclosed" : "sampled";
}

bool SetCertificateParameter(std::string_view value, v1::CertificateOptions* options) {
  if (value == "off") {
    options->set_disabled(true);
  } else if (value == "sampled" || value == "enclosed") {
    options->set_disabled(false);
    options->set_mode(value == "enclosed" ? v1::CertificateOptions::ENCLOSED
                                          : v1::CertificateOptions::SAMPLED);
  } else {
    return false;
  }
  return true;
}

std::string ModelDescriptionXml(const Simulation& sim, std::string_view model_identifier,
                                std::string_view model_name, std::string_view server) {
  const v1::SimulationSpec& spec = sim.spec();
  const std::vector<Variable> vars = Variables(sim);
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += Tag("fmiModelDescription")
           .Attr("fmiVersion", "2.0")
           .Attr("modelName", model_name)
           .Attr("guid", Guid(spec))
           .Attr("description", kModelDescriptionText)
           .Attr("generationTool", "tether 0.1.0")
           .Attr("variableNamingConvention", "structured")
           .Attr("numberOfEventIndicators", "0")
           .Open() +
       "\n";
  x += "  " +
       Tag("CoSimulation")
           .Attr("modelIdentifier", model_identifier)
           .Attr("needsExecutionTool", "false")
           .Attr("canHandleVariableCommunicationStepSize", "true")
           .Attr("canInterpolateInputs", CanInterpolateInputs(spec) ? "true" : "false")
           .Attr("maxOutputDerivativeOrder", "1")
           .Attr("canRunAsynchronuously", "false")
           .Attr("canBeInstantiatedOnlyOncePerProcess", "false")
           .Attr("canNotUseMemoryManagementFunctions", "true")
           .Attr("canGetAndSetFMUstate", "true")
           .Attr("canSerializeFMUstate", "true")
           .Attr("providesDirectionalDerivative", "true")
           .Empty() +
       "\n";
  x += LogCategories();
  x += DefaultExperiment(spec);
  x += "  <ModelVariables>\n";
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variable& v = vars[i];
    Tag sv("ScalarVariable");
    sv.Attr("name", v.name)
        .Attr("valueReference", std::to_string(i))
        .Attr("description", v.description)
        .Attr("causality", Causality(v.kind));
    Tag real("Real");
    if (IsParameter(v.kind)) {
      sv.Attr("variability", "fixed").Attr("initial", "exact");
      real.Attr("start", FormatNumber(v.start));
    } else if (v.kind == VariableKind::kInput) {
      sv.Attr("variability", "continuous");
      real.Attr("start", FormatNumber(v.start));
    } else {
      sv.Attr("variability", "continuous").Attr("initial", "calculated");
    }
    x += "    <!-- index " + std::to_string(i + 1) + " -->\n";
    x += "    " + sv.Open() + "\n      " + real.Empty() + "\n    </ScalarVariable>\n";
  }
  // The fixed parameters after the Reals: value reference vr, index vr + 1.
  auto fixed_parameter = [&](const char* name, size_t vr, const std::string& description,
                             const char* type, std::string_view start) {
    Tag sv("ScalarVariable");
    sv.Attr("name", name)
        .Attr("valueReference", std::to_string(vr))
        .Attr("description", description)
        .Attr("causality", "parameter")
        .Attr("variability", "fixed")
        .Attr("initial", "exact");
    x += "    <!-- index " + std::to_string(vr + 1) + " -->\n";
    x += "    " + sv.Open() + "\n      " + Tag(type).Attr("start", start).Empty() +
         "\n    </ScalarVariable>\n";
  };
  fixed_parameter(kServerVariable, vars.size(),
                  std::string(kServerDescription) + kServerEnvironment + " names one", "String",
                  server);
  fixed_parameter(kCertificateVariable, vars.size() + 1, kCertificateDescription, "String",
                  CertificateParameter(spec.certificate()));
  fixed_parameter(kProjectStartVariable, vars.size() + 2, kProjectStartDescription, "Boolean",
                  "false");
  x += "  </ModelVariables>\n";
  x += "  <ModelStructure>\n    <Outputs>\n";
  std::string unknowns;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (std::string_view(Causality(vars[i].kind)) != "output") continue;
    unknowns += "      " + Tag("Unknown").Attr("index", std::to_string(i + 1)).Empty() + "\n";
  }
  x += unknowns;
  x += "    </Outputs>\n";
  // FMI 2.0: every output with initial calculated is an initial unknown.
  x += "    <InitialUnknowns>\n" + unknowns + "    </InitialUnknowns>\n";
  x += "  </ModelStructure>\n";
  x += "</fmiModelDescription>\n";
  return x;
}

std::string ModelDescriptionXml3(const Simulation& sim, std::string_view model_identifier,
                                 std::string_view model_name, std::string_view server) {
  const v1::SimulationSpec& spec = sim.spec();
  const std::vector<Variable> vars = Variables(sim);
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += Tag("fmiModelDescription")
           .Attr("fmiVersion", "3.0")
           .Attr("modelName", model_name)
           .Attr("instantiationToken", Guid(spec))
           .Attr("description", kModelDescriptionText)
           .Attr("generationTool", "tether 0.1.0")
           .Attr("variableNamingConvention", "structured")
           .Open() +
       "\n";
  x += "  " +
       Tag("CoSimulation")
           .Attr("modelIdentifier", model_identifier)
           .Attr("needsExecutionTool", "false")
           .Attr("canBeInstantiatedOnlyOncePerProcess", "false")
           .Attr("canGetAndSetFMUState", "true")
           .Attr("canSerializeFMUState", "true")
           .Attr("providesDirectionalDerivatives", "true")
           .Attr("providesAdjointDerivatives", "true")
           .Attr("providesPerElementDependencies", "false")
           .Attr("canHandleVariableCommunicationStepSize", "true")
           .Attr("maxOutputDerivativeOrder", "1")
           .Attr("providesIntermediateUpdate", "true")
           .Attr("mightReturnEarlyFromDoStep", "false")
           .Attr("canReturnEarlyAfterIntermediateUpdate", "false")
           .Attr("hasEventMode", "false")
           .Attr("providesEvaluateDiscreteStates", "false")
           .Empty() +
       "\n";
  x += LogCategories();
  x += DefaultExperiment(spec);
  x += "  <ModelVariables>\n";
  // Every variable a scalar (fmi3_api.cc says why), with the value
  // references of the FMI 2.0 FMU; then the independent variable.
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variable& v = vars[i];
    Tag f("Float64");
    f.Attr("name", v.name)
        .Attr("valueReference", std::to_string(i))
        .Attr("description", v.description)
        .Attr("causality", Causality(v.kind));
    // Inputs and outputs are accessible in Intermediate Update Mode
    // (fmi3_api.cc, local_backend.cc).
    if (IsParameter(v.kind)) {
      f.Attr("variability", "fixed").Attr("initial", "exact").Attr("start", FormatNumber(v.start));
    } else if (v.kind == VariableKind::kInput) {
      f.Attr("variability", "continuous")
          .Attr("intermediateUpdate", "true")
          .Attr("start", FormatNumber(v.start));
    } else {
      f.Attr("variability", "continuous")
          .Attr("intermediateUpdate", "true")
          .Attr("initial", "calculated");
    }
    x += "    " + f.Empty() + "\n";
  }
  auto string_parameter = [&](const char* name, size_t vr, const std::string& description,
                              std::string_view start) {
    Tag sv("String");
    sv.Attr("name", name)
        .Attr("valueReference", std::to_string(vr))
        .Attr("description", description)
        .Attr("causality", "parameter")
        .Attr("variability", "fixed")
        .Attr("initial", "exact");
    return "    " + sv.Open() + "\n      " + Tag("Start").Attr("value", start).Empty() +
           "\n    </String>\n";
  };
  x +=
      string_parameter(kServerVariable, vars.size(),
                       std::string(kServerDescription) + kServerEnvironment + " names one", server);
  x += string_parameter(kCertificateVariable, vars.size() + 1, kCertificateDescription,
                        CertificateParameter(spec.certificate()));
  x += "    " +
       Tag("Boolean")
           .Attr("name", kProjectStartVariable)
           .Attr("valueReference", std::to_string(vars.size() + 2))
           .Attr("description", kProjectStartDescription)
           .Attr("causality", "parameter")
           .Attr("variability", "fixed")
           .Attr("initial", "exact")
           .Attr("start", "false")
           .Empty() +
       "\n";
  x += "    " +
       Tag("Float64")
           .Attr("name", "time")
           .Attr("valueReference", std::to_string(vars.size() + 3))
           .Attr("description", "the independent variable: the FMU's time")
           .Attr("causality", "independent")
           .Attr("variability", "continuous")
           .Empty() +
       "\n";
  x += "  </ModelVariables>\n";
  x += "  <ModelStructure>\n";
  std::string initial;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (std::string_view(Causality(vars[i].kind)) != "output") continue;
    x += "    " + Tag("Output").Attr("valueReference", std::to_string(i)).Empty() + "\n";
    initial +=
        "    " + Tag("InitialUnknown").Attr("valueReference", std::to_string(i)).Empty() + "\n";
  }
  x += initial;
  x += "  </ModelStructure>\n";
  x += "</fmiModelDescription>\n";
  return x;
}

}  // namespace tether::fmu
