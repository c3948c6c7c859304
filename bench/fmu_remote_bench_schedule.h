// The input schedule bench/fmu_remote_bench.cc and its client process
// both drive examples/pendulum_force_input.json with: step k sets Fx to
// Input(k). One definition, so the two do the same work.
#pragma once

#include <cmath>

namespace tether::fmu_remote_bench {

inline double Input(int k) { return 2.0 * std::sin(0.37 * k); }

}  // namespace tether::fmu_remote_bench
