// The ensemble runner (engine/ensemble.h): expansion of grids and random
// draws, errors naming the field, an instance failing alone, and
// determinism: every instance bit-identical to a plain run of it alone,
// whatever the batch, order or number of workers.
#include "engine/ensemble.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/internal/expr/native_tape_lanes.h"
#include "engine/internal/expr/tape_lanes.h"
#include "engine/internal/simulation/ensemble_lanes.h"
#include "engine/internal/simulation/ensemble_random.h"
#include "engine/spec_json.h"

namespace tether {
namespace {

constexpr const char* kCircleWithInput =
    R"j({"system":{"coordinates":["x","y"],"parameters":[{"name":"l","value":1},{"name":"grav","value":9.81}],)j"
    R"j("inputs":[{"name":"Fx","defaultValue":0}],"masses":{"values":[1,1]},"potentialEnergy":"grav*y",)j"
    R"j("generalizedForces":["Fx","0"],"constraints":[{"name":"rod","expression":"(x^2 + y^2 - l^2)/2"}],)j"
    R"j("baumgarte":{"alpha":10,"beta":10}},"initial":{"q":[0,-1],"v":[0,0]},)j"
    R"j("integrator":{"method":"RK4","stepSize":0.001}})j";

constexpr const char* kDoublePendulum =
    R"j({"system":{"coordinates":["th1","th2"],"parameters":[{"name":"m1","value":1},{"name":"m2","value":1},)j"
    R"j({"name":"l1","value":1},{"name":"l2","value":1},{"name":"grav","value":9.81}],)j"
    R"j("definitions":[{"name":"x1","expression":"l1*sin(th1)"},{"name":"y1","expression":"-l1*cos(th1)"},)j"
    R"j({"name":"x2","expression":"x1 + l2*sin(th2)"},{"name":"y2","expression":"y1 - l2*cos(th2)"},)j"
    R"j({"name":"kinetic","expression":"m1*(der(x1)^2 + der(y1)^2)/2 + m2*(der(x2)^2 + der(y2)^2)/2"},)j"
    R"j({"name":"potential","expression":"grav*(m1*y1 + m2*y2)"}],)j"
    R"j("kineticEnergy":"kinetic","potentialEnergy":"potential"},)j"
    R"j("initial":{"q":[1.0,0.5],"v":[0,0]},"integrator":{"method":"RK4","stepSize":0.001}})j";

v1::SimulationSpec Spec(const char* json) {
  v1::SimulationSpec spec;
  Status s = ParseSpecJson(json, &spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return spec;
}

v1::EnsembleSweep* AddSweep(v1::EnsembleSpec* e, const char* name, double a, double b, uint32_t n) {
  auto* s = e->add_sweeps();
  s->set_name(name);
  s->set_start(a);
  s->set_stop(b);
  s->set_count(n);
  return s;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void ExpectSameBits(const v1::EnsembleInstanceResult& a, const v1::EnsembleInstanceResult& b) {
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString())
      << "instance " << a.index() << " differs:\n"
      << a.DebugString() << "\nvs\n"
      << b.DebugString();
}

class Discard final : public FrameSink {
 public:
  void Add(const FrameView&) override {}
};

// A plain run of instance `index`: its description created and run alone,
// frames every step, the way a session's Run does.
v1::EnsembleInstanceResult PlainRun(const EnsembleRunner& runner, uint64_t index, double until) {
  std::vector<v1::EnsembleValue> inputs;
  auto sim = Simulation::Create(runner.InstanceSpec(index, &inputs));
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  for (const auto& in : inputs) EXPECT_TRUE((*sim)->SetInput(in.name(), in.value()).ok());
  RunOptions o;
  o.until_time = until;
  EXPECT_TRUE((*sim)->BeginRun(o).ok());
  Discard sink;
  Status s = (*sim)->Advance(std::numeric_limits<uint64_t>::max(), &sink);
  v1::EnsembleInstanceResult r;
  r.set_ok(s.ok());
  (*sim)->GetState(r.mutable_final_state());
  r.set_steps((*sim)->step());
  v1::Certificate c;
  (*sim)->GetCertificate(&c);
  r.mutable_certificate()->set_position_bound(c.position_bound());
  r.mutable_certificate()->set_max_position_residual(c.max_position_residual());
  return r;
}

void ExpectSameState(const v1::EnsembleInstanceResult& plain, const v1::EnsembleInstanceResult& got,
                     uint64_t i) {
  ASSERT_EQ(plain.final_state().q_size(), got.final_state().q_size());
  EXPECT_TRUE(SameBits(plain.final_state().t(), got.final_state().t())) << i;
  for (int k = 0; k < plain.final_state().q_size(); ++k) {
    EXPECT_TRUE(SameBits(plain.final_state().q(k), got.final_state().q(k))) << i << " q" << k;
    EXPECT_TRUE(SameBits(plain.final_state().v(k), got.final_state().v(k))) << i << " v" << k;
  }
  EXPECT_EQ(plain.steps(), got.steps()) << i;
}

TEST(EnsembleTest, EachInstanceIsBitIdenticalToAPlainRunWhateverTheBatch) {
  for (const char* json : {kCircleWithInput, kDoublePendulum}) {
    const v1::SimulationSpec spec = Spec(json);
    const bool circle = json == kCircleWithInput;
    v1::EnsembleSpec e;
    // A parameter (one compilation per value), an initial velocity and an
    // input or an initial angle.
    AddSweep(&e, circle ? "l" : "l2", 0.8, 1.2, 3);
    AddSweep(&e, circle ? "der(x)" : "der(th1)", -0.5, 0.5, 2);
    auto* d = e.add_random();
    d->set_name(circle ? "Fx" : "th2");
    d->set_kind(v1::EnsembleDistribution::NORMAL);
    d->set_a(0.1);
    d->set_b(0.05);
    e.set_random_count(2);
    e.set_seed(42);
    EnsembleOptions options;
    options.until_time = 0.05;
    auto runner = EnsembleRunner::Create(spec, e, options);
    ASSERT_TRUE(runner.ok()) << runner.status().ToString();
    const EnsembleRunner& r = **runner;
    ASSERT_EQ(r.size(), 12u);

    std::vector<v1::EnsembleInstanceResult> one_worker;
    RunEnsemble(r, 1, [&](v1::EnsembleInstanceResult&& x) { one_worker.push_back(std::move(x)); });
    ASSERT_EQ(one_worker.size(), 12u);
    std::vector<v1::EnsembleInstanceResult> three_workers;
    RunEnsemble(r, 3,
                [&](v1::EnsembleInstanceResult&& x) { three_workers.push_back(std::move(x)); });
    ASSERT_EQ(three_workers.size(), 12u);
    for (uint64_t i = 0; i < 12; ++i) {
      EXPECT_EQ(one_worker[i].index(), i);
      EXPECT_TRUE(one_worker[i].ok()) << one_worker[i].error();
      ExpectSameBits(one_worker[i], three_workers[i]);
      // Alone, in reverse order (the model cache holds other parameters),
      // and advanced in uneven chunks.
      const uint64_t j = 11 - i;
      auto run = r.Start(j);
      uint64_t chunk = 1;
      while (!run->Advance(chunk)) chunk = chunk * 3 + 1;
      ExpectSameBits(run->result(), one_worker[j]);
      // A plain run of the same description: same state bits and bound.
      v1::EnsembleInstanceResult plain = PlainRun(r, i, options.until_time);
      const auto& got = one_worker[i];
      ExpectSameState(plain, got, i);
      EXPECT_TRUE(
          SameBits(plain.certificate().position_bound(), got.certificate().position_bound()));
      EXPECT_TRUE(SameBits(plain.certificate().max_position_residual(),
                           got.certificate().max_position_residual()));
    }
    // The grid's values, the first sweep slowest, the draw fastest.
    EXPECT_EQ(one_worker[0].values(0).value(), 0.8);
    EXPECT_EQ(one_worker[4].values(0).value(), 1.0);
    EXPECT_EQ(one_worker[11].values(0).value(), 1.2);
    EXPECT_EQ(one_worker[2].values(1).value(), 0.5);
    EXPECT_NE(one_worker[0].values(2).value(), one_worker[1].values(2).value());
  }
}

TEST(EnsembleTest, ReductionsPerOutputTimeAreThoseOfTheInstancesFrames) {
  v1::EnsembleSpec e;
  AddSweep(&e, "der(th1)", -1, 1, 5);
  auto* d = e.add_random();
  d->set_name("l2");
  d->set_kind(v1::EnsembleDistribution::UNIFORM);
  d->set_a(0.5);
  d->set_b(1.5);
  e.set_random_count(3);
  EnsembleOptions options;
  options.until_time = 0.1;
  options.output_interval = 0.025;  // 5 times: 0, 0.025, ..., 0.1
  const v1::SimulationSpec spec = Spec(kDoublePendulum);
  auto runner = EnsembleRunner::Create(spec, e, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  std::vector<v1::EnsembleInstanceResult> results;
  EnsembleReducer reducer(spec, options);
  // The size a caller checks before making one.
  EXPECT_EQ(EnsembleReducer::HeapBytesFor(spec, options), reducer.heap_bytes());
  RunEnsemble(**runner, 2, [&](v1::EnsembleInstanceResult&& r) {
    results.push_back(r);
    reducer.Add(&r);
    EXPECT_EQ(r.frames_size(), 0);  // the reducer took them
  });
  v1::EnsembleReduction red;
  reducer.Fill(&red);
  ASSERT_EQ(red.t_size(), 5);
  ASSERT_EQ(red.columns_size(), 4);  // q_th1, q_th2, v_th1, v_th2
  EXPECT_EQ(red.columns(2), "v_th1");
  // Two passes over the kept frames, independently of the reducer.
  for (int row = 0; row < 5; ++row) {
    EXPECT_EQ(red.t(row), 0.025 * row);
    EXPECT_EQ(red.count(row), 15u);
    for (int col = 0; col < 4; ++col) {
      std::vector<double> xs;
      for (const auto& r : results) {
        ASSERT_EQ(r.frames_size(), 5);
        const v1::Frame& f = r.frames(row);
        xs.push_back(col < 2 ? f.q(col) : f.v(col - 2));
      }
      double mean = 0, lo = xs[0], hi = xs[0];
      for (double x : xs) {
        mean += x / xs.size();
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
      double var = 0;
      for (double x : xs) var += (x - mean) * (x - mean) / xs.size();
      const int i = row * 4 + col;
      EXPECT_NEAR(red.mean(i), mean, 1e-14 * (1 + std::fabs(mean))) << row << "," << col;
      EXPECT_NEAR(red.std(i), std::sqrt(var), 1e-12) << row << "," << col;
      EXPECT_EQ(red.min(i), lo);
      EXPECT_EQ(red.max(i), hi);
    }
  }
  // The initial velocities span the sweep: at t = 0 v_th1 runs -1 .. 1.
  EXPECT_EQ(red.min(2), -1);
  EXPECT_EQ(red.max(2), 1);
}

TEST(EnsembleTest, AnInstanceThatFailsFailsAloneWithStepTimeAndCause) {
  v1::EnsembleSpec e;
  auto* inst = e.add_instances();
  inst->add_values()->set_name("Fx");  // 0
  inst = e.add_instances();
  auto* v = inst->add_values();
  v->set_name("Fx");
  v->set_value(1e308);  // overflows to a non-finite velocity
  e.add_instances()->add_values()->set_name("Fx");
  EnsembleOptions options;
  options.until_time = 0.01;
  auto runner = EnsembleRunner::Create(Spec(kCircleWithInput), e, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  std::vector<v1::EnsembleInstanceResult> got;
  RunEnsemble(**runner, 2, [&](v1::EnsembleInstanceResult&& x) { got.push_back(std::move(x)); });
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].ok());
  EXPECT_TRUE(got[2].ok());
  EXPECT_EQ(got[0].steps(), 10u);
  EXPECT_FALSE(got[1].ok());
  EXPECT_NE(got[1].error(), "");
  EXPECT_LT(got[1].failed_step(), 10u);
  EXPECT_EQ(got[1].failed_time(), got[1].final_state().t());
  ExpectSameBits(got[0], [&] {
    auto r = got[2];
    r.set_index(0);
    return r;
  }());
}

// 6 coordinates, 3 constraints: the lane path's general-size case (the
// scalar engine runs it on its any-size kernel).
constexpr const char* kChain3 =
    R"j({"system":{"coordinates":["x1","y1","x2","y2","x3","y3"],)j"
    R"j("parameters":[{"name":"l","value":1},{"name":"grav","value":9.81}],)j"
    R"j("masses":{"values":[1,1,1,1,1,1]},"potentialEnergy":"grav*(y1 + y2 + y3)",)j"
    R"j("constraints":[{"name":"rod1","expression":"(x1^2 + y1^2 - l^2)/2"},)j"
    R"j({"name":"rod2","expression":"((x2 - x1)^2 + (y2 - y1)^2 - l^2)/2"},)j"
    R"j({"name":"rod3","expression":"((x3 - x2)^2 + (y3 - y2)^2 - l^2)/2"}],)j"
    R"j("baumgarte":{"alpha":10,"beta":10}},"initial":{"q":[1,0,2,0,3,0],"v":[0,0,0,0,0,0]},)j"
    R"j("integrator":{"method":"RK4","stepSize":0.001}})j";

std::vector<v1::EnsembleInstanceResult> RunAll(const EnsembleRunner& r, int workers) {
  std::vector<v1::EnsembleInstanceResult> out;
  RunEnsemble(r, workers, [&](v1::EnsembleInstanceResult&& x) { out.push_back(std::move(x)); });
  return out;
}

// The lane kernels this machine runs (SSE2, AVX2, AVX-512F), each named;
// one the CPU or the OS lacks is said on the test's output and left out
// (asked for, it would run the one below it).
std::vector<LaneKernel> KernelsHere() {
  std::vector<LaneKernel> kernels;
  for (LaneKernel k : {LaneKernel::kBaseline, LaneKernel::kAvx2, LaneKernel::kAvx512}) {
    if (internal::ResolveLaneKernel(k) == k) {
      kernels.push_back(k);
    } else {
      std::printf("lane kernel %s: not supported by this CPU or OS, skipped\n",
                  internal::LaneKernelName(k));
    }
  }
  return kernels;
}

// The lane path (eight instances a group, docs/ENSEMBLES.md "Lanes"): the
// bits of the scalar ensemble and of a plain run, with every kernel, on a
// constrained model with an input (circle), one with sin/cos and M(q)
// (double pendulum) and the 6-coordinate chain; 11 instances, a full group
// and one with unused lanes; an end time off the step grid (the last step
// lands).
TEST(EnsembleTest, LanesGiveTheBitsOfTheScalarEngineAndOfAPlainRun) {
  constexpr uint64_t kCount = 11;
  for (const char* json : {kCircleWithInput, kDoublePendulum, kChain3}) {
    const v1::SimulationSpec spec = Spec(json);
    v1::EnsembleSpec e;
    if (json == kCircleWithInput) {
      AddSweep(&e, "der(x)", -0.5, 0.5, kCount);
      auto* d = e.add_random();
      d->set_name("Fx");
      d->set_kind(v1::EnsembleDistribution::NORMAL);
      d->set_a(0.1);
      d->set_b(0.5);
      e.set_random_count(1);
    } else {
      AddSweep(&e, json == kDoublePendulum ? "th1" : "der(y3)", -0.5, 1.5, kCount);
    }
    EnsembleOptions options;
    options.until_time = 0.0505;
    options.certificate = false;
    options.lanes = false;
    auto scalar = EnsembleRunner::Create(spec, e, options);
    ASSERT_TRUE(scalar.ok()) << scalar.status().ToString();
    const auto c = RunAll(**scalar, 1);
    EXPECT_EQ((*scalar)->lane_instances(), 0u);
    ASSERT_EQ(c.size(), kCount);
    for (uint64_t i = 0; i < kCount; ++i) {
      EXPECT_TRUE(c[i].ok()) << c[i].error();
      EXPECT_EQ(c[i].steps(), 51u);
      ExpectSameState(PlainRun(**scalar, i, options.until_time), c[i], i);
    }
    options.lanes = true;
    for (LaneKernel kernel : KernelsHere()) {
      SCOPED_TRACE(internal::LaneKernelName(kernel));
      options.lane_kernel = kernel;
      auto lanes = EnsembleRunner::Create(spec, e, options);
      ASSERT_TRUE(lanes.ok());
      const auto a = RunAll(**lanes, kernel == LaneKernel::kAvx2 ? 2 : 1);
      EXPECT_EQ((*lanes)->lane_instances(), kCount);  // the lanes ran them all
      ASSERT_EQ(a.size(), kCount);
      for (uint64_t i = 0; i < kCount; ++i) ExpectSameBits(a[i], c[i]);
    }
  }
}

// An instance's bits do not depend on its group, lane, position or kernel:
// the same instance in lane 0 of a full group, in lane 7 of another, and
// alone, on every kernel this machine runs.
TEST(EnsembleTest, AnInstanceHasTheSameBitsInAnyLaneOfAnyBatch) {
  auto instance = [](v1::EnsembleSpec* e, double th1, double th2) {
    auto* inst = e->add_instances();
    auto* v = inst->add_values();
    v->set_name("th1");
    v->set_value(th1);
    v = inst->add_values();
    v->set_name("th2");
    v->set_value(th2);
  };
  v1::EnsembleSpec first, last, alone;
  instance(&first, 0.7, -0.3);  // lane 0 of a full group, then a group of one
  for (int k = 1; k < 9; ++k) instance(&first, 0.1 * k, 0.2);
  for (int k = 0; k < 7; ++k) instance(&last, -0.1 * k, 2.0);  // lane 7 of 1 group
  instance(&last, 0.7, -0.3);
  instance(&alone, 0.7, -0.3);
  EnsembleOptions options;
  options.until_time = 0.2;
  options.certificate = false;
  std::vector<std::string> states;
  for (LaneKernel kernel : KernelsHere()) {
    options.lane_kernel = kernel;
    for (const v1::EnsembleSpec* e : {&first, &last, &alone}) {
      auto r = EnsembleRunner::Create(Spec(kDoublePendulum), *e, options);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const auto got = RunAll(**r, 1);
      const auto& x = e == &last ? got[7] : got[0];
      ASSERT_TRUE(x.ok()) << x.error();
      states.push_back(x.final_state().SerializeAsString());
    }
  }
  ASSERT_GE(states.size(), 3u);
  for (const std::string& s : states) EXPECT_EQ(states[0], s);
}

// A lane that overflows does not touch the other lanes of its group; its
// instance fails with the step, time and cause a plain run gives.
TEST(EnsembleTest, AnInstanceFailingInALaneFailsAloneAsOnTheScalarEngine) {
  v1::EnsembleSpec e;
  for (double fx : {0.0, 1e308, 0.5, -0.25}) {
    auto* v = e.add_instances()->add_values();
    v->set_name("Fx");
    v->set_value(fx);
  }
  EnsembleOptions options;
  options.until_time = 0.01;
  options.certificate = false;
  auto lanes = EnsembleRunner::Create(Spec(kCircleWithInput), e, options);
  ASSERT_TRUE(lanes.ok()) << lanes.status().ToString();
  options.lanes = false;
  auto scalar = EnsembleRunner::Create(Spec(kCircleWithInput), e, options);
  ASSERT_TRUE(scalar.ok());
  const auto a = RunAll(**lanes, 1), c = RunAll(**scalar, 1);
  EXPECT_EQ((*lanes)->lane_instances(), 3u);  // the failing one ran again alone
  ASSERT_EQ(a.size(), 4u);
  EXPECT_FALSE(a[1].ok());
  EXPECT_NE(a[1].error(), "");
  EXPECT_LT(a[1].failed_step(), 10u);
  for (uint64_t i = 0; i < 4; ++i) {
    if (i != 1) {
      EXPECT_TRUE(a[i].ok()) << a[i].error();
    }
    ExpectSameBits(a[i], c[i]);
  }
  // With fast functions the failing lane is re-run with Run's functions
  // and says so; the others stay fast (the circle has no transcendental
  // function: the same states).
  options.lanes = true;
  options.fast_functions = true;
  auto fast = EnsembleRunner::Create(Spec(kCircleWithInput), e, options);
  ASSERT_TRUE(fast.ok());
  const auto f = RunAll(**fast, 1);
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(f[i].fast_functions(), i != 1) << i;
    EXPECT_EQ(f[i].ok(), c[i].ok()) << i;
    EXPECT_EQ(f[i].error(), c[i].error()) << i;
    EXPECT_EQ(f[i].final_state().SerializeAsString(), c[i].final_state().SerializeAsString()) << i;
  }
}

// Every transcendental function the tape has, in one coordinate's
// potential (its gradient adds their derivatives' functions): for the fast
// functions' bounds and bits.
constexpr const char* kFunctions =
    R"j({"system":{"coordinates":["x"],"parameters":[{"name":"k","value":0.5}],)j"
    R"j("masses":{"values":[1]},"potentialEnergy":"k*(exp(0.1*x) + log(2 + x^2) + atan2(x, 2 + x^2) + pow(1.5 + x^2, 1.3))j"
    R"j( + tan(0.3*x) + tanh(x) + cosh(0.2*x) + sinh(0.1*x) + asin(0.3*sin(x)) + acos(0.2*cos(x)))j"
    R"j( + atan(x) + x^2)"},)j"
    R"j("initial":{"q":[0.3],"v":[0]},"integrator":{"method":"RK4","stepSize":0.001}})j";

// The largest difference of a result's final q and v from a plain run's,
// relative to max(|plain|, 1) (so absolute near zero).
double MaxRelativeDifference(const v1::EnsembleInstanceResult& plain,
                             const v1::EnsembleInstanceResult& got) {
  double worst = 0;
  auto add = [&worst](double p, double g) {
    worst = std::max(worst, std::fabs(p - g) / std::max(std::fabs(p), 1.0));
  };
  for (int k = 0; k < plain.final_state().q_size(); ++k) {
    add(plain.final_state().q(k), got.final_state().q(k));
    add(plain.final_state().v(k), got.final_state().v(k));
  }
  return worst;
}

// The fast functions one by one (tape_lanes.h's VectorFunction on the
// baseline kernel's batches; the AVX2 kernel's give the same bits, checked
// on whole runs below) against the C library's, in units in the last place
// of the C library's value, over 20,001 arguments per range: the figures
// docs/ENSEMBLES.md states, each asserted here.
TEST(EnsembleTest, FastFunctionsAreWithinTheirStatedUlpsOfTheCLibrary) {
  using B = xsimd::batch<double, xsimd::sse2>;
  struct Case {
    expr::Op op;
    double x0, x1, y0, y1;  // arguments: x from x0 to x1, y from y0 to y1
    double max_ulps;        // docs/ENSEMBLES.md
  };
  using expr::Op;
  const Case cases[] = {
      {Op::kSin, -10, 10, 0, 0, 1},      {Op::kSin, -1e5, 1e5, 0, 0, 1},
      {Op::kCos, -10, 10, 0, 0, 1},      {Op::kCos, -1e5, 1e5, 0, 0, 2},
      {Op::kTan, -1.5, 1.5, 0, 0, 2},    {Op::kAsin, -1, 1, 0, 0, 1},
      {Op::kAcos, -1, 1, 0, 0, 1},       {Op::kAtan, -100, 100, 0, 0, 1},
      {Op::kAtan2, -10, 10, 3, -17, 1},  {Op::kSinh, -5, 5, 0, 0, 2},
      {Op::kSinh, -0.01, 0.01, 0, 0, 2}, {Op::kCosh, -5, 5, 0, 0, 2},
      {Op::kTanh, -5, 5, 0, 0, 2},       {Op::kTanh, -0.01, 0.01, 0, 0, 2},
      {Op::kExp, -700, 700, 0, 0, 1},    {Op::kLog, 1e-6, 1e6, 0, 0, 1},
      {Op::kLog, 0.5, 2, 0, 0, 1},
  };
  constexpr int kN = 20001;
  for (const Case& c : cases) {
    double worst = 0;
    for (int i = 0; i < kN; i += 2) {
      double x[2], y[2], got[2];
      for (int j = 0; j < 2; ++j) {
        const double f = static_cast<double>(std::min(i + j, kN - 1)) / (kN - 1);
        x[j] = c.x0 + (c.x1 - c.x0) * f;
        y[j] = c.y0 + (c.y1 - c.y0) * f;
      }
      B r;
      switch (c.op) {
#define TETHER_TEST_CASE(name, ...)                                                    \
  case Op::name:                                                                       \
    if constexpr (lanes::kHasVectorFunction<Op::name>) {                               \
      r = lanes::VectorFunction<Op::name>(B::load_unaligned(x), B::load_unaligned(y)); \
    }                                                                                  \
    break;
        TETHER_EXPR_OPERATIONS(TETHER_TEST_CASE)
#undef TETHER_TEST_CASE
        default: break;
      }
      r.store_unaligned(got);
      for (int j = 0; j < 2; ++j) {
        double want = 0;
        switch (c.op) {
#define TETHER_TEST_CASE(name, ...) \
  case Op::name: want = expr::Scalar<Op::name>(x[j], y[j]); break;
          TETHER_EXPR_OPERATIONS(TETHER_TEST_CASE)
#undef TETHER_TEST_CASE
          default: break;
        }
        const double ulp = std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
        worst = std::max(worst, std::fabs(got[j] - want) / ulp);
      }
    }
    EXPECT_LE(worst, c.max_ulps) << expr::OpName(c.op) << " on [" << c.x0 << ", " << c.x1 << "]";
    // The lane tape pairs a sin and a cos of one slot into xsimd::sincos
    // (tape_lanes.h, LaneProgram): each of its values must have the bits
    // of the function alone.
    if (c.op == Op::kSin || c.op == Op::kCos) {
      for (int i = 0; i < kN; i += 2) {
        double x[2], sc[2][2], alone[2][2];
        for (int j = 0; j < 2; ++j) {
          x[j] = c.x0 + (c.x1 - c.x0) * static_cast<double>(std::min(i + j, kN - 1)) / (kN - 1);
        }
        const B b = B::load_unaligned(x);
        const auto [s, co] = xsimd::sincos(b);
        s.store_unaligned(sc[0]);
        co.store_unaligned(sc[1]);
        lanes::VectorFunction<Op::kSin>(b, b).store_unaligned(alone[0]);
        lanes::VectorFunction<Op::kCos>(b, b).store_unaligned(alone[1]);
        ASSERT_EQ(std::memcmp(sc, alone, sizeof sc), 0) << "sincos at x = " << x[0];
      }
    }
    std::printf("fast %s on [%g, %g]: at most %.2f ulp from the C library\n",
                std::string(expr::OpName(c.op)).c_str(), c.x0, c.x1, worst);
  }
}

// What the lane tests sweep on each of their models: a velocity, an
// angle, or the function models' x.
const char* SweptName(const char* json) {
  return json == kCircleWithInput  ? "der(x)"
         : json == kDoublePendulum ? "th1"
         : json == kChain3         ? "der(y3)"
                                   : "x";
}

// Fast functions (EnsembleOptions::fast_functions): every model the lane
// path's tests run, and one with every transcendental function, stay
// within the bound docs/ENSEMBLES.md states of a plain run (final state
// after 200 steps, relative to max(|x|, 1)); every kernel (SSE2, AVX2,
// AVX-512F) gives the same bits; each result says it was computed fast.
TEST(EnsembleTest, FastFunctionsStayWithinTheStatedBoundOfAPlainRunOnEveryKernel) {
  constexpr double kBound = 1e-12;  // docs/ENSEMBLES.md, "Bits"
  for (const char* json : {kCircleWithInput, kDoublePendulum, kChain3, kFunctions}) {
    const v1::SimulationSpec spec = Spec(json);
    v1::EnsembleSpec e;
    const char* name = SweptName(json);
    AddSweep(&e, name, -0.5, 1.5, 7);
    EnsembleOptions options;
    options.until_time = 0.2;
    options.certificate = false;
    options.fast_functions = true;
    options.lane_kernel = LaneKernel::kBaseline;
    auto fast = EnsembleRunner::Create(spec, e, options);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    EXPECT_TRUE((*fast)->fast_functions());
    const auto a = RunAll(**fast, 1);
    EXPECT_EQ((*fast)->lane_instances(), 7u);  // a lone instance too
    for (LaneKernel kernel : KernelsHere()) {
      if (kernel == LaneKernel::kBaseline) continue;
      SCOPED_TRACE(internal::LaneKernelName(kernel));
      options.lane_kernel = kernel;
      auto other = EnsembleRunner::Create(spec, e, options);
      ASSERT_TRUE(other.ok());
      const auto b = RunAll(**other, 1);
      for (uint64_t i = 0; i < 7; ++i) ExpectSameBits(a[i], b[i]);
    }
    double worst = 0;
    for (uint64_t i = 0; i < 7; ++i) {
      ASSERT_TRUE(a[i].ok()) << a[i].error();
      EXPECT_TRUE(a[i].fast_functions());
      const auto plain = PlainRun(**fast, i, options.until_time);
      EXPECT_EQ(plain.steps(), a[i].steps());
      worst = std::max(worst, MaxRelativeDifference(plain, a[i]));
    }
    EXPECT_LE(worst, kBound) << name;
    // The option does change the functions: the double pendulum's sin and
    // cos are no longer the C library's bits.
    if (json == kDoublePendulum) {
      EXPECT_GT(worst, 0) << name;
    }
    std::printf("fast functions, %s sweep: max relative difference from a plain run %.3g\n", name,
                worst);
  }
}

// With fast functions an instance's bits still do not depend on its batch
// or kernel: lane 0 of a full group, lane 7 of another, alone (a group of
// one lane), on every kernel this machine runs.
TEST(EnsembleTest, FastFunctionsGiveAnInstanceTheSameBitsInAnyLaneOfAnyBatch) {
  v1::EnsembleSpec first, last, alone;
  auto instance = [](v1::EnsembleSpec* e, double x) {
    auto* v = e->add_instances()->add_values();
    v->set_name("x");
    v->set_value(x);
  };
  instance(&first, 0.7);
  for (int k = 1; k < 10; ++k) instance(&first, 0.1 * k);
  for (int k = 0; k < 7; ++k) instance(&last, -0.1 * k);
  instance(&last, 0.7);
  instance(&alone, 0.7);
  EnsembleOptions options;
  options.until_time = 0.1;
  options.certificate = false;
  options.fast_functions = true;
  std::vector<std::string> states;
  for (LaneKernel kernel : KernelsHere()) {
    options.lane_kernel = kernel;
    for (const v1::EnsembleSpec* e : {&first, &last, &alone}) {
      auto r = EnsembleRunner::Create(Spec(kFunctions), *e, options);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const auto got = RunAll(**r, e == &first ? 2 : 1);
      const auto& x = e == &last ? got[7] : got[0];
      ASSERT_TRUE(x.ok()) << x.error();
      EXPECT_TRUE(x.fast_functions());
      states.push_back(x.final_state().SerializeAsString());
    }
  }
  ASSERT_GE(states.size(), 3u);
  for (const std::string& s : states) EXPECT_EQ(states[0], s);
  // Exact functions: the plain run's bits.
  options.fast_functions = false;
  auto exact = EnsembleRunner::Create(Spec(kFunctions), alone, options);
  ASSERT_TRUE(exact.ok());
  const auto x = RunAll(**exact, 1);
  EXPECT_FALSE(x[0].fast_functions());
  ExpectSameState(PlainRun(**exact, 0, options.until_time), x[0], 0);
}

// A model whose dynamics tape has, with the ones above, every code the
// native lane tape emits inline (abs, sqrt, the powers, min and max's
// steps, ...) and calls (pow, min, max, sign, step, exp).
constexpr const char* kEveryCode =
    R"j({"system":{"coordinates":["x","y"],"parameters":[{"name":"k","value":0.5}],)j"
    R"j("masses":{"values":[1,2]},)j"
    R"j("potentialEnergy":"k*(abs(x - y) + sqrt(2 + x^2 + y^2) + min(x, y)^2 + max(x, 2*y)^3)j"
    R"j( + 1/(2 + x^2) + (1 + y^2)^-3 + x^5 + pow(1.5 + y^2, 0.7) + exp(-x^2) - x*y)",)j"
    R"j("generalizedForces":["-0.3*der(x)*abs(der(y)) + (2 + x^2)^-1 + (x + y)^3",)j"
    R"j("-(der(x) - der(y))*(x - y) - 0.1*(der(y) - x)^2"]},)j"
    R"j("initial":{"q":[0.3,-0.2],"v":[0.1,0.4]},"integrator":{"method":"RK4","stepSize":0.001}})j";

