// How one compilation of a description runs: its limits (bytes, nodes,
// time), the KKT path and the cancel hook. The contract between the engine's
// callers and its compiler (engine/internal/model/), below everything else
// the engine exposes (engine/simulation.h includes it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace tether {

// What compiling one description may use. Every expression of the
// description and all their derivatives count together. The defaults keep
// a compilation's peak memory below 200 MB (about 100 bytes per expression
// node and 20 per derivative entry at the peak) and its time bounded, and
// admit every example, a 256-link Cartesian chain and a 50-link chain in
// angles with its kinetic energy written out (bench/compile_bench.cc).
// A compilation's wall-clock ceiling, in multiples of its CPU-time budget
// (CompileLimits::time_budget).
inline constexpr int kCompileWallClockFactor = 3;

struct CompileLimits {
  // Expression nodes (after sharing and simplification).
  int64_t max_nodes = 1'000'000;
  // Memoized derivative results, one per (node, variable) pair visited
  // while differentiating (and while checking what depends on what).
  int64_t max_derivative_nodes = 4'000'000;
  // Instructions of each evaluation tape.
  int64_t max_tape_length = 1'000'000;
  // Bytes the compilation's expression graph holds (nodes, hash index,
  // derivative memos), checked every few thousand operations: the memory
  // budget, within the shipped 1 GiB container with room for the tapes
  // (at most max_tape_length instructions of 20 bytes each) and the process.
  int64_t max_bytes = 256 << 20;
  // Nodes of the constraints' expressions a description may have to be
  // certified ENCLOSED: that mode keeps about 650 bytes per node in every
  // session (the interpreter's series, the compiled passes' two series and
  // their steps: docs/ARCHITECTURE.md), about 130 MB at this default
  // (measured: a session of 10 constraints with 4,500 sine terms each,
  // about 184,000 nodes, holds 202 MB ENCLOSED against 79 MB SAMPLED).
  // The memory budget charges it before the first run makes it (Session::
  // InitialBytes, which measures a recorder made for the purpose); this
  // bound keeps that transient on the compile worker within the worker's
  // reservation (1.25 max_bytes, service/memory_budget.h): a fresh
  // tether-server creating that session peaks at 307 MB of RSS, against
  // 233 MB SAMPLED. Beyond it, certificate.mode ENCLOSED is an error
  // (SAMPLED is not affected).
  int64_t max_enclosed_nodes = 200'000;
  // Multiply-adds of one evaluation's KKT solve on the dense path
  // (evaluate_kernel.h's EvaluateImpl): Y = G M^-1/2 (nc d for a diagonal
  // M, nc d^2 / 2 by triangular solves otherwise), W = Y Y^T (nc^2 d / 2),
  // its LDL^T (nc^3 / 6) and, for M(q) from a kinetic energy, its Cholesky
  // (d^3 / 6) at every evaluation. The sparse path needs a diagonal mass
  // matrix, so a large mechanism in joint coordinates (a non-diagonal M(q))
  // takes this path whatever its size: 2044 coordinates and 2044 constraints
  // are 1.1e10, about 7 s of CPU and 500 MB for the one evaluation a
  // compilation makes at the initial state, beyond the time budget's reach
  // (it polls the compiler, not the solve). This default, about 0.3 s an
  // evaluation on a 2-core Xeon, admits every example and benchmark (the
  // longest chain in angles the expression limits admit, 200 links, needs
  // 1.3e6). Beyond it: RESOURCE_EXHAUSTED naming system, before any
  // evaluation.
  int64_t max_dense_kkt_work = 400'000'000;
  // CPU time of the compiling thread (0: unlimited), polled every few
  // thousand operations: what a compilation may spend is the same on a busy
  // server as on an idle one. A compilation that waits for a CPU still
  // ends after kCompileWallClockFactor times the budget of wall-clock time.
  std::chrono::milliseconds time_budget = std::chrono::seconds(10);
};

// Which KKT solve a compiled model uses: kAuto picks (the rule is in
// engine/internal/model/sparse_analysis.h and docs/ARCHITECTURE.md); the others force
// a path, for the engine's tests and benchmarks (kSparse still needs a
// structurally diagonal mass matrix).
enum class KktPath { kAuto, kDense, kSparse };

// How one compilation runs.
struct CompileOptions {
  CompileLimits limits;
  KktPath kkt = KktPath::kAuto;
  // Polled on the compiling thread at the same points as the time budget
  // (and once at the start); returning true stops the compilation with
  // CANCELLED. Empty: never cancelled.
  std::function<bool()> cancelled;
  // Also compiles the model's sensitivity tape (model.h, SensitivityTape):
  // the symbolic Jacobians that engine/sensitivity.h differentiates the
  // KKT solve with. Off for every simulation that only steps (a model
  // compiled with it steps with the same tapes and bits).
  bool sensitivity = false;
};

}  // namespace tether
