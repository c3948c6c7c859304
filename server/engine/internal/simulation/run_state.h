// The run's state between steps, shared by the engine's top level: the
// simulation's calls (simulation.cc) and its step loop (advance.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/simulation/post_stabilize.h"
#include "engine/simulation.h"
#include "engine/status.h"

namespace tether {

// "step 12 (from t = 0.011)" for failures inside a step, "step 12 (at t =
// 0.012)" for failures at the state it reached.
inline std::string StepContext(uint64_t step, double t, const char* where = "at") {
  return "step " + std::to_string(step) + " (" + where + " t = " + FormatNumber(t) + ")";
}

// The run's persistent state: what a Simulation carries from one step (and
// one Advance call) to the next besides the workspace. Not in the public
// header: only the engine's top level (simulation.cc, advance.cc) reads it.
struct RunState {
  std::vector<double> q, v, a;  // current state and its acceleration
  std::vector<double> q1, v1;   // next state (scratch)
  double t = 0;
  // Fixed-step times are anchor + k h, so they do not drift by summation.
  double anchor_t = 0;
  uint64_t anchor_k = 0;
  uint64_t run_steps = 0;
  uint64_t until_emit = 0;  // steps left before the next every-th frame
  bool start_pending = false;
  std::vector<double> y;  // outputs scratch
  // The inputs at an implicit step's Newton-matrix time, when they vary
  // inside a step (a ramp, a source; scratch of nu, advance.cc's NewtonAccel).
  std::vector<double> u_newton;

  // Frames the last step owes (emitted before the next step, possibly over
  // several Advance calls when max_frames stops one).
  bool end_pending = false;     // the frame at the current state
  bool finish_pending = false;  // the run ended with that step

  // The output grid t0 + k dt (RunOptions::output_interval).
  bool grid = false;
  bool grid_pending = false;  // grid times in (tp, t] not yet looked at
  double grid_t0 = 0, grid_dt = 0;
  uint64_t grid_k = 0;                // index of the next grid time
  std::vector<double> qp, vp, ap;     // the state before the last step
  double tp = 0;                      // and its time
  std::vector<double> qh, vh, ddph;   // interpolant at a grid time
  std::unique_ptr<Workspace> out_ws;  // evaluations at grid times, local error estimates
  // A post-stabilized method's end-of-step correction (null otherwise, or
  // without constraints).
  std::unique_ptr<PostStabilizer> post;
  double GridTime(uint64_t k) const { return grid_t0 + static_cast<double>(k) * grid_dt; }
  // Heap bytes held, out_ws's included when made.
  int64_t heap_bytes() const {
    int64_t bytes = HeapBytesOf(q, v, a, q1, v1, y, u_newton, qp, vp, ap, qh, vh, ddph);
    if (out_ws) {
      bytes += static_cast<int64_t>(sizeof(Workspace)) + kAllocationOverhead + out_ws->heap_bytes();
    }
    if (post) {
      bytes +=
          static_cast<int64_t>(sizeof(PostStabilizer)) + kAllocationOverhead + post->heap_bytes();
    }
    return bytes;
  }
};

// The frame at (t, q, v) whose evaluation ws holds, with outputs y.
inline FrameView ViewOf(uint64_t step, double t, std::span<const double> q,
                        std::span<const double> v, const Workspace& ws, std::span<const double> y) {
  FrameView f;
  f.step = step;
  f.t = t;
  f.q = q;
  f.v = v;
  f.a = ws.a;
  f.lambda = ws.lambda;
  f.position = ws.e;
  f.velocity = ws.e_dot;
  f.dynamics = ws.dynamics_residual;
  f.constraint = ws.constraint_residual;
  f.outputs = y;
  return f;
}

}  // namespace tether
