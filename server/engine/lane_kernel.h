// Which instruction set runs the ensemble's lane path (docs/ENSEMBLES.md,
// "Lanes"; EnsembleOptions::lane_kernel). Its own header so that the lane
// kernels' translation units (simulation/ensemble_lanes.h) name it without
// the ensemble's protobuf headers.
#pragma once

namespace tether {

// The best the CPU and the OS support (kAuto: AVX-512F where both do, else
// AVX2, else the SSE2 baseline every x86-64 has), or one forced (for tests
// and benchmarks; one the CPU or the OS lacks runs the best below it that
// they have). Every kernel gives every instance the same bits.
enum class LaneKernel { kAuto, kBaseline, kAvx2, kAvx512 };

// Whether a lane group's tape runs as machine code where its kernel can
// translate it (the AVX2 kernel: engine/internal/expr/native_tape_lanes.h),
// or interpreted; the same bits either way. kAuto translates where it
// pays: a tape of at least kMinTranslatedInstructions instructions whose
// instructions times the steps it serves reach kMinTranslatedWork (the
// translation costs about as much as 100 group steps of a 56-instruction
// tape save: docs/benchmarks.md). A translation serves the steps of every
// group of the model that shares it (an ensemble's template: all its
// groups), else its group's. kAlways and kNever for tests and benchmarks.
enum class LaneNativeTape { kAuto, kAlways, kNever };
inline constexpr int kMinTranslatedInstructions = 16;
inline constexpr double kMinTranslatedWork = 8192;

}  // namespace tether
