// The sparse KKT path (engine/internal/model/sparse_analysis.h) against the dense one
// on the same models: the automatic switch, agreement of q, v, a and lambda
// over a run to 1e-12 relative, the mass-matrix rule, and dependent
// constraints named on the sparse path.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/kkt/evaluate_kernel.h"
#include "engine/internal/model/model.h"
#include "large_models.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::SpecFromJson;

std::unique_ptr<Simulation> Make(const v1::SimulationSpec& spec, KktPath path) {
  CompileOptions options;
  options.kkt = path;
  auto created = Simulation::Create(spec, nullptr, options);
  if (!created.ok()) {
    ADD_FAILURE() << created.status().ToString();
    return nullptr;
  }
  return std::move(created).value();
}

google::protobuf::RepeatedPtrField<v1::Frame> RunFor(Simulation* sim, uint64_t steps, bool cert) {
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  RunOptions run;
  run.steps = steps;
  run.every = 25;
  run.certificate = cert;
  EXPECT_TRUE(sim->BeginRun(run).ok());
  Status s = sim->Advance(steps, &frames);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return frames;
}

// max_i |x_i - y_i| / max_i |y_i|: relative to the vector's size.
double RelDiff(const google::protobuf::RepeatedField<double>& x,
               const google::protobuf::RepeatedField<double>& y) {
  EXPECT_EQ(x.size(), y.size());
  double diff = 0, scale = 0;
  for (int i = 0; i < std::min(x.size(), y.size()); ++i) {
    diff = std::max(diff, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

struct Case {
  std::string name;
  tether_bench::LargeModel model;
};

std::vector<Case> Cases() {
  return {{"chain", tether_bench::Chain(24)},
          {"ladder", tether_bench::Ladder(10)},
          {"grid", tether_bench::Grid(5)},
          {"kinetic_chain", tether_bench::KineticChain(20)}};
}

TEST(SparseKktTest, BothPathsAgreeOverARun) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const v1::SimulationSpec spec = SpecFromJson(c.model.json);
    auto dense = Make(spec, KktPath::kDense);
    auto sparse = Make(spec, KktPath::kSparse);
    auto automatic = Make(spec, KktPath::kAuto);
    ASSERT_TRUE(dense && sparse && automatic);
    EXPECT_FALSE(dense->model().sparse.enabled);
    EXPECT_TRUE(sparse->model().sparse.enabled);
    // Every case here has >= 16 constraints and a banded or mesh W.
    EXPECT_TRUE(automatic->model().sparse.enabled);
    EXPECT_EQ(sparse->model().sparse.nc, c.model.constraints);
    // A chain's W is tridiagonal: its factor takes the bidiagonal loops.
    EXPECT_EQ(sparse->model().sparse.bidiagonal, c.name == "chain" || c.name == "kinetic_chain");
    for (bool cert : {false, true}) {
      auto fd = RunFor(dense.get(), 400, cert);
      auto fs = RunFor(sparse.get(), 400, cert);
      ASSERT_EQ(fd.size(), fs.size());
      ASSERT_GT(fd.size(), 10);
      double worst = 0;
      for (int k = 0; k < fd.size(); ++k) {
        EXPECT_EQ(fd[k].t(), fs[k].t());
        worst = std::max({worst, RelDiff(fs[k].q(), fd[k].q()), RelDiff(fs[k].v(), fd[k].v()),
                          RelDiff(fs[k].a(), fd[k].a()), RelDiff(fs[k].lambda(), fd[k].lambda())});
      }
      EXPECT_LE(worst, 1e-12) << "certificate " << cert;
      // The motion is real (not a state at rest agreeing trivially).
      EXPECT_GT(RelDiff(fd[fd.size() - 1].q(), fd[0].q()), 1e-3);
      if (cert) {
        v1::Certificate cd, cs;
        dense->GetCertificate(&cd);
        sparse->GetCertificate(&cs);
        EXPECT_EQ(cd.steps(), cs.steps());
        EXPECT_NEAR(cs.max_position_residual(), cd.max_position_residual(),
                    1e-9 * std::max(1.0, cd.max_position_residual()));
        EXPECT_LE(cs.max_relative_kkt_residual(), 1e-12);
        EXPECT_GE(cs.max_w_condition(), 1.0);
      }
    }
  }
}

TEST(SparseKktTest, FramesDoNotDependOnWhichStepsEmit) {
  // The evaluation at a new state that no frame shows skips the residuals
  // (Workspace::publish): the frames every 8th step of a run with a frame
  // every step and of one with a frame every 8th step are the same bytes,
  // and so are the run's last frames (step 203, off the 8-grid) and the
  // certificates.
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const v1::SimulationSpec spec = SpecFromJson(c.model.json);
    for (bool cert : {false, true}) {
      auto every1 = Make(spec, KktPath::kAuto);
      auto every8 = Make(spec, KktPath::kAuto);
      ASSERT_TRUE(every1 && every8 && every1->model().sparse.enabled);
      auto run = [&](Simulation* sim, uint64_t every) {
        google::protobuf::RepeatedPtrField<v1::Frame> frames;
        RunOptions options;
        options.steps = 203;
        options.every = every;
        options.certificate = cert;
        EXPECT_TRUE(sim->BeginRun(options).ok());
        Status s = sim->Advance(1000, &frames);
        EXPECT_TRUE(s.ok()) << s.ToString();
        return frames;
      };
      const auto f1 = run(every1.get(), 1);
      const auto f8 = run(every8.get(), 8);
      // The start frame, then one a step (every 8th step and the last).
      ASSERT_EQ(f1.size(), 204);
      ASSERT_EQ(f8.size(), 1 + 203 / 8 + 1);
      for (const v1::Frame& f : f8) {
        ASSERT_EQ(f1[static_cast<int>(f.step())].step(), f.step());
        EXPECT_EQ(f.SerializeAsString(), f1[static_cast<int>(f.step())].SerializeAsString())
            << "step " << f.step();
      }
      v1::Certificate c1, c8;
      every1->GetCertificate(&c1);
      every8->GetCertificate(&c8);
      EXPECT_EQ(c1.SerializeAsString(), c8.SerializeAsString());
    }
  }
}

