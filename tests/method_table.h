// The integration methods as the engine's tests that mean "every method"
// take them: from the engine's table (kMethods in
// engine/internal/integrate/integrator.h), by protobuf name, so that a new
// row is tested without an edit. For the engine's own tests only (the
// internal header); integrator_test checks the table against protobuf's
// IntegratorSpec.Method.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/internal/integrate/integrator.h"

namespace tether::testing {

// Every method of the table, in its order ("EXPLICIT_EULER", ...); only the
// fixed-step ones (not adaptive) with `fixed_step_only`.
inline std::vector<std::string> MethodNames(bool fixed_step_only = false) {
  std::vector<std::string> names;
  for (const MethodDescriptor& d : kMethods) {
    if (fixed_step_only && d.adaptive) continue;
    names.push_back(v1::IntegratorSpec::Method_Name(d.method));
  }
  return names;
}

// Whether the method named `name` chooses its own steps (a test failure
// when the table has no such method).
inline bool IsAdaptive(const std::string& name) {
  v1::IntegratorSpec::Method m = v1::IntegratorSpec::METHOD_UNSPECIFIED;
  EXPECT_TRUE(v1::IntegratorSpec::Method_Parse(name, &m)) << name;
  const MethodDescriptor* d = FindMethod(m);
  EXPECT_NE(d, nullptr) << name;
  return d != nullptr && d->adaptive;
}

}  // namespace tether::testing
