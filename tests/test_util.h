// Helpers shared by the engine tests: build descriptions inline.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "support/hostile_specs.h"

namespace tether::testing {

inline v1::SimulationSpec SpecFromJson(const std::string& json) {
  v1::SimulationSpec spec;
  Status s = ParseSpecJson(json, &spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return spec;
}

// The circle pendulum g = (x^2 + y^2 - l^2)/2 (docs/MATH.md section 2), with knobs.
inline v1::SimulationSpec CirclePendulum(double alpha, double beta, const std::string& method,
                                         double h, double x0 = 1, double y0 = 0, double vx = 0,
                                         double vy = 0) {
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      R"({"system":{"coordinates":["x","y"],"parameters":[{"name":"l","value":1},)"
      R"({"name":"grav","value":9.81}],"masses":{"values":[1,1]},"potentialEnergy":"grav*y",)"
      R"("constraints":[{"name":"rod","expression":"(x^2 + y^2 - l^2)/2"}],)"
      R"("baumgarte":{"alpha":%.17g,"beta":%.17g}},"initial":{"q":[%.17g,%.17g],"v":[%.17g,%.17g]},)"
      R"("integrator":{"method":"%s","stepSize":%.17g}})",
      alpha, beta, x0, y0, vx, vy, method.c_str(), h);
  return SpecFromJson(buf);
}

struct RunOutput {
  Status status;
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  v1::Certificate certificate;
};

// Simulation::Create's simulation, or nullptr after a test failure naming
// the status (callers ASSERT_TRUE the result).
inline std::unique_ptr<Simulation> CreateOrFail(const v1::SimulationSpec& spec) {
  auto created = Simulation::Create(spec);
  if (!created.ok()) {
    ADD_FAILURE() << "Simulation::Create: " << created.status().ToString();
    return nullptr;
  }
  return std::move(created).value();
}

inline RunOutput RunSpec(const v1::SimulationSpec& spec, RunOptions options,
                         uint64_t quantum = 1000) {
  RunOutput out;
  auto created = Simulation::Create(spec);
  if (!created.ok()) {
    out.status = created.status();
    return out;
  }
  std::unique_ptr<Simulation> sim = std::move(created).value();
  out.status = sim->BeginRun(options);
  while (out.status.ok() && sim->run_active()) out.status = sim->Advance(quantum, &out.frames);
  sim->GetCertificate(&out.certificate);
  return out;
}

}  // namespace tether::testing
