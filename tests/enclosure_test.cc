// The ENCLOSED certificate (docs/MATH.md section 10): ball arithmetic
// against exact binary128 results, Taylor series against Cauchy-integral
// coefficients in binary128, the step enclosure against dense sampling of
// the defect, the proven residual law against the closed forms and dense
// sampling, and whole runs: dense resampling of |g(q_h(t), t)| (1000 points
// a step) never exceeds position_bound, and the enclosure stays within 10x
// the sampled supremum on smooth cases.
#include <quadmath.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "engine/internal/base/ball.h"
#include "engine/internal/certificate/certificate.h"
#include "engine/internal/certificate/defect_enclosure.h"
#include "engine/internal/certificate/taylor.h"
#include "engine/internal/certificate/taylor_poly.h"
#include "engine/internal/certificate/taylor_program.h"
#include "engine/internal/expr/parser.h"
#include "engine/internal/kkt/evaluate_kernel.h"
#include "engine/internal/model/model.h"
#include "engine/spec_json.h"
#include "test_util.h"

namespace tether {
namespace {

using ball::Ball;
using Q = __float128;

// Parses `text` with x and y as variables 0 and 1.
std::optional<expr::NodeId> ParseXY(expr::Graph* g, const std::string& text) {
  expr::Scope s;
  s.coordinates = {{"x", 0}, {"y", 1}};
  expr::ParseError error;
  auto root = expr::Parse(text, s, g, &error);
  if (!root) ADD_FAILURE() << text << ": " << error.message;
  return root;
}

bool Contains(const Ball& b, Q exact) {
  return static_cast<Q>(b.m) - static_cast<Q>(b.r) <= exact &&
         exact <= static_cast<Q>(b.m) + static_cast<Q>(b.r);
}

// ---------------------------------------------------------------------------
// Ball arithmetic: every result contains the exact result for operands
// anywhere in the balls (ends and midpoints; binary128 holds these exactly
// for + - * of doubles with nearby exponents).

TEST(BallTest, OperationsContainTheExactResult) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mant(-1, 1);
  std::uniform_int_distribution<int> expo(-8, 8);
  auto random_ball = [&](bool thin) {
    const double m = std::ldexp(mant(rng), expo(rng));
    return Ball{m, thin ? 0 : std::fabs(m) * std::ldexp(1.0, -40 - expo(rng))};
  };
  int checked = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const bool thin = trial % 2 == 0;  // thin operands: only the rounding counts
    const Ball a = random_ball(thin), b = random_ball(thin);
    for (double ta : {-1.0, 0.0, 1.0}) {
      for (double tb : {-1.0, 0.0, 1.0}) {
        const Q x = static_cast<Q>(a.m) + ta * static_cast<Q>(a.r);
        const Q y = static_cast<Q>(b.m) + tb * static_cast<Q>(b.r);
        ASSERT_TRUE(Contains(a + b, x + y)) << trial;
        ASSERT_TRUE(Contains(a - b, x - y)) << trial;
        ASSERT_TRUE(Contains(a * b, x * y)) << trial;
        ASSERT_TRUE(Contains(a / b, x / y)) << trial;
        ASSERT_TRUE(Contains(ball::Scale(a, b.m), x * static_cast<Q>(b.m))) << trial;
        ASSERT_TRUE(Contains(ball::DivExact(a, 3.0), x / 3)) << trial;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 20000 * 9);
}

TEST(BallTest, DotContainsTheExactSum) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 5000; ++trial) {
    ball::Dot d;
    Q exact = 0;
    const int n = 1 + trial % 12;
    for (int i = 0; i < n; ++i) {
      // Mixed signs and magnitudes: the sum cancels.
      const Ball x{u(rng) * std::ldexp(1.0, i % 5), 0}, y{u(rng), 0};
      d.Add(x, y);
      exact += static_cast<Q>(x.m) * static_cast<Q>(y.m);
    }
    ASSERT_TRUE(Contains(d.Result(), exact)) << trial;
  }
}

TEST(BallTest, DivisionByABallReachingZeroIsUnbounded) {
  EXPECT_FALSE(ball::Bounded(Ball{1, 0} / Ball{1e-3, 2e-3}));
  EXPECT_FALSE(ball::Bounded(Ball{1, 0} / Ball{0, 0}));
  EXPECT_TRUE(ball::Bounded(Ball{1, 0} / Ball{1, 0.5}));
  EXPECT_EQ(ball::StrictSign(Ball{1e-3, 2e-3}), 0);
  EXPECT_EQ(ball::StrictSign(Ball{-1, 0.5}), -1);
}

// ---------------------------------------------------------------------------
// Taylor series of f(a(s)) against the Cauchy integral in binary128:
// c_k = (1/N) sum_j f(a(z_j)) z_j^-k, z_j = r e^{2 pi i j / N}, exact to far
// below double precision for f analytic on a disc of radius well above r.

using CQ = __complex128;

CQ Cexp(CQ z) { return cexpq(z); }

struct Case {
  std::string expression;       // in x (and y)
  std::function<CQ(CQ, CQ)> f;  // the same in binary128
  double x0, x1, x2, y0, y1;    // a(s) = x0 + x1 s + x2 s^2, b(s) = y0 + y1 s
};

std::vector<Q> CauchyCoefficients(const Case& c, int n) {
  constexpr int kN = 128;
  const Q r = static_cast<Q>(0.25);
  const Q pi = acosq(static_cast<Q>(-1));
  std::vector<Q> coef(static_cast<size_t>(n), 0);
  for (int j = 0; j < kN; ++j) {
    const Q th = 2 * pi * j / kN;
    CQ z;
    __real__ z = r * cosq(th);
    __imag__ z = r * sinq(th);
    const CQ x = c.x0 + c.x1 * z + c.x2 * z * z;
    const CQ y = c.y0 + c.y1 * z;
    const CQ fz = c.f(x, y);
    CQ zk = 1;
    for (int k = 0; k < n; ++k) {
      coef[static_cast<size_t>(k)] += crealq(fz / zk) / kN;
      zk *= z;
    }
  }
  return coef;
}

