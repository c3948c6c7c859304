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
      newton_tol_(spec.newton_tolerance() > 0 ? spec.newton_tolerance() : 1e-10),
      newton_max_iter_(
          spec.max_newton_iterations() > 0 ? static_cast<int>(spec.max_newton_iterations()) : 10),
      Qs_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      Vs_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      As_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      qt_(static_cast<size_t>(n)),
      vt_(static_cast<size_t>(n)),
      rn_(FindMethod(spec.method()) && FindMethod(spec.method())->implicit ? static_cast<size_t>(n)
                                                                           : 0),
      zn_(rn_.size()) {}

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
// with the Newton seam of the implicit methods (its Jacobian is exact:
// I - c1 da/dw - c2 da/de = 1 + 2 alpha c1 + beta^2 c2).
struct TestSystemAccel {
  double alpha, beta, newton = 1;
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
};
}  // namespace

TestSystemUpdate ResidualTestUpdate(Method method, double h, double alpha, double beta) {
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
  // Eigenvalues of a real 2x2 matrix.
  const double tr = out.R[0][0] + out.R[1][1];
  const double det = out.R[0][0] * out.R[1][1] - out.R[0][1] * out.R[1][0];
  const std::complex<double> disc = std::sqrt(std::complex<double>(tr * tr / 4 - det, 0));
  const std::complex<double> l1 = tr / 2 + disc, l2 = tr / 2 - disc;
  out.spectral_radius = std::max(std::abs(l1), std::abs(l2));
  return out;
}

int64_t Integrator::heap_bytes() const { return HeapBytesOf(Qs_, Vs_, As_, qt_, vt_, rn_, zn_); }

}  // namespace tether
