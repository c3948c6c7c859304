// The output grid (RunOptions::output_interval): frames at t0 + k dt for
// adaptive and fixed-step methods, values from the step's interpolant with
// an evaluation there, in time order with the per-step frames, independent
// of the steps, the certificate and the Advance quanta; bad values rejected
// naming the field.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "method_table.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::CirclePendulum;
using testing::RunSpec;

// t0 + k dt as the grid defines it (volatile: computed at run time, in
// double, like the engine's).
double GridTime(double t0, double dt, uint64_t k) {
  volatile double kd = static_cast<double>(k);
  return t0 + kd * dt;
}

// The frames of a run with `options`, from a simulation created from spec
// and (when `start` is given) set to that state first.
testing::RunOutput RunFrom(const v1::SimulationSpec& spec, const RunOptions& options,
                           uint64_t quantum = 1000, uint64_t max_frames = UINT64_MAX) {
  testing::RunOutput out;
  std::unique_ptr<Simulation> sim = testing::CreateOrFail(spec);
  if (!sim) return out;
  out.status = sim->BeginRun(options);
  while (out.status.ok() && sim->run_active()) {
    out.status = sim->Advance(quantum, &out.frames, max_frames);
  }
  sim->GetCertificate(&out.certificate);
  return out;
}

TEST(OutputGridTest, Dopri5GivesExactlyTheGridTimes) {
  RunOptions run;
  run.until_time = 1.0;
  run.every = 0;
  run.output_interval = 0.01;
  auto out = RunSpec(CirclePendulum(10, 10, "DOPRI5", 0, 0.6, -0.8), run);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  ASSERT_EQ(out.frames.size(), 101);
  for (int k = 0; k <= 100; ++k) {
    EXPECT_EQ(out.frames.at(k).t(), GridTime(0, 0.01, static_cast<uint64_t>(k))) << k;
  }
  // The steps are DOPRI5's own: far fewer than the frames' spacing implies
  // would be a coincidence, so frames inside steps carry the step before.
  EXPECT_LT(out.frames.at(50).step(), 100u);
  EXPECT_EQ(out.certificate.t_end(), 1.0);
}

TEST(OutputGridTest, Dopri5GridValuesMatchAFineFixedStepRun) {
  // Default tolerances (rtol 1e-6, atol 1e-9); the reference is RK4 at
  // h = 1e-4, whose frames every 100 steps are at k * 0.01 to rounding.
  const auto spec = CirclePendulum(10, 10, "DOPRI5", 0, 0.6, -0.8, 0.5, 0.375);
  RunOptions run;
  run.until_time = 1.0;
  run.every = 0;
  run.output_interval = 0.01;
  auto out = RunSpec(spec, run);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  RunOptions ref_run;
  ref_run.until_time = 1.0;
  ref_run.every = 100;
  auto ref = RunSpec(CirclePendulum(10, 10, "RK4", 1e-4, 0.6, -0.8, 0.5, 0.375), ref_run);
  ASSERT_TRUE(ref.status.ok());
  ASSERT_EQ(out.frames.size(), ref.frames.size());
  double worst_q = 0, worst_v = 0, worst_a = 0, worst_lambda = 0;
  for (int k = 0; k < out.frames.size(); ++k) {
    const auto& f = out.frames.at(k);
    const auto& r = ref.frames.at(k);
    ASSERT_NEAR(f.t(), r.t(), 1e-12);
    for (int i = 0; i < 2; ++i) {
      worst_q = std::max(worst_q, std::fabs(f.q(i) - r.q(i)));
      worst_v = std::max(worst_v, std::fabs(f.v(i) - r.v(i)));
      worst_a = std::max(worst_a, std::fabs(f.a(i) - r.a(i)));
    }
    worst_lambda = std::max(worst_lambda, std::fabs(f.lambda(0) - r.lambda(0)));
  }
  EXPECT_LT(worst_q, 2e-5);
  EXPECT_LT(worst_v, 2e-4);
  EXPECT_LT(worst_a, 2e-3);
  EXPECT_LT(worst_lambda, 2e-3);
}

