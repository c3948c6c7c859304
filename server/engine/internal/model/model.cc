#include "engine/internal/model/model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "engine/internal/base/heap_bytes.h"
#include "engine/internal/expr/parser.h"
#include "engine/status.h"

namespace tether {

using expr::NodeId;

namespace {

// The spellings of the non-smooth operations (operations.h: smooth is kKink
// or kJump) that the expression at `root` uses, in first-use order. A
// syntactic check: sqrt(x^2) is abs(x) but is not found.
std::vector<std::string> NonSmoothOperations(const expr::Graph& graph, NodeId root) {
  std::vector<std::string> found;
  std::set<NodeId> seen;
  std::vector<NodeId> todo{root};
  while (!todo.empty()) {
    const NodeId id = todo.back();
    todo.pop_back();
    if (id < 0 || !seen.insert(id).second) continue;
    const expr::Node& n = graph.node(id);
    if (!expr::IsSmooth(n.op)) {
      std::string name = expr::Info(n.op).spelling;
      if (std::find(found.begin(), found.end(), name) == found.end()) found.push_back(name);
    }
    todo.push_back(n.a);
    todo.push_back(n.b);
  }
  return found;
}

std::string JoinQuoted(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i] + "()";
  return s;
}

constexpr int kMaxCoordinates = 2048;
constexpr int kMaxNamedItems = 4096;

std::string Index(const std::string& base, int i) { return base + "[" + std::to_string(i) + "]"; }

// The graph's bounds and watch for a compilation with `options`.
expr::Limits GraphLimits(const CompileLimits& limits) {
  expr::Limits out;
  out.max_nodes = limits.max_nodes;
  out.max_derivative_nodes = limits.max_derivative_nodes;
  out.max_bytes = limits.max_bytes;
  return out;
}
expr::Watch GraphWatch(const CompileOptions& options) {
  expr::Watch watch;
  if (options.limits.time_budget.count() > 0) {
    watch.cpu_deadline = expr::ThreadCpuTime() + options.limits.time_budget;
    watch.deadline =
        std::chrono::steady_clock::now() + kCompileWallClockFactor * options.limits.time_budget;
  }
  watch.cancelled = options.cancelled;
  return watch;
}

class Compiler {
 public:
  Compiler(const v1::SystemSpec& system, const CompileOptions& options,
           std::vector<v1::Diagnostic>* diagnostics, bool with_newton)
      : sys_(system),
        limits_(options.limits),
        kkt_(options.kkt),
        with_newton_(with_newton),
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
  // Ok, or why the compilation stopped (see CompileModel).
  Status& stopped() { return stopped_; }

 private:
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
    std::optional<NodeId> T, V;    // kinetic (kKinetic) and potential energy
    std::vector<NodeId> Q;         // generalized forces (nq)
    std::vector<NodeId> g;         // constraints (nc)
    std::vector<NodeId> y;         // outputs (ny)
    std::vector<NodeId> F;         // forces: Q - dV/dq, plus the Lagrangian terms of T (nq)
    std::vector<NodeId> Mq;        // M(q) = d2T/dv2 (nq x nq, kKinetic only)
    std::vector<NodeId> G, gt, H;  // constraint jets: dg/dq (nc x nq), dg/dt, H (nc)
    std::vector<NodeId> newton;    // the Newton matrix's outputs (with_newton_)
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
  void CheckGains();
  // Warns for non-smooth operations in the expressions whose derivatives
  // enter the KKT system: the constraints (G and H), the potential energy
  // (F = -dV/dq) and the kinetic energy (M = d2T/dv2 and its q-derivatives).
  // Generalized forces and outputs enter by value only and are not checked.
  void CheckSmoothness(const std::optional<NodeId>& T, const std::optional<NodeId>& V,
                       const std::vector<NodeId>& g);
  std::optional<NodeId> ParseField(const std::string& text, const std::string& field,
                                   bool allow_velocities, bool allow_inputs,
                                   const char* restriction);
  bool CheckFinite(double value, const std::string& field) {
    if (std::isfinite(value)) return true;
    Error(field, "expected a finite number, found " + FormatNumber(value));
    return false;
  }