// The lane tape translated into machine code (the AVX2 kernel,
// expr/native_tape_lanes.h) gives the interpreter's bits, and so a plain
// run's with exact functions: on models whose tapes together hold every
// code it emits inline (checked here) and calls, with exact and with fast
// functions, on every kernel this machine runs (only AVX2 translates: the
// others must not change either). Where it translates, every lane
// instance ran the machine code.
TEST(EnsembleTest, TheLaneTapeAsMachineCodeGivesTheInterpretersBits) {
  const char* models[] = {kCircleWithInput, kDoublePendulum, kChain3, kFunctions, kEveryCode};
  std::vector<bool> seen(static_cast<size_t>(Tape::Code::kEnd), false);
  for (const char* json : models) {
    auto sim = Simulation::Create(Spec(json));
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    for (const Tape::Instruction& in : (*sim)->model().dynamics.code()) {
      seen[static_cast<uint8_t>(in.code) % Tape::kFromAcc] = true;
    }
    std::printf("%s: a dynamics tape of %zu instructions\n", SweptName(json),
                (*sim)->model().dynamics.code().size());
  }
  for (int c = 0; c < static_cast<int>(Tape::Code::kEnd); ++c) {
    if (lanes::NativeLaneCode::Inline(static_cast<Tape::Code>(c))) {
      EXPECT_TRUE(seen[static_cast<size_t>(c)]) << "no model's tape has inline code " << c;
    }
  }
  for (const char* json : models) {
    const v1::SimulationSpec spec = Spec(json);
    v1::EnsembleSpec e;
    const char* name = SweptName(json);
    AddSweep(&e, name, -0.5, 1.5, 11);
    for (bool fast : {false, true}) {
      for (LaneKernel kernel : KernelsHere()) {
        SCOPED_TRACE(std::string(name) + (fast ? ", fast, " : ", exact, ") +
                     internal::LaneKernelName(kernel));
        EnsembleOptions options;
        options.until_time = 0.1;
        options.certificate = false;
        options.fast_functions = fast;
        options.lane_kernel = kernel;
        options.lane_native_tape = LaneNativeTape::kNever;
        auto interpreted = EnsembleRunner::Create(spec, e, options);
        ASSERT_TRUE(interpreted.ok()) << interpreted.status().ToString();
        options.lane_native_tape = LaneNativeTape::kAlways;
        auto native = EnsembleRunner::Create(spec, e, options);
        ASSERT_TRUE(native.ok());
        const auto a = RunAll(**interpreted, 1);
        const auto b = RunAll(**native, 1);
        EXPECT_EQ((*native)->lane_instances(), 11u);
        EXPECT_EQ((*interpreted)->lane_native_instances(), 0u);
        const bool translates = kernel == LaneKernel::kAvx2 && lanes::NativeLaneCode::kSupported;
        EXPECT_EQ((*native)->lane_native_instances(), translates ? 11u : 0u);
        for (uint64_t i = 0; i < 11; ++i) {
          ASSERT_TRUE(b[i].ok()) << b[i].error();
          ExpectSameBits(a[i], b[i]);
          if (!fast) ExpectSameState(PlainRun(**native, i, options.until_time), b[i], i);
        }
      }
    }
  }
}

