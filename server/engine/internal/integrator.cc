#include "engine/internal/integrator.h"

#include <algorithm>
#include <complex>

namespace tether {

namespace {
// Stage vectors to allocate: the method's own, and at least the 2 that
// InitialStep (As_ + n) and ResidualTestUpdate use.
int ScratchStages(Method method) {
  const MethodDescriptor* d = FindMethod(method);
  return std::max(2, d ? d->scratch_stages : 0);
}
}  // namespace

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

Integrator::Integrator(const v1::IntegratorSpec& spec, int n)
    : method_(spec.method()),
      descriptor_(FindMethod(spec.method())),
      n_(n),
      h_(spec.step_size()),
      rtol_(spec.rtol() > 0 ? spec.rtol() : 1e-6),
      atol_(spec.atol() > 0 ? spec.atol() : 1e-9),
      max_step_(spec.max_step()),
      Qs_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      Vs_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      As_(static_cast<size_t>(ScratchStages(spec.method()) * n)),
      qt_(static_cast<size_t>(n)),
      vt_(static_cast<size_t>(n)) {}

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

TestSystemUpdate ResidualTestUpdate(Method method, double h, double alpha, double beta) {
  v1::IntegratorSpec spec;
  spec.set_method(method);
  spec.set_step_size(h);
  Integrator integrator(spec, 1);
  auto accel = [&](double, const double* e, const double* w, double* a) {
    a[0] = -beta * beta * e[0] - 2 * alpha * w[0];
    return Status::Ok();
  };
  TestSystemUpdate out{};
  for (int col = 0; col < 2; ++col) {
    double e0 = col == 0 ? 1 : 0, w0 = col == 1 ? 1 : 0, a0 = 0, e1 = 0, w1 = 0;
    (void)accel(0, &e0, &w0, &a0);  // cannot fail
    double err = 0;
    // One attempt of any method (the adaptive ones' error is not needed);
    // the test system's accel cannot fail.
    (void)integrator.Attempt<1>(h, 0, &e0, &w0, &a0, accel, &e1, &w1, &err);
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

}  // namespace tether