  const v1::SystemSpec& sys_;
  const CompileLimits limits_;
  const KktPath kkt_;
  const bool with_newton_;
  std::vector<v1::Diagnostic>* diags_;
  int errors_ = 0;
  // The expression being compiled (its field path), for limit messages.
  std::string field_ = "system";
  Status stopped_;
  std::shared_ptr<Model> model_ = std::make_shared<Model>();
  expr::Graph graph_;
  expr::Scope scope_;
  // name -> what it is, for clash messages.
  std::map<std::string, std::string, std::less<>> kinds_;
};

bool Compiler::Stopped() {
  const expr::Stop stop = graph_.stop();
  if (stop == expr::Stop::kNone || stop == expr::Stop::kDepth) return false;
  if (!stopped_.ok()) return true;
  const std::string& f = field_;
  auto exhausted = [&](std::string what) {
    stopped_ = Status(StatusCode::kResourceExhausted, f + ": " + what, {{f, what}});
  };
  switch (stop) {
    case expr::Stop::kNodes:
      exhausted("too large to compile: with its derivatives it needs more than " +
                std::to_string(limits_.max_nodes) +
                " expression nodes (compile limit max_nodes = " +
                std::to_string(limits_.max_nodes) + ")");
      break;
    case expr::Stop::kDerivatives:
      exhausted("too large to differentiate: its derivatives need more than " +
                std::to_string(limits_.max_derivative_nodes) +
                " derivative nodes (compile limit max_derivative_nodes = " +
                std::to_string(limits_.max_derivative_nodes) + ")");
      break;
    case expr::Stop::kMemory:
      exhausted("too large to compile: its expressions and derivatives need more than " +
                std::to_string(limits_.max_bytes) +
                " bytes (compile limit max_bytes = " + std::to_string(limits_.max_bytes) + ")");
      break;
    case expr::Stop::kTime:
      exhausted("compiling took longer than the compile time budget (compile limit time_budget = " +
                FormatNumber(std::chrono::duration<double>(limits_.time_budget).count()) +
                " s of CPU time, or " + std::to_string(kCompileWallClockFactor) +
                " times that of wall-clock time)");
      break;
    case expr::Stop::kCancelled:
      stopped_ = Status(StatusCode::kCancelled, "compilation cancelled while compiling " + f);
      break;
    case expr::Stop::kNone:
    case expr::Stop::kDepth: break;
  }
  return true;
}

void Compiler::CheckNames() {
  Model& m = *model_;
  auto claim = [&](const std::string& name, const std::string& field, const std::string& kind) {
    if (!expr::IsIdentifier(name)) {
      Error(field, QuoteForMessage(name) +
                       " is not a valid name; expected a letter or '_' followed by letters, "
                       "digits or '_' (at most 128 characters)");
      return false;
    }
    if (expr::IsReservedName(name)) {
      Error(field, QuoteForMessage(name) +
                       " is reserved (t, pi, der and function names); choose another name");
      return false;
    }
    auto [it, inserted] = kinds_.emplace(name, kind);
    if (!inserted) {
      Error(field, "name " + QuoteForMessage(name) + " is already used by " + it->second +
                       "; names must be unique");
      return false;
    }
    return true;
  };

  if (sys_.coordinates_size() == 0) {
    Error("system.coordinates", "expected at least one coordinate name, found none");
  }
  if (sys_.coordinates_size() > kMaxCoordinates) {
    Error("system.coordinates", std::to_string(sys_.coordinates_size()) + " coordinates; at most " +
                                    std::to_string(kMaxCoordinates) + " are supported");
    return;
  }
  if (sys_.parameters_size() > kMaxNamedItems || sys_.inputs_size() > kMaxNamedItems ||
      sys_.outputs_size() > kMaxNamedItems || sys_.constraints_size() > kMaxCoordinates) {
    Error("system", "too many parameters, inputs, outputs or constraints (at most " +
                        std::to_string(kMaxNamedItems) + " of each)");
    return;
  }
  m.nq = sys_.coordinates_size();
  for (int i = 0; i < m.nq; ++i) {
    const std::string& name = sys_.coordinates(i);
    std::string field = Index("system.coordinates", i);
    claim(name, field, "coordinate " + field);
    m.coordinate_names.push_back(name);
  }
  for (int i = 0; i < sys_.parameters_size(); ++i) {
    const auto& p = sys_.parameters(i);
    std::string field = Index("system.parameters", i);
    bool ok = claim(p.name(), field + ".name", "parameter " + field);
    ok = CheckFinite(p.value(), field + ".value") && ok;
    if (ok) scope_.parameters[p.name()] = p.value();
  }
  m.nu = sys_.inputs_size();
  for (int k = 0; k < m.nu; ++k) {
    const auto& in = sys_.inputs(k);
    std::string field = Index("system.inputs", k);
    claim(in.name(), field + ".name", "input " + field);
    CheckFinite(in.default_value(), field + ".default_value");
    m.input_names.push_back(in.name());
    m.input_defaults.push_back(in.default_value());
  }
  for (int i = 0; i < m.nq; ++i) {
    scope_.coordinates[m.coordinate_names[i]] = m.var_q(i);
    scope_.velocities[m.coordinate_names[i]] = m.var_v(i);
  }
  for (int k = 0; k < m.nu; ++k) scope_.inputs[m.input_names[k]] = m.var_u(k);
  scope_.time_var = m.var_t();

  m.nc = sys_.constraints_size();
  if (m.nc > m.nq && m.nq > 0) {
    Error("system.constraints", std::to_string(m.nc) + " constraints for " + std::to_string(m.nq) +
                                    " coordinates; expected at most as many constraints as "
                                    "coordinates (m <= d)");
  }
  std::set<std::string> constraint_names;
  for (int i = 0; i < m.nc; ++i) {
    std::string name = sys_.constraints(i).name();
    std::string field = Index("system.constraints", i) + ".name";
    if (name.empty())
      name = "c" + std::to_string(i);
    else if (!expr::IsIdentifier(name)) {
      Error(field, QuoteForMessage(name) + " is not a valid name; expected an identifier");
    }
    if (!constraint_names.insert(name).second) {
      Error(field,
            "constraint name " + QuoteForMessage(name) + " is used twice; names must be unique");
    }
    m.constraint_names.push_back(name);
  }
  std::set<std::string> output_names;
  m.ny = sys_.outputs_size();
  for (int i = 0; i < m.ny; ++i) {
    const std::string& name = sys_.outputs(i).name();
    std::string field = Index("system.outputs", i) + ".name";
    if (!expr::IsIdentifier(name)) {
      Error(field, QuoteForMessage(name) + " is not a valid name; expected an identifier");
    } else if (!output_names.insert(name).second) {
      Error(field, "output name " + QuoteForMessage(name) + " is used twice; names must be unique");
    }
    m.output_names.push_back(name);
  }
}

void Compiler::CheckInertia() {
  Model& m = *model_;
  const int d = m.nq;
  switch (sys_.inertia_case()) {
    case v1::SystemSpec::INERTIA_NOT_SET:
      Error("system.inertia",
            "no inertia given; expected one of masses, mass_matrix or kinetic_energy");
      return;
    case v1::SystemSpec::kMasses: {
      m.inertia = Inertia::kDiagonal;
      const auto& values = sys_.masses().values();
      if (values.size() != d) {
        Error("system.masses.values", "expected " + std::to_string(d) +
                                          " masses (one per coordinate), found " +
                                          std::to_string(values.size()));
        return;
      }
      for (int i = 0; i < d; ++i) {
        double mi = values[i];
        if (!std::isfinite(mi) || mi <= 0) {
          Error(Index("system.masses.values", i),
                "expected a finite mass > 0, found " + FormatNumber(mi));
          continue;
        }
        // A subnormal mass has lost precision and its inverse overflows:
        // the step would fail later as "dependent constraints".
        if (!std::isnormal(mi)) {
          Error(Index("system.masses.values", i),
                "mass " + FormatNumber(mi) + " is subnormal (too small to be represented " +
                    "accurately); expected a normal positive number, at least " +
                    FormatNumber(std::numeric_limits<double>::min()));
          continue;
        }
        m.mass_diag.push_back(mi);
        m.mass_inv.push_back(1.0 / mi);
        m.mass_inv_sqrt.push_back(1.0 / std::sqrt(mi));
      }
      return;
    }
    case v1::SystemSpec::kMassMatrix: {
      m.inertia = Inertia::kDense;
      const auto& values = sys_.mass_matrix().values();
      if (values.size() != d * d) {
        Error("system.mass_matrix.values",
              "expected " + std::to_string(d * d) + " entries (" + std::to_string(d) + "x" +
                  std::to_string(d) + ", row-major), found " + std::to_string(values.size()));
        return;
      }
      double scale = 0;
      for (int k = 0; k < d * d; ++k) {
        if (!std::isfinite(values[k])) {
          Error(Index("system.mass_matrix.values", k),
                "expected a finite number, found " + FormatNumber(values[k]));
          return;
        }
        scale = std::max(scale, std::fabs(values[k]));
      }
      for (int i = 0; i < d; ++i) {
        for (int j = i + 1; j < d; ++j) {
          double a = values[i * d + j], b = values[j * d + i];
          if (std::fabs(a - b) > 1e-12 * scale) {
            Error("system.mass_matrix.values",
                  "mass matrix is not symmetric: entry (" + std::to_string(i) + "," +
                      std::to_string(j) + ") = " + FormatNumber(a) + " but (" + std::to_string(j) +
                      "," + std::to_string(i) + ") = " + FormatNumber(b));
            return;
          }
        }
      }
      m.mass_dense.assign(values.begin(), values.end());
      // Cholesky, lower, row-major.
      std::vector<double> L(static_cast<size_t>(d * d), 0.0);
      for (int j = 0; j < d; ++j) {
        double s = m.mass_dense[j * d + j];
        for (int k = 0; k < j; ++k) s -= L[j * d + k] * L[j * d + k];
        if (!(s > 1e-14 * scale)) {
          Error("system.mass_matrix.values",
                "mass matrix is not positive definite (Cholesky pivot " + std::to_string(j) +
                    " is " + FormatNumber(s) + "); expected a symmetric positive definite matrix");
          return;
        }
        if (!std::isnormal(s)) {
          Error("system.mass_matrix.values",
                "mass matrix Cholesky pivot " + std::to_string(j) + " is " + FormatNumber(s) +
                    ", a subnormal number (too small to be represented accurately); expected "
                    "pivots that are normal positive numbers, at least " +
                    FormatNumber(std::numeric_limits<double>::min()));
          return;
        }
        L[j * d + j] = std::sqrt(s);
        for (int i = j + 1; i < d; ++i) {
          double r = m.mass_dense[i * d + j];
          for (int k = 0; k < j; ++k) r -= L[i * d + k] * L[j * d + k];
          L[i * d + j] = r / L[j * d + j];
        }
      }
      for (int j = 0; j < d; ++j) m.mass_chol_inv_diag.push_back(1.0 / L[j * d + j]);
      m.mass_chol = std::move(L);
      return;
    }
    case v1::SystemSpec::kKineticEnergy: m.inertia = Inertia::kKinetic; return;
  }
}

void Compiler::CheckGains() {
  Model& m = *model_;
  auto check = [&](const v1::Baumgarte& g, const std::string& field) {
    bool ok = true;
    if (!std::isfinite(g.alpha()) || g.alpha() < 0) {
      Error(field + ".alpha",
            "expected a finite alpha >= 0 (1/s), found " + FormatNumber(g.alpha()));
      ok = false;
    }
    if (!std::isfinite(g.beta()) || g.beta() < 0) {
      Error(field + ".beta", "expected a finite beta >= 0 (1/s), found " + FormatNumber(g.beta()));
      ok = false;
    }
    return ok;
  };
  bool system_ok = check(sys_.baumgarte(), "system.baumgarte");
  bool system_used = false;
  for (int i = 0; i < m.nc; ++i) {
    const auto& c = sys_.constraints(i);
    if (c.has_gains()) {
      std::string field = Index("system.constraints", i) + ".gains";
      if (!check(c.gains(), field)) continue;
      m.alpha.push_back(c.gains().alpha());
      m.beta.push_back(c.gains().beta());
      if (c.gains().alpha() == 0 || c.gains().beta() == 0) {
        Warning(field, "constraint '" + m.constraint_names[i] + "': " +
                           (c.gains().alpha() == 0 && c.gains().beta() == 0
                                ? "alpha = beta = 0: no feedback, drift grows linearly"
                            : c.gains().alpha() == 0
                                ? "alpha = 0: the residual only oscillates, it does not decay"
                                : "beta = 0: a constant position offset is not corrected"));
      }
    } else {
      system_used = true;
      m.alpha.push_back(system_ok ? sys_.baumgarte().alpha() : 0);
      m.beta.push_back(system_ok ? sys_.baumgarte().beta() : 0);
    }
  }
  if (system_used && system_ok) {
    double a = sys_.baumgarte().alpha(), b = sys_.baumgarte().beta();
    if (a == 0 && b == 0) {
      Warning("system.baumgarte",
              "alpha = beta = 0 (or no gains given): no feedback, the constraint drift grows "
              "linearly in time");
    } else if (a == 0) {
      Warning("system.baumgarte.alpha",
              "alpha = 0: the residual only oscillates, it does not decay");
    } else if (b == 0) {
      Warning("system.baumgarte.beta", "beta = 0: a constant position offset is not corrected");
    }
  }
}

void Compiler::CheckSmoothness(const std::optional<NodeId>& T, const std::optional<NodeId>& V,
                               const std::vector<NodeId>& g) {
  if (errors_) return;
  const Model& m = *model_;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto ops = NonSmoothOperations(graph_, g[i]);
    if (ops.empty()) continue;
    Warning(Index("system.constraints", static_cast<int>(i)) + ".expression",
            "constraint '" + m.constraint_names[i] + "' uses " + JoinQuoted(ops) +
                ", which is not smooth: its Jacobian G and curvature term H, which the KKT "
                "system uses, jump where the argument crosses the kink, and the drift bound "
                "grows there (the certificate lists the steps in defect_jumps); expected a "
                "smooth expression (for abs(x), e.g. sqrt(x^2 + eps^2))");
  }
  if (V) {
    const auto ops = NonSmoothOperations(graph_, *V);
    if (!ops.empty()) {
      Warning("system.potential_energy",
              "the potential energy uses " + JoinQuoted(ops) +
                  ", which is not smooth: the force F = -dV/dq jumps at its kink; expected a "
                  "smooth expression");
    }
  }
  if (T) {
    const auto ops = NonSmoothOperations(graph_, *T);
    if (!ops.empty()) {
      Warning("system.kinetic_energy",
              "the kinetic energy uses " + JoinQuoted(ops) +
                  ", which is not smooth: the mass matrix d2T/dv2 and the velocity terms jump "
                  "at its kink; expected a smooth expression");
    }
  }
}

