// The communication schedule fmu_test.cc drives the FMU with and
// fmu_reference.cc drives the engine with: step k (k = 0, 1, ...) sets every
// input to InputValue(k) and advances by StepSize(k) (variable step sizes).
#pragma once

#include <cmath>

namespace tether::fmu_test {

inline double StepSize(int k) { return k % 3 == 2 ? 0.0037 : 0.01; }
inline double InputValue(int k) { return 2.0 * std::sin(0.37 * k); }

}  // namespace tether::fmu_test
