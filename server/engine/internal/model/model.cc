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
#include "engine/internal/model/compiler.h"
#include "engine/status.h"

namespace tether {
namespace compiler {

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
  // After every node the stepping tapes use (so they are the same tapes).
  if (with_sensitivity_) {
    field_ = "system";
    p.sensitivity = BuildSensitivity(p.g, p.G, p.gt, p.H, p.F, p.Mq, p.y);
    if (Stopped()) return nullptr;
  }
  if (!ChooseKktPath(&p) || !CompileTapes(&p)) return nullptr;
  return model_;
}

bool Compiler::ParseExpressions(Parts* p) {
  const Model& m = *model_;
  const int d = m.nq, nc = m.nc;
  ParseDefinitions();
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
  if (Stopped()) return false;
  WarnUnusedDefinitions();
  return !errors_;
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
  NoteOverflow();
  if (Stopped()) return false;
  if (m.inertia != Inertia::kKinetic) return true;
  field_ = "system.kinetic_energy";
  std::vector<NodeId>& Mq = p->Mq;
  const NodeId T = *p->T;
  Mq.assign(static_cast<size_t>(d * d), graph_.Const(0));
  // Every dT/dq_i and momentum dT/dv_i at once, by reverse accumulation
  // over T's graph (Graph::Gradient): O(|T|) nodes for all of them. The
  // mass matrix is then d momentum / dv_j, one forward derivative per j over
  // that graph, and the velocity terms one directional derivative of all the
  // momenta along (q, t) -> (v, 1) (Graph::Tangent): their rate of change
  // along the motion at zero acceleration, (d2T/dv dq) v + d2T/dv dt. For a
  // mechanism's chain of N links that is O(N^2) nodes for M(q) and O(N) for
  // the velocity terms, where differentiating T once per variable and the
  // momenta once per coordinate built O(N^3) for each (docs/benchmarks.md,
  // "Mechanisms").
  const std::vector<NodeId> grad = graph_.Gradient(T, m.num_vars());
  std::vector<NodeId> along_motion(static_cast<size_t>(m.num_vars()), -1);
  along_motion[static_cast<size_t>(tv)] = graph_.Const(1);
  for (int j = 0; j < d; ++j) {
    along_motion[static_cast<size_t>(m.var_q(j))] = graph_.Var(m.var_v(j));
  }
  for (int i = 0; i < d; ++i) {
    if (graph_.Poll()) break;
    const NodeId mom = grad[static_cast<size_t>(m.var_v(i))];  // generalized momentum dT/dv_i
    for (int j = i; j < d; ++j) {
      NodeId mij = graph_.Diff(mom, m.var_v(j));
      Mq[static_cast<size_t>(i * d + j)] = mij;
      Mq[static_cast<size_t>(j * d + i)] = mij;
    }
    // F_T = dT/dq - ((d2T/dv dq) v + d2T/dv dt)
    const NodeId ft =
        graph_.Sub(grad[static_cast<size_t>(m.var_q(i))], graph_.Tangent(mom, 0, along_motion));
    p->F[static_cast<size_t>(i)] = graph_.Add(p->F[static_cast<size_t>(i)], ft);
  }
  NoteOverflow();
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
    NoteOverflow();
  }
  if (Stopped()) return false;
  if (graph_.overflowed()) {  // only depth is left
    Error(overflow_field_.empty() ? field_ : overflow_field_,
          "too deep to compile: its derivatives nest deeper than " +
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
  if (!m.sparse.enabled) {
    // The dense path's work per evaluation (CompileLimits::max_dense_kkt_work),
    // bounded before anything evaluates: its cost grows as the cube of the
    // sizes, which the expression limits do not bound.
    const double dd = d, cc = nc;
    const bool kinetic = m.inertia == Inertia::kKinetic;
    const double y = m.inertia == Inertia::kDiagonal ? cc * dd : cc * dd * dd / 2;
    const double work = y + cc * cc * dd / 2 + cc * cc * cc / 6 + (kinetic ? dd * dd * dd / 6 : 0);
    if (work > static_cast<double>(limits_.max_dense_kkt_work)) {
      char estimate[32];
      std::snprintf(estimate, sizeof estimate, "%.3g", work);
      const std::string why =
          !mass_diagonal ? "the mass matrix is not diagonal, which the sparse path needs"
          : nc < kSparseMinConstraints
              ? "fewer than " + std::to_string(kSparseMinConstraints) +
                    " constraints take the dense path"
              : "the constraint Jacobian's pattern gives a nearly dense factor of W, or one "
                "beyond the compile memory budget";
      std::string what = "too large to compile: the KKT solve takes the dense path (" + why + ")";
      what += " and one evaluation of " + std::to_string(d) + " coordinates and " +
              std::to_string(nc) + " constraints needs about " + estimate + " multiply-adds";
      what += " (compile limit max_dense_kkt_work = " + std::to_string(limits_.max_dense_kkt_work) +
              ")";
      if (kinetic) {
        what +=
            "; M(q) from the kinetic energy is factorised at every evaluation, constant "
            "masses are not";
      }
      field_ = "system";
      stopped_ = Status(StatusCode::kResourceExhausted, field_ + ": " + what, {{field_, what}});
      return false;
    }
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
  } tapes[] = {
      {&m.dynamics, &dyn_out, "dynamics", m.num_vars()},
      {&m.constraints, &constraint_out, "constraint", m.num_vars()},
      {&m.outputs, &p->y, "output", m.num_vars()},
      {&m.newton.tape, &p->newton, "Newton matrix", m.newton.var_c2 + 1},
      {&m.sensitivity.tape, &p->sensitivity, "sensitivity", m.sensitivity.var_lambda + m.nc}};
  for (const auto& t : tapes) {
    if (t.tape == &m.newton.tape && !m.newton.enabled) continue;
    if (t.tape == &m.sensitivity.tape && !m.sensitivity.enabled) continue;
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

NodeId Compiler::Mass(int i, int j, const std::vector<NodeId>& Mq) {
  const Model& m = *model_;
  const int d = m.nq;
  switch (m.inertia) {
    case Inertia::kDiagonal:
      return i == j ? graph_.Const(m.mass_diag[static_cast<size_t>(i)]) : graph_.Const(0);
    case Inertia::kDense: return graph_.Const(m.mass_dense[static_cast<size_t>(i * d + j)]);
    case Inertia::kKinetic: return Mq[static_cast<size_t>(i * d + j)];
  }
  return graph_.Const(0);
}

void Compiler::Residuals(const std::vector<NodeId>& g, const std::vector<NodeId>& G,
                         const std::vector<NodeId>& gt, const std::vector<NodeId>& H,
                         const std::vector<NodeId>& F, const std::vector<NodeId>& Mq, int var_a,
                         int var_lambda, std::vector<NodeId>* phi_out,
                         std::vector<NodeId>* psi_out) {
  const Model& m = *model_;
  const int d = m.nq, nc = m.nc;
  auto at = [](const std::vector<NodeId>& x, int i) { return x[static_cast<size_t>(i)]; };
  std::vector<NodeId>& phi = *phi_out;
  std::vector<NodeId>& psi = *psi_out;
  phi.assign(static_cast<size_t>(d), 0);
  psi.assign(static_cast<size_t>(nc), 0);
  // Phi_i = F_i - sum_j M_ij a_j - sum_k G_ki lambda_k.
  for (int i = 0; i < d; ++i) {
    NodeId p = at(F, i);
    for (int j = 0; j < d; ++j) {
      p = graph_.Sub(p, graph_.Mul(Mass(i, j, Mq), graph_.Var(var_a + j)));
    }
    for (int k = 0; k < nc; ++k) {
      p = graph_.Sub(p, graph_.Mul(at(G, k * d + i), graph_.Var(var_lambda + k)));
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
      p = graph_.Sub(p, graph_.Mul(at(G, k * d + j), graph_.Var(var_a + j)));
    }
    psi[static_cast<size_t>(k)] = p;
  }
}

std::vector<NodeId> Compiler::BuildSensitivity(
    const std::vector<NodeId>& g, const std::vector<NodeId>& G, const std::vector<NodeId>& gt,
    const std::vector<NodeId>& H, const std::vector<NodeId>& F, const std::vector<NodeId>& Mq,
    const std::vector<NodeId>& y) {
  Model& m = *model_;
  SensitivityTape& st = m.sensitivity;
  const int d = m.nq;
  st.var_a = m.num_vars();
  st.var_lambda = st.var_a + d;
  st.nz = 2 * d + m.nu;
  std::vector<NodeId> phi, psi;
  Residuals(g, G, gt, H, F, Mq, st.var_a, st.var_lambda, &phi, &psi);
  // z_j's tape variable: q, v, then u (they are consecutive after t).
  auto zvar = [&](int j) { return m.var_q(0) + j; };
  std::vector<NodeId> out;
  auto jacobian = [&](const std::vector<NodeId>& f) {
    for (NodeId x : f) {
      if (graph_.Poll()) return;
      for (int j = 0; j < st.nz; ++j) out.push_back(graph_.Diff(x, zvar(j)));
    }
  };
  st.off_dphi = 0;
  jacobian(phi);
  st.off_dpsi = static_cast<int>(out.size());
  jacobian(psi);
  st.off_M = static_cast<int>(out.size());
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) out.push_back(Mass(i, j, Mq));
  st.off_G = static_cast<int>(out.size());
  out.insert(out.end(), G.begin(), G.end());
  st.off_dy = static_cast<int>(out.size());
  jacobian(y);
  // The explicit time partials (at fixed q, v, u, a, lambda).
  auto time_partials = [&](const std::vector<NodeId>& f) {
    for (NodeId x : f) {
      if (graph_.Poll()) return;
      out.push_back(graph_.Diff(x, m.var_t()));
    }
  };
  st.off_dphi_dt = static_cast<int>(out.size());
  time_partials(phi);
  st.off_dpsi_dt = static_cast<int>(out.size());
  time_partials(psi);
  st.off_dy_dt = static_cast<int>(out.size());
  time_partials(y);
  st.enabled = !graph_.overflowed();
  return out;
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
  auto mass = [&](int i, int j) { return Mass(i, j, Mq); };
  const NodeId c1 = graph_.Var(nt.var_c1), c2 = graph_.Var(nt.var_c2);
  std::vector<NodeId> phi, psi;
  Residuals(g, G, gt, H, F, Mq, nt.var_a, nt.var_lambda, &phi, &psi);
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

}  // namespace compiler

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
  compiler::Compiler compiler(system, options, diagnostics, with_newton);
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

int64_t Model::code_bytes() const {
  return dynamics.code_bytes() + constraints.code_bytes() + outputs.code_bytes() +
         newton.tape.code_bytes() + sensitivity.tape.code_bytes();
}

}  // namespace tether
