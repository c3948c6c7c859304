// The lane kernel for AVX2 (one 4-double batch a lane group), built with
// -mavx2 -ffp-contract=off (server/CMakeLists.txt) and run only when CPUID
// reports AVX2 (ensemble_lanes.cc). No -mfma: a fused multiply-add rounds
// once where the scalar engine rounds twice, and the lanes must keep the
// scalar bits; -ffp-contract=off says the same to the compiler. Every
// function it instantiates is a template on the architecture (lanes.h), so
// none of its AVX2 code can stand in for a baseline function at link time.
#include "engine/internal/simulation/ensemble_lanes_kernel.h"

#include "engine/internal/simulation/ensemble_lanes.h"

namespace tether::internal {

#if defined(__AVX2__)
void AdvanceLaneGroupAvx2(LaneGroup* group, uint64_t max_steps) {
  lanes::AdvanceLanesForSize<xsimd::avx2>(group, max_steps);
}
#else
// A compiler without the flag: the baseline kernel.
void AdvanceLaneGroupAvx2(LaneGroup* group, uint64_t max_steps) {
  AdvanceLaneGroupBaseline(group, max_steps);
}
#endif

}  // namespace tether::internal