std::optional<NodeId> Compiler::ParseField(const std::string& text, const std::string& field,
                                           bool allow_velocities, bool allow_inputs,
                                           const char* restriction) {
  // After a graph overflow (already reported for the expression that caused
  // it) nothing more can be parsed; don't blame later expressions.
  if (graph_.overflowed()) return std::nullopt;
  field_ = field;
  scope_.allow_velocities = allow_velocities;
  scope_.allow_inputs = allow_inputs;
  scope_.restriction = restriction;
  expr::ParseError error;
  std::optional<NodeId> root = expr::Parse(text, scope_, &graph_, &error);
  // A compile limit or a cancel is the status, not a parse error.
  if (Stopped()) return std::nullopt;
  if (!root) Error(field, "column " + std::to_string(error.column) + ": " + error.message);
  return root;
}

std::shared_ptr<const Model> Compiler::Run() {
  // A compilation cancelled before it starts does no work.
  graph_.Poll();
  if (Stopped()) return nullptr;
  CheckNames();
  if (errors_) return nullptr;  // names are needed to parse anything
  CheckInertia();
  CheckGains();
  Parts p;
  if (!ParseExpressions(&p) || !DeriveForces(&p) || !DeriveConstraintJets(&p)) return nullptr;
  if (with_newton_) {
    field_ = "system";
    p.newton = BuildNewton(p.g, p.G, p.gt, p.H, p.F, p.Mq);
    if (Stopped()) return nullptr;
  }
  if (!ChooseKktPath(&p) || !CompileTapes(&p)) return nullptr;
  return model_;
}