TEST(OutputGridTest, InterpolatedFramesAreEvaluationsAtTheirState) {
  // a, lambda, residuals and outputs of a frame inside a step are those of
  // an evaluation at (t, q, v) of the frame: bit for bit.
  const auto spec = CirclePendulum(10, 10, "DOPRI5", 0, 0.6, -0.8, 0.5, 0.375);
  RunOptions run;
  run.until_time = 0.3;
  run.every = 0;
  run.output_interval = 0.007;
  auto out = RunSpec(spec, run);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  ASSERT_GT(out.frames.size(), 40);
  std::unique_ptr<Simulation> sim = testing::CreateOrFail(spec);
  ASSERT_TRUE(sim);
  int checked = 0;
  for (const auto& f : out.frames) {
    v1::State state;
    state.set_t(f.t());
    state.mutable_q()->CopyFrom(f.q());
    state.mutable_v()->CopyFrom(f.v());
    ASSERT_TRUE(sim->SetState(state).ok());
    v1::Frame e;
    ASSERT_TRUE(sim->Evaluate(&e).ok());
    e.set_step(f.step());
    EXPECT_EQ(e.SerializeAsString(), f.SerializeAsString()) << "t = " << f.t();
    ++checked;
  }
  EXPECT_EQ(checked, out.frames.size());
}

TEST(OutputGridTest, StepsAndCertificateDoNotDependOnTheGrid) {
  for (const std::string& method : testing::MethodNames()) {
    const auto spec = CirclePendulum(10, 10, method, 1e-3, 0.6, -0.8, 0.5, 0.375);
    RunOptions plain;
    plain.until_time = 0.25;
    auto a = RunSpec(spec, plain);
    RunOptions grid = plain;
    grid.output_interval = 0.0037;  // not a multiple of the step
    auto b = RunSpec(spec, grid);
    ASSERT_TRUE(a.status.ok() && b.status.ok()) << method;
    EXPECT_EQ(a.certificate.SerializeAsString(), b.certificate.SerializeAsString()) << method;
    // Every per-step frame of a is in b, bit for bit and in order; the
    // others are at the grid times in order, and a grid time equal to a
    // step's time is that step's frame (once); times increase strictly.
    int j = 0;
    uint64_t k = 1;
    double last_t = -1;
    for (const auto& f : b.frames) {
      EXPECT_GT(f.t(), last_t) << method;
      last_t = f.t();
      if (j < a.frames.size() && f.SerializeAsString() == a.frames.at(j).SerializeAsString()) {
        ++j;
        if (f.t() == GridTime(0, 0.0037, k)) ++k;
      } else {
        EXPECT_EQ(f.t(), GridTime(0, 0.0037, k)) << method;
        ++k;
      }
    }
    EXPECT_EQ(j, a.frames.size()) << method;
    EXPECT_EQ(k - 1, 67u) << method;  // 0.0037 k < 0.25: k = 1..67
  }
}

TEST(OutputGridTest, FixedStepGridOnStepTimesIsTheStepsFrame) {
  // h = 1/1024 and dt = 4/1024 are exact: every grid time is a step time,
  // so the grid frames are the step frames 0, 4, 8, ...
  const auto spec = CirclePendulum(10, 10, "RK4", 1.0 / 1024, 0.6, -0.8);
  RunOptions grid;
  grid.steps = 41;
  grid.every = 0;
  grid.output_interval = 4.0 / 1024;
  auto out = RunSpec(spec, grid);
  ASSERT_TRUE(out.status.ok());
  std::vector<uint64_t> steps;
  for (const auto& f : out.frames) steps.push_back(f.step());
  EXPECT_EQ(steps, (std::vector<uint64_t>{0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 41}));
  RunOptions every;
  every.steps = 41;
  every.every = 4;
  auto ref = RunSpec(spec, every);
  ASSERT_EQ(ref.frames.size(), out.frames.size());
  for (int i = 0; i < ref.frames.size(); ++i) {
    EXPECT_EQ(ref.frames.at(i).SerializeAsString(), out.frames.at(i).SerializeAsString()) << i;
  }
}

TEST(OutputGridTest, FrameLimitAndQuantaDoNotChangeTheFrames) {
  // Many grid frames inside one step (dt << h), fetched one frame at a
  // time and one step at a time.
  const auto spec = CirclePendulum(10, 10, "DOPRI5", 0, 0.6, -0.8, 0.5, 0.375);
  RunOptions run;
  run.until_time = 0.2;
  run.every = 3;
  run.output_interval = 0.0005;
  auto whole = RunFrom(spec, run);
  auto pieces = RunFrom(spec, run, 1, 1);
  ASSERT_TRUE(whole.status.ok() && pieces.status.ok());
  ASSERT_EQ(whole.frames.size(), pieces.frames.size());
  EXPECT_GT(whole.frames.size(), 400);
  for (int i = 0; i < whole.frames.size(); ++i) {
    EXPECT_EQ(whole.frames.at(i).SerializeAsString(), pieces.frames.at(i).SerializeAsString());
  }
  EXPECT_EQ(whole.certificate.SerializeAsString(), pieces.certificate.SerializeAsString());
}