// By default (LaneNativeTape::kAuto) the tape is translated only where
// that pays for itself against the steps of the groups that share the
// translation: not the circle's 7 instructions at any length, not the
// double pendulum's 56 for one group of 100 steps (56 x 100 under
// kMinTranslatedWork), but for one group of 200 steps, or for eight
// groups of 50 (one translation for them all); only where the AVX2 kernel
// runs.
TEST(EnsembleTest, TheLaneTapeIsTranslatedWhereItPays) {
  struct Case {
    const char* json;
    uint64_t instances;
    double until;
    bool translated;
  };
  const bool here = internal::ResolveLaneKernel(LaneKernel::kAuto) == LaneKernel::kAvx2 &&
                    lanes::NativeLaneCode::kSupported;
  for (const Case& c :
       {Case{kCircleWithInput, 64, 2.0, false}, Case{kDoublePendulum, 8, 0.1, false},
        Case{kDoublePendulum, 8, 0.2, true}, Case{kDoublePendulum, 64, 0.05, true},
        Case{kDoublePendulum, 16, 0.05, false}}) {
    SCOPED_TRACE(std::string(SweptName(c.json)) + " x " + std::to_string(c.instances) + " to " +
                 std::to_string(c.until));
    v1::EnsembleSpec e;
    AddSweep(&e, SweptName(c.json), -0.5, 0.5, static_cast<uint32_t>(c.instances));
    EnsembleOptions options;
    options.until_time = c.until;
    options.certificate = false;
    auto r = EnsembleRunner::Create(Spec(c.json), e, options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto got = RunAll(**r, 1);
    EXPECT_EQ((*r)->lane_instances(), c.instances);
    EXPECT_EQ((*r)->lane_native_instances(), c.translated && here ? c.instances : 0u);
  }
  if (!here) std::printf("the AVX2 kernel does not run here: nothing is translated\n");
}

// The groups of the template's model share one lane program (its tape as
// the kernel runs it, on AVX2 translated into machine code), made by the
// first group that needs it, whatever the workers; a model of other
// parameters has groups that make their own. The bits are a plain run's
// (exact functions) and, with fast functions, the same on 1 and 2 workers.
TEST(EnsembleTest, TheGroupsOfAModelShareOneLaneProgram) {
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "fast functions" : "exact functions");
    v1::EnsembleSpec e;
    AddSweep(&e, "th1", 0.5, 1.5, 40);  // five groups
    EnsembleOptions options;
    options.until_time = 0.2;  // translated on AVX2 (TheLaneTapeIsTranslatedWhereItPays)
    options.certificate = false;
    options.fast_functions = fast;
    std::vector<v1::EnsembleInstanceResult> by_workers[2];
    for (int workers : {1, 2}) {
      auto r = EnsembleRunner::Create(Spec(kDoublePendulum), e, options);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ((*r)->lane_programs(), 0);  // none before a group starts
      by_workers[workers - 1] = RunAll(**r, workers);
      EXPECT_EQ((*r)->lane_instances(), 40u);
      EXPECT_EQ((*r)->lane_programs(), 1);
      if (!fast) {
        for (uint64_t i = 0; i < 40; i += 13) {
          ExpectSameState(PlainRun(**r, i, options.until_time), by_workers[workers - 1][i], i);
        }
      }
    }
    for (size_t i = 0; i < 40; ++i) ExpectSameBits(by_workers[0][i], by_workers[1][i]);

    // Another parameter value for each instance: a model each, no sharing.
    v1::EnsembleSpec p;
    AddSweep(&p, "l2", 0.8, 1.2, 16);
    auto r = EnsembleRunner::Create(Spec(kDoublePendulum), p, options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto got = RunAll(**r, 2);
    EXPECT_EQ((*r)->lane_programs(), 0);
    EXPECT_EQ((*r)->lane_instances(), fast ? 16u : 0u);  // exact: each alone on the scalar engine
    for (uint64_t i = 0; i < 16; i += 5) {
      if (!fast) ExpectSameState(PlainRun(**r, i, options.until_time), got[i], i);
    }
  }
}

