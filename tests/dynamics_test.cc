// One evaluation: the worked checks of docs/MATH.md section 12, sign
// convention, Lagrangian terms, dependent constraints, and no allocation in
// the step.
#include <cmath>

#include <gtest/gtest.h>

#include "counting_allocator.h"
#include "engine/internal/kkt/dynamics.h"
#include "engine/internal/model/model.h"
#include "large_models.h"
#include "method_table.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::CirclePendulum;
using testing::RunSpec;
using testing::SpecFromJson;

v1::Frame EvaluateSpec(const v1::SimulationSpec& spec, Status* status = nullptr) {
  auto created = Simulation::Create(spec);
  Status s = created.status();
  v1::Frame frame;
  if (s.ok()) s = (*created)->Evaluate(&frame);
  if (status)
    *status = s;
  else
    EXPECT_TRUE(s.ok()) << s.ToString();
  return frame;
}

TEST(DynamicsTest, Seed004PointMassOnCircle) {
  // docs/MATH.md section 12: phi = x^2 + y^2 - 1, m = 1, gravity 9.81,
  // q = (1, 0), q' = (0, 1), no feedback: a = (-1, -9.81); lambda = 0.5 in
  // our convention (-0.5 with +G^T mu).
  v1::Frame f = EvaluateSpec(SpecFromJson(
      R"j({"system":{"coordinates":["x","y"],"masses":{"values":[1,1]},"potentialEnergy":"9.81*y",
          "constraints":[{"expression":"x^2 + y^2 - 1"}]},
          "initial":{"q":[1,0],"v":[0,1]},"integrator":{"method":"RK4","stepSize":0.01}})j"));
  ASSERT_EQ(f.a_size(), 2);
  EXPECT_NEAR(f.a(0), -1.0, 1e-14);
  EXPECT_NEAR(f.a(1), -9.81, 1e-14);
  ASSERT_EQ(f.lambda_size(), 1);
  EXPECT_NEAR(f.lambda(0), 0.5, 1e-14);
  EXPECT_LT(f.residuals().dynamics(), 1e-14);
  EXPECT_LT(f.residuals().constraint(), 1e-14);
}

TEST(DynamicsTest, LambdaIsRodTensionForTheHalvedCircle) {
  // Hanging at rest at (0, -1): tension m g, positive in our convention.
  v1::Frame f = EvaluateSpec(CirclePendulum(10, 10, "RK4", 1e-3, 0, -1));
  EXPECT_NEAR(f.lambda(0), 9.81, 1e-13);
  EXPECT_NEAR(f.a(0), 0, 1e-13);
  EXPECT_NEAR(f.a(1), 0, 1e-13);
  // Swinging through the bottom with speed 2: tension m g + m v^2 / l.
  f = EvaluateSpec(CirclePendulum(10, 10, "RK4", 1e-3, 0, -1, 2, 0));
  EXPECT_NEAR(f.lambda(0), 9.81 + 4, 1e-12);
}

TEST(DynamicsTest, BaumgarteFeedbackEntersTheMultiplier) {
  // Off the circle at rest: e = (1.21 - 1)/2, e' = 0; e'' = -beta^2 e must hold.
  v1::Frame f = EvaluateSpec(CirclePendulum(3, 4, "RK4", 1e-3, 1.1, 0));
  const double e = (1.21 - 1) / 2;
  EXPECT_NEAR(f.residuals().position(0), e, 1e-15);
  // e'' = G a + H with H = |v|^2 = 0 and G = (x, y).
  EXPECT_NEAR(1.1 * f.a(0), -16 * e, 1e-12);
}

TEST(DynamicsTest, DenseMassEqualsDiagonalMass) {
  auto diag = SpecFromJson(
      R"j({"system":{"coordinates":["x","y"],"masses":{"values":[2,3]},"potentialEnergy":"9.81*y",
          "constraints":[{"expression":"(x^2+y^2-1)/2"}],"baumgarte":{"alpha":1,"beta":1}},
          "initial":{"q":[0.6,-0.8],"v":[0.8,0.6]},"integrator":{"method":"RK4","stepSize":0.01}})j");
  auto dense = diag;
  for (double x : {2.0, 0.0, 0.0, 3.0})
    dense.mutable_system()->mutable_mass_matrix()->add_values(x);
  v1::Frame a = EvaluateSpec(diag), b = EvaluateSpec(dense);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(a.a(i), b.a(i), 1e-14);
  EXPECT_NEAR(a.lambda(0), b.lambda(0), 1e-14);
}

TEST(DynamicsTest, CoupledDenseMassSatisfiesBothKktRows) {
  auto spec = SpecFromJson(
      R"j({"system":{"coordinates":["x","y","z"],"massMatrix":{"values":[4,1,0.5, 1,3,0.2, 0.5,0.2,2]},
          "potentialEnergy":"9.81*z + x*y","constraints":[{"expression":"x + y + z - 1"},
          {"expression":"x^2 - y"}],"baumgarte":{"alpha":2,"beta":3}},
          "initial":{"q":[0.5,0.3,0.1],"v":[0.1,-0.2,0.3]},"integrator":{"method":"RK4","stepSize":0.01}})j");
  v1::Frame f = EvaluateSpec(spec);
  EXPECT_LT(f.residuals().dynamics(), 1e-13);
  EXPECT_LT(f.residuals().constraint(), 1e-13);
}