bool Compiler::ParseExpressions(Parts* p) {
  const Model& m = *model_;
  const int d = m.nq, nc = m.nc;
  if (m.inertia == Inertia::kKinetic) {
    p->T = ParseField(sys_.kinetic_energy(), "system.kinetic_energy", true, false,
                      "the kinetic energy may use coordinates, der(), parameters and t");
  }
  p->V = graph_.Const(0);
  if (!sys_.potential_energy().empty()) {
    p->V = ParseField(sys_.potential_energy(), "system.potential_energy", false, false,
                      "the potential energy V(q, t) may use coordinates, parameters and t");
  }
  p->Q.assign(static_cast<size_t>(d), graph_.Const(0));
  if (sys_.generalized_forces_size() != 0 && sys_.generalized_forces_size() != d) {
    Error("system.generalized_forces", "expected none or " + std::to_string(d) +
                                           " expressions (one per coordinate), found " +
                                           std::to_string(sys_.generalized_forces_size()));
  } else {
    for (int i = 0; i < sys_.generalized_forces_size(); ++i) {
      auto q = ParseField(sys_.generalized_forces(i), Index("system.generalized_forces", i), true,
                          true, "");
      if (q) p->Q[static_cast<size_t>(i)] = *q;
    }
  }
  p->g.assign(static_cast<size_t>(nc), graph_.Const(0));
  for (int i = 0; i < nc; ++i) {
    auto c = ParseField(sys_.constraints(i).expression(),
                        Index("system.constraints", i) + ".expression", false, false,
                        "holonomic constraints g(q, t) may use coordinates, parameters and t");
    if (c) p->g[static_cast<size_t>(i)] = *c;
  }
  CheckSmoothness(p->T, p->V, p->g);
  p->y.assign(static_cast<size_t>(m.ny), graph_.Const(0));
  for (int i = 0; i < m.ny; ++i) {
    auto o = ParseField(sys_.outputs(i).expression(), Index("system.outputs", i) + ".expression",
                        true, true, "");
    if (o) p->y[static_cast<size_t>(i)] = *o;
  }
  return !Stopped() && !errors_;
}

