// The ensemble's lane path (docs/ENSEMBLES.md, "Lanes"): kLaneWidth
// instances of one compiled model stepped together, every double of the
// step (the tape, the dense KKT solve, RK4's stages) computed for the eight
// at once. It covers the happy path of a run that no frame or certificate
// reads: RK4, the dense KKT kernel of a size in TETHER_LANE_SIZES, no
// certificate, no output grid. Everything else, and any instance whose
// lane meets what would stop or diagnose its scalar run, is run by the
// scalar engine (EnsembleRunner falls back by itself).
//
// Bits: each lane performs its instance's scalar operations in the scalar
// order (tape_lanes.h, kkt_lanes.h, the RK4 step below following rk4.h and
// advance.cc), with the C library's functions per lane, and the kernels
// are compiled without floating-point contraction: a lane's results are
// those of a plain Run of its instance, whatever the group, the lane or the
// instruction set. With LaneGroup::fast_functions the transcendental
// functions are xsimd's vectorised ones: a lane's results are then within
// the bound docs/ENSEMBLES.md states of Run's, and still the same whatever
// the group, the lane or the instruction set.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/model/model.h"
#include "engine/lane_kernel.h"

namespace tether::lanes {
struct LaneProgram;  // expr/tape_lanes.h
}  // namespace tether::lanes

namespace tether::internal {

inline constexpr int kLaneWidth = 8;

// The sizes (nq, nc) the lane path is instantiated for: the scalar
// engine's fixed sizes and a 6-coordinate, 3-constraint chain.
#define TETHER_LANE_SIZES(X) TETHER_FIXED_SIZES(X) X(6, 3)

// Which kernel runs the lanes (engine/lane_kernel.h): kAuto resolves to
// the best the CPU and the OS support, a forced one the CPU or the OS
// lacks to the best below it they have.
LaneKernel BestLaneKernel();
// The kernel that runs when `kernel` is asked for on this machine.
LaneKernel ResolveLaneKernel(LaneKernel kernel);
const char* LaneKernelName(LaneKernel kernel);

// Whether the lane path can run `m` (dense KKT of a size in
// TETHER_LANE_SIZES).
bool LanesSupport(const Model& m);

// The lane programs of one model (expr/tape_lanes.h's LaneProgram: its
// tape's instructions as a kernel's interpreter runs them, and on the AVX2
// kernel that tape as machine code), shared by the groups that run it: the
// first group that needs one for its kernel, functions and translation
// makes it, the others read it. A program is a function of those and the
// tape alone, so sharing changes no bit; it saves each group the
// preparation and the translation (for the double pendulum about 176 k
// instructions, pages mapped and three system calls; shared, 64 instances
// of 1000 steps ran 1.10x faster: docs/benchmarks.md). Thread-safe; the
// programs live as long as this, and a group holds a reference to its own.
class LanePrograms {
 public:
  using Make = std::shared_ptr<const lanes::LaneProgram> (*)(const Model& m, bool fast_functions,
                                                             bool translate);
  std::shared_ptr<const lanes::LaneProgram> Get(LaneKernel kernel, bool fast_functions,
                                                bool translate, const Model& m, Make make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& p = programs_[static_cast<int>(kernel)][fast_functions][translate];
    if (!p) {
      p = make(m, fast_functions, translate);
      ++made_;
    }
    return p;
  }
  // Programs made so far (for tests).
  int made() {
    std::lock_guard<std::mutex> lock(mu_);
    return made_;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<const lanes::LaneProgram> programs_[4][2][2];  // guarded by mu_
  int made_ = 0;                                                 // guarded by mu_
};

// What a group in progress carries between chunks: its kernel's program,
// work buffer and lane states (ensemble_lanes_kernel.h's LaneRunState),
// opaque here. Owned by the LaneGroup; released when the group is done.
struct LaneGroupState {
  virtual ~LaneGroupState() = default;
};

// One group: kLaneWidth instances of `model` from t0 to `until` by RK4 of
// step h, each with its own q0, v0 and inputs u (lane-major: lane l's q at
// q[l * nq + i]), advanced in chunks (AdvanceLaneGroup). Once done, q and v
// hold each lane's final state, t the final time and steps the steps taken
// (the same for every lane: the times do not depend on the state); ok[l]
// is false for a lane that must be run on the scalar path (its values then
// mean nothing). fast_functions: the tape's transcendental operations by
// xsimd's vectorised functions (within the bound docs/ENSEMBLES.md states
// of the C library's, the same bits on every kernel) instead of the C
// library's per lane (Run's bits).
//
// Memory: while in progress (between chunks too) the group holds `state`:
// the tape's work buffer for eight (64 bytes a slot), its program and the
// eight states; released when done. Single-threaded: one thread at a time
// advances a group.
struct LaneGroup {
  const Model* model = nullptr;
  // The programs of `model`, shared with other groups; null: the group
  // makes its own. shared_steps: with `programs`, the steps of all the
  // groups that share them (what a translation, made once, pays against).
  LanePrograms* programs = nullptr;
  double shared_steps = 0;
  bool fast_functions = false;
  // The tape translated into machine code where the kernel does that
  // (expr/tape_lanes.h's LaneProgram::translate) and, with kAuto, where it
  // pays (LaneNativeTape); the same bits either way. native_tape_ran:
  // whether it was (set at the first chunk).
  LaneNativeTape native_tape = LaneNativeTape::kAuto;
  bool native_tape_ran = false;
  double t0 = 0, h = 0, until = 0;
  std::vector<double> q, v, u;
  // Progress: the time reached and the steps taken so far; done once every
  // lane reached `until` or failed.
  double t = 0;
  uint64_t steps = 0;
  bool done = false;
  bool ok[kLaneWidth] = {true, true, true, true, true, true, true, true};
  // The kernel that runs the group, resolved at the first chunk and kept,
  // and the state between chunks (null before the first and once done).
  LaneKernel kernel = LaneKernel::kAuto;
  std::unique_ptr<LaneGroupState> state;
};

// Takes at most max_steps steps of every lane (the first call also makes
// BeginRun's evaluation at t0); true once the group is done. `kernel` is
// read at the first call (resolved as ResolveLaneKernel does); later calls
// run the kernel the group started on. Chunking never changes a bit: any
// sequence of calls computes what one call with no limit does, the time,
// its anchor and the last step to `until` included (the step loop of
// Simulation::AdvanceSized, which Advance(max_steps) resumes the same way).
bool AdvanceLaneGroup(LaneGroup* group, uint64_t max_steps, LaneKernel kernel = LaneKernel::kAuto);
// AdvanceLaneGroup with no limit on the steps: to the end.
void RunLaneGroup(LaneGroup* group, LaneKernel kernel = LaneKernel::kAuto);

// The kernels, one translation unit each (ensemble_lanes_baseline.cc,
// ensemble_lanes_avx2.cc built with -mavx2, ensemble_lanes_avx512.cc built
// with -mavx512f).
void AdvanceLaneGroupBaseline(LaneGroup* group, uint64_t max_steps);
void AdvanceLaneGroupAvx2(LaneGroup* group, uint64_t max_steps);
void AdvanceLaneGroupAvx512(LaneGroup* group, uint64_t max_steps);

}  // namespace tether::internal