// Group by group through StartGroup, each advanced in chunks of at most
// `chunk` steps: the results in index order, and into *advances the calls
// to Advance that returned false (more left).
std::vector<v1::EnsembleInstanceResult> RunChunked(const EnsembleRunner& r, uint64_t chunk,
                                                   uint64_t* advances) {
  std::vector<v1::EnsembleInstanceResult> out(r.size());
  const uint64_t width = static_cast<uint64_t>(r.group_size());
  for (uint64_t first = 0; first < r.size(); first += width) {
    const int count = static_cast<int>(std::min(width, r.size() - first));
    auto g = r.StartGroup(first, count);
    while (!g->Advance(chunk)) {
      ++*advances;
      EXPECT_FALSE(g->interrupted());
      if (g->interrupted()) break;
    }
    g->TakeResults(out.data() + first);
  }
  return out;
}

// A long ensemble (1500 steps an instance, past the 1024 a group once had
// to fit in the server's quantum; an end off the step grid, so the last
// step lands) runs on the lanes, every instance, with exact and with fast
// functions: with exact functions each result is a plain run's bits; with
// either, advancing each group in chunks of 1, 7, 1000 or 1499 steps
// (every kernel this machine runs) gives the bits of one unchunked call.
// (3000 steps before: 72 s under the sanitizers, the longest test there.)
TEST(EnsembleTest, ALongEnsembleRunsOnLanesInChunksWithTheBitsOfOneCall) {
  constexpr uint64_t kCount = 11;  // a full group and one of three
  v1::EnsembleSpec e;
  AddSweep(&e, "der(x)", -0.5, 0.5, kCount);
  EnsembleOptions options;
  options.until_time = 1.5005;
  options.certificate = false;
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "fast functions" : "exact functions");
    options.fast_functions = fast;
    // The circle with an input (exact), the double pendulum's sin and cos
    // (fast: then not Run's bits).
    const v1::SimulationSpec spec = Spec(fast ? kDoublePendulum : kCircleWithInput);
    v1::EnsembleSpec sweep = e;
    if (fast) sweep.mutable_sweeps(0)->set_name("der(th1)");
    options.lane_kernel = LaneKernel::kAuto;
    auto runner = EnsembleRunner::Create(spec, sweep, options);
    ASSERT_TRUE(runner.ok()) << runner.status().ToString();
    EXPECT_EQ((*runner)->steps_per_instance(), 1501u);
    EXPECT_EQ((*runner)->group_size(), EnsembleRunner::kLaneGroupSize);
    EXPECT_EQ((*runner)->fast_functions(), fast);
    const auto whole = RunAll(**runner, 1);
    EXPECT_EQ((*runner)->lane_instances(), kCount);  // every one on the lanes
    ASSERT_EQ(whole.size(), kCount);
    for (uint64_t i = 0; i < kCount; ++i) {
      ASSERT_TRUE(whole[i].ok()) << whole[i].error();
      EXPECT_EQ(whole[i].steps(), 1501u);
      EXPECT_EQ(whole[i].fast_functions(), fast);
      const auto plain = PlainRun(**runner, i, options.until_time);
      if (!fast) {
        ExpectSameState(plain, whole[i], i);
      } else {
        EXPECT_LE(MaxRelativeDifference(plain, whole[i]), 1e-12) << i;
      }
    }
    for (LaneKernel kernel : KernelsHere()) {
      SCOPED_TRACE(internal::LaneKernelName(kernel));
      options.lane_kernel = kernel;
      auto chunked = EnsembleRunner::Create(spec, sweep, options);
      ASSERT_TRUE(chunked.ok());
      for (uint64_t chunk : {1, 7, 1000, 1499}) {
        SCOPED_TRACE("chunks of " + std::to_string(chunk) + " steps");
        const uint64_t lanes_before = (*chunked)->lane_instances();
        uint64_t advances = 0;
        const auto got = RunChunked(**chunked, chunk, &advances);
        EXPECT_EQ((*chunked)->lane_instances() - lanes_before, kCount);
        // Two groups of ceil(1501 / chunk) chunks each: it was chunked.
        EXPECT_EQ(advances, 2 * ((1501 + chunk - 1) / chunk - 1));
        for (uint64_t i = 0; i < kCount; ++i) ExpectSameBits(got[i], whole[i]);
      }
    }
  }
}