TEST(SparseKktTest, AutomaticSwitch) {
  // Below kSparseMinConstraints: dense.
  auto small =
      Make(SpecFromJson(tether_bench::Chain(kSparseMinConstraints - 1).json), KktPath::kAuto);
  auto large = Make(SpecFromJson(tether_bench::Chain(kSparseMinConstraints).json), KktPath::kAuto);
  ASSERT_TRUE(small && large);
  EXPECT_FALSE(small->model().sparse.enabled);
  EXPECT_TRUE(large->model().sparse.enabled);
  // The circle (fixed-size kernel) stays dense even when forced.
  auto circle = Make(testing::CirclePendulum(10, 10, "RK4", 1e-3), KktPath::kSparse);
  ASSERT_TRUE(circle);
  EXPECT_FALSE(circle->model().sparse.enabled);
  // Every constraint also depends on x0: W is dense, the switch keeps
  // dense (forcing still gives the sparse path).
  std::string json = tether_bench::Chain(20).json;
  for (size_t at = 0; (at = json.find("- 1)/2", at)) != std::string::npos;) {
    json.replace(at, 6, "- 1)/2 + (x0 - 1)^2/1000");
    at += 10;
  }
  auto coupled = Make(SpecFromJson(json), KktPath::kAuto);
  auto forced = Make(SpecFromJson(json), KktPath::kSparse);
  ASSERT_TRUE(coupled && forced);
  EXPECT_FALSE(coupled->model().sparse.enabled);
  EXPECT_TRUE(forced->model().sparse.enabled);
}

TEST(SparseKktTest, NonDiagonalMassMatrixStaysDense) {
  // T couples der(x0) and der(x1): M(q) has off-diagonal entries.
  std::string json = tether_bench::KineticChain(18).json;
  const std::string from = "der(x0)^2";
  const size_t at = json.find(from);
  ASSERT_NE(at, std::string::npos);
  json.replace(at, from.size(), "der(x0)^2 + der(x0)*der(x1)/10");
  auto sim = Make(SpecFromJson(json), KktPath::kSparse);
  ASSERT_TRUE(sim);
  EXPECT_FALSE(sim->model().sparse.enabled);
}

// Validate's diagnostics on the forced sparse path (expected invalid), one
// a line.
std::string SparseDiagnostics(const v1::SimulationSpec& spec) {
  CompileOptions options;
  options.kkt = KktPath::kSparse;
  v1::ValidationReport report;
  EXPECT_TRUE(Validate(spec, options, &report).ok());
  EXPECT_FALSE(report.valid());
  std::string all;
  for (const auto& d : report.diagnostics()) all += d.field() + ": " + d.message() + "\n";
  return all;
}