bool Compiler::DeriveForces(Parts* p) {
  const Model& m = *model_;
  const int d = m.nq;
  const int tv = m.var_t();
  p->F.assign(static_cast<size_t>(d), 0);
  field_ = "system.potential_energy";
  for (int i = 0; i < d; ++i) {
    if (graph_.Poll()) break;
    p->F[static_cast<size_t>(i)] =
        graph_.Sub(p->Q[static_cast<size_t>(i)], graph_.Diff(*p->V, m.var_q(i)));
  }
  if (Stopped()) return false;
  if (m.inertia != Inertia::kKinetic) return true;
  field_ = "system.kinetic_energy";
  std::vector<NodeId>& Mq = p->Mq;
  const NodeId T = *p->T;
  Mq.assign(static_cast<size_t>(d * d), graph_.Const(0));
  for (int i = 0; i < d; ++i) {
    if (graph_.Poll()) break;
    NodeId mom = graph_.Diff(T, m.var_v(i));  // generalized momentum dT/dv_i
    for (int j = i; j < d; ++j) {
      NodeId mij = graph_.Diff(mom, m.var_v(j));
      Mq[static_cast<size_t>(i * d + j)] = mij;
      Mq[static_cast<size_t>(j * d + i)] = mij;
    }
    // F_T = dT/dq - (d2T/dv dq) v - d2T/dv dt
    NodeId ft = graph_.Diff(T, m.var_q(i));
    for (int j = 0; j < d; ++j) {
      ft = graph_.Sub(ft, graph_.Mul(graph_.Diff(mom, m.var_q(j)), graph_.Var(m.var_v(j))));
    }
    ft = graph_.Sub(ft, graph_.Diff(mom, tv));
    p->F[static_cast<size_t>(i)] = graph_.Add(p->F[static_cast<size_t>(i)], ft);
  }
  if (Stopped()) return false;
  return CheckQuadraticInVelocities(*p);
}

