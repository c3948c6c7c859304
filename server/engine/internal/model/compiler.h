// The model compiler: a description's system checked, parsed into an
// expression graph, differentiated, its KKT path chosen and flattened into
// tapes, within the compile limits (CompileModel, model/model.h, is the
// entry point and the Model its product). Private to the model layer:
// model.cc has the compilation's phases, compiler_checks.cc the checks of
// names, inertia, gains and smoothness and the parsing of one field.
#pragma once

#include "engine/internal/base/internal.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/compile_options.h"
#include "engine/internal/expr/expression.h"
#include "engine/internal/expr/parser.h"
#include "engine/internal/model/model.h"
#include "engine/status.h"

namespace tether::compiler {

using expr::NodeId;

// "base[i]", a field path.
inline std::string Index(const std::string& base, int i) {
  return base + "[" + std::to_string(i) + "]";
}

// The graph's bounds and watch for a compilation with `options`.
expr::Limits GraphLimits(const CompileLimits& limits);
expr::Watch GraphWatch(const CompileOptions& options);

class Compiler {
 public:
  Compiler(const v1::SystemSpec& system, const CompileOptions& options,
           std::vector<v1::Diagnostic>* diagnostics, bool with_newton)
      : sys_(system),
        limits_(options.limits),
        kkt_(options.kkt),
        with_newton_(with_newton),
        with_sensitivity_(options.sensitivity),
        diags_(diagnostics),
        graph_(GraphLimits(options.limits), GraphWatch(options)) {}

  // The phases below, in order; nullptr when one fails (diagnostics, or
  // stopped()).
  std::shared_ptr<const Model> Run();
  // Builds model_->newton's outputs (model.h) from the dense G (nc x nq),
  // g, g_t, H, F and, for Inertia::kKinetic, M(q) (nq x nq).
  std::vector<NodeId> BuildNewton(const std::vector<NodeId>& g, const std::vector<NodeId>& G,
                                  const std::vector<NodeId>& gt, const std::vector<NodeId>& H,
                                  const std::vector<NodeId>& F, const std::vector<NodeId>& Mq);
  // Builds model_->sensitivity's outputs (model.h) from the same parts and
  // the outputs y.
  std::vector<NodeId> BuildSensitivity(const std::vector<NodeId>& g, const std::vector<NodeId>& G,
                                       const std::vector<NodeId>& gt, const std::vector<NodeId>& H,
                                       const std::vector<NodeId>& F, const std::vector<NodeId>& Mq,
                                       const std::vector<NodeId>& y);
  // Ok, or why the compilation stopped (see CompileModel).
  Status& stopped() { return stopped_; }

 private:
  // M_ij as a node (a constant unless the inertia is kinetic: Mq's).
  NodeId Mass(int i, int j, const std::vector<NodeId>& Mq);
  // Phi_i = F_i - (M a)_i - (G^T lambda)_i and Psi_k = -(H_k + 2 alpha_k
  // e'_k + beta_k^2 g_k) - (G a)_k, with a and lambda the variables from
  // slots var_a and var_lambda (the Newton and sensitivity tapes' residuals).
  void Residuals(const std::vector<NodeId>& g, const std::vector<NodeId>& G,
                 const std::vector<NodeId>& gt, const std::vector<NodeId>& H,
                 const std::vector<NodeId>& F, const std::vector<NodeId>& Mq, int var_a,
                 int var_lambda, std::vector<NodeId>* phi, std::vector<NodeId>* psi);

  void Error(std::string field, std::string message) {
    ++errors_;
    AddDiagnostic(diags_, v1::Diagnostic::ERROR, std::move(field), std::move(message));
  }
  void Warning(std::string field, std::string message) {
    AddDiagnostic(diags_, v1::Diagnostic::WARNING, std::move(field), std::move(message));
  }

