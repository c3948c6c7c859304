// Stiff Baumgarte gains: the implicit methods SDIRK3 and RADAU_IIA, and
// RK4_POST_STABILIZED, against RK4 (explicit) on the same model, in the
// same run (issue 10 point 4, issue 22 point 4; figures in
// docs/benchmarks.md, "Stiff gains: the implicit method", "Stiff gains:
// RADAU_IIA" and "the feedback's own law at each step's end").
//
// For each model (bench/large_models.h: Chain(2), the double pendulum in
// Cartesian form hung from the origin, and Chain(32)) with alpha = beta =
// the given gain, a reference run (RK4 at a tiny step) gives q on the grid
// t = k * 0.01. Each method and step then reports
//   max |g|    over every step's frame,
//   error      max over the grid of |q - q_ref|_inf (frames on the grid come
//              from the step's quintic interpolant, output_interval),
//   steps/s    and the wall time to simulate [0, T] (certificate off, no
//              frames but the last; best of 5 runs),
// so a row of each method at the same accuracy compares the cost of the
// same answer. RADAU_IIA runs twice: at fixed h (error control off: rtol =
// atol = 1 and max_step = h, Newton tolerance 1e-13; a failed Newton
// iteration still halves a step, so `steps` can exceed T/h) beside the
// other methods' h, and with its error control at rtol = 1e-4 .. 1e-8
// (atol = rtol / 1000). Gain 10 rows of RADAU_IIA at fixed h give the
// non-stiff error at the same h. At stiff gains, the first two rows are the
// cheapest RK4 (largest h) and RADAU_IIA (largest rtol) whose error is at
// most 1e-6, found by bisection, then timed in alternation (9 rounds: the
// median ratio of RADAU_IIA's wall time to RK4's); the same for the largest
// h of RK4_POST_STABILIZED to 1e-6 (its rows at fixed h follow the others).
// Not a timed test: run it by hand,
//   build/bin/tether_stiff_bench [gain ...]     (default 10 1000 100000)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "large_models.h"

namespace {

using tether::RunOptions;
using tether::Simulation;

std::unique_ptr<Simulation> Make(const std::string& json) {
  tether::v1::SimulationSpec spec;
  tether::Status s = tether::ParseSpecJson(json, &spec);
  if (!s.ok()) {
    std::fprintf(stderr, "bad spec: %s\n", s.message().c_str());
    std::exit(1);
  }
  auto created = Simulation::Create(spec);
  if (!created.ok()) {
    std::fprintf(stderr, "Create: %s\n", created.status().message().c_str());
    std::exit(1);
  }
  return std::move(created).value();
}

struct Trajectory {
  bool ok = true;
  std::string error;
  std::vector<std::vector<double>> grid;  // q at t = k * dt, k = 1..
  double max_g = 0;
  uint64_t steps = 0;  // steps taken
};

constexpr double kGridDt = 0.01;

Trajectory Record(const std::string& json, double T) {
  Trajectory out;
  auto sim = Make(json);
  RunOptions run;
  run.until_time = T;
  run.every = 1;
  run.emit_start = false;
  run.output_interval = kGridDt;
  run.certificate = false;
  tether::Status s = sim->BeginRun(run);
  google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
  while (s.ok() && sim->run_active()) {
    frames.Clear();
    s = sim->Advance(10000, &frames);
    for (const auto& f : frames) {
      out.steps = std::max<uint64_t>(out.steps, f.step());
      for (double g : f.residuals().position()) out.max_g = std::max(out.max_g, std::fabs(g));
      // Grid frames: t within rounding of k * dt.
      const double k = std::round(f.t() / kGridDt);
      if (k >= 1 && std::fabs(f.t() - k * kGridDt) < 1e-12 &&
          out.grid.size() < static_cast<size_t>(k)) {
        out.grid.emplace_back(f.q().begin(), f.q().end());
      }
    }
  }
  if (!s.ok()) {
    out.ok = false;
    out.error = s.message().substr(0, 70);
  }
  return out;
}

double ErrorAgainst(const Trajectory& a, const Trajectory& ref) {
  if (!a.ok || a.grid.size() != ref.grid.size()) return HUGE_VAL;
  double e = 0;
  for (size_t k = 0; k < a.grid.size(); ++k) {
    for (size_t i = 0; i < a.grid[k].size(); ++i) {
      e = std::max(e, std::fabs(a.grid[k][i] - ref.grid[k][i]));
    }
  }
  return std::isfinite(e) ? e : HUGE_VAL;
}

// Best-of-`reps` wall time of [0, T] without frames or certificate.
double WallSeconds(const std::string& json, double T, int reps = 5) {
  auto sim = Make(json);
  tether::v1::State initial;
  sim->GetState(&initial);
  double best = HUGE_VAL;
  for (int rep = 0; rep < reps; ++rep) {
    if (!sim->SetState(initial).ok()) std::exit(1);
    RunOptions run;
    run.until_time = T;
    run.every = 1u << 30;
    run.emit_start = false;
    run.certificate = false;
    google::protobuf::RepeatedPtrField<tether::v1::Frame> frames;
    const auto t0 = std::chrono::steady_clock::now();
    tether::Status s = sim->BeginRun(run);
    while (s.ok() && sim->run_active()) s = sim->Advance(1u << 30, &frames);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) return HUGE_VAL;
    best = std::min(best, dt);
  }
  return best;
}