bool Compiler::CheckQuadraticInVelocities(const Parts& p) {
  const Model& m = *model_;
  const int d = m.nq;
  // T is quadratic in v when no entry of d2T/dv2 depends on a velocity.
  // One sweep over the graph (ids are topological) marks the nodes that
  // depend on some velocity; only an entry so marked is searched for its
  // first velocity: O(nodes + d^2) rather than d^3 dependence queries.
  std::vector<char> uses_v(graph_.size(), 0);
  const int first_v = m.var_v(0), end_v = first_v + d;
  for (NodeId id = 0; id < static_cast<NodeId>(uses_v.size()); ++id) {
    if ((id & 0xffff) == 0 && graph_.Poll()) break;
    const expr::Node& n = graph_.node(id);
    uses_v[static_cast<size_t>(id)] = n.op == expr::Op::kVar
                                          ? n.var >= first_v && n.var < end_v
                                          : (n.a >= 0 && uses_v[static_cast<size_t>(n.a)]) ||
                                                (n.b >= 0 && uses_v[static_cast<size_t>(n.b)]);
  }
  if (Stopped()) return false;
  for (int i = 0; i < d; ++i) {
    for (int j = i; j < d; ++j) {
      const NodeId mij = p.Mq[static_cast<size_t>(i * d + j)];
      if (!uses_v[static_cast<size_t>(mij)]) continue;
      for (int k = 0; k < d; ++k) {
        if (graph_.DependsOn(mij, m.var_v(k))) {
          Error("system.kinetic_energy",
                "the kinetic energy is not quadratic in the velocities: d2T/dv2 entry (" +
                    m.coordinate_names[i] + ", " + m.coordinate_names[j] + ") depends on der(" +
                    m.coordinate_names[k] + "); expected T = 1/2 v^T M(q) v");
          return false;
        }
      }
      if (Stopped()) return false;
    }
  }
  return true;
}

bool Compiler::DeriveConstraintJets(Parts* p) {
  const Model& m = *model_;
  const int d = m.nq, nc = m.nc;
  const int tv = m.var_t();
  p->G.assign(static_cast<size_t>(nc * d), 0);
  p->gt.assign(static_cast<size_t>(nc), 0);
  p->H.assign(static_cast<size_t>(nc), 0);
  for (int i = 0; i < nc; ++i) {
    field_ = Index("system.constraints", i) + ".expression";
    if (graph_.Poll()) break;
    NodeId gi = p->g[static_cast<size_t>(i)];
    NodeId ed = graph_.Diff(gi, tv);
    p->gt[static_cast<size_t>(i)] = ed;
    for (int j = 0; j < d; ++j) {
      NodeId Gij = graph_.Diff(gi, m.var_q(j));
      p->G[static_cast<size_t>(i * d + j)] = Gij;
      ed = graph_.Add(ed, graph_.Mul(Gij, graph_.Var(m.var_v(j))));
    }
    // H = d(G v + g_t)/dq v + d(G v + g_t)/dt
    NodeId h = graph_.Diff(ed, tv);
    for (int j = 0; j < d; ++j) {
      h = graph_.Add(h, graph_.Mul(graph_.Diff(ed, m.var_q(j)), graph_.Var(m.var_v(j))));
    }
    p->H[static_cast<size_t>(i)] = h;
  }
  if (Stopped()) return false;
  if (graph_.overflowed()) {  // only depth is left
    Error(field_, "too deep to compile: its derivatives nest deeper than " +
                      std::to_string(graph_.limits().max_depth) + " operations");
    return false;
  }
  return !errors_;
}

bool Compiler::ChooseKktPath(Parts* p) {
  Model& m = *model_;
  const int d = m.nq, nc = m.nc;
  std::vector<NodeId>& G = p->G;
  std::vector<NodeId>& Mq = p->Mq;
  std::vector<char> g_nonzero(G.size());
  for (size_t k = 0; k < G.size(); ++k) g_nonzero[k] = !graph_.IsConst(G[k], 0);
  bool mass_diagonal = m.inertia == Inertia::kDiagonal;
  if (m.inertia == Inertia::kKinetic) {
    mass_diagonal = true;
    for (int i = 0; i < d && mass_diagonal; ++i) {
      for (int j = 0; j < d; ++j) {
        if (i != j && !graph_.IsConst(Mq[static_cast<size_t>(i * d + j)], 0)) {
          mass_diagonal = false;
          break;
        }
      }
    }
  }
  // The analysis spends what the graph has left of the memory budget, and
  // is polled like it.
  field_ = "system.constraints";
  AnalysisBudget budget;
  budget.max_bytes = std::max<int64_t>(0, limits_.max_bytes - graph_.memory_bytes());
  budget.stop = [this] { return graph_.Poll(); };
  int64_t needed = 0;
  const Analysis analysis =
      BuildSparseKkt(nc, d, g_nonzero, mass_diagonal, kkt_, budget, &m.sparse, &needed);
  if (analysis == Analysis::kStopped && Stopped()) return false;
  if (analysis == Analysis::kOverBudget) {
    const std::string what =
        "too large to compile: the sparse KKT analysis of the constraint Jacobian needs more "
        "than " +
        std::to_string(budget.max_bytes) +
        " bytes, what the compile memory budget leaves after the expressions (compile limit "
        "max_bytes = " +
        std::to_string(limits_.max_bytes) + ")";
    stopped_ = Status(StatusCode::kResourceExhausted, field_ + ": " + what, {{field_, what}});
    return false;
  }
  if (m.sparse.enabled) {
    std::vector<NodeId> nz, diag;
    for (size_t k = 0; k < G.size(); ++k)
      if (g_nonzero[k]) nz.push_back(G[k]);
    G = std::move(nz);
    if (!Mq.empty()) {
      for (int i = 0; i < d; ++i) diag.push_back(Mq[static_cast<size_t>(i * d + i)]);
      Mq = std::move(diag);
    }
  }
  return true;
}

