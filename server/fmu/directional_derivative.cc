// Instance::DirectionalDerivative: fmi2GetDirectionalDerivative,
// fmi3GetDirectionalDerivative and (adjoint) fmi3GetAdjointDerivative
// (providesDirectionalDerivative(s) and providesAdjointDerivatives "true").
//
// The partials of the unknowns at the FMU's current state (t, q, v) and
// inputs, with respect to the knowns, along the seed: sensitivity =
// J seed with J from engine/sensitivity.h (exact: the model's symbolic
// Jacobians through the differentiated KKT solve, no perturbation).
// Knowns: the inputs, q.* and v.* (the state: in Co-Simulation these are
// outputs, and their partials say how the unknowns move with the state
// the FMU is at). Unknowns: the description's outputs, lambda.*, a.* (the
// accelerations), q.* and v.* (identity rows). These are instantaneous
// partials, not sensitivities of a communication step
// (docs/COSIMULATION.md).
#include <cmath>
#include <string>
#include <vector>

#include "engine/sensitivity.h"
#include "engine/status.h"
#include "fmu/instance.h"
#include "fmu/model_description.h"

namespace tether::fmu {

fmi2Status Instance::JacobianHere(const char* function, KktJacobian* j) {
  if (!derivative_sim) {
    CompileOptions options;
    options.sensitivity = true;
    auto created = Simulation::Create(spec, nullptr, options);
    if (!created.ok()) {
      return Error(std::string(function) +
                   ": the description's Jacobians do not compile: " + created.status().message());
    }
    derivative_sim = std::move(*created);
    Debug(std::string(function) + ": compiled the description's Jacobians");
  }
  v1::State state;
  sim->GetState(&state);
  const std::vector<double> q(state.q().begin(), state.q().end());
  const std::vector<double> v(state.v().begin(), state.v().end());
  Status s = EvaluateKktJacobian(*derivative_sim, state.t(), q, v, inputs, j);
  if (!s.ok())
    return Error(std::string(function) + ": at t = " + FormatNumber(state.t()) + ": " +
                 s.message());
  return fmi2OK;
}

fmi2Status Instance::PartialDerivatives(const char* function, const unsigned unknowns[],
                                        size_t n_unknowns, const unsigned knowns[], size_t n_knowns,
                                        std::vector<double>* partials) {
  if ((n_unknowns > 0 && unknowns == nullptr) || (n_knowns > 0 && knowns == nullptr))
    return Error(std::string(function) + ": null value-reference array");
  if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
  const int nq = static_cast<int>(sim->coordinate_names().size());
  // The known's column in the Jacobian (q, v, u).
  std::vector<int> columns;
  for (size_t k = 0; k < n_knowns; ++k) {
    const Variable* v = knowns[k] < vars.size() ? &vars[knowns[k]] : nullptr;
    if (v == nullptr || (v->kind != VariableKind::kInput && v->kind != VariableKind::kCoordinate &&
                         v->kind != VariableKind::kVelocity)) {
      return Error(std::string(function) + ": known valueReference " + std::to_string(knowns[k]) +
                   (v ? " (" + v->name + ")" : "") +
                   " is not an input, q.* or v.*: the partials are with respect to the inputs and "
                   "the state");
    }
    columns.push_back(v->kind == VariableKind::kCoordinate ? v->index
                      : v->kind == VariableKind::kVelocity ? nq + v->index
                                                           : 2 * nq + v->index);
  }
  for (size_t k = 0; k < n_unknowns; ++k) {
    const Variable* v = unknowns[k] < vars.size() ? &vars[unknowns[k]] : nullptr;
    const bool ok = v != nullptr &&
                    (v->kind == VariableKind::kOutput || v->kind == VariableKind::kMultiplier ||
                     v->kind == VariableKind::kAcceleration ||
                     v->kind == VariableKind::kCoordinate || v->kind == VariableKind::kVelocity);
    if (!ok) {
      return Error(std::string(function) + ": unknown valueReference " +
                   std::to_string(unknowns[k]) + (v ? " (" + v->name + ")" : "") +
                   " has no directional derivative here (the unknowns are the outputs, lambda.*, "
                   "a.*, q.* and v.*)");
    }
  }
  KktJacobian j;
  if (fmi2Status s = JacobianHere(function, &j); s != fmi2OK) return s;
  partials->assign(n_unknowns * n_knowns, 0.0);
  for (size_t k = 0; k < n_unknowns; ++k) {
    const Variable& v = vars[unknowns[k]];
    const double* row = nullptr;
    switch (v.kind) {
      case VariableKind::kOutput: row = &j.dy[static_cast<size_t>(v.index * j.nz)]; break;
      case VariableKind::kMultiplier: row = &j.dlambda[static_cast<size_t>(v.index * j.nz)]; break;
      case VariableKind::kAcceleration: row = &j.da[static_cast<size_t>(v.index * j.nz)]; break;
      default: break;
    }
    for (size_t c = 0; c < n_knowns; ++c) {
      double partial;
      if (row != nullptr) {
        partial = row[columns[c]];
      } else {
        // q.* and v.*: the identity on their own columns.
        const int own = v.kind == VariableKind::kCoordinate ? v.index : nq + v.index;
        partial = columns[c] == own ? 1.0 : 0.0;
      }
      (*partials)[k * n_knowns + c] = partial;
    }
  }
  return fmi2OK;
}

fmi2Status Instance::DirectionalDerivative(const char* function, const unsigned unknowns[],
                                           size_t n_unknowns, const unsigned knowns[],
                                           size_t n_knowns, const double seed[],
                                           double sensitivity[], bool adjoint) {
  const size_t n_seed = adjoint ? n_unknowns : n_knowns;
  const size_t n_out = adjoint ? n_knowns : n_unknowns;
  if ((n_seed > 0 && seed == nullptr) || (n_out > 0 && sensitivity == nullptr))
    return Error(std::string(function) + ": null seed or sensitivity array");
  std::vector<double> j;
  if (fmi2Status s = PartialDerivatives(function, unknowns, n_unknowns, knowns, n_knowns, &j);
      s != fmi2OK)
    return s;
  // sensitivity = J seed, or J^T seed for the adjoint.
  for (size_t r = 0; r < n_out; ++r) {
    double sum = 0;
    for (size_t c = 0; c < n_seed; ++c)
      sum += (adjoint ? j[c * n_knowns + r] : j[r * n_knowns + c]) * seed[c];
    sensitivity[r] = sum;
  }
  return fmi2OK;
}

}  // namespace tether::fmu