TEST(TaylorTest, SeriesContainTheCoefficientsOfEveryFunction) {
  const std::vector<Case> cases = {
      {"x*y", [](CQ x, CQ y) { return x * y; }, 0.7, 0.3, -0.2, -1.3, 0.4},
      {"x - y", [](CQ x, CQ y) { return x - y; }, 0.7, 0.3, -0.2, -1.3, 0.4},
      {"x/y", [](CQ x, CQ y) { return x / y; }, 0.7, 0.3, -0.2, -1.3, 0.4},
      {"x^2 + y^3", [](CQ x, CQ y) { return x * x + y * y * y; }, 0.7, 0.3, -0.2, -1.3, 0.4},
      {"x^(-2)", [](CQ x, CQ) { return 1 / (x * x); }, 0.7, 0.3, -0.2, 0, 0},
      {"x^2.5", [](CQ x, CQ) { return cpowq(x, static_cast<CQ>(2.5)); }, 0.7, 0.3, -0.2, 0, 0},
      {"x^y", [](CQ x, CQ y) { return cexpq(y * clogq(x)); }, 0.7, 0.3, -0.2, -1.3, 0.4},
      {"sin(x)", [](CQ x, CQ) { return csinq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"cos(x)", [](CQ x, CQ) { return ccosq(x); }, 0.7, 0.3, -0.2, 0, 0},
      // Squares of full-length series (taylor::Program's wide squares).
      {"sin(x)^2 + (y - cos(x))^2",
       [](CQ x, CQ y) { return csinq(x) * csinq(x) + (y - ccosq(x)) * (y - ccosq(x)); }, 0.7, 0.3,
       -0.2, -1.3, 0.4},
      {"tan(x)", [](CQ x, CQ) { return ctanq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"asin(x)", [](CQ x, CQ) { return casinq(x); }, 0.4, 0.3, -0.2, 0, 0},
      {"acos(x)", [](CQ x, CQ) { return cacosq(x); }, 0.4, 0.3, -0.2, 0, 0},
      {"atan(x)", [](CQ x, CQ) { return catanq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"atan2(y, x)", [](CQ x, CQ y) { return catanq(y / x); }, 0.7, 0.3, -0.2, -1.3, 0.4},
      {"sinh(x)", [](CQ x, CQ) { return csinhq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"cosh(x)", [](CQ x, CQ) { return ccoshq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"tanh(x)", [](CQ x, CQ) { return ctanhq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"exp(x)", [](CQ x, CQ) { return Cexp(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"log(x)", [](CQ x, CQ) { return clogq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"sqrt(x)", [](CQ x, CQ) { return csqrtq(x); }, 0.7, 0.3, -0.2, 0, 0},
      {"abs(x) + min(x, y) + max(x, y)", [](CQ x, CQ y) { return x + y + x; }, 0.7, 0.3, -0.2, -1.3,
       0.4},
      {"sin(x) * exp(-x^2) / (1 + y^2)",
       [](CQ x, CQ y) { return csinq(x) * cexpq(-x * x) / (1 + y * y); }, 0.7, 0.3, -0.2, -1.3,
       0.4},
      // The internal operations (made by differentiation, not parsed):
      // sign(y) x + step(x) y, written below with the graph's own calls.
      {"sign(y)*x + step(x)*y", [](CQ x, CQ y) { return -x + y; }, 0.7, 0.3, -0.2, -1.3, 0.4},
  };
  // Every operation of operations.h's table appears in some case: adding
  // an operation without its series test fails here.
  std::set<expr::Op> tested;
  constexpr int n = taylor::kMaxLength;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expression);
    expr::Graph g;
    // Variables 0 and 1 are x and y (the parser's scope is not needed).
    std::optional<expr::NodeId> node;
    if (c.expression == "sign(y)*x + step(x)*y") {
      const expr::NodeId x = g.Var(0), y = g.Var(1);
      node = g.Binary(expr::Op::kAdd, g.Binary(expr::Op::kMul, g.Unary(expr::Op::kSign, y), x),
                      g.Binary(expr::Op::kMul, g.Unary(expr::Op::kStep, x), y));
    } else {
      node = ParseXY(&g, c.expression);
    }
    ASSERT_TRUE(node.has_value());
    const std::vector<expr::NodeId> roots{*node};
    const expr::Subgraph p = expr::Subgraph::Build(g, roots);
    for (const auto& nd : p.nodes) tested.insert(nd.op);
    taylor::Evaluator ev(p);
    taylor::Series vars[2] = {};
    vars[0].c[0] = {c.x0, 0};
    vars[0].c[1] = {c.x1, 0};
    vars[0].c[2] = {c.x2, 0};
    vars[1].c[0] = {c.y0, 0};
    vars[1].c[1] = {c.y1, 0};
    ASSERT_TRUE(ev.Evaluate(vars, n));
    const std::vector<Q> ref = CauchyCoefficients(c, n);
    for (int k = 0; k < n; ++k) {
      const Ball b = ev.root(0).c[k];
      // The reference's own error: binary128 rounding of f (~1e-34) times
      // r^-k (r = 1/4).
      const Ball widened{b.m, b.r + 1e-30 * std::pow(4.0, k)};
      EXPECT_TRUE(Contains(widened, ref[static_cast<size_t>(k)]))
          << "k=" << k << " ball " << b.m << " +- " << b.r << " exact "
          << static_cast<double>(ref[static_cast<size_t>(k)]);
      // Useful, not only safe: a few ulps of the coefficients' scale.
      EXPECT_LT(b.r, 1e-12 * (1 + std::fabs(b.m)) * std::pow(20.0, k)) << "k=" << k;
    }
    // The compiled program of the ENCLOSED general path (taylor_program.h:
    // its own product, sqrt and sin/cos kernels, the interpreter's rule
    // otherwise) at the passes' lengths and the longest, with the
    // variables' exact lengths.
    taylor::Program program(p);
    const int var_len[2] = {3, 2};
    for (int len : {7, 8, n}) {
      SCOPED_TRACE("taylor::Program, length " + std::to_string(len));
      ASSERT_TRUE(program.Evaluate(vars, len, var_len));
      for (int k = 0; k < len; ++k) {
        const Ball b{program.root(0).m[k], program.root(0).r[k]};
        const Ball widened{b.m, b.r + 1e-30 * std::pow(4.0, k)};
        EXPECT_TRUE(Contains(widened, ref[static_cast<size_t>(k)]))
            << "k=" << k << " ball " << b.m << " +- " << b.r << " exact "
            << static_cast<double>(ref[static_cast<size_t>(k)]);
        EXPECT_LT(b.r, 1e-12 * (1 + std::fabs(b.m)) * std::pow(20.0, k)) << "k=" << k;
      }
    }
    // Both ENCLOSED passes of a piece at once (Program::EvaluatePair): the
    // bits of Evaluate at the centre's length and then at the piece's, on
    // every instruction set, where the piece's radii are a narrow widening
    // (the fused kernels) and a wide one (sin's and cos's leads by
    // intervals: the passes run apart, then meet again where they can).
    for (double widen : {1e-3, 0.2}) {
      taylor::Series piece[2] = {};
      for (int v = 0; v < 2; ++v) {
        for (int k = 0; k < var_len[v]; ++k) {
          const Ball x = vars[v].c[k];
          piece[v].c[k] = {x.m, widen * (std::fabs(x.m) + 0.1) / (k + 1)};
        }
      }
      for (taylor::PolyIsa isa : {taylor::PolyIsa::kBaseline, taylor::PolyIsa::kAvx2}) {
        SCOPED_TRACE("EvaluatePair, widening " + std::to_string(widen) +
                     (isa == taylor::PolyIsa::kAvx2 ? ", AVX2" : ", baseline"));
        taylor::Program single(p, isa), pair(p, isa);
        const bool centre_ok = single.Evaluate(vars, taylor::Program::kCentreLength, var_len);
        const taylor::PolySeries centre = single.root(0);
        const bool piece_ok = single.Evaluate(piece, taylor::Program::kPieceLength, var_len);
        const taylor::PolySeries whole = single.root(0);
        ASSERT_EQ(pair.EvaluatePair(vars, piece, var_len), centre_ok && piece_ok);
        if (!(centre_ok && piece_ok)) continue;
        auto same_bits = [](double x, double y) {
          return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
        };
        ASSERT_EQ(pair.centre_root(0).len, centre.len);
        ASSERT_EQ(pair.root(0).len, whole.len);
        for (int k = 0; k < taylor::Program::kCentreLength; ++k) {
          EXPECT_TRUE(same_bits(pair.centre_root(0).m[k], centre.m[k])) << "centre m k=" << k;
          EXPECT_TRUE(same_bits(pair.centre_root(0).r[k], centre.r[k])) << "centre r k=" << k;
        }
        for (int k = 0; k < taylor::Program::kPieceLength; ++k) {
          EXPECT_TRUE(same_bits(pair.root(0).m[k], whole.m[k])) << "piece m k=" << k;
          EXPECT_TRUE(same_bits(pair.root(0).r[k], whole.r[k])) << "piece r k=" << k;
        }
      }
    }
  }
  for (int k = expr::kFirstOperation; k < expr::kFirstOperation + expr::kNumOperations; ++k) {
    const auto op = static_cast<expr::Op>(k);
    EXPECT_TRUE(tested.count(op)) << "no series case uses " << expr::Info(op).spelling;
  }
}

// sqrt's leading coefficient over a wide ball (taylor_program.cc's
// SqrtLead: centred on fl(sqrt(m)), not on the range's middle), and the
// next coefficient, which divides by it: for x(t) = x0 + x1 t with x0
// anywhere in the ball, sqrt(x0) and x1 / (2 sqrt(x0)) (binary128) lie in
// the compiled program's balls, in both passes of a piece.
TEST(TaylorTest, SqrtOverAWideBallEnclosesEveryPoint) {
  expr::Graph g;
  auto node = ParseXY(&g, "sqrt(x)");
  ASSERT_TRUE(node.has_value());
  const std::vector<expr::NodeId> roots{*node};
  const expr::Subgraph p = expr::Subgraph::Build(g, roots);
  taylor::Program program(p);
  const int var_len[2] = {2, 1};
  for (double m : {1e-6, 0.3, 1.0, 7.5, 1e8}) {
    for (double rel : {0.0, 1e-12, 1e-3, 0.3, 0.9}) {
      const double r = rel * m, x1 = 0.25 * m + 1;
      taylor::Series centre[2] = {}, piece[2] = {};
      centre[0].c[0] = {m, 0};
      centre[0].c[1] = {x1, 0};
      piece[0].c[0] = {m, r};
      piece[0].c[1] = {x1, 0};
      ASSERT_TRUE(program.EvaluatePair(centre, piece, var_len)) << m << " +- " << r;
      const taylor::PolySeries& w = program.root(0);
      const taylor::PolySeries& c = program.centre_root(0);
      for (int i = 0; i <= 16; ++i) {
        const Q x0 = static_cast<Q>(m) + static_cast<Q>(r) * (i - 8) / 8;
        const Q f0 = sqrtq(x0), f1 = static_cast<Q>(x1) / (2 * f0);
        EXPECT_TRUE(Contains(Ball{w.m[0], w.r[0]}, f0)) << m << " +- " << r << " at " << i;
        EXPECT_TRUE(Contains(Ball{w.m[1], w.r[1]}, f1)) << m << " +- " << r << " at " << i;
      }
      const Q f0 = sqrtq(static_cast<Q>(m));
      EXPECT_TRUE(Contains(Ball{c.m[0], c.r[0]}, f0)) << m;
      EXPECT_TRUE(Contains(Ball{c.m[1], c.r[1]}, static_cast<Q>(x1) / (2 * f0))) << m;
      // Useful, not only safe: the lead's radius within 0.01% (and a few
      // ulps) of the smallest a ball centred on sqrt(m) can have, the
      // distance to the range's lower end, and within 1% of the range's
      // half width where r is small against m (second order in r / m).
      const double below = std::sqrt(m) - std::sqrt(m - r), ulps = 4e-16 * std::sqrt(m);
      EXPECT_LE(w.r[0], 1.0001 * below + ulps) << m << " +- " << r;
      if (rel <= 1e-3) {
        const double half = 0.5 * (std::sqrt(m + r) - std::sqrt(m - r));
        EXPECT_LE(w.r[0], 1.01 * half + ulps) << m << " +- " << r;
      }
    }
  }
}

TEST(TaylorTest, NonSmoothPointInsideTheBallIsNotEnclosed) {
  for (const char* text : {"abs(x)", "min(x, y)", "max(x, y)", "sqrt(x)", "log(x)", "1/x"}) {
    expr::Graph g;
    auto node = ParseXY(&g, text);
    ASSERT_TRUE(node.has_value());
    const std::vector<expr::NodeId> roots{*node};
    const expr::Subgraph p = expr::Subgraph::Build(g, roots);
    taylor::Evaluator ev(p);
    taylor::Series vars[2] = {};
    vars[0].c[0] = {1e-3, 2e-3};  // reaches 0 (and y)
    vars[0].c[1] = {1, 0};
    vars[1].c[0] = {0, 0};
    EXPECT_FALSE(ev.Evaluate(vars, 4)) << text;
    EXPECT_FALSE(ev.root_ok(0)) << text;
  }
}

// ---------------------------------------------------------------------------
// Whole runs.

// A spec with the certificate mode (and samples per step) set.
v1::SimulationSpec WithMode(v1::SimulationSpec spec, v1::CertificateOptions::Mode mode,
                            uint32_t samples = 0) {
  spec.mutable_certificate()->set_mode(mode);
  if (samples) spec.mutable_certificate()->set_samples_per_step(samples);
  return spec;
}

struct Compiled {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Workspace> ws;
};

Compiled Compile(const v1::SimulationSpec& spec) {
  std::vector<v1::Diagnostic> diagnostics;
  Status stopped;
  Compiled c;
  c.model = CompileModel(spec.system(), CompileOptions{}, &diagnostics, &stopped);
  if (c.model) c.ws = std::make_unique<Workspace>(*c.model);
  return c;
}

// The step n interpolant (frames n-1, n) at theta: position, velocity and
// acceleration, and the constraint outputs (g, G, g_t, H) there.
struct StepSampler {
  const Model& m;
  Workspace& ws;
  std::vector<double> p, dp, ddp;
  StepSampler(const Model& model, Workspace& w)
      : m(model), ws(w), p(model.nq), dp(model.nq), ddp(model.nq) {}
  const double* At(const v1::Frame& f0, const v1::Frame& f1, double h, double theta) {
    QuinticHermite(m.nq, h, theta, f0.q().data(), f0.v().data(), f0.a().data(), f1.q().data(),
                   f1.v().data(), f1.a().data(), p.data(), dp.data(), ddp.data());
    internal::LoadVars(m, m.nq, ws, f0.t() + theta * h, p.data(), dp.data(), ws.con_work.data());
    m.constraints.Eval(ws.con_work.data());
    return ws.con_out;
  }
  // eta_i from the outputs at the current sample (dense G).
  double Eta(const double* out, int i) const {
    const double* G = out + m.off_G + i * m.nq;
    double Ga = 0, Gv = 0;
    for (int j = 0; j < m.nq; ++j) {
      Ga += G[j] * ddp[static_cast<size_t>(j)];
      Gv += G[j] * dp[static_cast<size_t>(j)];
    }
    return Ga + out[m.off_H + i] + m.two_alpha[static_cast<size_t>(i)] * (Gv + out[m.off_gt + i]) +
           m.beta_sq[static_cast<size_t>(i)] * out[m.off_g + i];
  }
};

struct Named {
  std::string name;
  v1::SimulationSpec spec;
  double until;
};

std::vector<Named> Models() {
  using testing::SpecFromJson;
  std::vector<Named> out;
  out.push_back({"circle", testing::CirclePendulum(10, 10, "RK4", 1e-3, 1, 0, 0, 0), 1});
  out.push_back(
      {"circle inconsistent", testing::CirclePendulum(2, 2, "RK4", 1e-3, 1.01, 0, 0.02, 0), 1});
  out.push_back(
      {"circle underdamped DOPRI5", testing::CirclePendulum(3, 8, "DOPRI5", 0, 1.01, 0, 0, 0), 1});
  out.push_back({"circle overdamped semi-implicit",
                 testing::CirclePendulum(8, 3, "SEMI_IMPLICIT_EULER", 1e-3, 1, 0, 0.1, 0), 0.5});
  out.push_back({"double pendulum",
                 SpecFromJson(R"json({"system":{"coordinates":["x1","y1","x2","y2"],
      "masses":{"values":[1,1,1,1]},"potentialEnergy":"9.81*(y1+y2)",
      "constraints":[{"name":"r1","expression":"(x1^2+y1^2-1)/2"},
                     {"name":"r2","expression":"((x2-x1)^2+(y2-y1)^2-1)/2"}],
      "baumgarte":{"alpha":10,"beta":10}},
      "initial":{"q":[1,0,2,0],"v":[0,0,0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json"),
                 0.5});
  // Adversarial: a fast time-dependent constraint (a wire shaken at
  // 1000 rad/s, 10 rad a step: the enclosure must split its steps).
  out.push_back({"fast time-dependent", SpecFromJson(R"json({"system":{"coordinates":["x","y"],
      "masses":{"values":[1,1]},"potentialEnergy":"9.81*y",
      "constraints":[{"name":"wire","expression":"y - 0.001*sin(1000*t) - 0.1*x^2"}],
      "baumgarte":{"alpha":10,"beta":10}},
      "initial":{"q":[0.5,0.025],"v":[0,1]},"integrator":{"method":"RK4","stepSize":0.01}})json"),
                 1});
  // Stiff gains near RK4's stability edge (h omega = 2.5 of 2.785).
  out.push_back(
      {"stiff gains at the edge", testing::CirclePendulum(250, 250, "RK4", 1e-2, 1, 0, 0, 0), 1});
  out.push_back({"stiff gains SDIRK3",
                 testing::CirclePendulum(1000, 1000, "SDIRK3", 1e-2, 1.001, 0, 0, 0), 1});
  // beta^2 = 1e-200 is outside the floating-point path's range: the
  // polynomial path in ball arithmetic.
  out.push_back({"circle with a tiny beta",
                 testing::CirclePendulum(10, 1e-100, "RK4", 1e-3, 1, 0, 0, 0), 0.5});
  out.push_back({"kinetic energy, moving constraint",
                 SpecFromJson(R"json({"system":{"coordinates":["th"],
      "kineticEnergy":"0.5*der(th)^2","potentialEnergy":"-9.81*cos(th)",
      "constraints":[{"name":"c","expression":"sin(th) - 0.3*t"}],"baumgarte":{"alpha":5,"beta":5}},
      "initial":{"q":[0],"v":[0.3]},"integrator":{"method":"RK4","stepSize":0.001}})json"),
                 1});
  return out;
}

RunOptions EveryStep(double until) {
  RunOptions run;
  run.until_time = until;
  run.every = 1;
  return run;
}

TEST(EnclosedCertificateTest, DenseResamplingNeverExceedsThePositionBound) {
  for (const Named& c : Models()) {
    SCOPED_TRACE(c.name);
    auto out =
        testing::RunSpec(WithMode(c.spec, v1::CertificateOptions::ENCLOSED), EveryStep(c.until));
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    const v1::Certificate& cert = out.certificate;
    EXPECT_EQ(cert.mode(), v1::CertificateOptions::ENCLOSED);
    EXPECT_EQ(cert.unenclosed_steps(), 0u);
    EXPECT_GE(cert.enclosure_pieces(), cert.steps());
    EXPECT_NE(cert.sampling().find("ENCLOSED"), std::string::npos);
    Compiled m = Compile(c.spec);
    ASSERT_TRUE(m.model);
    StepSampler s(*m.model, *m.ws);
    double worst = 0;  // largest sample / its constraint's bound
    for (int n = 1; n < out.frames.size(); ++n) {
      const v1::Frame& f0 = out.frames[n - 1];
      const v1::Frame& f1 = out.frames[n];
      const double h = f1.t() - f0.t();
      for (int j = 0; j <= 1000; ++j) {
        const double* o = s.At(f0, f1, h, j / 1000.0);
        for (int i = 0; i < m.model->nc; ++i) {
          const double bound = cert.constraints(i).position_bound();
          const double e = std::fabs(o[m.model->off_g + i]);
          // g is evaluated here in double: 1e-15 covers its rounding.
          ASSERT_LE(e, bound + 1e-15) << "step " << n << " theta " << j / 1000.0;
          worst = std::max(worst, e / bound);
        }
      }
      // The defect's enclosure covers eta on this step (sampled in double,
      // with a rounding allowance of 1e-12 relative to the step's scale).
    }
    EXPECT_GT(worst, 0);
    const v1::Frame& last = out.frames[out.frames.size() - 1];
    for (int i = 0; i < m.model->nc; ++i)
      EXPECT_LE(std::fabs(last.residuals().position(i)),
                cert.constraints(i).final_position_bound() + 1e-15);
  }
}

// The bound takes the convolution form (docs/MATH.md section 10.2) when it
// is below eq. (10.3), SAMPLED from quadrature of the step's samples,
// ENCLOSED from the enclosures of the step means (proven): dense
// resampling of |g| on every step of every model stays below it, and on
// the consistent starts of the issue (the circle, the double pendulum, a
// cart-pole and a slider-crank) it is within 10x of the densely resampled
// max |g| (eq. (10.3): 691x to 1,419x).
TEST(ConvolutionBoundTest, DenseResamplingStaysBelowItAndWithin10xOnConsistentStarts) {
  std::vector<Named> models = Models();
  models.push_back({"cart-pole", testing::SpecFromJson(R"json({"system":{
      "coordinates":["xc","xp","yp"],"masses":{"values":[2,0.5,0.5]},
      "potentialEnergy":"0.5*9.81*yp",
      "constraints":[{"name":"pole","expression":"((xp-xc)^2+yp^2-1)/2"}],
      "baumgarte":{"alpha":10,"beta":10}},
      "initial":{"q":[0,0.6,0.8],"v":[0,0,0]},"integrator":{"method":"RK4","stepSize":0.001}})json"),
                    1});
  models.push_back({"slider-crank", testing::SpecFromJson(R"json({"system":{
      "coordinates":["xa","ya","xb"],"masses":{"values":[1,1,2]},"potentialEnergy":"9.81*ya",
      "generalizedForces":["0","0","-0.5*der(xb)"],
      "constraints":[{"name":"crank","expression":"(xa^2+ya^2-0.09)/2"},
                     {"name":"rod","expression":"((xb-xa)^2+ya^2-1)/2"}],
      "baumgarte":{"alpha":10,"beta":10}},
      "initial":{"q":[0.3,0,1.3],"v":[0,1,0]},"integrator":{"method":"RK4","stepSize":0.001}})json"),
                    1});
  for (const auto mode : {v1::CertificateOptions::SAMPLED, v1::CertificateOptions::ENCLOSED})
    for (const Named& c : models) {
      SCOPED_TRACE(c.name + " " + v1::CertificateOptions::Mode_Name(mode));
      auto out = testing::RunSpec(WithMode(c.spec, mode), EveryStep(c.until));
      ASSERT_TRUE(out.status.ok()) << out.status.ToString();
      const v1::Certificate& cert = out.certificate;
      Compiled m = Compile(c.spec);
      ASSERT_TRUE(m.model);
      StepSampler s(*m.model, *m.ws);
      std::vector<double> dense(static_cast<size_t>(m.model->nc), 0.0);
      for (int n = 1; n < out.frames.size(); ++n) {
        const v1::Frame& f0 = out.frames[n - 1];
        const v1::Frame& f1 = out.frames[n];
        const double h = f1.t() - f0.t();
        for (int j = 0; j <= 200; ++j) {
          const double* o = s.At(f0, f1, h, j / 200.0);
          for (int i = 0; i < m.model->nc; ++i) {
            const double e = std::fabs(o[m.model->off_g + i]);
            ASSERT_LE(e, cert.constraints(i).position_bound() + 1e-15)
                << "step " << n << " theta " << j / 200.0;
            dense[static_cast<size_t>(i)] = std::max(dense[static_cast<size_t>(i)], e);
          }
        }
      }
      for (int i = 0; i < m.model->nc; ++i) {
        const v1::ConstraintCertificate& k = cert.constraints(i);
        EXPECT_LE(k.position_bound(), k.supremum_position_bound());
        EXPECT_GT(k.convolution_position_bound(), 0);
        const bool consistent_start = c.name == "circle" || c.name == "double pendulum" ||
                                      c.name == "cart-pole" || c.name == "slider-crank";
        std::printf("%s %s %s: dense max |g| %.3g, bound %.3g (%.1fx), eq. 10.3 %.3g (%.0fx)\n",
                    v1::CertificateOptions::Mode_Name(mode).c_str(), c.name.c_str(),
                    k.name().c_str(), dense[static_cast<size_t>(i)], k.position_bound(),
                    k.position_bound() / dense[static_cast<size_t>(i)], k.supremum_position_bound(),
                    k.supremum_position_bound() / dense[static_cast<size_t>(i)]);
        if (consistent_start) {
          EXPECT_LE(k.position_bound(), 10 * dense[static_cast<size_t>(i)]);
        }
      }
    }
}

TEST(EnclosedCertificateTest, StepEnclosureCoversTheDefectAtEveryDensePoint) {
  for (const Named& c : Models()) {
    SCOPED_TRACE(c.name);
    auto out =
        testing::RunSpec(WithMode(c.spec, v1::CertificateOptions::ENCLOSED), EveryStep(c.until));
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    Compiled m = Compile(c.spec);
    ASSERT_TRUE(m.model);
    const Model& model = *m.model;
    StepSampler s(model, *m.ws);
    DefectEncloser enc(model);
    std::vector<double> sup(static_cast<size_t>(model.nc)),
        running(static_cast<size_t>(model.nc), 0);
    int steps_checked = 0;
    for (int n = 1; n < out.frames.size(); n += 7) {
      const v1::Frame& f0 = out.frames[n - 1];
      const v1::Frame& f1 = out.frames[n];
      const double h = f1.t() - f0.t();
      enc.EncloseStep(model, nullptr, f0.t(), h, f0.q().data(), f0.v().data(), f0.a().data(),
                      f1.q().data(), f1.v().data(), f1.a().data(), running.data(), sup.data());
      for (int j = 0; j <= 1000; ++j) {
        const double* o = s.At(f0, f1, h, j / 1000.0);
        for (int i = 0; i < model.nc; ++i) {
          const double eta = std::fabs(s.Eta(o, i));
          // eta sampled in double: its terms are at most ~1e4 here.
          ASSERT_LE(eta, sup[static_cast<size_t>(i)] + 1e-11) << "step " << n << " theta " << j;
        }
      }
      ++steps_checked;
    }
    EXPECT_GT(steps_checked, 5);
  }
}

TEST(EnclosedCertificateTest, EnclosureIsWithinTenTimesTheSampledSupremumOnSmoothCases) {
  for (const Named& c : Models()) {
    SCOPED_TRACE(c.name);
    RunOptions run;
    run.until_time = c.until;
    auto enclosed = testing::RunSpec(WithMode(c.spec, v1::CertificateOptions::ENCLOSED), run);
    auto sampled = testing::RunSpec(WithMode(c.spec, v1::CertificateOptions::SAMPLED, 64), run);
    ASSERT_TRUE(enclosed.status.ok() && sampled.status.ok());
    for (int i = 0; i < enclosed.certificate.constraints_size(); ++i) {
      const double e = enclosed.certificate.constraints(i).defect_bound();
      const double s = sampled.certificate.constraints(i).defect_bound();
      EXPECT_GE(e, s) << "the enclosure is below a sample";
      EXPECT_LE(e, 10 * s) << "constraint " << i;
    }
    EXPECT_EQ(sampled.certificate.mode(), v1::CertificateOptions::SAMPLED);
    EXPECT_EQ(sampled.certificate.enclosure_pieces(), 0u);
  }
}

TEST(EnclosedCertificateTest, FastTimeDependenceSplitsSteps) {
  const Named c = Models()[5];
  ASSERT_EQ(c.name, "fast time-dependent");
  RunOptions run;
  run.until_time = c.until;
  auto out = testing::RunSpec(WithMode(c.spec, v1::CertificateOptions::ENCLOSED), run);
  ASSERT_TRUE(out.status.ok());
  EXPECT_GT(out.certificate.enclosure_pieces(), 2 * out.certificate.steps());
}

TEST(EnclosedCertificateTest, AKinkCrossedIsNotEnclosedAndSaysSo) {
  auto spec = testing::SpecFromJson(R"json({"system":{"coordinates":["x","y"],
      "masses":{"values":[1,1]},"potentialEnergy":"9.81*y",
      "constraints":[{"name":"vee","expression":"y - 0.5*abs(x)"}],"baumgarte":{"alpha":10,"beta":10}},
      "initial":{"q":[-0.5,0.25],"v":[2,-1]},"integrator":{"method":"RK4","stepSize":0.001}})json");
  RunOptions run;
  run.steps = 400;
  run.every = 1;
  auto out = testing::RunSpec(WithMode(spec, v1::CertificateOptions::ENCLOSED), run);
  ASSERT_TRUE(out.status.ok());
  const v1::Certificate& c = out.certificate;
  EXPECT_GE(c.unenclosed_steps(), 1u);
  EXPECT_TRUE(std::isinf(c.position_bound()));
  EXPECT_TRUE(std::isinf(c.constraints(0).defect_bound()));
  EXPECT_NE(c.sampling().find("could not be enclosed"), std::string::npos);
  // The crossing: x changes sign in the step starting at first_unenclosed_time.
  double t_cross = -1;
  for (int n = 1; n < out.frames.size(); ++n) {
    if (out.frames[n - 1].q(0) < 0 && out.frames[n].q(0) >= 0) t_cross = out.frames[n - 1].t();
  }
  ASSERT_GT(t_cross, 0);
  EXPECT_NEAR(c.first_unenclosed_time(), t_cross, 1.5e-3);
}

