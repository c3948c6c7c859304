// One quantum of stepping: how long a Run or CoSimulate stream may hold a
// worker before it requeues itself at the back of the pool's queue.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace tether::service {

// Limits of one quantum of stepping (whichever is reached first).
inline constexpr uint64_t kQuantumMaxSteps = 8192;
inline constexpr auto kQuantumMaxTime = std::chrono::microseconds(2000);

// Advances a simulation for one quantum of at most kQuantumMaxSteps steps
// and about kQuantumMaxTime, in chunks sized so that a check (stop request,
// buffer full) happens every ~0.25 ms. The first chunk is one step, so a
// quantum is bounded by time, not by a step count: a model whose step takes
// 0.35 s holds a worker for one step (and a stop request reaches it within
// one evaluation: Simulation::SetInterrupt). Chunking never changes the
// numbers: the engine's Advance(a) then Advance(b) equals Advance(a + b).
// Used by one quantum on one worker thread.
class QuantumBudget {
 public:
  using Clock = std::chrono::steady_clock;

  QuantumBudget() : start_(Clock::now()) {}
  // Steps for the next chunk, a multiple of `unit` (the steps one step of
  // what is advanced stands for: 1 for a simulation, 8 for a lane group of
  // an ensemble, EnsembleGroupRun::step_cost), so whole steps of it never
  // pass kQuantumMaxSteps; 0 when the quantum is spent (or less than a unit
  // is left of it). The first chunk is one unit, and so is every chunk
  // until a step has been recorded (a chunk that took none, e.g. one that
  // only emitted a run's first frame, says nothing of a step's time), but
  // not past kQuantumMaxTime; then about kTarget's worth by the time per
  // step so far, at most kMaxUnitsPerChunk units.
  uint64_t NextChunk(uint64_t unit = 1) const {
    unit = std::max<uint64_t>(unit, 1);
    if (steps_ + unit > kQuantumMaxSteps) return 0;
    auto elapsed = Clock::now() - start_;
    if (steps_ == 0) return elapsed >= kQuantumMaxTime ? 0 : unit;
    if (elapsed >= kQuantumMaxTime) return 0;
    const double per_step = std::chrono::duration<double>(elapsed).count() / steps_;
    constexpr double kTarget = 250e-6;
    uint64_t chunk = per_step > 0 ? static_cast<uint64_t>(kTarget / per_step) : kMaxUnitsPerChunk;
    chunk = std::clamp<uint64_t>(chunk, unit, kMaxUnitsPerChunk * unit);
    chunk = std::min(chunk, kQuantumMaxSteps - steps_);
    return chunk - chunk % unit;
  }
  // Records the steps the last chunk took (0 when it took none).
  void Took(uint64_t steps) { steps_ += steps; }

 private:
  static constexpr uint64_t kMaxUnitsPerChunk = 256;
  Clock::time_point start_;
  uint64_t steps_ = 0;
};

}  // namespace tether::service