TEST(DynamicsTest, KineticEnergyPolarPendulumMatchesCartesian) {
  // The same pendulum in polar coordinates: T = (r'^2 + r^2 th'^2)/2, M(q) =
  // diag(1, r^2) and centrifugal/Coriolis terms from T; r - 1 = 0.
  const double th0 = -0.3, om0 = 1.7;
  auto polar = SpecFromJson(
      R"j({"system":{"coordinates":["r","th"],"kineticEnergy":"(der(r)^2 + r^2*der(th)^2)/2",
          "potentialEnergy":"9.81*r*sin(th)","constraints":[{"name":"rod","expression":"r - 1"}],
          "baumgarte":{"alpha":10,"beta":10}},
          "initial":{"q":[1,-0.3],"v":[0,1.7]},"integrator":{"method":"RK4","stepSize":0.001}})j");
  auto cart = CirclePendulum(10, 10, "RK4", 0.001, std::cos(th0), std::sin(th0),
                             -std::sin(th0) * om0, std::cos(th0) * om0);
  RunOptions run;
  run.steps = 1500;
  run.every = 1500;
  auto p = RunSpec(polar, run);
  auto c = RunSpec(cart, run);
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  const v1::Frame& pf = p.frames.at(p.frames.size() - 1);
  const v1::Frame& cf = c.frames.at(c.frames.size() - 1);
  const double r = pf.q(0), th = pf.q(1);
  EXPECT_NEAR(r * std::cos(th), cf.q(0), 1e-9);
  EXPECT_NEAR(r * std::sin(th), cf.q(1), 1e-9);
  // Radial force: polar lambda (on r - 1) equals Cartesian lambda times r.
  EXPECT_NEAR(pf.lambda(0), cf.lambda(0) * r, 1e-8);
}

TEST(DynamicsTest, DependentConstraintsAreAnErrorNamingThem) {
  auto spec = SpecFromJson(
      R"j({"system":{"coordinates":["x","y","z"],"masses":{"values":[1,1,1]},
          "constraints":[{"name":"a","expression":"x + y"},{"name":"b","expression":"z"},
                         {"name":"c","expression":"2*x + 2*y"}]},
          "initial":{"q":[0,0,0]},"integrator":{"method":"RK4","stepSize":0.01}})j");
  v1::ValidationReport report = Validate(spec);
  EXPECT_FALSE(report.valid());
  std::string all;
  for (const auto& d : report.diagnostics()) all += d.field() + ": " + d.message() + "\n";
  EXPECT_NE(all.find("'c', 'a'"), std::string::npos) << all;
  EXPECT_EQ(all.find("'b'"), std::string::npos) << all;
  EXPECT_NE(all.find("t = 0"), std::string::npos) << all;
}

TEST(DynamicsTest, KineticEnergyNotQuadraticIsRejected) {
  auto spec = SpecFromJson(
      R"j({"system":{"coordinates":["x"],"kineticEnergy":"der(x)^4"},
          "initial":{"q":[0]},"integrator":{"method":"RK4","stepSize":0.01}})j");
  v1::ValidationReport report = Validate(spec);
  ASSERT_FALSE(report.valid());
  EXPECT_EQ(report.diagnostics(0).field(), "system.kinetic_energy");
  EXPECT_NE(report.diagnostics(0).message().find("not quadratic"), std::string::npos);
}

TEST(DynamicsTest, NoHeapAllocationWhileStepping) {
  const char* kinetic =
      R"j({"system":{"coordinates":["r","th"],"kineticEnergy":"(der(r)^2 + r^2*der(th)^2)/2",
          "potentialEnergy":"9.81*r*sin(th)","constraints":[{"expression":"r - 1"}],
          "baumgarte":{"alpha":5,"beta":5}},
          "initial":{"q":[1,0.2],"v":[0,0]},"integrator":{"method":"DOPRI5"}})j";
  std::vector<v1::SimulationSpec> specs = {
      SpecFromJson(kinetic),
      // The sparse KKT path (>= 16 constraints), constant and q-dependent M.
      SpecFromJson(tether_bench::Grid(5).json), SpecFromJson(tether_bench::KineticChain(20).json),
      // SDIRK3 on its dense Newton path (nq + nc <= kNewtonDenseMax; the
      // sparse one allocates in Eigen's SparseLU, newton.h).
      CirclePendulum(1000, 1000, "SDIRK3", 0.01),
      SpecFromJson(tether_bench::Chain(8, {"SDIRK3", 0.005, 1000, 1000}).json)};
  // And the circle with every method of the table.
  for (const std::string& method : testing::MethodNames()) {
    specs.push_back(CirclePendulum(10, 10, method, testing::IsAdaptive(method) ? 0 : 1e-3));
  }
  for (const auto& spec : specs) {
    for (bool certificate : {false, true}) {
      std::unique_ptr<Simulation> sim = testing::CreateOrFail(spec);
      ASSERT_TRUE(sim);
      RunOptions run;
      run.steps = 1'000'000;
      run.every = 1'000'000;
      run.emit_start = false;
      run.certificate = certificate;
      ASSERT_TRUE(sim->BeginRun(run).ok());
      google::protobuf::RepeatedPtrField<v1::Frame> frames;
      ASSERT_TRUE(sim->Advance(10, &frames).ok());  // warm up
      const long before = testing::HeapAllocations();
      ASSERT_TRUE(sim->Advance(500, &frames).ok());
      EXPECT_EQ(testing::HeapAllocations() - before, 0)
          << spec.integrator().ShortDebugString() << " certificate=" << certificate;
      EXPECT_EQ(frames.size(), 0);
    }
  }
}

}  // namespace
}  // namespace tether