TEST(EnclosedCertificateTest, DefaultIsSampledAndItsBitsAreUnchanged) {
  const auto spec = testing::CirclePendulum(10, 10, "RK4", 1e-3, 1, 0, 0, 0);
  RunOptions run;
  run.steps = 500;
  auto unset = testing::RunSpec(spec, run);
  auto sampled = testing::RunSpec(WithMode(spec, v1::CertificateOptions::SAMPLED), run);
  ASSERT_TRUE(unset.status.ok() && sampled.status.ok());
  EXPECT_EQ(unset.certificate.mode(), v1::CertificateOptions::SAMPLED);
  EXPECT_EQ(unset.certificate.SerializeAsString(), sampled.certificate.SerializeAsString());
  EXPECT_NE(unset.certificate.sampling().find("SAMPLED"), std::string::npos);
}

TEST(EnclosedCertificateTest, LargeConstraintsAreRefusedInEnclosedModeOnly) {
  // The circle's g has a handful of nodes; a limit below that stands in
  // for a description whose constraints are too large to certify ENCLOSED.
  const auto spec = testing::CirclePendulum(10, 10, "RK4", 1e-3, 1, 0, 0, 0);
  CompileOptions options;
  options.limits.max_enclosed_nodes = 3;
  EXPECT_TRUE(Simulation::Create(spec, nullptr, options).ok());
  auto enclosed =
      Simulation::Create(WithMode(spec, v1::CertificateOptions::ENCLOSED), nullptr, options);
  ASSERT_FALSE(enclosed.ok());
  EXPECT_EQ(enclosed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(enclosed.status().message().find("certificate.mode"), std::string::npos)
      << enclosed.status().message();
  EXPECT_NE(enclosed.status().message().find("at most 3 nodes"), std::string::npos)
      << enclosed.status().message();
  // The default admits it.
  EXPECT_TRUE(Simulation::Create(WithMode(spec, v1::CertificateOptions::ENCLOSED)).ok());
}

// The three ways of enclosing a step (DefectEncloser::Path) on the same
// steps: each covers eta at 1000 points a step, the automatic choice is
// the expected one, and the polynomial paths (no pass over the piece) stay
// within a small factor of the general one.
TEST(EnclosedCertificateTest, EveryPathCoversTheDefectOnTheSameSteps) {
  using Path = DefectEncloser::Path;
  const std::map<std::string, Path> expected = {
      {"circle", Path::kPolynomialFloat},
      {"double pendulum", Path::kPolynomialFloat},
      {"stiff gains at the edge", Path::kPolynomialFloat},
      {"circle underdamped DOPRI5", Path::kPolynomialFloat},
      {"circle with a tiny beta", Path::kPolynomialBall},
      {"fast time-dependent", Path::kGeneral},
      {"kinetic energy, moving constraint", Path::kGeneral}};
  int checked_paths = 0;
  for (const Named& c : Models()) {
    if (!expected.count(c.name)) continue;
    SCOPED_TRACE(c.name);
    auto out =
        testing::RunSpec(WithMode(c.spec, v1::CertificateOptions::ENCLOSED), EveryStep(c.until));
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    Compiled m = Compile(c.spec);
    ASSERT_TRUE(m.model);
    const Model& model = *m.model;
    EXPECT_EQ(DefectEncloser(model).path(), expected.at(c.name));
    StepSampler s(model, *m.ws);
    const std::vector<double> u(model.input_defaults.begin(), model.input_defaults.end());
    std::vector<std::vector<double>> sups;  // per path: the bounds of every checked step
    for (Path force : {Path::kGeneral, Path::kPolynomialBall, Path::kAuto}) {
      DefectEncloser enc(model, force);
      if (force != Path::kAuto && enc.path() != force) continue;  // not polynomial
      ++checked_paths;
      std::vector<double> sup(static_cast<size_t>(model.nc)),
          running(static_cast<size_t>(model.nc), 0), all;
      for (int n = 1; n < out.frames.size(); n += 11) {
        const v1::Frame& f0 = out.frames[n - 1];
        const v1::Frame& f1 = out.frames[n];
        const double h = f1.t() - f0.t();
        enc.EncloseStep(model, u.empty() ? nullptr : u.data(), f0.t(), h, f0.q().data(),
                        f0.v().data(), f0.a().data(), f1.q().data(), f1.v().data(), f1.a().data(),
                        running.data(), sup.data());
        for (int j = 0; j <= 1000; ++j) {
          const double* o = s.At(f0, f1, h, j / 1000.0);
          for (int i = 0; i < model.nc; ++i) {
            const double eta = std::fabs(s.Eta(o, i));
            ASSERT_LE(eta, sup[static_cast<size_t>(i)] + 1e-11)
                << "path " << static_cast<int>(enc.path()) << " step " << n << " theta " << j;
          }
        }
        all.insert(all.end(), sup.begin(), sup.end());
      }
      sups.push_back(all);
    }
    for (size_t p = 1; p < sups.size(); ++p) {
      ASSERT_EQ(sups[p].size(), sups[0].size());
      for (size_t k = 0; k < sups[0].size(); ++k) {
        EXPECT_LE(sups[p][k], 1.5 * sups[0][k]) << "path " << p << " bound " << k;
        EXPECT_LE(sups[0][k], 1.5 * sups[p][k]) << "path " << p << " bound " << k;
      }
    }
  }
  // Five polynomial models on three paths, two general ones on the
  // general path (forced and automatic).
  EXPECT_EQ(checked_paths, 5 * 3 + 2 * 2);
}

// Random steps (data in [-1, 1], h = 1 and 0.25: the quintic far from
// the constraint, eta's high coefficients large) on every path, without
// splitting (`running` huge) and with it: the bound covers eta at 1000
// points, so the remainder (the exact tail on the polynomial paths) cannot
// be left out.
TEST(EnclosedCertificateTest, RandomStepsAreCoveredOnEveryPath) {
  using Path = DefectEncloser::Path;
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> unit(-1, 1);
  int checked = 0;
  for (const Named& c : Models()) {
    if (c.name != "circle" && c.name != "double pendulum") continue;
    SCOPED_TRACE(c.name);
    Compiled m = Compile(c.spec);
    ASSERT_TRUE(m.model);
    const Model& model = *m.model;
    const int nq = model.nq, nc = model.nc;
    StepSampler s(model, *m.ws);
    // The same steps on every path.
    std::vector<std::pair<v1::Frame, v1::Frame>> steps(200);
    for (size_t trial = 0; trial < steps.size(); ++trial) {
      const double h = trial % 2 ? 1.0 : 0.25;
      v1::Frame& f0 = steps[trial].first;
      v1::Frame& f1 = steps[trial].second;
      f0.set_t(0.5);
      f1.set_t(0.5 + h);
      for (int j = 0; j < nq; ++j) {
        f0.add_q(unit(rng)), f0.add_v(unit(rng)), f0.add_a(unit(rng));
        f1.add_q(unit(rng)), f1.add_v(unit(rng)), f1.add_a(unit(rng));
      }
    }
    for (Path force : {Path::kGeneral, Path::kPolynomialBall, Path::kAuto}) {
      DefectEncloser enc(model, force);
      for (size_t trial = 0; trial < steps.size(); ++trial) {
        const v1::Frame& f0 = steps[trial].first;
        const v1::Frame& f1 = steps[trial].second;
        const double h = f1.t() - f0.t();
        const std::vector<double> running(static_cast<size_t>(nc), trial % 3 ? 1e300 : 0.0);
        std::vector<double> sup(static_cast<size_t>(nc));
        enc.EncloseStep(model, nullptr, f0.t(), h, f0.q().data(), f0.v().data(), f0.a().data(),
                        f1.q().data(), f1.v().data(), f1.a().data(), running.data(), sup.data());
        double largest = 0;
        for (int j = 0; j <= 1000; ++j) {
          const double* o = s.At(f0, f1, h, j / 1000.0);
          for (int i = 0; i < nc; ++i) {
            const double eta = std::fabs(s.Eta(o, i));
            largest = std::max(largest, eta);
            // eta sampled in double: terms of at most ~1e3.
            ASSERT_LE(eta, sup[static_cast<size_t>(i)] + 1e-12)
                << "path " << static_cast<int>(enc.path()) << " trial " << trial << " theta " << j;
          }
        }
        EXPECT_GT(largest, 1e-3);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * 3 * 200);
}

// The polynomial path's AVX2 kernels (taylor_poly_avx2.cc) give the
// baseline kernels' bits: every square kernel (base lengths 1..6, with and
// without an addend and a subtrahend), eta's coefficients and the
// coordinates' coefficients on operands
// with zeros of both signs, subnormal and huge midpoints and radii, and
// the general path's truncated squares, and whole steps of the circle and
// the double pendulum (random data, both splitting regimes) through
// DefectEncloser: the same bounds and means to the bit. A kernel that added its terms in another
// order, dropped a padding term's sign or fused a product would differ on some of them.
TEST(EnclosedCertificateTest, PolyKernelsHaveTheSameBitsOnEveryInstructionSet) {
  if (!taylor::PolyAvx2Available()) GTEST_SKIP() << "no AVX2 here";
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::uniform_int_distribution<int> pick(0, 9), exponent(-80, 80);
  auto value = [&](bool radius) {
    switch (pick(rng)) {
      case 0: return radius ? 0.0 : -0.0;
      case 1: return 0.0;
      case 2: return 4 * ball::kTiny;
      case 3: return std::ldexp(std::fabs(unit(rng)), -1040);  // subnormal
      case 4: return std::ldexp(radius ? std::fabs(unit(rng)) : unit(rng), 500);
      default: {
        const double x = std::ldexp(unit(rng), exponent(rng));
        return radius ? std::fabs(x) * 0x1p-50 : x;
      }
    }
  };
  auto series = [&](int len) {
    taylor::PolySeries x;
    for (int k = 0; k < len; ++k) x.m[k] = value(false), x.r[k] = value(true);
    x.len = len;
    return x;
  };
  auto same = [](const taylor::PolySeries& a, const taylor::PolySeries& b) {
    return a.len == b.len && std::memcmp(a.m, b.m, sizeof a.m) == 0 &&
           std::memcmp(a.r, b.r, sizeof a.r) == 0;
  };
  int kernels = 0;
  for (int la = 1; la <= taylor::kMaxExact; ++la) {
    for (bool add : {false, true}) {
      for (bool diff : {false, true}) {
        const taylor::PolySquareKernel base = taylor::PolySquareBaseline(la, add, diff);
        const taylor::PolySquareKernel avx2 = taylor::PolySquareAvx2(la, add, diff);
        ASSERT_TRUE(base && avx2);
        ++kernels;
        for (int trial = 0; trial < 300; ++trial) {
          const taylor::PolySeries a = series(la), b = series(la), z = series(2 * la - 1);
          taylor::PolySeries c1, c2;
          base(a, diff ? &b : nullptr, add ? &z : nullptr, &c1);
          avx2(a, diff ? &b : nullptr, add ? &z : nullptr, &c2);
          ASSERT_TRUE(same(c1, c2))
              << "la " << la << " add " << add << " diff " << diff << " trial " << trial;
        }
      }
    }
  }
  // The general path's truncated squares (taylor_program.cc's
  // SquareTruncatedT), through Programs of x^2 + y (the sum keeps y's
  // coefficients beyond the square's) at both pass lengths, x of every
  // length up to the pass's (beyond kMaxExact: a sin's, cos's or sqrt's
  // full-length series).
  {
    expr::Graph g;
    const auto root = ParseXY(&g, "x^2 + y");
    ASSERT_TRUE(root.has_value());
    const expr::Subgraph p = expr::Subgraph::Build(g, std::vector<expr::NodeId>{*root});
    taylor::Program base(p, taylor::PolyIsa::kBaseline), avx2(p, taylor::PolyIsa::kAvx2);
    for (int la = 1; la <= 8; ++la) {
      for (int n : {7, 8}) {
        if (la > n) {
          EXPECT_FALSE(taylor::PolySquareTruncatedAvx2(la, n));
          continue;
        }
        ASSERT_TRUE(taylor::PolySquareTruncatedAvx2(la, n));
        ++kernels;
        for (int trial = 0; trial < 300; ++trial) {
          taylor::Series vars[2] = {};
          for (int k = 0; k < la; ++k) vars[0].c[k] = {value(false), value(true)};
          for (int k = 0; k < n; ++k) vars[1].c[k] = {value(false), value(true)};
          const int var_len[2] = {la, n};
          const bool ok1 = base.Evaluate(vars, n, var_len);
          const bool ok2 = avx2.Evaluate(vars, n, var_len);
          ASSERT_EQ(ok1, ok2);
          const size_t bytes = sizeof(double) * static_cast<size_t>(n);
          ASSERT_EQ(std::memcmp(base.root(0).m, avx2.root(0).m, bytes), 0)
              << "la " << la << " n " << n << " trial " << trial;
          ASSERT_EQ(std::memcmp(base.root(0).r, avx2.root(0).r, bytes), 0)
              << "la " << la << " n " << n << " trial " << trial;
        }
      }
    }
  }
  EXPECT_EQ(kernels, 24 + 15);
  const taylor::PolyEtaKernel eta_avx2 = taylor::PolyEtaAvx2();
  ASSERT_TRUE(eta_avx2);
  for (int trial = 0; trial < 2000; ++trial) {
    const taylor::PolySeries e = series(taylor::kMaxLength);
    double c2[taylor::kPolyLanes], c1[taylor::kPolyLanes];
    for (int k = 0; k < taylor::kPolyLanes; ++k) c2[k] = value(false), c1[k] = value(false);
    const double cb = value(true), e0m = value(false), e0r = value(true);
    double m1[taylor::kPolyLanes], r1[taylor::kPolyLanes], m2[taylor::kPolyLanes],
        r2[taylor::kPolyLanes];
    taylor::PolyEta(e, e0m, e0r, c2, c1, cb, m1, r1);
    eta_avx2(e, e0m, e0r, c2, c1, cb, m2, r2);
    ASSERT_EQ(std::memcmp(m1, m2, sizeof m1), 0) << "trial " << trial;
    ASSERT_EQ(std::memcmp(r1, r2, sizeof r1), 0) << "trial " << trial;
  }
  const taylor::PolyCoordinateKernel coordinate_avx2 = taylor::PolyCoordinateAvx2();
  ASSERT_TRUE(coordinate_avx2);
  for (int trial = 0; trial < 2000; ++trial) {
    double W[6][6], x[6], m1[6], r1[6], m2[6], r2[6];
    for (auto& row : W)
      for (double& w : row) w = value(false);
    for (double& v : x) v = value(false);
    taylor::PolyCoordinate(W, x, m1, r1);
    coordinate_avx2(W, x, m2, r2);
    ASSERT_EQ(std::memcmp(m1, m2, sizeof m1), 0) << "trial " << trial;
    ASSERT_EQ(std::memcmp(r1, r2, sizeof r1), 0) << "trial " << trial;
  }
  // Whole steps.
  int steps = 0;
  for (const Named& c : Models()) {
    if (c.name != "circle" && c.name != "double pendulum") continue;
    SCOPED_TRACE(c.name);
    Compiled m = Compile(c.spec);
    ASSERT_TRUE(m.model);
    const Model& model = *m.model;
    const size_t nc = static_cast<size_t>(model.nc);
    DefectEncloser base(model, DefectEncloser::Path::kAuto, taylor::PolyIsa::kBaseline);
    DefectEncloser avx2(model, DefectEncloser::Path::kAuto, taylor::PolyIsa::kAvx2);
    ASSERT_EQ(base.path(), DefectEncloser::Path::kPolynomialFloat);
    for (int trial = 0; trial < 200; ++trial) {
      const double h = trial % 2 ? 1e-3 : 0.25;
      std::vector<double> x(6 * static_cast<size_t>(model.nq));
      for (double& v : x) v = unit(rng);
      const size_t nq = static_cast<size_t>(model.nq);
      const std::vector<double> running(nc, trial % 3 ? 1e300 : 0.0);
      std::vector<double> sup1(nc), sup2(nc);
      std::vector<Ball> mean1(nc), mean2(nc);
      const auto r1 =
          base.EncloseStep(model, nullptr, 0.5, h, &x[0], &x[nq], &x[2 * nq], &x[3 * nq],
                           &x[4 * nq], &x[5 * nq], running.data(), sup1.data(), mean1.data());
      const auto r2 =
          avx2.EncloseStep(model, nullptr, 0.5, h, &x[0], &x[nq], &x[2 * nq], &x[3 * nq],
                           &x[4 * nq], &x[5 * nq], running.data(), sup2.data(), mean2.data());
      ASSERT_EQ(r1.pieces, r2.pieces);
      ASSERT_EQ(std::memcmp(sup1.data(), sup2.data(), nc * sizeof(double)), 0) << trial;
      ASSERT_EQ(std::memcmp(mean1.data(), mean2.data(), nc * sizeof(Ball)), 0) << trial;
      ++steps;
    }
  }
  EXPECT_EQ(steps, 2 * 200);
}

// A step whose defect is mostly the tail: x(theta) = (theta - 1/2)^3 (the
// quintic Hermite data of a cubic reproduce it), y = 1, h = 1, alpha = 0,
// beta = 100 on the circle: e = (theta - 1/2)^6 / 2 and
// eta = 15 s^4 + 5000 s^6 (s = theta - 1/2), largest at the ends,
// 15/16 + 5000/64. Unsplit, the polynomial part (eta_4) is 15/16 at most
// twice over and the tail must count 5000 rho^6 in full (rho = 1/2): with
// rho^7 (a factor rho short) the bound falls below the defect.
TEST(EnclosedCertificateTest, ATailDominatedStepIsCoveredOnEveryPath) {
  using Path = DefectEncloser::Path;
  Compiled m = Compile(testing::CirclePendulum(0, 100, "RK4", 1.0));
  ASSERT_TRUE(m.model);
  const Model& model = *m.model;
  StepSampler s(model, *m.ws);
  v1::Frame f0, f1;
  f0.set_t(0);
  f1.set_t(1);
  for (double v : {-0.125, 1.0}) f0.add_q(v);
  for (double v : {0.75, 0.0}) f0.add_v(v);
  for (double v : {-3.0, 0.0}) f0.add_a(v);
  for (double v : {0.125, 1.0}) f1.add_q(v);
  for (double v : {0.75, 0.0}) f1.add_v(v);
  for (double v : {3.0, 0.0}) f1.add_a(v);
  const double exact = 15.0 / 16 + 5000.0 / 64;
  double largest = 0;
  for (int j = 0; j <= 1000; ++j)
    largest = std::max(largest, std::fabs(s.Eta(s.At(f0, f1, 1, j / 1000.0), 0)));
  EXPECT_NEAR(largest, exact, 1e-9);
  for (Path force : {Path::kGeneral, Path::kPolynomialBall, Path::kAuto}) {
    DefectEncloser enc(model, force);
    const double running = 1e300;  // no splitting
    double sup = 0;
    const DefectEncloser::StepResult r =
        enc.EncloseStep(model, nullptr, 0, 1, f0.q().data(), f0.v().data(), f0.a().data(),
                        f1.q().data(), f1.v().data(), f1.a().data(), &running, &sup);
    EXPECT_EQ(r.pieces, 1);
    EXPECT_GE(sup, exact) << "path " << static_cast<int>(enc.path());
    if (force != Path::kGeneral) {
      EXPECT_LE(sup, 1.05 * exact) << "path " << static_cast<int>(enc.path());
    }
  }
}

// ---------------------------------------------------------------------------
// The polynomial path's pieces.

TEST(TaylorTest, PolynomialDegreesAlongTheQuintic) {
  struct Case {
    const char* text;
    int degree;  // of the root, x and y of degree 5
  };
  const Case cases[] = {{"(x^2 + y^2 - 1)/2", 10},
                        {"((x - y)^2 + (y - 1)^2 - 1)/2", 10},
                        {"x*y/3", 10},
                        {"-x + 2", 5},
                        {"x^3 - x", 15},
                        {"x^0.5", taylor::kNotPolynomial},
                        {"x^(-1)", taylor::kNotPolynomial},
                        {"1/x", taylor::kNotPolynomial},
                        {"x/y", taylor::kNotPolynomial},
                        {"sin(x)", taylor::kNotPolynomial},
                        {"abs(x)", taylor::kNotPolynomial},
                        {"min(x, y) + 1", taylor::kNotPolynomial},
                        {"x^y", taylor::kNotPolynomial}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    expr::Graph g;
    auto node = ParseXY(&g, c.text);
    ASSERT_TRUE(node.has_value());
    const std::vector<expr::NodeId> roots{*node};
    const expr::Subgraph p = expr::Subgraph::Build(g, roots);
    const std::vector<int> degree = taylor::PolynomialDegrees(p, std::vector<int>{5, 5});
    EXPECT_EQ(degree[static_cast<size_t>(p.roots[0])], c.degree);
    const std::vector<int> len{6, 6};
    EXPECT_EQ(taylor::PolyEvaluator::Supports(p, len), c.degree >= 0 && c.degree <= 10);
  }
  // A function of variables of degree 0 (inputs) is of degree 0.
  expr::Graph g;
  auto node = ParseXY(&g, "x^2 + cos(y)");
  ASSERT_TRUE(node.has_value());
  const std::vector<expr::NodeId> roots{*node};
  const expr::Subgraph p = expr::Subgraph::Build(g, roots);
  EXPECT_EQ(taylor::PolynomialDegrees(p, std::vector<int>{5, 0})[static_cast<size_t>(p.roots[0])],
            10);
  EXPECT_FALSE(taylor::PolyEvaluator::Supports(p, std::vector<int>{6, 1}));
}

// PolyEvaluator against the exact coefficients (binary128 series arithmetic
// on inputs anywhere in their balls): |x_k - m_k| <= r_k for every
// coefficient, with cancellation (x and y close), magnitudes from 2^-560
// (products underflow) to 2^46, and useful (r_k within 1e-13 of the
// magnitudes' evaluation, sum |terms|, plus underflow's share).
TEST(TaylorTest, PolyEvaluatorBallsContainTheExactCoefficients) {
  // Inputs of 3 coefficients (quadratics: every product fits), and of 6
  // (quintics: the squares of the models' distance constraints,
  // PolySquareT<6>).
  const std::pair<const char*, int> cases[] = {
      {"(x^2 + y^2 - 1)/2", 3}, {"((x - y)^2 - 0.25)/3", 3},        {"x*y/3 - x", 3},
      {"-(x^3) + 2*x*y", 3},    {"(x - y)*(x + y) - x^2 + y^2", 3}, {"x^2 * y^2", 3},
      {"(x^2 + y^2 - 1)/2", 6}, {"((x - y)^2 + y*y - 0.25)/3", 6}};
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(-1, 1);
  int checked = 0;
  for (auto [text, len] : cases) {
    SCOPED_TRACE(std::string(text) + " with inputs of length " + std::to_string(len));
    expr::Graph g;
    auto node = ParseXY(&g, text);
    ASSERT_TRUE(node.has_value());
    const std::vector<expr::NodeId> roots{*node};
    const expr::Subgraph p = expr::Subgraph::Build(g, roots);
    const std::vector<int> var_len{len, len};
    ASSERT_TRUE(taylor::PolyEvaluator::Supports(p, var_len));
    taylor::PolyEvaluator ev(p, var_len);
    // The same with an exact root factor folded out (DefectEncloser's
    // use): f times its root must enclose the same coefficients.
    taylor::PolyEvaluator folded(p, var_len, /*fold_root_factors=*/true);
    for (int trial = 0; trial < 300; ++trial) {
      const int scale = trial % 3 == 0 ? -560 : (trial % 3 == 1 ? 0 : 40) + trial % 7;
      // Exact inputs in binary128 anywhere in the input balls.
      const size_t ulen = static_cast<size_t>(len);
      std::vector<std::vector<Q>> exact(2, std::vector<Q>(ulen)),
          magnitude(2, std::vector<Q>(ulen));
      for (int v = 0; v < 2; ++v) {
        taylor::PolySeries* s = ev.var(v);
        ASSERT_NE(s, nullptr);
        for (int k = 0; k < len; ++k) {
          double m = std::ldexp(unit(rng), scale - 3 * k);
          if (v == 1 && trial % 4 == 0) m = ev.var(0)->m[k] * (1 + 1e-12);  // y close to x
          s->m[k] = m;
          s->r[k] = trial % 2 ? std::fabs(m) * 1e-15 : (trial % 5 == 0 ? 1e-310 : 0);
          const size_t vk = static_cast<size_t>(v), kk = static_cast<size_t>(k);
          exact[vk][kk] = static_cast<Q>(m) + static_cast<Q>(unit(rng)) * static_cast<Q>(s->r[k]);
          magnitude[vk][kk] = fabsq(static_cast<Q>(m)) + static_cast<Q>(s->r[k]);
        }
      }
      ev.Evaluate();
      for (int v = 0; v < 2; ++v) *folded.var(v) = *ev.var(v);
      folded.Evaluate();
      // The same program in binary128 (truncated at 11 coefficients), on
      // the exact inputs and on magnitudes (constants' absolute values, -
      // as +).
      auto run = [&](const std::vector<std::vector<Q>>& in, bool abs) {
        std::vector<std::vector<Q>> val(p.nodes.size(), std::vector<Q>(11, 0));
        auto mul = [](const std::vector<Q>& a, const std::vector<Q>& b) {
          std::vector<Q> r(11, 0);
          for (size_t i = 0; i < 11; ++i)
            for (size_t j = 0; i + j < 11; ++j) r[i + j] += a[i] * b[j];
          return r;
        };
        for (size_t id = 0; id < p.nodes.size(); ++id) {
          const expr::Subgraph::Node& nd = p.nodes[id];
          std::vector<Q>& c = val[id];
          const std::vector<Q>* a = nd.a >= 0 ? &val[static_cast<size_t>(nd.a)] : nullptr;
          const std::vector<Q>* b = nd.b >= 0 ? &val[static_cast<size_t>(nd.b)] : nullptr;
          switch (nd.op) {
            case expr::Op::kConst: c[0] = abs ? std::fabs(nd.value) : nd.value; break;
            case expr::Op::kVar:
              for (size_t k = 0; k < ulen; ++k) c[k] = in[static_cast<size_t>(nd.var)][k];
              break;
            case expr::Op::kNeg:
              for (size_t k = 0; k < 11; ++k) c[k] = abs ? (*a)[k] : -(*a)[k];
              break;
            case expr::Op::kAdd:
            case expr::Op::kSub:
              for (size_t k = 0; k < 11; ++k)
                c[k] = nd.op == expr::Op::kAdd || abs ? (*a)[k] + (*b)[k] : (*a)[k] - (*b)[k];
              break;
            case expr::Op::kMul: c = mul(*a, *b); break;
            case expr::Op::kDiv: {
              const Q d = static_cast<Q>(p.nodes[static_cast<size_t>(nd.b)].value);
              for (size_t k = 0; k < 11; ++k) c[k] = (*a)[k] / (abs ? fabsq(d) : d);
              break;
            }
            case expr::Op::kPow: {
              c = std::vector<Q>(11, 0);
              c[0] = 1;
              for (int e = 0; e < static_cast<int>(p.nodes[static_cast<size_t>(nd.b)].value); ++e)
                c = mul(c, *a);
              break;
            }
            default: ADD_FAILURE() << "unexpected operation";
          }
        }
        return val[static_cast<size_t>(p.roots[0])];
      };
      const std::vector<Q> x = run(exact, false), mag = run(magnitude, true);
      const taylor::PolySeries& r = ev.root(0);
      for (int k = 0; k < 11; ++k) {
        const size_t kk = static_cast<size_t>(k);
        const Q err = fabsq(x[kk] - static_cast<Q>(r.m[k]));
        ASSERT_LE(err, static_cast<Q>(r.r[k]))
            << "trial " << trial << " k " << k << " m " << r.m[k] << " r " << r.r[k];
        EXPECT_LE(r.r[k], 1e-13 * static_cast<double>(mag[kk]) + 1e-300)
            << "trial " << trial << " k " << k;
        if (k >= r.len) {
          ASSERT_EQ(x[kk], 0) << k;
        }
        // f (m_k + [k = 0] offset) in binary128 (exact here).
        const Q f = static_cast<Q>(folded.root_factor(0));
        const Q fm = static_cast<Q>(folded.root(0).m[k]) +
                     (k == 0 ? static_cast<Q>(folded.root_offset(0)) : 0);
        ASSERT_LE(fabsq(x[kk] - f * fm), f * static_cast<Q>(folded.root(0).r[k]))
            << "folded, trial " << trial << " k " << k;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8 * 300 * 11);
  // The factor 1/2 of "(x^2 + y^2 - 1)/2" is folded, 1/3 is not (inexact),
  // and the constant -1 under an exact factor or none.
  struct Fold {
    const char* text;
    double factor, offset;
  };
  for (auto [text, factor, offset] :
       {Fold{"(x^2 + y^2 - 1)/2", 0.5, -1}, Fold{"(x^2 + y^2 - 1)/3", 1, 0},
        Fold{"0.25*(x*y - 1)", 0.25, -1}, Fold{"-0.5*(x*y - 1)", 1, 0}, Fold{"x*y + 3", 1, 3},
        Fold{"2 + x*y", 1, 2}}) {
    expr::Graph g;
    auto node = ParseXY(&g, text);
    ASSERT_TRUE(node.has_value());
    const std::vector<expr::NodeId> roots{*node};
    const expr::Subgraph p = expr::Subgraph::Build(g, roots);
    taylor::PolyEvaluator folded(p, std::vector<int>{3, 3}, /*fold_root_factors=*/true);
    EXPECT_EQ(folded.root_factor(0), factor) << text;
    EXPECT_EQ(folded.root_offset(0), offset) << text;
  }
}

// ---------------------------------------------------------------------------
// The residual law's proven bounds.

// The free response e_hom(t) as a reference: residual_law::Homogeneous,
// except for gains overdamped by a hair, where its two exponentials cancel
// (at alpha = 10 (1 + 1e-9) it is 2e-13 off in relative terms): there
// e^{-alpha t} (e0 cosh(s t) + (w0 + alpha e0) t sinh(s t) / (s t)) in long
// double, s = sqrt(alpha^2 - beta^2), an independent form without it.
double HomogeneousReference(double al, double be, double e0, double w0, double t) {
  if (!(al > be && al - be < 1e-6 * al)) return residual_law::Homogeneous(al, be, e0, w0, t);
  const long double a = al, s = std::sqrt((a - be) * (a + be)), x = s * t;
  const long double sinhc = x == 0 ? 1.0L : std::sinh(x) / x;
  return static_cast<double>(std::exp(-a * t) * (e0 * std::cosh(x) + (w0 + a * e0) * t * sinhc));
}

TEST(ResidualLawUpperTest, BoundTheClosedFormsAndDenseSamplesTightly) {
  // Overdamped by a hair (alpha = 10 + 1e-12, 10 (1 + 1e-9)): the closed
  // form's two exponentials cancel there, and the free response's bound was
  // 1725 for a maximum of 0.0102 (1.7 at 1e-9) before it was taken in a
  // form without the cancellation.
  const std::pair<double, double> gains[] = {{10, 10},
                                             {5, 10},
                                             {20, 10},
                                             {0, 10},
                                             {10, 0},
                                             {10, 10.000001},
                                             {3, 300},
                                             {10.000000000000998, 10},
                                             {10 * (1 + 1e-9), 10}};
  for (auto [al, be] : gains) {
    for (double T : {1e-3, 0.1, 1.0, 30.0}) {
      SCOPED_TRACE("alpha " + std::to_string(al) + " beta " + std::to_string(be) + " T " +
                   std::to_string(T));
      const double gain = residual_law::DefectGain(al, be, T);
      const double gain_up = residual_law::DefectGainUpper(al, be, T);
      EXPECT_GE(gain_up, gain);
      EXPECT_LE(gain_up, gain * (1 + 1e-6) + 1e-300);
      for (auto [e0, w0] : {std::pair{1.0, 0.0}, {-0.02, 0.3}, {0.01, -2.0}, {0.0, 1e-9}}) {
        const Ball eb{e0, std::fabs(e0) * 1e-16}, wb{w0, 0};
        const double up = residual_law::MaxHomogeneousUpper(al, be, eb, wb, T);
        double sampled = 0;
        for (int j = 0; j <= 20000; ++j) {
          sampled =
              std::max(sampled, std::fabs(HomogeneousReference(al, be, e0, w0, T * j / 20000)));
        }
        EXPECT_GE(up, sampled * (1 - 1e-14));
        EXPECT_LE(up, residual_law::MaxHomogeneous(al, be, e0, w0, T) * (1 + 1e-6) + 1e-300);
        EXPECT_GE(residual_law::HomogeneousUpper(al, be, eb, wb, T),
                  std::fabs(HomogeneousReference(al, be, e0, w0, T)) * (1 - 1e-14));
      }
    }
  }
}

}  // namespace
}  // namespace tether