TEST(SparseKktTest, DependentConstraintsAreNamed) {
  // link2_3 twice: W is singular on the sparse path too.
  std::string json = tether_bench::Chain(20).json;
  const std::string link = R"({"name":"link2_3","expression":")";
  const size_t at = json.find(link);
  ASSERT_NE(at, std::string::npos);
  const size_t end = json.find('}', at);
  std::string copy = json.substr(at, end - at + 1);
  copy.replace(copy.find("link2_3"), 7, "again2_3");
  json.insert(end + 1, "," + copy);
  const std::string all = SparseDiagnostics(SpecFromJson(json));
  EXPECT_NE(all.find("'link2_3'"), std::string::npos) << all;
  EXPECT_NE(all.find("'again2_3'"), std::string::npos) << all;
  EXPECT_NE(all.find("dependent"), std::string::npos) << all;
  EXPECT_EQ(all.find("'link5_6'"), std::string::npos) << all;
}

TEST(SparseKktTest, DependentConstraintsAreNamedOnABidiagonalFactor) {
  // A chain plus a coordinate z pinned twice by the last two constraints
  // (z - 1, which also reads the last mass so that W stays tridiagonal,
  // and 2 z - 2): the last pivot fails.
  std::string json = tether_bench::Chain(20).json;
  auto insert_after = [&](const std::string& at, const std::string& what) {
    const size_t pos = json.find(at);
    ASSERT_NE(pos, std::string::npos) << at;
    json.insert(pos + at.size(), what);
  };
  insert_after(R"("coordinates":[)", R"("z",)");
  insert_after(R"("values":[)", "1,");
  insert_after(R"("q":[)", "1,");
  insert_after(R"("v":[)", "0,");
  const size_t end = json.find(R"(],"baumgarte")");
  ASSERT_NE(end, std::string::npos);
  json.insert(end, R"(,{"name":"pin","expression":"z - 1 + (x19 - 20)^2/1000"},)"
                   R"({"name":"pin_again","expression":"2*z - 2"})");
  const v1::SimulationSpec spec = SpecFromJson(json);
  CompileOptions options;
  options.kkt = KktPath::kSparse;
  std::vector<v1::Diagnostic> diagnostics;
  Status stopped;
  auto model = CompileModel(spec.system(), options, &diagnostics, &stopped);
  ASSERT_TRUE(model);
  EXPECT_TRUE(model->sparse.bidiagonal);
  const std::string all = SparseDiagnostics(spec);
  EXPECT_NE(all.find("'pin'"), std::string::npos) << all;
  EXPECT_NE(all.find("'pin_again'"), std::string::npos) << all;
  EXPECT_NE(all.find("dependent"), std::string::npos) << all;
  EXPECT_EQ(all.find("'link18_19'"), std::string::npos) << all;
}

// Judgement (b)'s backward error and operand magnitudes are computed inside
// a certificate window only (docs/MATH.md section 9), on both KKT paths:
// outside one an evaluation leaves them as they were, inside it records them.
TEST(SparseKktTest, BackwardErrorIsComputedInsideCertificateWindowsOnly) {
  for (KktPath path : {KktPath::kDense, KktPath::kSparse}) {
    SCOPED_TRACE(path == KktPath::kDense ? "dense" : "sparse");
    const v1::SimulationSpec spec = SpecFromJson(tether_bench::Chain(24).json);
    CompileOptions options;
    options.kkt = path;
    std::vector<v1::Diagnostic> diagnostics;
    Status stopped;
    auto model = CompileModel(spec.system(), options, &diagnostics, &stopped);
    ASSERT_TRUE(model);
    ASSERT_EQ(model->sparse.enabled, path == KktPath::kSparse);
    Workspace ws(*model);
    const std::vector<double> q(spec.initial().q().begin(), spec.initial().q().end());
    const std::vector<double> v(q.size(), 0.1);
    ws.in_certificate_window = false;
    ASSERT_TRUE(SolveKkt(*model, &ws, 0, q.data(), v.data()).ok());
    EXPECT_EQ(ws.stats.max_backward_error, 0);
    EXPECT_EQ(ws.stats.max_relative_residual, 0);
    EXPECT_EQ(*std::max_element(ws.constraint_magnitude.begin(), ws.constraint_magnitude.end()), 0);
    ws.in_certificate_window = true;
    ASSERT_TRUE(SolveKkt(*model, &ws, 0, q.data(), v.data()).ok());
    EXPECT_GT(*std::max_element(ws.constraint_magnitude.begin(), ws.constraint_magnitude.end()), 0);
  }
}

