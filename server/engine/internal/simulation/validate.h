// A description's checks and its compilation: what engine/simulation.h's
// Validate reports, and what Simulation::Create compiles from. The checks of
// every field (its path, what was found, what was expected), the
// compilation within the options' limits, and the cautions at the initial
// state (consistency, the step's stability for the gains).
#pragma once

#include "engine/internal/base/internal.h"

#include <memory>
#include <string>
#include <vector>

#include "engine/compile_options.h"
#include "engine/internal/model/model.h"
#include "engine/status.h"
#include "tether/v1/simulation.pb.h"

namespace tether::validation {

// An ERROR diagnostic on `field`.
void Error(std::vector<v1::Diagnostic>* d, std::string field, std::string message);
// A state's checks (finite, lengths) with field paths under `field`.
void CheckState(const v1::State& state, int nq, const std::string& field,
                std::vector<v1::Diagnostic>* d);
// q and v of a checked initial state (v empty: at rest).
void LoadInitialState(const v1::State& initial, int nq, std::vector<double>* q,
                      std::vector<double>* v);
// Checks and compiles `spec` into *report (its diagnostics and the initial
// evaluation); the model when valid, else nullptr. *stopped is set when a
// compile limit or the cancel hook stopped the compilation (the report is
// then unfilled).
std::shared_ptr<const Model> CheckAndCompile(const v1::SimulationSpec& spec,
                                             const CompileOptions& options,
                                             v1::ValidationReport* report, Status* stopped);

}  // namespace tether::validation