// A group's accounting (the server's quantum counts 8 instance steps a
// lane step, EnsembleGroupRun::step_cost): Advance(n) takes n steps of the
// lanes, 8 n instance steps; a failing lane's instance then runs alone,
// 1 a step, in chunks too, and fails with a plain run's step, time and
// cause.
TEST(EnsembleTest, AGroupAdvancesByWholeStepsAndAFailingLaneRunsAloneInChunks) {
  v1::EnsembleSpec e;
  for (double fx : {0.0, 1e308, 0.5, -0.25}) {
    auto* v = e.add_instances()->add_values();
    v->set_name("Fx");
    v->set_value(fx);
  }
  EnsembleOptions options;
  options.until_time = 0.05;
  options.certificate = false;
  auto r = EnsembleRunner::Create(Spec(kCircleWithInput), e, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto whole = RunAll(**r, 1);
  ASSERT_FALSE(whole[1].ok());
  auto g = (*r)->StartGroup(0, 4);
  EXPECT_EQ(g->step_cost(), 8u);
  EXPECT_FALSE(g->Advance(20));
  EXPECT_EQ(g->work(), 8u * 20);
  EXPECT_FALSE(g->Advance(20));
  EXPECT_EQ(g->work(), 8u * 40);
  // The last 10 steps end the lane group; the failing lane's instance is
  // then alone, advanced 1 step at a time (it fails within 10).
  EXPECT_FALSE(g->Advance(100));
  EXPECT_EQ(g->work(), 8u * 50);
  EXPECT_EQ(g->step_cost(), 1u);
  int calls = 0;
  while (!g->Advance(1)) ++calls;
  EXPECT_EQ(g->work(), 8u * 50 + whole[1].failed_step());
  EXPECT_EQ(static_cast<uint64_t>(calls), whole[1].failed_step());
  std::vector<v1::EnsembleInstanceResult> got(4);
  g->TakeResults(got.data());
  for (int i = 0; i < 4; ++i) ExpectSameBits(got[static_cast<size_t>(i)], whole[i]);
  EXPECT_EQ(got[1].error(), whole[1].error());
}

Status CreateError(const v1::EnsembleSpec& e, const EnsembleLimits& limits = {}, double until = 1) {
  EnsembleOptions options;
  options.until_time = until;
  auto r = EnsembleRunner::Create(Spec(kCircleWithInput), e, options, limits);
  return r.ok() ? Status::Ok() : r.status();
}

void ExpectField(const Status& s, const std::string& field, const std::string& text) {
  ASSERT_FALSE(s.ok());
  ASSERT_EQ(s.violations().size(), 1u) << s.ToString();
  EXPECT_EQ(s.violations()[0].field, field) << s.ToString();
  EXPECT_NE(s.message().find(text), std::string::npos) << s.ToString();
}

TEST(EnsembleTest, BadEnsemblesAreErrorsNamingTheField) {
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "l", 1, 2, 3);
    AddSweep(&e, "k", 1, 2, 3);
    ExpectField(CreateError(e), "ensemble.sweeps[1].name", "'k'");
  }
  {
    v1::EnsembleSpec e;  // 2^32-1 squared overflows a limit of 2^64-1
    AddSweep(&e, "l", 1, 2, 4294967295u);
    AddSweep(&e, "x", 1, 2, 4294967295u);
    AddSweep(&e, "y", 1, 2, 4294967295u);
    EnsembleLimits unlimited;
    unlimited.max_instances = std::numeric_limits<uint64_t>::max();
    ExpectField(CreateError(e, unlimited), "ensemble.sweeps[2].count", "exceeds the limit");
  }
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "l", 1, 2, 1001);
    EnsembleLimits limits;
    limits.max_instances = 1000;
    ExpectField(CreateError(e, limits), "ensemble.sweeps[0].count", "1000 instances");
  }
  {
    v1::EnsembleSpec e;
    auto* d = e.add_random();
    d->set_name("grav");
    d->set_kind(v1::EnsembleDistribution::NORMAL);
    d->set_a(9.81);
    d->set_b(-0.1);
    e.set_random_count(4);
    ExpectField(CreateError(e), "ensemble.random[0].b", "-0.1");
  }
  {
    v1::EnsembleSpec e;
    auto* d = e.add_random();
    d->set_name("grav");
    d->set_kind(v1::EnsembleDistribution::UNIFORM);
    d->set_a(1);
    d->set_b(2);
    ExpectField(CreateError(e), "ensemble.random_count", "found 0");
  }
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "der(x)", 0, std::numeric_limits<double>::infinity(), 2);
    ExpectField(CreateError(e), "ensemble.sweeps[0].stop", "finite");
  }
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "l", 1, 2, 0);
    ExpectField(CreateError(e), "ensemble.sweeps[0].count", "found 0");
  }
  // Finite ends whose span overflows: a sweep of der(x) from -1.7e308 to
  // 1.7e308 gave [NaN, inf, 1.7e308], uniform draws on it all +inf.
  constexpr double kHuge = 1.7e308;
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "der(x)", -kHuge, kHuge, 3);
    ExpectField(CreateError(e), "ensemble.sweeps[0].stop", "stop - start to be finite");
  }
  for (auto kind : {v1::EnsembleDistribution::UNIFORM, v1::EnsembleDistribution::NORMAL}) {
    v1::EnsembleSpec e;
    auto* d = e.add_random();
    d->set_name("der(x)");
    d->set_kind(kind);
    d->set_a(-kHuge);
    d->set_b(kHuge);
    e.set_random_count(4);
    ExpectField(CreateError(e), "ensemble.random[0].b", "to be finite");
  }
  {
    // Wide but representable spans still run, ends exact.
    v1::EnsembleSpec e;
    AddSweep(&e, "der(x)", -1e307, 1e307, 3);
    EXPECT_TRUE(CreateError(e).ok());
  }
  // A name varied twice for one instance: the last value ran while both
  // were reported (a sweep of l and a draw of l ran the draws, and the
  // results said l = 1, 2). Refused at the second occurrence.
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "l", 1, 2, 2);
    auto* d = e.add_random();
    d->set_name("l");
    d->set_kind(v1::EnsembleDistribution::UNIFORM);
    d->set_a(5);
    d->set_b(6);
    e.set_random_count(2);
    ExpectField(CreateError(e), "ensemble.random[0].name", "already varied by ensemble.sweeps[0]");
  }
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "l", 1, 2, 2);
    AddSweep(&e, "l", 3, 4, 2);
    ExpectField(CreateError(e), "ensemble.sweeps[1].name", "'l' is already varied");
  }
  {
    v1::EnsembleSpec e;
    auto* inst = e.add_instances();
    for (double x : {1.0, 2.0}) {
      auto* v = inst->add_values();
      v->set_name("l");
      v->set_value(x);
    }
    ExpectField(CreateError(e), "ensemble.instances[0].values[1].name", "already varied");
  }
  {
    v1::EnsembleSpec e;
    AddSweep(&e, "l", 1, 2, 2);
    auto* v = e.add_instances()->add_values();
    v->set_name("l");
    v->set_value(3);
    ExpectField(CreateError(e), "ensemble.instances[0].values[0].name", "ensemble.sweeps[0]");
  }
  {
    // One value from 1 to 2 cannot end at 2: it ran l = 1 only.
    v1::EnsembleSpec e;
    AddSweep(&e, "l", 1, 2, 1);
    ExpectField(CreateError(e), "ensemble.sweeps[0].count", "cannot end at stop");
    v1::EnsembleSpec same;
    AddSweep(&same, "l", 1.5, 1.5, 1);
    EXPECT_TRUE(CreateError(same).ok());
  }
  ExpectField(CreateError(v1::EnsembleSpec(), {}, -1), "until_time", "after the initial time");
  {
    v1::EnsembleSpec e;  // 1000 instances x 1000 steps
    AddSweep(&e, "l", 1, 2, 1000);
    EnsembleLimits limits;
    limits.max_instance_steps = 999'999;
    Status s = CreateError(e, limits);
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
    limits.max_instance_steps = 1'000'000;
    EXPECT_TRUE(CreateError(e, limits).ok());
  }
}

