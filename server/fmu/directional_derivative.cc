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
#include <string>
#include <vector>

#include "engine/sensitivity.h"
#include "engine/status.h"
#include "fmu/instance.h"

namespace tether::fmu {

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
  KktJacobian j;
  const std::vector<double> q(state.q().begin(), state.q().end());
  const std::vector<double> v(state.v().begin(), state.v().end());
  Status s = EvaluateKktJacobian(*derivative_sim, state.t(), q, v, inputs, &j);
  if (!s.ok())
    return Error(std::string(function) + ": at t = " + FormatNumber(state.t()) + ": " +
                 s.message());
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
