#include "engine/internal/model/compiler.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace tether::compiler {

namespace {

// For every node of the graph, the non-smooth operations (operations.h:
// smooth is kKink or kJump) its expression uses, one bit per Op: one sweep
// over the graph (ids are topological), so expressions that share
// definitions are not walked once each. A syntactic check: sqrt(x^2) is
// abs(x) but is not found.
std::vector<uint64_t> NonSmoothMasks(const expr::Graph& graph) {
  static_assert(std::size(expr::kOperationInfo) <= 64, "one bit per operation");
  std::vector<uint64_t> mask(graph.size(), 0);
  for (size_t id = 0; id < mask.size(); ++id) {
    const expr::Node& n = graph.node(static_cast<NodeId>(id));
    uint64_t m = expr::IsSmooth(n.op) ? 0 : uint64_t{1} << static_cast<unsigned>(n.op);
    if (n.a >= 0) m |= mask[static_cast<size_t>(n.a)];
    if (n.b >= 0) m |= mask[static_cast<size_t>(n.b)];
    mask[id] = m;
  }
  return mask;
}

// The spellings of the operations in `mask`, in the table's order.
std::vector<std::string> Spellings(uint64_t mask) {
  std::vector<std::string> found;
  for (size_t op = 0; op < std::size(expr::kOperationInfo); ++op) {
    if ((mask >> op) & 1) found.emplace_back(expr::kOperationInfo[op].spelling);
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
// Definitions name the parts of large mechanisms (a few per body): more
// than the other lists, still a bounded scope (a map entry each).
constexpr int kMaxDefinitions = 65536;

}  // namespace

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
  if (sys_.definitions_size() > kMaxDefinitions) {
    Error("system.definitions", std::to_string(sys_.definitions_size()) + " definitions; at most " +
                                    std::to_string(kMaxDefinitions) + " are supported");
    return;
  }
  definitions_.resize(static_cast<size_t>(sys_.definitions_size()));
  for (int i = 0; i < sys_.definitions_size(); ++i) {
    const std::string field = Index("system.definitions", i);
    definitions_[static_cast<size_t>(i)].index = i;
    definitions_[static_cast<size_t>(i)].name = sys_.definitions(i).name();
    if (claim(sys_.definitions(i).name(), field + ".name", "definition " + field)) {
      scope_.definition_names[sys_.definitions(i).name()] = i;
    }
  }
  scope_.definitions = &definitions_;
  for (int i = 0; i < m.nq; ++i) {
    scope_.coordinates[m.coordinate_names[i]] = m.var_q(i);
    scope_.velocities[m.coordinate_names[i]] = m.var_v(i);
  }
  for (int i = 0; i < m.nq; ++i) scope_.coordinate_vars.emplace_back(m.var_q(i), m.var_v(i));
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
  // The frames' other columns (tether run --format csv, the Python
  // Trajectory, docs/NAMES.md): an output is a column under its bare name,
  // so one named as another column would make two columns of one name.
  std::map<std::string, std::string> columns = {{"step", "the step count"},
                                                {"t", "the time"},
                                                {"dynamics_residual", "the dynamics residual"},
                                                {"constraint_residual", "the constraint residual"}};
  for (int i = 0; i < m.nq; ++i) {
    const std::string& x = m.coordinate_names[static_cast<size_t>(i)];
    columns.emplace(x, "coordinate " + QuoteForMessage(x));
    columns.emplace("v_" + x, "the velocity of coordinate " + QuoteForMessage(x));
    columns.emplace("a_" + x, "the acceleration of coordinate " + QuoteForMessage(x));
  }
  for (const std::string& c : m.constraint_names) {
    columns.emplace("lambda_" + c, "the multiplier of constraint " + QuoteForMessage(c));
    columns.emplace("g_" + c, "the residual of constraint " + QuoteForMessage(c));
    columns.emplace("gdot_" + c, "the velocity residual of constraint " + QuoteForMessage(c));
  }
  m.ny = sys_.outputs_size();
  for (int i = 0; i < m.ny; ++i) {
    const std::string& name = sys_.outputs(i).name();
    std::string field = Index("system.outputs", i) + ".name";
    if (!expr::IsIdentifier(name)) {
      Error(field, QuoteForMessage(name) + " is not a valid name; expected an identifier");
    } else if (!output_names.insert(name).second) {
      Error(field, "output name " + QuoteForMessage(name) + " is used twice; names must be unique");
    } else if (auto it = columns.find(name); it != columns.end()) {
      Error(field, "output name " + QuoteForMessage(name) + " is the frames' column of " +
                       it->second +
                       " (tether run --format csv, the Python Trajectory); expected a name no "
                       "other column has");
    }
    m.output_names.push_back(name);
  }
}

bool Compiler::MassEntries(const google::protobuf::RepeatedField<double>& values,
                           const google::protobuf::RepeatedPtrField<std::string>& expressions,
                           const std::string& field, std::vector<double>* out,
                           std::string* entries) {
  if (expressions.empty()) {
    out->assign(values.begin(), values.end());
    *entries = field + ".values";
    return true;
  }
  *entries = field + ".expressions";
  if (!values.empty()) {
    Error(field, "expected values or expressions, found both (" + std::to_string(values.size()) +
                     " values, " + std::to_string(expressions.size()) + " expressions)");
    return false;
  }
  // Constant expressions: the parameters (constants in the graph) and
  // nothing that varies, so each folds to one number when parsed.
  expr::Scope constants;
  constants.parameters = scope_.parameters;
  constants.time_var = scope_.time_var;  // t parses, and is then no constant
  constants.restriction = "a mass expression may use parameters only (it is evaluated once)";
  bool ok = true;
  for (int i = 0; i < expressions.size(); ++i) {
    const std::string at = Index(*entries, i);
    if (graph_.overflowed()) return false;
    field_ = at;
    expr::ParseError error;
    expr::Uses uses;
    std::optional<NodeId> root = expr::Parse(expressions[i], constants, &graph_, &error, &uses);
    if (Stopped()) return false;
    if (!root) {
      Error(at, "column " + std::to_string(error.column) + ": " + error.message);
      ok = false;
    } else if (!graph_.IsConst(*root)) {
      Error(at, "expected a constant expression of the parameters, found " +
                    QuoteForMessage(expressions[i]));
      ok = false;
    } else {
      out->push_back(graph_.node(*root).value);
    }
  }
  return ok;
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
      std::vector<double> values;
      std::string entries;  // "system.masses.values" or "...expressions"
      if (!MassEntries(sys_.masses().values(), sys_.masses().expressions(), "system.masses",
                       &values, &entries)) {
        return;
      }
      if (static_cast<int>(values.size()) != d) {
        Error(entries, "expected " + std::to_string(d) + " masses (one per coordinate), found " +
                           std::to_string(values.size()));
        return;
      }
      for (int i = 0; i < d; ++i) {
        double mi = values[static_cast<size_t>(i)];
        if (!std::isfinite(mi) || mi <= 0) {
          Error(Index(entries, i), "expected a finite mass > 0, found " + FormatNumber(mi));
          continue;
        }
        // A subnormal mass has lost precision and its inverse overflows:
        // the step would fail later as "dependent constraints".
        if (!std::isnormal(mi)) {
          Error(Index(entries, i), "mass " + FormatNumber(mi) +
                                       " is subnormal (too small to be represented " +
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
      std::vector<double> values;
      std::string entries;  // "system.mass_matrix.values" or "...expressions"
      if (!MassEntries(sys_.mass_matrix().values(), sys_.mass_matrix().expressions(),
                       "system.mass_matrix", &values, &entries)) {
        return;
      }
      if (static_cast<int>(values.size()) != d * d) {
        Error(entries, "expected " + std::to_string(d * d) + " entries (" + std::to_string(d) +
                           "x" + std::to_string(d) + ", row-major), found " +
                           std::to_string(values.size()));
        return;
      }
      double scale = 0;
      for (int k = 0; k < d * d; ++k) {
        if (!std::isfinite(values[static_cast<size_t>(k)])) {
          Error(Index(entries, k),
                "expected a finite number, found " + FormatNumber(values[static_cast<size_t>(k)]));
          return;
        }
        scale = std::max(scale, std::fabs(values[static_cast<size_t>(k)]));
      }
      for (int i = 0; i < d; ++i) {
        for (int j = i + 1; j < d; ++j) {
          double a = values[static_cast<size_t>(i * d + j)],
                 b = values[static_cast<size_t>(j * d + i)];
          if (std::fabs(a - b) > 1e-12 * scale) {
            Error(entries, "mass matrix is not symmetric: entry (" + std::to_string(i) + "," +
                               std::to_string(j) + ") = " + FormatNumber(a) + " but (" +
                               std::to_string(j) + "," + std::to_string(i) +
                               ") = " + FormatNumber(b));
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
          Error(entries, "mass matrix is not positive definite (Cholesky pivot " +
                             std::to_string(j) + " is " + FormatNumber(s) +
                             "); expected a symmetric positive definite matrix");
          return;
        }
        if (!std::isnormal(s)) {
          Error(entries,
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
  if (errors_ || graph_.overflowed()) return;
  const Model& m = *model_;
  const std::vector<uint64_t> masks = NonSmoothMasks(graph_);
  auto NonSmoothOperations = [&masks](NodeId root) {
    return Spellings(masks[static_cast<size_t>(root)]);
  };
  for (size_t i = 0; i < g.size(); ++i) {
    const auto ops = NonSmoothOperations(g[i]);
    if (ops.empty()) continue;
    Warning(Index("system.constraints", static_cast<int>(i)) + ".expression",
            "constraint '" + m.constraint_names[i] + "' uses " + JoinQuoted(ops) +
                ", which is not smooth: its Jacobian G and curvature term H, which the KKT "
                "system uses, jump where the argument crosses the kink, and the drift bound "
                "grows there (the certificate lists the steps in defect_jumps); expected a "
                "smooth expression (for abs(x), e.g. sqrt(x^2 + eps^2))");
  }
  if (V) {
    const auto ops = NonSmoothOperations(*V);
    if (!ops.empty()) {
      Warning("system.potential_energy",
              "the potential energy uses " + JoinQuoted(ops) +
                  ", which is not smooth: the force F = -dV/dq jumps at its kink; expected a "
                  "smooth expression");
    }
  }
  if (T) {
    const auto ops = NonSmoothOperations(*T);
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
                                           const char* restriction, expr::Uses* uses) {
  // After a graph overflow (already reported for the expression that caused
  // it) nothing more can be parsed; don't blame later expressions.
  if (graph_.overflowed()) return std::nullopt;
  field_ = field;
  scope_.allow_velocities = allow_velocities;
  scope_.allow_inputs = allow_inputs;
  scope_.restriction = restriction;
  expr::ParseError error;
  expr::Uses own;
  if (!uses) uses = &own;
  std::optional<NodeId> root = expr::Parse(text, scope_, &graph_, &error, uses);
  // A compile limit or a cancel is the status, not a parse error.
  if (Stopped()) return std::nullopt;
  if (!root) {
    // An expression that fails only for a definition with an error is not
    // reported again: the definition's own field is.
    if (error.follows_from_definition) {
      ++errors_;
    } else {
      Error(field, "column " + std::to_string(error.column) + ": " + error.message);
    }
  }
  if (uses == &own) {
    for (int index : own.definitions) definition_used_[static_cast<size_t>(index)] = 1;
  }
  return root;
}

void Compiler::ParseDefinitions() {
  const int n = sys_.definitions_size();
  definition_used_.assign(static_cast<size_t>(n), 0);
  definition_refs_.assign(static_cast<size_t>(n), {});
  for (int i = 0; i < n; ++i) {
    scope_.visible_definitions = i;  // the definitions before it
    expr::Uses uses;
    const std::optional<NodeId> node =
        ParseField(sys_.definitions(i).expression(), Index("system.definitions", i) + ".expression",
                   true, true, "", &uses);
    expr::Definition& d = definitions_[static_cast<size_t>(i)];
    if (node) {
      d.node = *node;
      d.velocity = std::move(uses.velocity);
      d.input = std::move(uses.input);
    }
    std::vector<int>& refs = definition_refs_[static_cast<size_t>(i)];
    refs = std::move(uses.definitions);
    std::sort(refs.begin(), refs.end());
    refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
  }
  scope_.visible_definitions = n;
}

void Compiler::WarnUnusedDefinitions() {
  if (errors_) return;  // a use in an expression with an error is not seen
  // Used: by an expression other than a definition, or by a used definition
  // (only earlier ones are referenced, so one backward pass).
  for (size_t i = definition_used_.size(); i-- > 0;) {
    if (!definition_used_[i]) continue;
    for (int j : definition_refs_[i]) definition_used_[static_cast<size_t>(j)] = 1;
  }
  for (size_t i = 0; i < definition_used_.size(); ++i) {
    if (definition_used_[i]) continue;
    const int index = static_cast<int>(i);
    Warning(Index("system.definitions", index),
            "definition " + QuoteForMessage(sys_.definitions(index).name()) +
                " is not used: no energy, force, constraint, output or used definition refers "
                "to it; expected each definition to be used (remove it or use it)");
  }
}

}  // namespace tether::compiler