bool Compiler::CompileTapes(Parts* p) {
  Model& m = *model_;
  const int d = m.nq, nc = m.nc;
  const int g_size = static_cast<int>(p->G.size());
  std::vector<NodeId> constraint_out;
  constraint_out.insert(constraint_out.end(), p->g.begin(), p->g.end());
  constraint_out.insert(constraint_out.end(), p->G.begin(), p->G.end());
  constraint_out.insert(constraint_out.end(), p->gt.begin(), p->gt.end());
  constraint_out.insert(constraint_out.end(), p->H.begin(), p->H.end());
  std::vector<NodeId> dyn_out = constraint_out;
  m.off_g = 0;
  m.off_G = nc;
  m.off_gt = nc + g_size;
  m.off_H = m.off_gt + nc;
  m.off_F = m.off_H + nc;
  m.off_M = m.off_F + d;
  dyn_out.insert(dyn_out.end(), p->F.begin(), p->F.end());
  dyn_out.insert(dyn_out.end(), p->Mq.begin(), p->Mq.end());
  for (int i = 0; i < nc; ++i) {
    m.two_alpha.push_back(2 * m.alpha[static_cast<size_t>(i)]);
    m.beta_sq.push_back(m.beta[static_cast<size_t>(i)] * m.beta[static_cast<size_t>(i)]);
  }
  m.defect_program = expr::Subgraph::Build(graph_, p->g);
  // The tapes: linear in the graph, polled like it; each is bounded on its own.
  field_ = "system";
  const std::function<bool()> poll = [this] { return graph_.Poll(); };
  const struct {
    Tape* tape;
    const std::vector<NodeId>* outputs;
    const char* name;
    int num_vars;
  } tapes[] = {{&m.dynamics, &dyn_out, "dynamics", m.num_vars()},
               {&m.constraints, &constraint_out, "constraint", m.num_vars()},
               {&m.outputs, &p->y, "output", m.num_vars()},
               {&m.newton.tape, &p->newton, "Newton matrix", m.newton.var_c2 + 1}};
  for (const auto& t : tapes) {
    if (t.tape == &m.newton.tape && !m.newton.enabled) continue;
    *t.tape = Tape::Compile(graph_, *t.outputs, t.num_vars, poll);
    if (Stopped()) return false;
    if (static_cast<int64_t>(t.tape->num_instructions()) > limits_.max_tape_length) {
      const std::string what = std::string("too large to compile: the ") + t.name + " tape has " +
                               std::to_string(t.tape->num_instructions()) +
                               " instructions (compile limit max_tape_length = " +
                               std::to_string(limits_.max_tape_length) + ")";
      stopped_ = Status(StatusCode::kResourceExhausted, field_ + ": " + what, {{field_, what}});
      return false;
    }
  }
  return true;
}

