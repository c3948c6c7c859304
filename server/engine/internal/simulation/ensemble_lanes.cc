// RunLaneGroup's dispatch: the kernel for this CPU, chosen at run time
// (the binary is built for the x86-64 baseline and runs anywhere).
#include "engine/internal/simulation/ensemble_lanes.h"

#include <limits>

namespace tether::internal {

namespace {

// Whether the CPU and the OS support `kernel`'s instruction set. GCC's and
// clang's __builtin_cpu_supports (libgcc's CPUID table) rather than xsimd's
// available_architectures(): Debian 12's xsimd (8.1) reads CPUID alone,
// where libgcc also asks the OS (XGETBV) whether it saves the registers
// (the YMM state for AVX2; the ZMM and mask state for AVX-512F): a CPU
// with AVX-512F under an OS that does not enable it must not run the
// AVX-512 kernel.
bool Supported(LaneKernel kernel) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  switch (kernel) {
    case LaneKernel::kAvx512: return __builtin_cpu_supports("avx512f");
    case LaneKernel::kAvx2: return __builtin_cpu_supports("avx2");
    default: return true;
  }
#else
  return kernel == LaneKernel::kBaseline || kernel == LaneKernel::kAuto;
#endif
}

}  // namespace

LaneKernel BestLaneKernel() {
  static const LaneKernel best = Supported(LaneKernel::kAvx512) ? LaneKernel::kAvx512
                                 : Supported(LaneKernel::kAvx2) ? LaneKernel::kAvx2
                                                                : LaneKernel::kBaseline;
  return best;
}

LaneKernel ResolveLaneKernel(LaneKernel kernel) {
  // From the one asked for down to the first the machine supports.
  switch (kernel) {
    case LaneKernel::kAuto: return BestLaneKernel();
    case LaneKernel::kAvx512:
      if (Supported(LaneKernel::kAvx512)) return LaneKernel::kAvx512;
      [[fallthrough]];
    case LaneKernel::kAvx2:
      if (Supported(LaneKernel::kAvx2)) return LaneKernel::kAvx2;
      [[fallthrough]];
    case LaneKernel::kBaseline: break;
  }
  return LaneKernel::kBaseline;
}

const char* LaneKernelName(LaneKernel kernel) {
  switch (kernel) {
    case LaneKernel::kAuto: return LaneKernelName(BestLaneKernel());
    case LaneKernel::kBaseline: return "sse2";
    case LaneKernel::kAvx2: return "avx2";
    case LaneKernel::kAvx512: return "avx512";
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

bool AdvanceLaneGroup(LaneGroup* group, uint64_t max_steps, LaneKernel kernel) {
  if (group->done) return true;
  // The kernel is the group's from its first chunk: its state is that
  // kernel's (the bits would be the same on another; the layout is not).
  if (!group->state) group->kernel = ResolveLaneKernel(kernel);
  switch (group->kernel) {
    case LaneKernel::kAvx512: AdvanceLaneGroupAvx512(group, max_steps); break;
    case LaneKernel::kAvx2: AdvanceLaneGroupAvx2(group, max_steps); break;
    default: AdvanceLaneGroupBaseline(group, max_steps); break;
  }
  return group->done;
}

void RunLaneGroup(LaneGroup* group, LaneKernel kernel) {
  AdvanceLaneGroup(group, std::numeric_limits<uint64_t>::max(), kernel);
}

}  // namespace tether::internal