// Calls f(spec, model) for every case, its model compiled for the sparse
// path.
template <class F>
void ForEachSparseCase(F f) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const v1::SimulationSpec spec = SpecFromJson(c.model.json);
    CompileOptions options;
    options.kkt = KktPath::kSparse;
    std::vector<v1::Diagnostic> diagnostics;
    Status stopped;
    const std::shared_ptr<const Model> model =
        CompileModel(spec.system(), options, &diagnostics, &stopped);
    ASSERT_TRUE(model);
    ASSERT_TRUE(model->sparse.enabled);
    f(spec, *model);
  }
}

// The sparse path judges its dynamics rows a priori (docs/MATH.md section
// 9, "The dynamics rows of a diagonal M"): a = (F - G^T lambda) M^-1 from
// the kernel's own G^T lambda leaves each row's exact residual M_jj a_j +
// (G^T lambda)_j - F_j within gamma_{k+3} of |F_j| + (|G^T||lambda|)_j (k:
// column j's nonzeros). Checked here in long double on every case at
// several states, and a 1e-12 relative error in the largest a_j breaks it.
TEST(SparseKktTest, DynamicsRowsStayWithinTheirAPrioriBound) {
  constexpr long double kU = 0x1p-53L;
  ForEachSparseCase([&](const v1::SimulationSpec& spec, const Model& m) {
    Workspace ws(m);
    ws.in_certificate_window = true;
    const int d = m.nq, nc = m.nc;
    for (int state = 0; state < 3; ++state) {
      SCOPED_TRACE(state);
      std::vector<double> q(spec.initial().q().begin(), spec.initial().q().end()), v(q.size());
      for (int j = 0; j < d; ++j) {
        q[static_cast<size_t>(j)] += 0.01 * state * std::sin(1.0 + j);
        v[static_cast<size_t>(j)] = 0.3 * state * std::cos(2.0 * j);
      }
      ASSERT_TRUE(SolveKkt(m, &ws, 0.1 * state, q.data(), v.data()).ok());
      const Model::TapeBlocks blocks = m.Blocks(ws.dyn_out);
      // The worst ratio of |residual| to gamma_{k+3} (|F| + |G^T||lambda|),
      // at the kernel's a and with one a_j off by 1e-12 relative.
      auto worst = [&](int off) {
        std::vector<long double> gtl(static_cast<size_t>(d)), gabs(static_cast<size_t>(d));
        std::vector<int> k(static_cast<size_t>(d));
        for (int i = 0; i < nc; ++i) {
          for (int p = m.sparse.row_ptr[static_cast<size_t>(i)];
               p < m.sparse.row_ptr[static_cast<size_t>(i) + 1]; ++p) {
            const size_t j = static_cast<size_t>(m.sparse.col[static_cast<size_t>(p)]);
            const long double gl = static_cast<long double>(blocks.G[p]) * ws.lambda[i];
            gtl[j] += gl;
            gabs[j] += std::fabs(gl);
            ++k[j];
          }
        }
        long double ratio = 0;
        for (int j = 0; j < d; ++j) {
          const size_t jj = static_cast<size_t>(j);
          const double mj = m.inertia == Inertia::kKinetic ? blocks.M[j] : m.mass_diag[jj];
          const double aj = ws.a[jj] * (j == off ? 1 + 1e-12 : 1);
          const long double r = static_cast<long double>(mj) * aj + gtl[jj] - blocks.F[j];
          const long double n = k[jj] + 3;
          const long double bound = n * kU / (1 - n * kU) * (std::fabs(blocks.F[j]) + gabs[jj]);
          ratio = std::max(ratio, std::fabs(r) / bound);
        }
        return ratio;
      };
      EXPECT_LE(worst(-1), 1.0L);
      const auto largest = std::max_element(
          ws.a.begin(), ws.a.end(), [](double x, double y) { return std::fabs(x) < std::fabs(y); });
      EXPECT_GT(worst(static_cast<int>(largest - ws.a.begin())), 10.0L);
    }
  });
}