  // What each phase hands the next: the description's expressions as graph
  // nodes, then their derivatives.
  struct Parts {
    std::optional<NodeId> T, V;       // kinetic (kKinetic) and potential energy
    std::vector<NodeId> Q;            // generalized forces (nq)
    std::vector<NodeId> g;            // constraints (nc)
    std::vector<NodeId> y;            // outputs (ny)
    std::vector<NodeId> F;            // forces: Q - dV/dq, plus the Lagrangian terms of T (nq)
    std::vector<NodeId> Mq;           // M(q) = d2T/dv2 (nq x nq, kKinetic only)
    std::vector<NodeId> G, gt, H;     // constraint jets: dg/dq (nc x nq), dg/dt, H (nc)
    std::vector<NodeId> newton;       // the Newton matrix's outputs (with_newton_)
    std::vector<NodeId> sensitivity;  // the KKT Jacobians (with_sensitivity_)
  };
  // The phases of Run. Each returns false when the compilation ends there.
  // Their order is the graph's node order, which the tapes' instruction
  // order and so every frame's bits follow: keep it.
  // Parses every expression, collecting all errors.
  bool ParseExpressions(Parts* p);
  // F = Q - dV/dq and, for a kinetic energy, M(q) and the Lagrangian terms.
  bool DeriveForces(Parts* p);
  // A kinetic energy's d2T/dv2 must not depend on velocities.
  bool CheckQuadraticInVelocities(const Parts& p);
  // G, g_t and H of every constraint.
  bool DeriveConstraintJets(Parts* p);
  // The sparse or dense KKT path (model/sparse_analysis.h); the sparse one
  // keeps only G's structural nonzeros and M(q)'s diagonal.
  bool ChooseKktPath(Parts* p);
  // The tape outputs' layout (Model's offsets), the ENCLOSED subgraph of g
  // and the tapes, each bounded by max_tape_length.
  bool CompileTapes(Parts* p);

  // True when the graph stopped for a compile limit or a cancel (depth is
  // an input error, reported by the parser or Run); the first time, records
  // the status naming field_.
  bool Stopped();
  void CheckNames();
  void CheckInertia();
  // A mass form's entries: `values`, or `expressions` (constant expressions
  // of the parameters, each folded to its number); not both. *entries is
  // the field path of the ones given ("system.masses.values" or
  // "...expressions") for the caller's errors. False after an error.
  bool MassEntries(const google::protobuf::RepeatedField<double>& values,
                   const google::protobuf::RepeatedPtrField<std::string>& expressions,
                   const std::string& field, std::vector<double>* out, std::string* entries);
  void CheckGains();
  // Warns for non-smooth operations in the expressions whose derivatives
  // enter the KKT system: the constraints (G and H), the potential energy
  // (F = -dV/dq) and the kinetic energy (M = d2T/dv2 and its q-derivatives).
  // Generalized forces and outputs enter by value only and are not checked.
  void CheckSmoothness(const std::optional<NodeId>& T, const std::optional<NodeId>& V,
                       const std::vector<NodeId>& g);
  // Parses one field. `uses`, when given, receives what it used (a
  // definition's); otherwise the definitions it names are marked used.
  std::optional<NodeId> ParseField(const std::string& text, const std::string& field,
                                   bool allow_velocities, bool allow_inputs,
                                   const char* restriction, expr::Uses* uses = nullptr);
  // Parses system.definitions in order, each seeing the ones before it, into
  // definitions_ (scope_.definitions).
  void ParseDefinitions();
  // A warning for each definition that no other expression uses (directly
  // or through a used definition).
  void WarnUnusedDefinitions();
  bool CheckFinite(double value, const std::string& field) {
    if (std::isfinite(value)) return true;
    Error(field, "expected a finite number, found " + FormatNumber(value));
    return false;
  }

  const v1::SystemSpec& sys_;
  const CompileLimits limits_;
  const KktPath kkt_;
  const bool with_newton_;
  const bool with_sensitivity_;
  std::vector<v1::Diagnostic>* diags_;
  int errors_ = 0;
  // The expression being compiled (its field path), for limit messages.
  std::string field_ = "system";
  // The field whose derivation first made graph_ overflow its depth ("":
  // none yet): the error names it, not the field derived last (a deep
  // potential energy was blamed on the first constraint).
  std::string overflow_field_;
  void NoteOverflow() {
    if (overflow_field_.empty() && graph_.overflowed()) overflow_field_ = field_;
  }
  Status stopped_;
  std::shared_ptr<Model> model_ = std::make_shared<Model>();
  expr::Graph graph_;
  expr::Scope scope_;
  // name -> what it is, for clash messages.
  std::map<std::string, std::string, std::less<>> kinds_;
  // system.definitions as parsed (scope_.definitions points here), whether
  // each is used, and the earlier definitions each one names.
  std::vector<expr::Definition> definitions_;
  std::vector<char> definition_used_;
  std::vector<std::vector<int>> definition_refs_;
};

}  // namespace tether::compiler
