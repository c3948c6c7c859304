// AdvanceLaneGroup's body, a template on the instruction set (xsimd's
// Arch), included once by each kernel's translation unit
// (ensemble_lanes_*.cc): the step loop of Simulation::AdvanceSized
// (advance.cc) for RK4 with no recorder and no grid, over lanes, in chunks
// as Simulation::Advance(max_steps) takes them. Each part names the scalar
// code it follows; the time arithmetic is scalar (the same for every lane).
#pragma once

#include "engine/internal/base/internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "engine/internal/base/lanes.h"
#include "engine/internal/expr/tape_lanes.h"
#include "engine/internal/kkt/kkt_lanes.h"
#include "engine/internal/simulation/ensemble_lanes.h"

namespace tether::lanes {

// What a group carries between chunks on one kernel and size
// (internal::LaneGroupState): the tape's program and work buffer (the
// inputs stay loaded in it), each lane's state and acceleration, and the
// time and its anchor, which the unchunked loop kept in locals: a chunk
// starts from exactly what the previous one left, so chunking changes no
// bit.
template <int D, int C, class Arch>
struct LaneRunState final : internal::LaneGroupState {
  std::shared_ptr<const LaneProgram> program;
  std::vector<Lanes<Arch>> work;
  Lanes<Arch> q[D], v[D], a[D];
  double t = 0, anchor_t = 0;
  uint64_t anchor_k = 0;
};

// The program of `m`'s tape for EvalLanes<Arch>, with `fast_functions`,
// translated into machine code where `translate` and the kernel do that
// (internal::LanePrograms::Make).
template <class Arch>
std::shared_ptr<const LaneProgram> MakeLaneProgram(const Model& m, bool fast_functions,
                                                   bool translate) {
  auto program = std::make_shared<LaneProgram>();
  program->translate = translate;
  PrepareLaneProgram<Arch>(
      m.dynamics, fast_functions ? LaneFunctions::kFast : LaneFunctions::kExact, program.get());
  return program;
}

// The kernel that Arch is (a program holds its handlers' addresses).
template <class Arch>
constexpr LaneKernel kKernelOf = std::is_same_v<Arch, xsimd::avx2>      ? LaneKernel::kAvx2
                                 : std::is_same_v<Arch, xsimd::avx512f> ? LaneKernel::kAvx512
                                                                        : LaneKernel::kBaseline;

template <int D, int C, class Arch>
void AdvanceLanes(internal::LaneGroup* g, uint64_t max_steps) {
  static_assert(kLaneWidth == internal::kLaneWidth);
  using V = Lanes<Arch>;
  using State = LaneRunState<D, C, Arch>;
  const Model& m = *g->model;
  const LaneFunctions functions = g->fast_functions ? LaneFunctions::kFast : LaneFunctions::kExact;
  bool* ok = g->ok;
  auto all_failed = [&] { return std::none_of(ok, ok + kLaneWidth, [](bool b) { return b; }); };
  if (!g->state) {
    auto start = std::make_unique<State>();
    // The tape as EvalLanes runs it, translated into machine code where
    // the kernel does that, unless the work it serves (its instructions
    // times the steps of the groups that share it, or of this one alone)
    // is too small to pay for the translation; and its work buffer (the
    // tape's slots, then sincos's: tape_lanes.h). The program is the
    // model's, shared with the other groups that run it (LanePrograms),
    // where the group has their programs.
    const double tape_size = static_cast<double>(m.dynamics.code().size());
    const double steps = g->programs != nullptr ? g->shared_steps : (g->until - g->t0) / g->h;
    const bool translate =
        g->native_tape == LaneNativeTape::kAlways ||
        (g->native_tape == LaneNativeTape::kAuto && tape_size >= kMinTranslatedInstructions &&
         tape_size * steps >= kMinTranslatedWork);
    start->program = g->programs != nullptr
                         ? g->programs->Get(kKernelOf<Arch>, g->fast_functions, translate, m,
                                            &MakeLaneProgram<Arch>)
                         : MakeLaneProgram<Arch>(m, g->fast_functions, translate);
    g->native_tape_ran = start->program->native != nullptr;
    start->work.resize(static_cast<size_t>(start->program->num_slots));
    InitLaneWork(m.dynamics, start->work.data());
    // Lane-major arrays to lanes.
    auto gather = [](const std::vector<double>& from, int n, int i) {
      double x[kLaneWidth];
      for (int l = 0; l < kLaneWidth; ++l) x[l] = from[static_cast<size_t>(l * n + i)];
      return V::Load(x);
    };
    // The inputs, constant over the run (LoadVars' u).
    for (int k = 0; k < m.nu; ++k) {
      start->work[static_cast<size_t>(1 + 2 * D + k)] = gather(g->u, m.nu, k);
    }
    for (int i = 0; i < D; ++i) {
      start->q[i] = gather(g->q, D, i);
      start->v[i] = gather(g->v, D, i);
    }
    // BeginRun's evaluation at the start (Simulation::EvaluateHere).
    LanePass<Arch> pass;
    EvaluateLanes<D, C>(m, functions, start->program.get(), start->work.data(), g->t0, start->q,
                        start->v, start->a, &pass);
    pass.ApplyTo(ok);
    start->t = start->anchor_t = g->t0;
    start->anchor_k = 0;
    g->t = g->t0;
    g->steps = 0;
    g->state = std::move(start);
  }
  // The kernel and the size are the group's for its whole run
  // (AdvanceLaneGroup keeps the kernel it resolved first).
  State& s = static_cast<State&>(*g->state);
  // The work buffer on this frame for the chunk (moved, not copied; moved
  // back below), as the unchunked loop had it.
  const LaneProgram* const program = s.program.get();
  std::vector<V> work_here = std::move(s.work);
  V* const work = work_here.data();
  // The chunk's state in locals, as the unchunked loop had it (the
  // compiler need not assume the work buffer's stores alias it).
  V q[D], v[D], a[D], q1[D], v1[D], a1[D];
  V Q[D], Vs[D], A[D], Q3[D], V3[D], A3[D], Q4[D], V4[D], A4[D];
  for (int i = 0; i < D; ++i) {
    q[i] = s.q[i];
    v[i] = s.v[i];
    a[i] = s.a[i];
  }
  const double h_ = g->h;
  const double t_stop = g->until;
  double t = s.t, anchor_t = s.anchor_t;
  uint64_t anchor_k = s.anchor_k, steps = g->steps;
  // RunFinished (until_time), or nothing left to compute; at most
  // max_steps steps in this chunk.
  for (uint64_t taken = 0; taken < max_steps && !(t >= t_stop) && !all_failed(); ++taken) {
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
    // EvaluateImpl<D, C, Record::kNothing>; the lanes that fail a check
    // marked in ok at the step's end.
    LanePass<Arch> pass;
    for (int i = 0; i < D; ++i) {
      Q[i] = q[i] + 0.5 * h * v[i];
      Vs[i] = v[i] + 0.5 * h * a[i];
    }
    EvaluateLanes<D, C>(m, functions, program, work, t + 0.5 * h, Q, Vs, A, &pass);
    for (int i = 0; i < D; ++i) {
      Q3[i] = q[i] + 0.5 * h * Vs[i];
      V3[i] = v[i] + 0.5 * h * A[i];
    }
    EvaluateLanes<D, C>(m, functions, program, work, t + 0.5 * h, Q3, V3, A3, &pass);
    for (int i = 0; i < D; ++i) {
      Q4[i] = q[i] + h * V3[i];
      V4[i] = v[i] + h * A3[i];
    }
    EvaluateLanes<D, C>(m, functions, program, work, t + h, Q4, V4, A4, &pass);
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
      CheckLanes(q1[i], &pass, IsFinite());
      CheckLanes(v1[i], &pass, IsFinite());
    }
    // The evaluation at the new state (EvaluateImpl<D, C>).
    EvaluateLanes<D, C>(m, functions, program, work, t1, q1, v1, a1, &pass);
    pass.ApplyTo(ok);
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
  }
  g->t = t;
  g->steps = steps;
  if (!(t >= t_stop) && !all_failed()) {
    // The next chunk goes on from here.
    for (int i = 0; i < D; ++i) {
      s.q[i] = q[i];
      s.v[i] = v[i];
      s.a[i] = a[i];
    }
    s.t = t;
    s.anchor_t = anchor_t;
    s.anchor_k = anchor_k;
    s.work = std::move(work_here);
    return;
  }
  // Done: the final states to lane-major arrays, and the block released.
  auto scatter = [](const V& x, std::vector<double>* to, int n, int i) {
    double y[kLaneWidth];
    x.Store(y);
    for (int l = 0; l < kLaneWidth; ++l) (*to)[static_cast<size_t>(l * n + i)] = y[l];
  };
  for (int i = 0; i < D; ++i) {
    scatter(q[i], &g->q, D, i);
    scatter(v[i], &g->v, D, i);
  }
  g->done = true;
  g->state.reset();
}

// AdvanceLaneGroup for Arch: the instantiation for the model's size.
template <class Arch>
void AdvanceLanesForSize(internal::LaneGroup* g, uint64_t max_steps) {
  const int nq = g->model->nq, nc = g->model->nc;
#define TETHER_LANES_SELECT(D, C) \
  if (nq == D && nc == C) return AdvanceLanes<D, C, Arch>(g, max_steps);
  TETHER_LANE_SIZES(TETHER_LANES_SELECT)
#undef TETHER_LANES_SELECT
  std::fill(g->ok, g->ok + kLaneWidth, false);  // LanesSupport said no
  g->done = true;
}

}  // namespace tether::lanes
