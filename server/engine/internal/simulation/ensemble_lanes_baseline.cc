// The lane kernel for the x86-64 baseline (SSE2: two 2-double batches a
// lane group), which every x86-64 CPU runs. Built with the engine's flags.
#include "engine/internal/simulation/ensemble_lanes_kernel.h"

namespace tether::internal {

void RunLaneGroupBaseline(LaneGroup* group) { lanes::RunLanesForSize<xsimd::sse2>(group); }

}  // namespace tether::internal