// The model's JSON with `extra` integrator fields (Chain's JSON ends with
// the integrator object).
std::string WithIntegrator(std::string json, const std::string& extra) {
  json.insert(json.size() - 2, "," + extra);
  return json;
}

// RADAU_IIA's spec: with h > 0 at fixed steps of h, else with its error
// control at rtol (atol = rtol / 1000).
std::string Radau(int masses, double gain, double h, double rtol) {
  char extra[160];
  if (h > 0) {
    std::snprintf(extra, sizeof extra,
                  R"("maxStep":%.17g,"rtol":1,"atol":1,"newtonTolerance":1e-13)", h);
  } else {
    std::snprintf(extra, sizeof extra, R"("rtol":%.17g,"atol":%.17g)", rtol, rtol / 1000);
  }
  return WithIntegrator(tether_bench::Chain(masses, {"RADAU_IIA", h, gain, gain}).json, extra);
}

void RunModel(const char* name, int masses, double gain, double T, double h_ref,
              const std::vector<double>& rk4_steps, const std::vector<double>& sdirk_steps,
              const std::vector<double>& radau_steps, const std::vector<double>& radau_rtols,
              const std::vector<double>& post_steps) {
  auto json = [&](const char* method, double h) {
    return tether_bench::Chain(masses, {method, h, gain, gain}).json;
  };
  const Trajectory ref = Record(json("RK4", h_ref), T);
  if (!ref.ok) {
    std::fprintf(stderr, "reference failed: %s\n", ref.error.c_str());
    std::exit(1);
  }
  std::printf(
      "\n%s (chain/%d, %d coordinates), alpha = beta = %g, T = %g s, reference RK4 h = %g"
      " (max |g| %.2g)\n",
      name, masses, 2 * masses, gain, T, h_ref, ref.max_g);
  std::printf(
      "| method | h or rtol | steps | steps/s | wall for T (ms) | max abs g | error vs reference "
      "|\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  auto row = [&](const char* method, const char* setting, double h, const std::string& spec) {
    const Trajectory tr = Record(spec, T);
    const double err = ErrorAgainst(tr, ref);
    const double wall = tr.ok ? WallSeconds(spec, T) : HUGE_VAL;
    if (!tr.ok || !std::isfinite(err)) {
      std::printf("| %s | %s %g | - | - | - | - | failed (%s) |\n", method, setting, h,
                  tr.ok ? "non-finite" : tr.error.c_str());
      return;
    }
    const double steps = static_cast<double>(tr.steps);
    std::printf("| %s | %s %g | %.0f | %.3g | %.3g | %.2g | %.2g |\n", method, setting, h, steps,
                steps / wall, wall * 1e3, tr.max_g, err);
  };
  // The cheapest setting of RK4 (the largest h) and of RADAU_IIA (the
  // largest rtol) whose error is at most kTarget: bisection on log h and
  // log rtol (error is monotone in them over these ranges), then the row.
  // Stiff gains only (at gain 10 RK4's step is set by accuracy).
  constexpr double kTarget = 1e-6;
  auto cheapest = [&](double lo, double hi, auto spec_of) {
    // lo meets the target (checked), hi need not.
    for (int it = 0; it < 8; ++it) {
      const double mid = std::sqrt(lo * hi);
      const Trajectory tr = Record(spec_of(mid), T);
      if (tr.ok && ErrorAgainst(tr, ref) <= kTarget) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  };
  if (gain > 10) {
    const auto rk4 = [&](double h) { return json("RK4", h); };
    const double h_lo = rk4_steps.back();
    const auto radau = [&](double rtol) { return Radau(masses, gain, 0, rtol); };
    double rk4_h = 0, radau_rtol = 0;
    if (ErrorAgainst(Record(rk4(h_lo), T), ref) <= kTarget) {
      rk4_h = cheapest(h_lo, rk4_steps.front(), rk4);
    }
    if (ErrorAgainst(Record(radau(1e-8), T), ref) <= kTarget) {
      radau_rtol = cheapest(1e-8, 1e-3, radau);
    }
    // RK4_POST_STABILIZED: its largest h to 1e-6 (its error does not
    // depend on the gains; bisection from its smallest listed step).
    const auto post = [&](double h) { return json("RK4_POST_STABILIZED", h); };
    double post_h = 0;
    if (ErrorAgainst(Record(post(post_steps.back()), T), ref) <= kTarget) {
      post_h = cheapest(post_steps.back(), 0.05, post);
    }
    if (rk4_h > 0) row("RK4", "cheapest to 1e-6: h", rk4_h, rk4(rk4_h));
    if (radau_rtol > 0) {
      row("RADAU_IIA", "cheapest to 1e-6: rtol", radau_rtol, radau(radau_rtol));
    }
    if (post_h > 0) row("RK4_POST_STABILIZED", "cheapest to 1e-6: h", post_h, post(post_h));
    // The two cheapest settings timed in alternation (best of 2 each, 9
    // rounds): the ratio of each round's pair, whose members saw the same
    // load, and its median; the rows' best-of-5 times are minutes apart on
    // a shared machine.
    auto interleaved = [&](const char* method, const std::string& spec) {
      std::vector<double> ratios;
      for (int round = 0; round < 9; ++round) {
        const double a = WallSeconds(spec, T, 2);
        const double b = WallSeconds(rk4(rk4_h), T, 2);
        ratios.push_back(a / b);
      }
      std::sort(ratios.begin(), ratios.end());
      std::printf(
          "| %s / RK4, cheapest to 1e-6, interleaved | 9 rounds | - | - | median %.3g "
          "(min %.3g, max %.3g) | - | - |\n",
          method, ratios[4], ratios[0], ratios[8]);
    };
    if (rk4_h > 0 && radau_rtol > 0) interleaved("RADAU_IIA", radau(radau_rtol));
    if (rk4_h > 0 && post_h > 0) interleaved("RK4_POST_STABILIZED", post(post_h));
  }
  for (double h : rk4_steps) row("RK4", "h", h, json("RK4", h));
  for (double h : sdirk_steps) row("SDIRK3", "h", h, json("SDIRK3", h));
  for (double h : radau_steps) row("RADAU_IIA", "h", h, Radau(masses, gain, h, 0));
  for (double rtol : radau_rtols) row("RADAU_IIA", "rtol", rtol, Radau(masses, gain, 0, rtol));
  for (double h : post_steps) row("RK4_POST_STABILIZED", "h", h, json("RK4_POST_STABILIZED", h));
}

}  // namespace

