// The lane kernel for AVX-512F (one 8-double batch a lane group), built
// with -mavx512f -ffp-contract=off (server/CMakeLists.txt) and run only
// where the CPU and the OS support AVX-512F (ensemble_lanes.cc). As the
// AVX2 kernel: no -mfma and no contraction (xsimd 8.1 gives avx512f no fma
// of its own: its generic fma, which the vectorised functions' polynomials
// use, is a product and a sum, as on SSE2 and AVX2), so each lane has the
// bits the other kernels give it; tests/ensemble_test.cc checks it. Every
// function it instantiates is a template on the architecture (lanes.h), so
// none of its AVX-512 code can stand in for another kernel's at link time.
// GCC 12's avx512fintrin.h initialises its undefined vectors from
// themselves (_mm512_undefined_pd's `__Y = __Y`), which -Wuninitialized
// and -Wmaybe-uninitialized report at every inlined sqrt and the like (GCC
// bug 105593, fixed in GCC 13): not a read of anything uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "engine/internal/simulation/ensemble_lanes_kernel.h"

#include "engine/internal/simulation/ensemble_lanes.h"

namespace tether::internal {

#if defined(__AVX512F__)
void AdvanceLaneGroupAvx512(LaneGroup* group, uint64_t max_steps) {
  lanes::AdvanceLanesForSize<xsimd::avx512f>(group, max_steps);
}
#else
// A compiler without the flag: the AVX2 kernel (AdvanceLaneGroupAvx2
// falls back in turn).
void AdvanceLaneGroupAvx512(LaneGroup* group, uint64_t max_steps) {
  AdvanceLaneGroupAvx2(group, max_steps);
}
#endif

}  // namespace tether::internal