// At an accepted state inside a certificate window the sparse path keeps
// each constraint row's signed residual, the defect eta there with the
// solved a (the SAMPLED certificate's sample at a step's end reads it,
// docs/MATH.md section 10.1): equal to eta summed in long double within
// the rounding judgement (b) allows, and flagged current only after such
// an evaluation, not after a stage's or one outside a window.
TEST(SparseKktTest, ConstraintRowsKeptAtAnAcceptedStateAreTheDefect) {
  ForEachSparseCase([&](const v1::SimulationSpec& spec, const Model& m) {
    Workspace ws(m);
    std::vector<double> q(spec.initial().q().begin(), spec.initial().q().end()), v(q.size());
    for (size_t j = 0; j < q.size(); ++j) {
      q[j] += 0.01 * std::sin(1.0 + j);
      v[j] = 0.3 * std::cos(2.0 * j);
    }
    ws.in_certificate_window = false;
    ASSERT_TRUE(SolveKkt(m, &ws, 0.2, q.data(), v.data()).ok());
    EXPECT_FALSE(ws.constraint_rows_current);
    ws.in_certificate_window = true;
    std::vector<double> a(q.size());
    ASSERT_TRUE(internal::EvaluateGeneralStage<internal::Record::kStatistics>(m, &ws, 0.2, q.data(),
                                                                              v.data(), a.data())
                    .ok());
    EXPECT_FALSE(ws.constraint_rows_current);
    ASSERT_TRUE(SolveKkt(m, &ws, 0.2, q.data(), v.data()).ok());
    ASSERT_TRUE(ws.constraint_rows_current);
    const Model::TapeBlocks blocks = m.Blocks(ws.dyn_out);
    const double gam = (m.nq + m.nc + 3) * 0x1p-53;
    for (int i = 0; i < m.nc; ++i) {
      long double Ga = 0, Gv = 0;
      for (int p = m.sparse.row_ptr[static_cast<size_t>(i)];
           p < m.sparse.row_ptr[static_cast<size_t>(i) + 1]; ++p) {
        const size_t j = static_cast<size_t>(m.sparse.col[static_cast<size_t>(p)]);
        Ga += static_cast<long double>(blocks.G[p]) * ws.a[j];
        Gv += static_cast<long double>(blocks.G[p]) * v[j];
      }
      const long double eta =
          Ga + blocks.H[i] +
          static_cast<long double>(m.two_alpha[static_cast<size_t>(i)]) * (Gv + blocks.gt[i]) +
          static_cast<long double>(m.beta_sq[static_cast<size_t>(i)]) * blocks.g[i];
      const size_t ii = static_cast<size_t>(i);
      EXPECT_LE(std::fabs(eta - ws.constraint_row_residual[ii]),
                16 * gam * ws.constraint_magnitude[ii])
          << m.constraint_names[ii];
    }
  });
}

// n coordinates of unit mass and n constraints each reading all of them
// (sum_j q_j + n q_i = i + 1: full rank, W dense): the pattern whose sparse
// analysis once listed every pair of rows sharing a column, unbounded.
std::string DenselyCoupled(int n) {
  std::string coordinates, masses, zeros, sum;
  for (int j = 0; j < n; ++j) {
    const std::string sep = j ? "," : "";
    coordinates += sep + "\"q" + std::to_string(j) + "\"";
    masses += sep + "1";
    zeros += sep + "0";
    sum += (j ? "+q" : "q") + std::to_string(j);
  }
  std::string constraints;
  for (int i = 0; i < n; ++i) {
    constraints += std::string(i ? "," : "") + R"({"name":"c)" + std::to_string(i) +
                   R"(","expression":")" + sum + "+" + std::to_string(n) + "*q" +
                   std::to_string(i) + "-" + std::to_string(i + 1) + "\"}";
  }
  return R"({"system":{"coordinates":[)" + coordinates + R"(],"masses":{"values":[)" + masses +
         R"(]},"constraints":[)" + constraints +
         R"(],"baumgarte":{"alpha":1,"beta":1}},"initial":{"q":[)" + zeros + R"(],"v":[)" + zeros +
         R"(]},"integrator":{"method":"RK4","stepSize":0.001}})";
}

