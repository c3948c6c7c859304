// fmu_reference SPEC.json STEPS: what the FMU of SPEC.json must output,
// computed with the engine API directly: a co-simulation step by h is a
// run with until_time = grid_time() + h (the engine's time on its step
// grid; inputs set before it, held), the values
// an evaluation at the state reached. Prints one line per communication
// point (the initial one, then after each of STEPS steps, fmu_schedule.h):
// the time and every FMU variable in value-reference order (model
// description.h), as C hexadecimal floating point (exact). fmu_test.cc
// compares the FMU's fmi2GetReal values with these bit for bit; it runs in
// its own process because it links the engine, which the FMU holds too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "fmu/model_description.h"
#include "fmu_schedule.h"

using namespace tether;

namespace {

class NullSink final : public FrameSink {
 public:
  void Add(const FrameView&) override {}
};

int Die(const Status& s) {
  std::fprintf(stderr, "fmu_reference: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fmu_reference SPEC.json STEPS\n");
    return 2;
  }
  v1::SimulationSpec spec;
  if (Status s = LoadSpecFile(argv[1], &spec); !s.ok()) return Die(s);
  auto created = Simulation::Create(spec);
  if (!created.ok()) return Die(created.status());
  Simulation& sim = **created;
  const auto vars = fmu::Variables(sim);
  double max_residual = 0, bound = 0;
  std::vector<double> inputs;
  for (const auto& in : spec.system().inputs()) inputs.push_back(in.default_value());

  auto print = [&]() -> int {
    v1::Frame f;
    if (Status s = sim.Evaluate(&f); !s.ok()) return Die(s);
    std::printf("%a", sim.time());
    for (const auto& v : vars) {
      double x = 0;
      switch (v.kind) {
        case fmu::VariableKind::kParameter: x = spec.system().parameters(v.index).value(); break;
        case fmu::VariableKind::kInput: x = inputs[static_cast<size_t>(v.index)]; break;
        case fmu::VariableKind::kOutput: x = f.outputs(v.index); break;
        case fmu::VariableKind::kCoordinate: x = f.q(v.index); break;
        case fmu::VariableKind::kVelocity: x = f.v(v.index); break;
        case fmu::VariableKind::kMultiplier: x = f.lambda(v.index); break;
        case fmu::VariableKind::kMaxPositionResidual: x = max_residual; break;
        case fmu::VariableKind::kPositionBound: x = bound; break;
        case fmu::VariableKind::kAcceleration: x = f.a(v.index); break;
        case fmu::VariableKind::kStartCoordinate: x = spec.initial().q(v.index); break;
        case fmu::VariableKind::kStartVelocity:
          x = v.index < spec.initial().v_size() ? spec.initial().v(v.index) : 0.0;
          break;
      }
      std::printf(" %a", x);
    }
    std::printf("\n");
    return 0;
  };

  v1::Frame f0;
  if (Status s = sim.Evaluate(&f0); !s.ok()) return Die(s);
  for (double e : f0.residuals().position()) max_residual = std::max(max_residual, std::fabs(e));
  bound = max_residual;
  if (int rc = print(); rc != 0) return rc;

  const int steps = std::atoi(argv[2]);
  for (int k = 0; k < steps; ++k) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputs[i] = fmu_test::InputValue(k);
      if (Status s = sim.SetInput(sim.input_names()[i], inputs[i]); !s.ok()) return Die(s);
    }
    RunOptions run;
    run.until_time = sim.grid_time() + fmu_test::StepSize(k);
    run.every = UINT64_MAX;
    run.emit_start = false;
    run.certificate = true;
    Status s = sim.BeginRun(run);
    NullSink sink;
    while (s.ok() && !sim.run_done()) s = sim.Advance(uint64_t{1} << 20, &sink);
    if (!s.ok()) return Die(s);
    v1::Certificate cert;
    sim.GetCertificate(&cert);
    max_residual = std::max(max_residual, cert.max_position_residual());
    bound = std::max(bound, cert.position_bound());
    if (int rc = print(); rc != 0) return rc;
  }
  return 0;
}
