// RunLaneGroup's body, a template on the instruction set (xsimd's Arch),
// included once by each kernel's translation unit (ensemble_lanes_*.cc):
// the step loop of Simulation::AdvanceSized (advance.cc) for RK4 with no
// recorder and no grid, over lanes. Each part names the scalar code it
// follows; the time arithmetic is scalar (the same for every lane).
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/internal/base/lanes.h"
#include "engine/internal/expr/tape_lanes.h"
#include "engine/internal/kkt/kkt_lanes.h"
#include "engine/internal/simulation/ensemble_lanes.h"

namespace tether::lanes {

template <int D, int C, class Arch>
void RunLanes(internal::LaneGroup* g) {
  static_assert(kLaneWidth == internal::kLaneWidth);
  using V = Lanes<Arch>;
  const Model& m = *g->model;
  const LaneFunctions functions = g->fast_functions ? LaneFunctions::kFast : LaneFunctions::kExact;
  bool* ok = g->ok;
  // The tape as EvalLanes runs it, and its work buffer (the tape's slots,
  // then sincos's: tape_lanes.h).
  LaneProgram program;
  PrepareLaneProgram<Arch>(m.dynamics, functions, &program);
  std::vector<V> work(static_cast<size_t>(program.num_slots));
  InitLaneWork(m.dynamics, work.data());
  // Lane-major arrays to lanes and back.
  auto gather = [](const std::vector<double>& from, int n, int i) {
    double x[kLaneWidth];
    for (int l = 0; l < kLaneWidth; ++l) x[l] = from[static_cast<size_t>(l * n + i)];
    return V::Load(x);
  };
  auto scatter = [](const V& x, std::vector<double>* to, int n, int i) {
    double y[kLaneWidth];
    x.Store(y);
    for (int l = 0; l < kLaneWidth; ++l) (*to)[static_cast<size_t>(l * n + i)] = y[l];
  };
  // The inputs, constant over the run (LoadVars' u).
  for (int k = 0; k < m.nu; ++k) work[static_cast<size_t>(1 + 2 * D + k)] = gather(g->u, m.nu, k);
  V q[D], v[D], a[D], q1[D], v1[D], a1[D];
  V Q[D], Vs[D], A[D], Q3[D], V3[D], A3[D], Q4[D], V4[D], A4[D];
  for (int i = 0; i < D; ++i) {
    q[i] = gather(g->q, D, i);
    v[i] = gather(g->v, D, i);
  }
  auto all_failed = [&] { return std::none_of(ok, ok + kLaneWidth, [](bool b) { return b; }); };
  // BeginRun's evaluation at the start (Simulation::EvaluateHere).
  EvaluateLanes<D, C>(m, functions, &program, work.data(), g->t0, q, v, a, ok);

  const double h_ = g->h;
  const double t_stop = g->until;
  double t = g->t0, anchor_t = g->t0;
  uint64_t anchor_k = 0, steps = 0;
  do {
    // Integrator::StepFixedMethod: land on t_stop, or the grid's step.
    const double remaining = t_stop - t;
    bool grid_stop = false, landed = false;
    double h = h_;
    if (remaining <= 2 * h_) {
      const double rounding =
          8 * std::numeric_limits<double>::epsilon() * std::max(std::fabs(t), std::fabs(t_stop));
      grid_stop = std::fabs(remaining - h_) <= rounding;
    }
    if (!grid_stop) {
      landed = remaining <= h_ * (1 + 1e-9);
      h = landed ? remaining : h_;
    }
    // Integrator::StepRk4<N> (fixed N), its stages evaluated as
    // EvaluateImpl<D, C, Record::kNothing>.
    for (int i = 0; i < D; ++i) {
      Q[i] = q[i] + 0.5 * h * v[i];
      Vs[i] = v[i] + 0.5 * h * a[i];
    }
    EvaluateLanes<D, C>(m, functions, &program, work.data(), t + 0.5 * h, Q, Vs, A, ok);
    for (int i = 0; i < D; ++i) {
      Q3[i] = q[i] + 0.5 * h * Vs[i];
      V3[i] = v[i] + 0.5 * h * A[i];
    }
    EvaluateLanes<D, C>(m, functions, &program, work.data(), t + 0.5 * h, Q3, V3, A3, ok);
    for (int i = 0; i < D; ++i) {
      Q4[i] = q[i] + h * V3[i];
      V4[i] = v[i] + h * A3[i];
    }
    EvaluateLanes<D, C>(m, functions, &program, work.data(), t + h, Q4, V4, A4, ok);
    const double h6 = h / 6;
    for (int i = 0; i < D; ++i) {
      q1[i] = q[i] + h6 * (v[i] + 2 * Vs[i] + 2 * V3[i] + V4[i]);
      v1[i] = v[i] + h6 * (a[i] + 2 * A[i] + 2 * A3[i] + A4[i]);
    }
    // NewTime.
    const double t1 =
        landed || grid_stop ? t_stop : anchor_t + static_cast<double>(anchor_k + 1) * h;
    // CheckFinite: a non-finite time fails every lane.
    if (!std::isfinite(t1)) {
      std::fill(ok, ok + kLaneWidth, false);
      break;
    }
    for (int i = 0; i < D; ++i) {
      CheckLanes(q1[i], ok, IsFinite());
      CheckLanes(v1[i], ok, IsFinite());
    }
    // The evaluation at the new state (EvaluateImpl<D, C>).
    EvaluateLanes<D, C>(m, functions, &program, work.data(), t1, q1, v1, a1, ok);
    // Commit.
    for (int i = 0; i < D; ++i) {
      q[i] = q1[i];
      v[i] = v1[i];
      a[i] = a1[i];
    }
    if (landed) {
      anchor_t = t1;
      anchor_k = 0;
    } else {
      ++anchor_k;
    }
    t = t1;
    ++steps;
    // RunFinished (until_time), or nothing left to compute.
  } while (!(t >= g->until) && !all_failed());
  for (int i = 0; i < D; ++i) {
    scatter(q[i], &g->q, D, i);
    scatter(v[i], &g->v, D, i);
  }
  g->t = t;
  g->steps = steps;
}

// RunLaneGroup for Arch: the instantiation for the model's size.
template <class Arch>
void RunLanesForSize(internal::LaneGroup* g) {
  const int nq = g->model->nq, nc = g->model->nc;
#define TETHER_LANES_SELECT(D, C) \
  if (nq == D && nc == C) return RunLanes<D, C, Arch>(g);
  TETHER_LANE_SIZES(TETHER_LANES_SELECT)
#undef TETHER_LANES_SELECT
  std::fill(g->ok, g->ok + kLaneWidth, false);  // LanesSupport said no
}

}  // namespace tether::lanes