namespace tether::fmu {

fmi2Status Instance::OutputDerivatives(const char* function, const unsigned vr[], size_t nvr,
                                       const int order[], double value[]) {
  if (nvr > 0 && (vr == nullptr || order == nullptr || value == nullptr))
    return Error(std::string(function) + ": null value-reference, order or value array");
  bool needs_jacobian = false;
  for (size_t k = 0; k < nvr; ++k) {
    const Variable* v = vr[k] < vars.size() ? &vars[vr[k]] : nullptr;
    if (v == nullptr || IsParameter(v->kind) || v->kind == VariableKind::kInput) {
      return Error(std::string(function) + ": valueReference " + std::to_string(vr[k]) +
                   (v ? " (" + v->name + ")" : "") + " is not an output");
    }
    if (order[k] != 1) {
      return Error(std::string(function) + ": " + v->name + ": order " + std::to_string(order[k]) +
                   " is not provided (maxOutputDerivativeOrder=\"1\")");
    }
    needs_jacobian = needs_jacobian || v->kind == VariableKind::kOutput ||
                     v->kind == VariableKind::kMultiplier ||
                     v->kind == VariableKind::kAcceleration || v->kind == VariableKind::kVelocity;
  }
  if (fmi2Status s = ApplyParameters(); s != fmi2OK) return s;
  KktJacobian j;
  if (needs_jacobian) {
    if (fmi2Status s = JacobianHere(function, &j); s != fmi2OK) return s;
  }
  v1::State state;
  sim->GetState(&state);
  // z' = (q', v', u') = (v, a, the inputs' derivatives) along the motion.
  std::vector<double> z_dot;
  if (needs_jacobian) {
    z_dot.assign(state.v().begin(), state.v().end());
    z_dot.insert(z_dot.end(), j.a.begin(), j.a.end());
    z_dot.insert(z_dot.end(), input_rates.begin(), input_rates.end());
  }
  // d/dt of a row of the Jacobian's quantities: row . z' + its time partial.
  auto along = [&](const std::vector<double>& rows, int r, double dt) {
    double sum = 0;
    for (int c = 0; c < j.nz; ++c) sum += rows[static_cast<size_t>(r * j.nz + c)] * z_dot[c];
    return sum + dt;
  };
  for (size_t k = 0; k < nvr; ++k) {
    const Variable& v = vars[vr[k]];
    const int i = v.index;
    const size_t u = static_cast<size_t>(i);
    switch (v.kind) {
      case VariableKind::kCoordinate: value[k] = state.v(i); break;
      case VariableKind::kVelocity: value[k] = j.a[u]; break;
      case VariableKind::kAcceleration: value[k] = along(j.da, i, j.da_dt[u]); break;
      case VariableKind::kMultiplier: value[k] = along(j.dlambda, i, j.dlambda_dt[u]); break;
      case VariableKind::kOutput: value[k] = along(j.dy, i, j.dy_dt[u]); break;
      default: value[k] = 0; break;  // the certificate's figures
    }
  }
  return fmi2OK;
}

fmi2Status Instance::SetInputDerivatives(const char* function, const unsigned vr[], size_t nvr,
                                         const int order[], const double value[]) {
  if (nvr > 0 && (vr == nullptr || order == nullptr || value == nullptr))
    return Error(std::string(function) + ": null value-reference, order or value array");
  // Check everything before changing anything.
  for (size_t k = 0; k < nvr; ++k) {
    const Variable* v = vr[k] < vars.size() ? &vars[vr[k]] : nullptr;
    if (v == nullptr || v->kind != VariableKind::kInput) {
      return Error(std::string(function) + ": valueReference " + std::to_string(vr[k]) +
                   (v ? " (" + v->name + ")" : "") + " is not an input");
    }
    if (order[k] != 1) {
      return Error(std::string(function) + ": " + v->name + ": order " + std::to_string(order[k]) +
                   " is not provided (inputs are interpolated linearly: order 1 only)");
    }
    if (!std::isfinite(value[k])) {
      return Error(std::string(function) + ": " + v->name +
                   ": expected a finite derivative, found " + FormatNumber(value[k]));
    }
  }
  for (size_t k = 0; k < nvr; ++k) input_rates[static_cast<size_t>(vars[vr[k]].index)] = value[k];
  return fmi2OK;
}

}  // namespace tether::fmu