// The runner's bounds on a result (what the server charges for the results
// it holds and checks against its message limit before running): every
// result within them, frames included, and not far above the largest; a
// limit below the bound refuses the ensemble before anything runs, naming
// output_interval.
TEST(EnsembleTest, EachResultIsWithinTheRunnersBoundsAndALargerBoundIsRefusedBeforeRunning) {
  v1::EnsembleSpec e;
  AddSweep(&e, "der(y)", -1, 1, 3);
  AddSweep(&e, "grav", -1e300, -1e300, 1);  // fails: an error in its result
  auto* inst = e.add_instances();
  auto* v = inst->add_values();
  v->set_name("l");
  v->set_value(1.5);
  EnsembleOptions options;
  options.until_time = 1;
  options.output_interval = 1e-3;
  const v1::SimulationSpec spec = Spec(kCircleWithInput);
  auto runner = EnsembleRunner::Create(spec, e, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  const int64_t wire = (*runner)->result_wire_bound(), heap = (*runner)->result_heap_bound();
  int64_t most_wire = 0, most_heap = 0;
  int frames = 0;
  bool failed = false;
  RunEnsemble(**runner, 2, [&](v1::EnsembleInstanceResult&& r) {
    const int64_t w = static_cast<int64_t>(r.ByteSizeLong()), h = MessageHeapBytes(r);
    EXPECT_LE(w, wire) << r.index();
    EXPECT_LE(h, heap) << r.index();
    most_wire = std::max(most_wire, w);
    most_heap = std::max(most_heap, h);
    frames = std::max(frames, r.frames_size());
    failed = failed || !r.ok();
  });
  EXPECT_TRUE(failed);  // the bound covers an error too
  EXPECT_GE(frames, 1001);
  // Frames dominate: the bounds are the largest frame's, each frame's
  // step the longest varint, and three frames more.
  EXPECT_LT(wire, most_wire * 5 / 4) << most_wire;
  EXPECT_LT(heap, most_heap * 5 / 4) << most_heap;

  EnsembleLimits limits;
  limits.max_result_bytes = static_cast<uint64_t>(wire);
  EXPECT_TRUE(EnsembleRunner::Create(spec, e, options, limits).ok());
  limits.max_result_bytes = static_cast<uint64_t>(wire - 1);
  auto refused = EnsembleRunner::Create(spec, e, options, limits);
  ASSERT_FALSE(refused.ok());
  ExpectField(refused.status(), "output_interval", "larger output_interval");
}

// Each parameter set is a compilation: bounded before anything runs, and
// the bound holds what the run compiles.
TEST(EnsembleTest, CompilationsAreBoundedBeforeTheEnsembleRuns) {
  const v1::SimulationSpec spec = Spec(kCircleWithInput);
  EnsembleOptions options;
  options.until_time = 0.01;
  auto bound = [&](const v1::EnsembleSpec& e, uint64_t* ran = nullptr) -> uint64_t {
    auto r = EnsembleRunner::Create(spec, e, options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return 0;
    if (ran) {
      RunEnsemble(**r, 1, [](v1::EnsembleInstanceResult&&) {});
      *ran = (*r)->compilations();
    }
    return (*r)->max_compilations();
  };
  {
    v1::EnsembleSpec e;  // no parameter: none
    AddSweep(&e, "der(y)", 0, 1, 3);
    EXPECT_EQ(bound(e), 0u);
  }
  v1::EnsembleSpec five;  // 5 sets, each cached: 5 (the template's is one of them)
  AddSweep(&five, "l", 1, 2, 5);
  AddSweep(&five, "der(y)", 0, 1, 3);
  uint64_t ran = 0;
  EXPECT_EQ(bound(five, &ran), 5u);
  EXPECT_LE(ran, 5u);
  EXPECT_GE(ran, 4u);
  {
    v1::EnsembleSpec e;  // 20 sets, the fastest dimension: beyond the cache, one per instance
    AddSweep(&e, "der(y)", 0, 1, 2);
    AddSweep(&e, "l", 1, 2, 20);
    EXPECT_EQ(bound(e, &ran), 40u);
    EXPECT_LE(ran, 40u);
    EXPECT_GT(ran, 20u);  // the cache dropped sets that came back
  }
  {
    v1::EnsembleSpec e;  // a random parameter: one per instance
    AddSweep(&e, "der(y)", 0, 1, 2);
    auto* d = e.add_random();
    d->set_name("grav");
    d->set_kind(v1::EnsembleDistribution::UNIFORM);
    d->set_a(9);
    d->set_b(10);
    e.set_random_count(3);
    EXPECT_EQ(bound(e), 6u);
  }
  EnsembleLimits limits;
  limits.max_compilations = 5;
  EXPECT_TRUE(EnsembleRunner::Create(spec, five, options, limits).ok());
  limits.max_compilations = 4;
  auto refused = EnsembleRunner::Create(spec, five, options, limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("5 compilations"), std::string::npos)
      << refused.status().ToString();
}

TEST(EnsembleTest, AnInstanceCarriesAtMostTheLimitOfValues) {
  // A name is varied once per instance, so the limit takes as many names:
  // 2048 free coordinates (their q and der(q)) and a parameter.
  constexpr int kN = kMaxEnsembleValuesPerInstance / 2;
  std::string json = R"({"system": {"parameters": [{"name": "k", "value": 1}], "coordinates": [)";
  for (int i = 0; i < kN; ++i) json += (i ? ",\"x" : "\"x") + std::to_string(i) + "\"";
  json += R"(], "masses": {"values": [)";
  for (int i = 0; i < kN; ++i) json += i ? ",1" : "1";
  json += R"(]}, "generalizedForces": [)";
  for (int i = 0; i < kN; ++i) json += i ? ",\"k\"" : "\"k\"";
  json += R"(]}, "initial": {"q": [)";
  for (int i = 0; i < kN; ++i) json += i ? ",0" : "0";
  json += R"(]}, "integrator": {"method": "RK4", "stepSize": 0.001}})";
  const v1::SimulationSpec spec = Spec(json.c_str());
  EnsembleOptions options;
  options.until_time = 0.001;
  v1::EnsembleSpec e;
  for (int i = 0; i < kN; ++i) {
    AddSweep(&e, ("x" + std::to_string(i)).c_str(), 1, 1, 1);
    AddSweep(&e, ("der(x" + std::to_string(i) + ")").c_str(), 1, 1, 1);
  }
  ASSERT_EQ(e.sweeps_size(), kMaxEnsembleValuesPerInstance);
  auto r = EnsembleRunner::Create(spec, e, options, {});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  AddSweep(&e, "k", 1, 1, 1);
  r = EnsembleRunner::Create(spec, e, options, {});
  ASSERT_FALSE(r.ok());
  ExpectField(r.status(), "ensemble",
              "at most " + std::to_string(kMaxEnsembleValuesPerInstance) + " values per instance");
}

TEST(EnsembleTest, RandomDrawsFollowThePublishedGenerators) {
  // SplitMix64's first output from state 0 (Vigna's reference splitmix64.c).
  EXPECT_EQ(ensemble_random::Mix(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL);
  // The portable logarithm within 2 ulp of the C library's.
  for (double x : {1e-300, 1e-10, 0.1, 0.5, 0.7, 0.75, 0.999999, 1.0, 1.5, 2.0, 10.0, 1e300}) {
    const double want = std::log(x);
    EXPECT_LE(std::fabs(ensemble_random::PortableLog(x) - want),
              2 * std::fabs(std::nextafter(want, INFINITY) - want) + 1e-300)
        << x;
  }
  // Moments of 200000 standard normals (standard errors 0.0022 and 0.0016).
  double sum = 0, sum2 = 0, u_sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    ensemble_random::SplitMix64 g(7, static_cast<uint64_t>(i), 0);
    const double z = ensemble_random::StandardNormal(&g);
    sum += z;
    sum2 += z * z;
    ensemble_random::SplitMix64 u(7, static_cast<uint64_t>(i), 1);
    u_sum += u.Uniform();
  }
  EXPECT_NEAR(sum / n, 0, 0.01);
  EXPECT_NEAR(sum2 / n, 1, 0.01);
  EXPECT_NEAR(u_sum / n, 0.5, 0.003);
}

}  // namespace
}  // namespace tether
