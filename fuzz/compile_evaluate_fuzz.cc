// Fuzz target: compiling a description and evaluating it (engine/simulation.h):
// Validate, Simulation::Create, one Evaluate and a run of a few steps.
//
// Two input forms:
//  - starting with '{': a whole SimulationSpec in JSON (ParseSpecJson);
//  - otherwise up to five lines, plugged into a forced, constrained pendulum
//    (coordinates x, y; parameters l, grav; input Fx): the potential energy,
//    the constraint, the generalized force on x, an output and, when the
//    fifth line is not empty, the kinetic energy (replacing the masses). A
//    missing line keeps the template's. The integrator method is picked by
//    the input's length (size % 4), so every method sees every shape, and
//    the certificate mode by size / 4 % 2 (SAMPLED or ENCLOSED).
//
// Bad input is rejected with diagnostics, never a crash; a failed evaluation
// or step is ABORTED. Validate and Create agree on what is invalid, and a
// run that succeeds emits every frame it was asked for.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "fuzz_check.h"
#include "tether/v1/simulation.pb.h"

namespace {

// Larger systems are valid but slow to step under the sanitizers; the sizes
// themselves are the JSON target's and the unit tests' business.
constexpr int kMaxFuzzCoordinates = 16;
constexpr uint64_t kRunSteps = 3;

constexpr std::string_view kTemplate =
    R"j({"system":{"coordinates":["x","y"],)j"
    R"j("parameters":[{"name":"l","value":1},{"name":"grav","value":9.81}],)j"
    R"j("inputs":[{"name":"Fx","defaultValue":0.5}],"masses":{"values":[1,2]},)j"
    R"j("potentialEnergy":"grav*y","generalizedForces":["Fx","0"],)j"
    R"j("constraints":[{"name":"rod","expression":"(x^2 + y^2 - l^2)/2"}],)j"
    R"j("baumgarte":{"alpha":10,"beta":10},)j"
    R"j("outputs":[{"name":"angle","expression":"atan2(x, -y)"}]},)j"
    R"j("initial":{"q":[0.6,-0.8],"v":[0.1,0.075]},)j"
    R"j("integrator":{"method":"RK4","stepSize":0.001}})j";

bool SpecFromLines(std::string_view text, tether::v1::SimulationSpec* spec) {
  if (!tether::ParseSpecJson(kTemplate, spec, "template").ok()) return false;
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size() && lines.size() < 5) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  tether::v1::SystemSpec* sys = spec->mutable_system();
  if (lines.size() > 0) sys->set_potential_energy(lines[0]);
  if (lines.size() > 1) sys->mutable_constraints(0)->set_expression(lines[1]);
  if (lines.size() > 2) sys->set_generalized_forces(0, lines[2]);
  if (lines.size() > 3) sys->mutable_outputs(0)->set_expression(lines[3]);
  if (lines.size() > 4 && !lines[4].empty()) sys->set_kinetic_energy(lines[4]);
  static constexpr tether::v1::IntegratorSpec::Method kMethods[] = {
      tether::v1::IntegratorSpec::EXPLICIT_EULER, tether::v1::IntegratorSpec::SEMI_IMPLICIT_EULER,
      tether::v1::IntegratorSpec::RK4, tether::v1::IntegratorSpec::DOPRI5};
  spec->mutable_integrator()->set_method(kMethods[text.size() % 4]);
  // Half the inputs certify in ENCLOSED mode: the Taylor-mode ball
  // evaluation of the fuzzed constraint along each step's interpolant.
  spec->mutable_certificate()->set_mode(text.size() / 4 % 2
                                            ? tether::v1::CertificateOptions::ENCLOSED
                                            : tether::v1::CertificateOptions::SAMPLED);
  return true;
}

void CompileAndRun(const tether::v1::SimulationSpec& spec) {
  const tether::v1::ValidationReport report = tether::Validate(spec);
  auto created = tether::Simulation::Create(spec);
  if (!created.ok()) {
    TETHER_FUZZ_CHECK(!report.valid(), "Create rejects what Validate accepts: %s",
                      created.status().message().c_str());
    return;
  }
  tether::Simulation& sim = **created;
  tether::v1::Frame frame;
  (void)sim.Evaluate(&frame);  // Ok or ABORTED; either is fine
  tether::RunOptions options;
  options.steps = kRunSteps;
  if (!sim.BeginRun(options).ok()) return;
  google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
  const tether::Status advanced = sim.Advance(kRunSteps, &frames);
  if (advanced.ok()) {
    TETHER_FUZZ_CHECK(sim.run_done(), "the run is not done after %llu steps",
                      static_cast<unsigned long long>(kRunSteps));
    TETHER_FUZZ_CHECK(frames.size() == static_cast<int>(kRunSteps) + 1,
                      "a run of %llu steps emitted %d frames",
                      static_cast<unsigned long long>(kRunSteps), frames.size());
  }
  tether::v1::Certificate certificate;
  sim.GetCertificate(&certificate);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kFuzzMaxInputBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tether::v1::SimulationSpec spec;
  if (!text.empty() && text.front() == '{') {
    if (!tether::ParseSpecJson(text, &spec, "fuzz").ok()) return 0;
  } else {
    TETHER_FUZZ_CHECK(SpecFromLines(text, &spec), "the template spec does not parse");
  }
  if (spec.system().coordinates_size() > kMaxFuzzCoordinates ||
      spec.system().constraints_size() > kMaxFuzzCoordinates) {
    return 0;
  }
  CompileAndRun(spec);
  return 0;
}
