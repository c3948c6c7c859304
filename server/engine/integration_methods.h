// The integration methods the engine has, for its callers: the rows of its
// method table (TETHER_INTEGRATOR_METHODS, engine/internal/integrate/
// integrator.h) as a description names them, so that a tool listing them
// (`tether methods`) follows the table instead of spelling it again.
#pragma once

#include <span>
#include <string_view>

#include "tether/v1/simulation.pb.h"

namespace tether {

struct IntegrationMethod {
  v1::IntegratorSpec::Method method;
  std::string_view name;  // the value of a description's integrator.method ("RK4")
  int order;              // classical order of accuracy
  bool adaptive;          // the step chosen by error control, not integrator.step_size
  bool implicit;          // each stage solves an equation by Newton iterations
};

// Every method, in the table's order.
std::span<const IntegrationMethod> IntegrationMethods();

}  // namespace tether
