#include "engine/internal/integrate/integrator.h"

#include <algorithm>
#include <array>
#include <complex>
#include <iterator>

#include "engine/integration_methods.h"
#include "engine/internal/base/heap_bytes.h"

namespace tether {

namespace {
// Stage vectors to allocate: the method's own, and at least the 2 that
// InitialStep (As_ + n) and ResidualTestUpdate use.
int ScratchStages(Method method) {
  const MethodDescriptor* d = FindMethod(method);
  return std::max(2, d ? d->scratch_stages : 0);
}

bool IsRadau(Method method) { return method == v1::IntegratorSpec::RADAU_IIA; }

// Newton residual and correction vectors (n doubles each) of an implicit
// method: SDIRK3's r and z; RADAU_IIA's residuals F (3), correction dA (3),
// and W1 with the two scales.
size_t NewtonVectors(Method method, bool residual) {
  const MethodDescriptor* d = FindMethod(method);
  if (d == nullptr || !d->implicit) return 0;
  if (IsRadau(method)) return residual ? 6 : 3;
  return 1;
}

double NewtonTolerance(const v1::IntegratorSpec& spec) {
  if (spec.newton_tolerance() > 0) return spec.newton_tolerance();
  if (!IsRadau(spec.method())) return 1e-10;
  // RADAU5's default: a fraction of the error tolerance.
  const double rtol = spec.rtol() > 0 ? spec.rtol() : 1e-6;
  return std::max(10 * std::numeric_limits<double>::epsilon() / rtol,
                  std::min(0.03, std::sqrt(rtol)));
}
}  // namespace

namespace rk4 {
void Stage(int n, double c, const double* q, const double* v, const double* dq, const double* dv,
           double* __restrict Q, double* __restrict V) {
  for (int i = 0; i < n; ++i) {
    Q[i] = q[i] + c * dq[i];
    V[i] = v[i] + c * dv[i];
  }
}
void Combine(int n, double h6, const double* q, const double* v, const double* a0, const double* V2,
             const double* V3, const double* V4, const double* A2, const double* A3,
             const double* A4, double* __restrict q1, double* __restrict v1) {
  for (int i = 0; i < n; ++i) {
    q1[i] = q[i] + h6 * (v[i] + 2 * V2[i] + 2 * V3[i] + V4[i]);
    v1[i] = v[i] + h6 * (a0[i] + 2 * A2[i] + 2 * A3[i] + A4[i]);
  }
}
}  // namespace rk4

const std::string& MethodName(Method method) { return v1::IntegratorSpec::Method_Name(method); }

int MethodOrder(Method method) {
  const MethodDescriptor* d = FindMethod(method);
  return d ? d->order : 0;
}

std::string AdaptiveStepProblem(double t, double max_step) {
  const double least = 64 * AdaptiveMinStep(t);
  if (!(max_step > 0) || max_step >= least) return "";
  return "the adaptive methods' first step from t = " + FormatNumber(t) + " is at least " +
         FormatNumber(least) +
         " (64 x 16 ulps of max(1, |t|)), above max_step = " + FormatNumber(max_step) +
         ": no step can be taken (expected max_step >= " + FormatNumber(least) +
         ", or a time nearer the origin)";
}

std::string AdaptiveTimeResolutionNote(double t, double h_min) {
  if (!(h_min > 1e3 * AdaptiveMinStep(0))) return "";
  return "; at t = " + FormatNumber(t) + " no step is shorter than " + FormatNumber(h_min) +
         " (16 ulps of t: doubles near it are " +
         FormatNumber(std::nextafter(std::fabs(t), std::numeric_limits<double>::infinity()) -
                      std::fabs(t)) +
         " apart), which may be what the tolerances cannot meet: measure time from a nearer origin";
}

std::string GridResolutionProblem(double t, double h) {
  const double gap =
      std::nextafter(std::fabs(t), std::numeric_limits<double>::infinity()) - std::fabs(t);
  const double limit = h / 16 / (8 * std::numeric_limits<double>::epsilon());
  return "the time t = " + FormatNumber(t) +
         " is too large for the step size h = " + FormatNumber(h) + ": doubles near it are " +
         FormatNumber(gap) +
         " apart, so the fixed-step grid cannot place steps of h (expected |t| <= " +
         FormatNumber(limit) + " for this h); measure time from a nearer origin";
}

const std::string& MethodList() {
  static const std::string list = [] {
    std::string out;
    for (const MethodDescriptor& d : kMethods) {
      if (!out.empty()) out += ", ";
      out += MethodName(d.method);
    }
    return out;
  }();
  return list;
}

std::span<const IntegrationMethod> IntegrationMethods() {
  static const auto methods = [] {
    std::array<IntegrationMethod, std::size(kMethods)> out{};
    for (std::size_t i = 0; i < out.size(); ++i) {
      const MethodDescriptor& d = kMethods[i];
      out[i] = {d.method, MethodName(d.method), d.order, d.adaptive, d.implicit};
    }
    return out;
  }();
  return methods;
}

Integrator::Integrator(const v1::IntegratorSpec& spec, int n)
    : method_(spec.method()),
      descriptor_(FindMethod(spec.method())),
      n_(n),
      h_(spec.step_size()),
      rtol_(spec.rtol() > 0 ? spec.rtol() : 1e-6),
      atol_(spec.atol() > 0 ? spec.atol() : 1e-9),
      max_step_(spec.max_step()),
      newton_tol_(NewtonTolerance(spec)),
      newton_max_iter_(
          spec.max_newton_iterations() > 0 ? static_cast<int>(spec.max_newton_iterations()) : 10),
      Qs_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      Vs_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      As_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      qt_(static_cast<size_t>(n)),
      vt_(static_cast<size_t>(n)),
      rn_(NewtonVectors(spec.method(), true) * static_cast<size_t>(n)),
      zn_(NewtonVectors(spec.method(), false) * static_cast<size_t>(n)),
      cn_(IsRadau(spec.method()) ? 2 * static_cast<size_t>(n) : 0) {}

void Integrator::DenseOutput(double theta, double h, const double* q, const double* v,
                             const double* q1, const double* v1, double* qo, double* vo) const {
  if (IsRadau(method_)) {
    RadauDense(theta, q, v, qo, vo);
  } else {
    Dopri5Dense(theta, h, q, v, q1, v1, qo, vo);
  }
}

// The collocation polynomials: degree 3 through (0, y0) and (c_i, Y_i), in
// Lagrange form on the nodes 0, c1, c2, 1 (Y_3 is the new state).
void Integrator::RadauDense(double theta, const double* q, const double* v, double* qo,
                            double* vo) const {
  const int n = n_;
  const double* c = radau_iia::c;
  const double nodes[4] = {0, c[0], c[1], c[2]};
  double w[4];
  for (int k = 0; k < 4; ++k) {
    double l = 1;
    for (int j = 0; j < 4; ++j) {
      if (j != k) l *= (theta - nodes[j]) / (nodes[k] - nodes[j]);
    }
    w[k] = l;
  }
  const double* Q = Qs_.data();
  const double* V = Vs_.data();
  for (int i = 0; i < n; ++i) {
    qo[i] = w[0] * q[i] + w[1] * Q[i] + w[2] * Q[n + i] + w[3] * Q[2 * n + i];
    vo[i] = w[0] * v[i] + w[1] * V[i] + w[2] * V[n + i] + w[3] * V[2 * n + i];
  }
}

void Integrator::Dopri5Dense(double theta, double h, const double* q, const double* v,
                             const double* q1, const double* v1, double* qo, double* vo) const {
  const int n = n_;
  const double* V = Vs_.data();
  const double* A = As_.data();
  const double th1 = 1 - theta;
  auto interpolate = [&](double y0, double y1, const double* K, int i) {
    double dense = 0;
    for (int j = 0; j < 7; ++j) dense += dopri5::d[j] * K[j * n + i];
    const double r2 = y1 - y0;
    const double r3 = h * K[i] - r2;
    const double r4 = r2 - h * K[6 * n + i] - r3;
    const double r5 = h * dense;
    return y0 + theta * (r2 + th1 * (r3 + theta * (r4 + th1 * r5)));
  };
  for (int i = 0; i < n; ++i) {
    qo[i] = interpolate(q[i], q1[i], V, i);
    vo[i] = interpolate(v[i], v1[i], A, i);
  }
}

namespace {
// The residual test system (e, w)' = (w, -beta^2 e - 2 alpha w) as an accel,
// with the Newton seams of the implicit methods (its Jacobian is exact:
// I - c1 da/dw - c2 da/de = 1 + 2 alpha c1 + beta^2 c2, and the same with
// RADAU_IIA's complex d1, d2).
struct TestSystemAccel {
  double alpha, beta, newton = 1;
  std::complex<double> complex_newton = 1;
  Status operator()(double, const double* e, const double* w, double* a) const {
    a[0] = -beta * beta * e[0] - 2 * alpha * w[0];
    return Status::Ok();
  }
  Status PrepareNewton(double, const double*, const double*, double c1, double c2) {
    newton = 1 + 2 * alpha * c1 + beta * beta * c2;
    return Status::Ok();
  }
  Status SolveNewton(const double* r, double* z) const {
    z[0] = -r[0] / newton;
    return Status::Ok();
  }
  Status PrepareNewtonPair(double t, const double* e, const double* w, double c1, double c2,
                           std::complex<double> d1, std::complex<double> d2) {
    complex_newton = 1.0 + 2 * alpha * d1 + beta * beta * d2;
    return PrepareNewton(t, e, w, c1, c2);
  }
  Status SolveNewtonComplex(const std::complex<double>* r, std::complex<double>* z) const {
    z[0] = -r[0] / complex_newton;
    return Status::Ok();
  }
};
}  // namespace

void ResidualLawMap(double alpha, double beta, double h, double phi[2][2]) {
  // exp(hA) = E I + S (A + alpha I), A + alpha I = [[alpha, 1], [-beta^2,
  // -alpha]], from the roots -alpha +- s of x^2 + 2 alpha x + beta^2, s^2 =
  // alpha^2 - beta^2: E = e^(-alpha h) cosh(s h), S = e^(-alpha h) sinh(s h)
  // / s (cos, sin / mu for s = i mu; 1, h at s = 0).
  const double q = (alpha - beta) * (alpha + beta);
  double E, S;
  if (q < 0) {
    const double mu = std::sqrt(-q), decay = std::exp(-alpha * h);
    E = decay * std::cos(mu * h);
    S = decay * std::sin(mu * h) / mu;
  } else if (q == 0) {
    E = std::exp(-alpha * h);
    S = h * E;
  } else {
    const double s = std::sqrt(q);
    if (s * h < 0.5) {
      const double decay = std::exp(-alpha * h);
      E = decay * std::cosh(s * h);
      S = decay * std::sinh(s * h) / s;
    } else {
      // The roots r1 = -beta^2 / (alpha + s) (= -alpha + s without
      // cancellation) and r2 = -alpha - s, each exponential alone: no
      // e^(alpha h) overflow against an underflowing e^(-alpha h).
      const double r1 = -(beta * beta) / (alpha + s), r2 = -alpha - s;
      const double e1 = std::exp(r1 * h), e2 = std::exp(r2 * h);
      E = 0.5 * (e1 + e2);
      S = -e1 * std::expm1(-2 * s * h) / (2 * s);  // (e1 - e2) / (2 s)
    }
  }
  phi[0][0] = E + alpha * S;
  phi[0][1] = S;
  phi[1][0] = -beta * beta * S;
  phi[1][1] = E - alpha * S;
}

TestSystemUpdate ResidualTestUpdate(Method method, double h, double alpha, double beta) {
  TestSystemUpdate out{};
  const MethodDescriptor* descriptor = FindMethod(method);
  if (descriptor && descriptor->post_stabilized) {
    // The step ends on the law's map itself: RK4 without the feedback moves
    // (e, w) of the test system to (e + h w, w), and the end is then put at
    // Phi(h) (e, w).
    ResidualLawMap(alpha, beta, h, out.R);
  } else {
    out = ResidualTestUpdateOfStep(method, h, alpha, beta);
  }
  const double tr = out.R[0][0] + out.R[1][1];
  const double det = out.R[0][0] * out.R[1][1] - out.R[0][1] * out.R[1][0];
  const std::complex<double> disc = std::sqrt(std::complex<double>(tr * tr / 4 - det, 0));
  const std::complex<double> l1 = tr / 2 + disc, l2 = tr / 2 - disc;
  out.spectral_radius = std::max(std::abs(l1), std::abs(l2));
  return out;
}

TestSystemUpdate ResidualTestUpdateOfStep(Method method, double h, double alpha, double beta) {
  v1::IntegratorSpec spec;
  spec.set_method(method);
  spec.set_step_size(h);
  Integrator integrator(spec, 1);
  TestSystemAccel accel{alpha, beta};
  TestSystemUpdate out{};
  for (int col = 0; col < 2; ++col) {
    double e0 = col == 0 ? 1 : 0, w0 = col == 1 ? 1 : 0, a0 = 0, e1 = 0, w1 = 0;
    (void)accel(0, &e0, &w0, &a0);  // cannot fail
    double err = 0;
    // One attempt of any method (the adaptive ones' error is not needed).
    // The test system's accel cannot fail; an implicit method's Newton
    // iteration can only on overflow (h times the gains), where the update
    // is not a finite matrix.
    if (!integrator.Attempt<1>(h, 0, &e0, &w0, &a0, accel, &e1, &w1, &err).ok()) {
      e1 = w1 = std::numeric_limits<double>::quiet_NaN();
    }
    out.R[0][col] = e1;
    out.R[1][col] = w1;
  }
  return out;  // the spectral radius: ResidualTestUpdate's
}

void Integrator::EnableStepDoubling() {
  if (!adaptive() && qd_.empty()) qd_.assign(5 * static_cast<size_t>(n_), 0.0);
}

int64_t Integrator::heap_bytes() const {
  return HeapBytesOf(Qs_, Vs_, As_, qt_, vt_, rn_, zn_, cn_, qd_);
}

}  // namespace tether
