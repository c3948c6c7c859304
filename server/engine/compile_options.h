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
  // certified ENCLOSED: that mode keeps a Taylor series (176 bytes) per
  // node in every session, and for polynomial constraints a second one
  // (208 bytes; about 35 MB, 77 MB polynomial, at this default). Beyond it,
  // certificate.mode ENCLOSED is an error (SAMPLED is not affected).
  int64_t max_enclosed_nodes = 200'000;
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
