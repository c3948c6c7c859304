// RunLaneGroup's dispatch: the kernel for this CPU, chosen at run time
// (the binary is built for the x86-64 baseline and runs anywhere).
#include "engine/internal/simulation/ensemble_lanes.h"

#include <xsimd/xsimd.hpp>

namespace tether::internal {

LaneKernel BestLaneKernel() {
  static const LaneKernel best =
      xsimd::available_architectures().avx2 ? LaneKernel::kAvx2 : LaneKernel::kBaseline;
  return best;
}

const char* LaneKernelName(LaneKernel kernel) {
  switch (kernel) {
    case LaneKernel::kAuto: return LaneKernelName(BestLaneKernel());
    case LaneKernel::kBaseline: return "sse2";
    case LaneKernel::kAvx2: return "avx2";
  }
  return "?";
}

bool LanesSupport(const Model& m) {
  if (m.sparse.enabled) return false;
#define TETHER_LANES_SUPPORTED(D, C) \
  if (m.nq == D && m.nc == C) return true;
  TETHER_LANE_SIZES(TETHER_LANES_SUPPORTED)
#undef TETHER_LANES_SUPPORTED
  return false;
}

void RunLaneGroup(LaneGroup* group, LaneKernel kernel) {
  if (kernel == LaneKernel::kAuto) kernel = BestLaneKernel();
  if (kernel == LaneKernel::kAvx2 && BestLaneKernel() == LaneKernel::kAvx2) {
    RunLaneGroupAvx2(group);
  } else {
    RunLaneGroupBaseline(group);
  }
}

}  // namespace tether::internal
