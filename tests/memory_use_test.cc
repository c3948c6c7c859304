// Simulation::memory_use against the allocator: the bytes it reports for a
// simulation (model and own part) must cover what glibc's malloc says the
// simulation holds after it was created and after a run that makes
// everything a run can make (an output grid's workspace, the certificate,
// the implicit method's LU factors), and must not overstate it by much. The
// server's memory budget charges these figures, so a part left out of a
// heap_bytes() sum (engine/internal/base/heap_bytes.h) fails here rather than
// letting sessions hold more than the budget says.
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "counting_allocator.h"
#include "engine/internal/expr/native_tape.h"
#include "engine/simulation.h"
#include "large_models.h"
#include "sanitizers.h"
#include "test_util.h"

namespace tether {
namespace {

// glibc counts the blocks in its per-thread cache (tcache) and fast bins as
// in use although they are free: a compilation's temporaries would then
// look held. The test runs with both off: fast bins by mallopt, the cache
// (a tunable read at start-up only) by running the binary again with
// GLIBC_TUNABLES set, once, before main.
[[maybe_unused]] const bool kPreciseHeap = [] {
  if (std::getenv("GLIBC_TUNABLES") == nullptr) {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    for (std::size_t i = 0; i < cmdline.size();) {
      const std::size_t end = cmdline.find('\0', i);
      args.push_back(cmdline.substr(i, end - i));
      i = end == std::string::npos ? cmdline.size() : end + 1;
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
    execv("/proc/self/exe", argv.data());  // returns only on failure: measured with the cache
  }
  mallopt(M_MXFAST, 0);
  return true;
}();

// Bytes in use in the heap: small blocks in the arenas and large ones
// mapped on their own.
int64_t HeapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

class DiscardFrames : public FrameSink {
 public:
  void Add(const FrameView&) override {}
};

struct Measured {
  int64_t created = 0;  // the heap's growth by Create (the simulation alive)
  int64_t ran = 0;      // and after a run with an output grid and certificate
  Simulation::MemoryUse reported;
  Simulation::MemoryUse reported_after_run;
};

// `steps` steps with an output grid and the certificate: a run that makes
// everything a run can make.
void RunEverything(Simulation* sim, uint64_t steps) {
  RunOptions run;
  run.steps = steps;
  run.every = 0;
  run.output_interval = 1e-3;
  Status s = sim->BeginRun(run);
  EXPECT_TRUE(s.ok()) << s.ToString();
  DiscardFrames sink;
  while (s.ok() && sim->run_active()) s = sim->Advance(1000, &sink);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

Measured Measure(const v1::SimulationSpec& spec, uint64_t steps) {
  Measured m;
  const int64_t before = HeapInUse();
  std::unique_ptr<Simulation> sim = testing::CreateOrFail(spec);
  if (!sim) return m;
  m.created = HeapInUse() - before;
  m.reported = sim->memory_use();
  RunEverything(sim.get(), steps);
  m.ran = HeapInUse() - before;
  m.reported_after_run = sim->memory_use();
  return m;
}

v1::SimulationSpec WithMethod(v1::SimulationSpec spec, v1::IntegratorSpec::Method method,
                              double h) {
  spec.mutable_integrator()->set_method(method);
  if (method == v1::IntegratorSpec::DOPRI5) {
    spec.mutable_integrator()->clear_step_size();
  } else {
    spec.mutable_integrator()->set_step_size(h);
  }
  return spec;
}

v1::SimulationSpec Enclosed(v1::SimulationSpec spec) {
  spec.mutable_certificate()->set_mode(v1::CertificateOptions::ENCLOSED);
  return spec;
}

struct Case {
  const char* name;
  v1::SimulationSpec spec;
};

TEST(MemoryUseTest, CoversWhatTheAllocatorSaysASimulationHoldsAndNotMuchMore) {
#ifdef TETHER_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer's allocator does not keep glibc's statistics";
#endif
  using M = v1::IntegratorSpec;
  const v1::SimulationSpec chain = testing::SpecFromJson(tether_bench::Chain(96).json);
  const Case cases[] = {
      {"circle RK4", testing::CirclePendulum(10, 10, "RK4", 1e-3)},
      {"circle SDIRK3 ENCLOSED", Enclosed(testing::CirclePendulum(10, 10, "SDIRK3", 1e-3))},
      {"chain/8 (dense KKT) DOPRI5",
       WithMethod(testing::SpecFromJson(tether_bench::Chain(8).json), M::DOPRI5, 0)},
      {"chain/96 (sparse KKT) RK4", chain},
      {"chain/96 ENCLOSED", Enclosed(chain)},
      {"chain/96 SDIRK3 (sparse LU)", WithMethod(chain, M::SDIRK3, 1e-3)},
      {"chain/96 RADAU_IIA (KLU pair)", WithMethod(chain, M::RADAU_IIA, 1e-3)},
      {"kinetic chain/64", testing::SpecFromJson(tether_bench::KineticChain(64).json)},
      {"grid/8 (sparse, 2D)", testing::SpecFromJson(tether_bench::Grid(8).json)},
      {"coupled kinetic/96 (dense M(q))",
       testing::SpecFromJson(tether_bench::KineticEnergyModel(96, true))},
  };
  // The first compilation makes the process's lazily built statics
  // (protobuf descriptors, the logger): not a simulation's.
  Measure(cases[0].spec, 10);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Measured m = Measure(c.spec, 20);
    // The heap parts (the tapes' machine code is in pages of its own, not
    // in the heap: `code`, checked below).
    const int64_t reported = m.reported.model + m.reported.own;
    std::printf(
        "%-34s reported %9lld (model %9lld, code %7lld)  heap after create %9lld  after run "
        "%9lld\n",
        c.name, static_cast<long long>(reported), static_cast<long long>(m.reported.model),
        static_cast<long long>(m.reported.code), static_cast<long long>(m.created),
        static_cast<long long>(m.ran));
    // The figures are fixed when the simulation is made: a run changes them not.
    EXPECT_EQ(m.reported_after_run.model + m.reported_after_run.own, reported);
    EXPECT_EQ(m.reported_after_run.code, m.reported.code);
    EXPECT_EQ(m.reported.total(), reported + m.reported.code);
    // Machine code for the long tapes (a dense M(q) of 96 coordinates: its
    // dynamics tape has thousands of instructions), in whole pages.
    if (std::string(c.name).starts_with("coupled kinetic/96")) {
      EXPECT_EQ(m.reported.code > 0, NativeTape::kSupported);
    }
    EXPECT_EQ(m.reported.code % sysconf(_SC_PAGESIZE), 0);
    // It covers what the simulation holds at its largest (1 KiB of slack:
    // the allocator's rounding of the blocks)...
    constexpr int64_t kSlack = 1 << 10;
    EXPECT_LE(m.created, reported + kSlack);
    EXPECT_LE(m.ran, reported + kSlack);
    // ...and overstates it by at most a third (the parts counted before a
    // run makes them, and Eigen's first LU allocation, are estimates from
    // above).
    EXPECT_LE(reported, m.ran + m.ran / 3 + kSlack);
  }
}

// The figures grow with the model as its parts do: a 4x longer chain holds
// about 4x the bytes (the sparse path is linear in the links).
// memory_use counts a certificate recorder that no run has made yet by
// making one and freeing it: for ENCLOSED about 650 bytes a node of the
// constraints' expressions (130 MB at the compile limit). It does so once a
// simulation, and what a session's snapshots keep (the model alone) is
// measured without a simulation: a session snapshotted before its first
// run allocated that recorder again for each snapshot (measured on a
// server: 3 snapshots of a 184,000-node ENCLOSED session raised its peak
// from 300 MB to 394 MB).
TEST(MemoryUseTest, MeasuresARecorderNotMadeYetOnceAndAModelWithoutASimulation) {
  std::unique_ptr<Simulation> sim =
      testing::CreateOrFail(Enclosed(testing::SpecFromJson(tether_bench::Chain(16).json)));
  ASSERT_NE(sim, nullptr);
  long before = testing::HeapAllocations();
  const Simulation::MemoryUse first = sim->memory_use();
  // The measure made a recorder (its encloser's Taylor programs): many
  // allocations, so that the count below can see one.
  EXPECT_GT(testing::HeapAllocations() - before, 20);

  before = testing::HeapAllocations();
  const Simulation::MemoryUse again = sim->memory_use();
  const Simulation::MemoryUse model = Simulation::ModelMemoryUse(*sim->shared_model());
  EXPECT_EQ(testing::HeapAllocations() - before, 0);
  EXPECT_EQ(again.own, first.own);
  EXPECT_EQ(again.model, first.model);
  EXPECT_EQ(model.model, first.model);
  EXPECT_EQ(model.code, first.code);
  EXPECT_EQ(model.own, 0);

  // The figure is the recorder's a run then makes: memory_use is the same
  // after a run with the certificate.
  RunEverything(sim.get(), 10);
  EXPECT_EQ(sim->memory_use().own, first.own);
}

TEST(MemoryUseTest, GrowsLinearlyOnTheSparsePath) {
  auto reported = [](int n) {
    auto sim = testing::CreateOrFail(testing::SpecFromJson(tether_bench::Chain(n).json));
    return sim ? sim->memory_use().total() : 0;
  };
  const int64_t small = reported(64), large = reported(256);
  EXPECT_GT(large, 3 * small);
  EXPECT_LT(large, 5 * small);
}

}  // namespace
}  // namespace tether
