// The engine's KKT solve against an independent reference: Eigen solving
// the whole saddle-point system
//
//   [ M  Gᵀ ] [ a ]   [ F                    ]
//   [ G  0  ] [ λ ] = [ −H − 2α G v − β² g   ]
//
// by a full-pivoting LU, with G, H, F and g written out by hand for the
// model (not taken from the engine's tape). The engine solves the same
// system in range-space form (W = G M⁻¹ Gᵀ, hand-written LDLᵀ); agreement to
// rounding checks the derivatives, the sign of λ and the Baumgarte row at a
// state with velocities, non-uniform masses and a non-diagonal M.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "engine/simulation.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::SpecFromJson;

struct Reference {
  Eigen::VectorXd a, lambda;
};

Reference SolveSaddlePoint(const Eigen::MatrixXd& M, const Eigen::MatrixXd& G,
                           const Eigen::VectorXd& F, const Eigen::VectorXd& rhs_c) {
  const Eigen::Index d = M.rows(), m = G.rows();
  Eigen::MatrixXd K = Eigen::MatrixXd::Zero(d + m, d + m);
  K.topLeftCorner(d, d) = M;
  K.topRightCorner(d, m) = G.transpose();
  K.bottomLeftCorner(m, d) = G;
  Eigen::VectorXd b(d + m);
  b << F, rhs_c;
  const Eigen::VectorXd x = K.fullPivLu().solve(b);
  return {x.head(d), x.tail(m)};
}

v1::Frame EvaluateAtStart(const v1::SimulationSpec& spec) {
  v1::Frame frame;
  std::unique_ptr<Simulation> sim = testing::CreateOrFail(spec);
  if (!sim) return frame;
  const Status status = sim->Evaluate(&frame);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return frame;
}

void ExpectClose(const google::protobuf::RepeatedField<double>& engine,
                 const Eigen::VectorXd& reference, const char* what) {
  ASSERT_EQ(engine.size(), reference.size()) << what;
  const double scale = std::max(1.0, reference.lpNorm<Eigen::Infinity>());
  for (int i = 0; i < engine.size(); ++i) {
    EXPECT_NEAR(engine[i], reference[i], 1e-12 * scale) << what << "[" << i << "]";
  }
}

// N point masses in the plane, the first tied to the origin by a rod of
// length 1, each next one to its predecessor; gravity along −y; started off
// the manifold (rods of length ≠ 1) and moving, so g, Gv and H are nonzero.
TEST(KktReferenceTest, CartesianChainMatchesFullSaddlePointSolve) {
  constexpr int kN = 6;
  constexpr double kGrav = 9.81, kAlpha = 3, kBeta = 7;
  std::vector<double> mass, q, v;
  std::string coords, masses, potential, constraints, qs, vs;
  for (int i = 0; i < kN; ++i) {
    mass.push_back(1.0 + 0.5 * (i % 3));
    const double x = std::cos(0.3 * i) * (i + 1.02), y = -std::sin(0.2 * i + 0.1) * (i + 0.97);
    q.insert(q.end(), {x, y});
    v.insert(v.end(), {0.3 * i - 0.7, 0.11 * i * i - 0.4});
    const std::string xi = "x" + std::to_string(i), yi = "y" + std::to_string(i);
    coords += (i ? "," : "") + ("\"" + xi + "\",\"" + yi + "\"");
    masses += (i ? "," : "") + std::to_string(mass[i]) + "," + std::to_string(mass[i]);
    potential += (i ? "+" : "") + std::to_string(mass[i]) + "*grav*" + yi;
    const std::string px = i ? "x" + std::to_string(i - 1) : "0";
    const std::string py = i ? "y" + std::to_string(i - 1) : "0";
    constraints += std::string(i ? "," : "") + R"({"name":"rod)" + std::to_string(i) +
                   R"(","expression":"((x)" + std::to_string(i) + "-" + px + ")^2 + (" + yi + "-" +
                   py + ")^2 - 1)/2\"}";
  }
  for (int k = 0; k < 2 * kN; ++k) {
    qs += (k ? "," : "") + FormatNumber(q[k]);
    vs += (k ? "," : "") + FormatNumber(v[k]);
  }
  const std::string json =
      R"({"system":{"coordinates":[)" + coords +
      R"(],"parameters":[{"name":"grav","value":9.81}],"masses":{"values":[)" + masses +
      R"(]},"potentialEnergy":")" + potential + R"(","constraints":[)" + constraints +
      R"(],"baumgarte":{"alpha":3,"beta":7}},"initial":{"q":[)" + qs + R"(],"v":[)" + vs +
      R"(]},"integrator":{"method":"RK4","stepSize":0.001}})";
  const v1::Frame frame = EvaluateAtStart(SpecFromJson(json));

  // The same quantities by hand. std::to_string printed the masses with six
  // decimals, which are exact for 1, 1.5 and 2.
  const int d = 2 * kN, m = kN;
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(d, d), G = Eigen::MatrixXd::Zero(m, d);
  Eigen::VectorXd F = Eigen::VectorXd::Zero(d), g(m), H(m);
  Eigen::Map<const Eigen::VectorXd> vv(v.data(), d);
  for (int i = 0; i < kN; ++i) {
    M(2 * i, 2 * i) = M(2 * i + 1, 2 * i + 1) = mass[i];
    F(2 * i + 1) = -mass[i] * kGrav;
    const double px = i ? q[2 * i - 2] : 0, py = i ? q[2 * i - 1] : 0;
    const double pvx = i ? v[2 * i - 2] : 0, pvy = i ? v[2 * i - 1] : 0;
    const double dx = q[2 * i] - px, dy = q[2 * i + 1] - py;
    const double dvx = v[2 * i] - pvx, dvy = v[2 * i + 1] - pvy;
    g(i) = (dx * dx + dy * dy - 1) / 2;
    G(i, 2 * i) = dx;
    G(i, 2 * i + 1) = dy;
    if (i) {
      G(i, 2 * i - 2) = -dx;
      G(i, 2 * i - 1) = -dy;
    }
    H(i) = dvx * dvx + dvy * dvy;  // (d/dt G) v
  }
  const Eigen::VectorXd rhs_c = -H - 2 * kAlpha * (G * vv) - kBeta * kBeta * g;
  const Reference ref = SolveSaddlePoint(M, G, F, rhs_c);
  ASSERT_GT(ref.lambda.lpNorm<Eigen::Infinity>(), 1.0);  // a nontrivial solve
  ExpectClose(frame.a(), ref.a, "a");
  ExpectClose(frame.lambda(), ref.lambda, "lambda");
}

