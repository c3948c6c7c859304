// The lane kernel for the x86-64 baseline (SSE2: two 2-double batches a
// lane group), which every x86-64 CPU runs. Built with the engine's flags.
#include "engine/internal/simulation/ensemble_lanes_kernel.h"

namespace tether::internal {

void AdvanceLaneGroupBaseline(LaneGroup* group, uint64_t max_steps) {
  lanes::AdvanceLanesForSize<xsimd::sse2>(group, max_steps);
}

}  // namespace tether::internal