std::vector<NodeId> Compiler::BuildNewton(
    const std::vector<NodeId>& g, const std::vector<NodeId>& G, const std::vector<NodeId>& gt,
    const std::vector<NodeId>& H, const std::vector<NodeId>& F, const std::vector<NodeId>& Mq) {
  Model& m = *model_;
  NewtonTape& nt = m.newton;
  const int d = m.nq, nc = m.nc;
  nt.var_a = m.num_vars();
  nt.var_lambda = nt.var_a + d;
  nt.var_c1 = nt.var_lambda + nc;
  nt.var_c2 = nt.var_c1 + 1;
  auto at = [](const std::vector<NodeId>& x, int i) { return x[static_cast<size_t>(i)]; };
  auto mass = [&](int i, int j) {
    switch (m.inertia) {
      case Inertia::kDiagonal:
        return i == j ? graph_.Const(m.mass_diag[static_cast<size_t>(i)]) : graph_.Const(0);
      case Inertia::kDense: return graph_.Const(m.mass_dense[static_cast<size_t>(i * d + j)]);
      case Inertia::kKinetic: return at(Mq, i * d + j);
    }
    return graph_.Const(0);
  };
  const NodeId c1 = graph_.Var(nt.var_c1), c2 = graph_.Var(nt.var_c2);
  // Phi_i = F_i - sum_j M_ij a_j - sum_k G_ki lambda_k.
  std::vector<NodeId> phi(static_cast<size_t>(d)), psi(static_cast<size_t>(nc));
  for (int i = 0; i < d; ++i) {
    NodeId p = at(F, i);
    for (int j = 0; j < d; ++j) {
      p = graph_.Sub(p, graph_.Mul(mass(i, j), graph_.Var(nt.var_a + j)));
    }
    for (int k = 0; k < nc; ++k) {
      p = graph_.Sub(p, graph_.Mul(at(G, k * d + i), graph_.Var(nt.var_lambda + k)));
    }
    phi[static_cast<size_t>(i)] = p;
  }
  // Psi_k = -(H_k + 2 alpha_k e'_k + beta_k^2 g_k) - sum_j G_kj a_j.
  for (int k = 0; k < nc; ++k) {
    NodeId ed = at(gt, k);
    for (int j = 0; j < d; ++j) {
      ed = graph_.Add(ed, graph_.Mul(at(G, k * d + j), graph_.Var(m.var_v(j))));
    }
    const double al = m.alpha[static_cast<size_t>(k)], be = m.beta[static_cast<size_t>(k)];
    NodeId p = graph_.Add(at(H, k), graph_.Mul(graph_.Const(2 * al), ed));
    p = graph_.Neg(graph_.Add(p, graph_.Mul(graph_.Const(be * be), at(g, k))));
    for (int j = 0; j < d; ++j) {
      p = graph_.Sub(p, graph_.Mul(at(G, k * d + j), graph_.Var(nt.var_a + j)));
    }
    psi[static_cast<size_t>(k)] = p;
  }
  // K's entries, structural nonzeros only; the bottom-right block is 0.
  std::vector<NodeId> out;
  auto entry = [&](int row, int col, NodeId x) {
    if (graph_.IsConst(x, 0)) return;
    nt.k_row.push_back(row);
    nt.k_col.push_back(col);
    out.push_back(x);
  };
  for (int r = 0; r < d + nc; ++r) {
    if (graph_.Poll()) return {};
    const NodeId f = r < d ? phi[static_cast<size_t>(r)] : psi[static_cast<size_t>(r - d)];
    for (int j = 0; j < d; ++j) {
      const NodeId base = r < d ? mass(r, j) : at(G, (r - d) * d + j);
      NodeId x = graph_.Sub(base, graph_.Mul(c1, graph_.Diff(f, m.var_v(j))));
      x = graph_.Sub(x, graph_.Mul(c2, graph_.Diff(f, m.var_q(j))));
      entry(r, j, x);
    }
    if (r < d) {
      for (int k = 0; k < nc; ++k) entry(r, d + k, at(G, k * d + r));
    }
  }
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) {
      const NodeId x = mass(i, j);
      if (graph_.IsConst(x, 0)) continue;
      nt.m_row.push_back(i);
      nt.m_col.push_back(j);
      out.push_back(x);
    }
  }
  for (int k = 0; k < nc; ++k) {
    for (int j = 0; j < d; ++j) {
      const NodeId x = at(G, k * d + j);
      if (graph_.IsConst(x, 0)) continue;
      nt.g_row.push_back(k);
      nt.g_col.push_back(j);
      out.push_back(x);
    }
  }
  nt.enabled = !graph_.overflowed();
  return out;
}

}  // namespace

void AddDiagnostic(std::vector<v1::Diagnostic>* diagnostics, v1::Diagnostic::Severity severity,
                   std::string field, std::string message) {
  v1::Diagnostic d;
  d.set_severity(severity);
  d.set_field(std::move(field));
  d.set_message(std::move(message));
  diagnostics->push_back(std::move(d));
}

std::shared_ptr<const Model> CompileModel(const v1::SystemSpec& system,
                                          const CompileOptions& options,
                                          std::vector<v1::Diagnostic>* diagnostics, Status* stopped,
                                          bool with_newton) {
  Compiler compiler(system, options, diagnostics, with_newton);
  std::shared_ptr<const Model> model = compiler.Run();
  *stopped = std::move(compiler.stopped());
  return stopped->ok() ? model : nullptr;
}

int64_t Model::heap_bytes() const {
  return static_cast<int64_t>(sizeof(Model)) + kAllocationOverhead +
         HeapBytesOf(coordinate_names, constraint_names, input_names, output_names, input_defaults,
                     mass_diag, mass_inv, mass_inv_sqrt, mass_dense, mass_chol, mass_chol_inv_diag,
                     alpha, beta, two_alpha, beta_sq) +
         dynamics.heap_bytes() + constraints.heap_bytes() + outputs.heap_bytes() +
         defect_program.heap_bytes() + sparse.heap_bytes() + newton.tape.heap_bytes() +
         HeapBytesOf(newton.k_row, newton.k_col, newton.m_row, newton.m_col, newton.g_row,
                     newton.g_col);
}

}  // namespace tether