// A dense, non-diagonal constant mass matrix and a constraint with a
// nonlinear G: the range-space solve needs M⁻¹ for real here.
TEST(KktReferenceTest, DenseMassMatrixMatchesFullSaddlePointSolve) {
  const v1::SimulationSpec spec =
      SpecFromJson(R"j({"system":{"coordinates":["x","y","z"],)j"
                   R"j("massMatrix":{"values":[4,1,0.5, 1,3,0.25, 0.5,0.25,2]},)j"
                   R"j("potentialEnergy":"x^2/2 + 2*y + cos(z)",)j"
                   R"j("constraints":[{"name":"c1","expression":"x*y + sin(z) - 0.3"},)j"
                   R"j({"name":"c2","expression":"x + y^2 - z"}],)j"
                   R"j("baumgarte":{"alpha":2,"beta":5}},)j"
                   R"j("initial":{"q":[0.4,-0.7,1.1],"v":[0.5,-1.5,0.25]},)j"
                   R"j("integrator":{"method":"RK4","stepSize":0.001}})j");
  const v1::Frame frame = EvaluateAtStart(spec);

  const double x = 0.4, y = -0.7, z = 1.1, vx = 0.5, vy = -1.5, vz = 0.25;
  Eigen::Matrix3d M;
  M << 4, 1, 0.5, 1, 3, 0.25, 0.5, 0.25, 2;
  Eigen::Vector3d F(-x, -2, std::sin(z));
  Eigen::MatrixXd G(2, 3);
  G << y, x, std::cos(z), 1, 2 * y, -1;
  Eigen::Vector2d g(x * y + std::sin(z) - 0.3, x + y * y - z);
  // H = (d/dt G) v: c1: 2 vx vy − sin(z) vz², c2: 2 vy².
  Eigen::Vector2d H(2 * vx * vy - std::sin(z) * vz * vz, 2 * vy * vy);
  const Eigen::Vector3d vv(vx, vy, vz);
  const Eigen::VectorXd rhs_c = -H - 2 * 2.0 * (G * vv) - 5.0 * 5.0 * g;
  const Reference ref = SolveSaddlePoint(M, G, F, rhs_c);
  ExpectClose(frame.a(), ref.a, "a");
  ExpectClose(frame.lambda(), ref.lambda, "lambda");
}

}  // namespace
}  // namespace tether