TEST(SparseKktTest, AnalysisOfADensePatternKeepsToItsBudget) {
  const int n = 400;
  const std::vector<char> full(static_cast<size_t>(n) * n, 1);
  SparseKkt s;
  int64_t needed = -1;
  // Automatic: dense, decided from W's pattern (n^2 ints), not from the
  // n^3 / 2 products.
  AnalysisBudget unlimited;
  EXPECT_EQ(BuildSparseKkt(n, n, full, true, KktPath::kAuto, unlimited, &s, &needed),
            Analysis::kDone);
  EXPECT_FALSE(s.enabled);
  // Automatic within a small budget: dense on purpose, not an error.
  AnalysisBudget small;
  small.max_bytes = 1 << 20;
  EXPECT_EQ(BuildSparseKkt(n, n, full, true, KktPath::kAuto, small, &s, &needed), Analysis::kDone);
  EXPECT_FALSE(s.enabled);
  // Forced: over the budget, with what it needed (more than the budget).
  EXPECT_EQ(BuildSparseKkt(n, n, full, true, KktPath::kSparse, small, &s, &needed),
            Analysis::kOverBudget);
  EXPECT_FALSE(s.enabled);
  EXPECT_GT(needed, small.max_bytes);
  // Forced and polled: the first poll that says stop ends it.
  int polls = 0;
  AnalysisBudget stop;
  stop.stop = [&] { return ++polls >= 2; };
  EXPECT_EQ(BuildSparseKkt(n, n, full, true, KktPath::kSparse, stop, &s, &needed),
            Analysis::kStopped);
  EXPECT_EQ(polls, 2);
  EXPECT_FALSE(s.enabled);
  // Forced with room: the sparse path (a dense one, factorised sparsely).
  const int m = 40;
  const std::vector<char> small_full(static_cast<size_t>(m) * m, 1);
  EXPECT_EQ(BuildSparseKkt(m, m, small_full, true, KktPath::kSparse, unlimited, &s, &needed),
            Analysis::kDone);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.l_nnz(), m * (m - 1) / 2);
}

TEST(SparseKktTest, DenselyCoupledConstraintsCompileWithinTheMemoryBudget) {
  const v1::SimulationSpec spec = SpecFromJson(DenselyCoupled(300));
  // Automatic: the dense path, and a valid description.
  CompileOptions options;
  options.limits.max_bytes = 64 << 20;
  auto sim = Simulation::Create(spec, nullptr, options);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  EXPECT_FALSE(sim.value()->model().sparse.enabled);
  v1::Frame frame;
  ASSERT_TRUE(sim.value()->Evaluate(&frame).ok());
  // Forced sparse under that budget: RESOURCE_EXHAUSTED naming the field
  // and the limit (the products alone are 300^3 / 2 x 12 bytes).
  options.kkt = KktPath::kSparse;
  auto forced = Simulation::Create(spec, nullptr, options);
  ASSERT_FALSE(forced.ok());
  EXPECT_EQ(forced.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(forced.status().violations().at(0).field, "system.constraints");
  EXPECT_NE(forced.status().message().find("max_bytes = 67108864"), std::string::npos)
      << forced.status().message();
}

TEST(SparseKktTest, TheSparseAnalysisIsPolledLikeTheCompile) {
  // The cancel poll, counted (never true), for the same description on
  // either path: the forced sparse analysis of a dense pattern (n^3 / 2
  // products) polls in proportion to its work, not once.
  const int n = 200;
  const v1::SimulationSpec spec = SpecFromJson(DenselyCoupled(n));
  auto polls = [&](KktPath path) {
    CompileOptions options;
    options.kkt = path;
    options.limits.max_bytes = int64_t{1} << 40;
    int64_t count = 0;
    options.cancelled = [&] { return ++count < 0; };
    auto model = Simulation::Create(spec, nullptr, options);
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    if (model.ok()) {
      EXPECT_EQ(model.value()->model().sparse.enabled, path == KktPath::kSparse);
    }
    return count;
  };
  const int64_t products = int64_t{n} * n * (n - 1) / 2;
  EXPECT_GT(polls(KktPath::kSparse) - polls(KktPath::kDense), products / kAnalysisPollWork / 2);
  // And a cancel stops the compile there: CANCELLED.
  CompileOptions options;
  options.kkt = KktPath::kSparse;
  options.limits.max_bytes = int64_t{1} << 40;
  int64_t count = 0;
  const int64_t dense_polls = polls(KktPath::kDense);
  options.cancelled = [&] { return ++count > dense_polls + 4; };
  v1::ValidationReport report;
  Status s = Validate(spec, options, &report);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_EQ(s.message(), "compilation cancelled while compiling system.constraints");
}

}  // namespace
}  // namespace tether