int main(int argc, char** argv) {
  // One run of [0, T] (chain/2: T = 1, else 0.5) for an instruction count
  // (callgrind --toggle-collect='tether::Simulation::Advance*'):
  //   --run MASSES GAIN rk4 H | radau RTOL
  if (argc == 6 && std::string(argv[1]) == "--run") {
    const int masses = std::atoi(argv[2]);
    const double gain = std::atof(argv[3]);
    const double x = std::atof(argv[5]);
    const std::string spec = std::string(argv[4]) == "rk4"
                                 ? tether_bench::Chain(masses, {"RK4", x, gain, gain}).json
                                 : Radau(masses, gain, 0, x);
    const double wall = WallSeconds(spec, masses == 2 ? 1.0 : 0.5, 1);
    std::printf("%s: %.3g ms\n", argv[4], wall * 1e3);
    return std::isfinite(wall) ? 0 : 1;
  }
  std::vector<double> gains;
  for (int i = 1; i < argc; ++i) gains.push_back(std::atof(argv[i]));
  if (gains.empty()) gains = {10, 1000, 100000};
  for (double gain : gains) {
    // RK4 is stable for h omega < 2.785 on the test system (omega = gain);
    // at gain 10 its step is limited by accuracy, not stability.
    const double h_rk4 = std::min(0.01, 2.7 / gain);
    const std::vector<double> rk4 = {h_rk4, h_rk4 / 2, h_rk4 / 4};
    const std::vector<double> sdirk = {0.01, 0.005, 0.0025, 0.00125, 0.000625};
    const std::vector<double> radau = {0.01, 0.005, 0.0025, 0.00125};
    const std::vector<double> rtols = {1e-4, 1e-6, 1e-8};
    const std::vector<double> post = {0.02, 0.01, 0.005, 0.0025};
    RunModel("double pendulum", 2, gain, 1.0, std::min(1e-5, h_rk4 / 16), rk4, sdirk, radau, rtols,
             post);
    RunModel("chain of 32", 32, gain, 0.5, std::min(2e-5, h_rk4 / 16), rk4, sdirk, radau, rtols,
             post);
  }
  return 0;
}