TEST(OutputGridTest, AContinuedRunsGridStartsAtItsStartTime) {
  const auto spec = CirclePendulum(10, 10, "DOPRI5", 0, 0.6, -0.8);
  std::unique_ptr<Simulation> sim = testing::CreateOrFail(spec);
  ASSERT_TRUE(sim);
  RunOptions first;
  first.until_time = 0.123;
  first.every = 0;
  first.output_interval = 0.05;
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  ASSERT_TRUE(sim->BeginRun(first).ok());
  while (sim->run_active()) ASSERT_TRUE(sim->Advance(1000, &frames).ok());
  std::vector<double> times;
  for (const auto& f : frames) times.push_back(f.t());
  EXPECT_EQ(times, (std::vector<double>{0, 0.05, GridTime(0, 0.05, 2), 0.123}));
  RunOptions second = first;
  second.until_time = 0.25;
  second.emit_start = false;
  frames.Clear();
  ASSERT_TRUE(sim->BeginRun(second).ok());
  while (sim->run_active()) ASSERT_TRUE(sim->Advance(1000, &frames).ok());
  times.clear();
  for (const auto& f : frames) times.push_back(f.t());
  EXPECT_EQ(times, (std::vector<double>{GridTime(0.123, 0.05, 1), GridTime(0.123, 0.05, 2), 0.25}));
}

TEST(OutputGridTest, SameRequestGivesTheSameBits) {
  const auto spec = CirclePendulum(10, 10, "DOPRI5", 0, 0.6, -0.8, 0.5, 0.375);
  RunOptions run;
  run.until_time = 0.5;
  run.every = 0;
  run.output_interval = 0.01;
  auto a = RunFrom(spec, run, 7);
  auto b = RunFrom(spec, run, 1000, 5);
  ASSERT_TRUE(a.status.ok() && b.status.ok());
  ASSERT_EQ(a.frames.size(), b.frames.size());
  for (int i = 0; i < a.frames.size(); ++i) {
    EXPECT_EQ(a.frames.at(i).SerializeAsString(), b.frames.at(i).SerializeAsString());
  }
}

TEST(OutputGridTest, BadValuesAreRejectedNamingTheField) {
  const auto spec = CirclePendulum(10, 10, "RK4", 1e-3);
  std::unique_ptr<Simulation> sim = testing::CreateOrFail(spec);
  ASSERT_TRUE(sim);
  for (double dt : {0.0, -0.01, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    RunOptions run;
    run.steps = 10;
    run.output_interval = dt;
    Status s = sim->BeginRun(run);
    ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << dt;
    ASSERT_EQ(s.violations().size(), 1u);
    EXPECT_EQ(s.violations()[0].field, "output_interval") << dt;
    EXPECT_NE(s.violations()[0].description.find("found"), std::string::npos) << dt;
  }
  // Too many output times for a double-precision index.
  RunOptions run;
  run.until_time = 1e3;
  run.output_interval = 1e-14;
  Status s = sim->BeginRun(run);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.violations().at(0).field, "output_interval");
  run.output_interval = 1e-12;
  EXPECT_TRUE(sim->BeginRun(run).ok());
  // An interval below the time's resolution does not advance it.
  v1::State late;
  late.set_t(1e6);
  late.add_q(1);
  late.add_q(0);
  ASSERT_TRUE(sim->SetState(late).ok());
  run.until_time = std::nullopt;
  run.steps = 10;
  run.output_interval = 1e-11;
  s = sim->BeginRun(run);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.violations().at(0).field, "output_interval");
  run.output_interval = 1e-9;
  EXPECT_TRUE(sim->BeginRun(run).ok());
  // every = 0 needs a grid.
  RunOptions none;
  none.steps = 10;
  none.every = 0;
  s = sim->BeginRun(none);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.violations().at(0).field, "every");
  none.output_interval = 0.01;
  EXPECT_TRUE(sim->BeginRun(none).ok());
}

}  // namespace
}  // namespace tether
