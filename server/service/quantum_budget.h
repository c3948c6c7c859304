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
  // Steps for the next chunk (0 when the quantum is spent).
  uint64_t NextChunk() const {
    if (steps_ >= kQuantumMaxSteps) return 0;
    if (steps_ == 0) return 1;
    auto elapsed = Clock::now() - start_;
    if (elapsed >= kQuantumMaxTime) return 0;
    const double per_step = std::chrono::duration<double>(elapsed).count() / steps_;
    constexpr double kTarget = 250e-6;
    uint64_t chunk = per_step > 0 ? static_cast<uint64_t>(kTarget / per_step) : 256;
    chunk = std::clamp<uint64_t>(chunk, 1, 256);
    return std::min(chunk, kQuantumMaxSteps - steps_);
  }
  // Whether a unit of `steps` steps that cannot be chunked (a group of
  // instances on the lane path, EnsembleReactor) may start in this quantum:
  // always the first unit (the caller keeps units to at most
  // kQuantumMaxSteps), then only while the steps taken and `steps` stay
  // within kQuantumMaxSteps and the time spent, extrapolated by the time
  // per step so far, within kQuantumMaxTime.
  bool Fits(uint64_t steps) const {
    if (steps_ == 0) return true;
    if (steps_ + steps > kQuantumMaxSteps) return false;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double max_time = std::chrono::duration<double>(kQuantumMaxTime).count();
    return elapsed + elapsed / steps_ * steps <= max_time;
  }
  // Records the steps the last chunk took.
  void Took(uint64_t steps) { steps_ += steps; }

 private:
  Clock::time_point start_;
  uint64_t steps_ = 0;
};

}  // namespace tether::service
