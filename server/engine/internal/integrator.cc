#include "engine/internal/integrator.h"

#include <complex>

namespace tether {

const char* MethodName(Method method) {
  switch (method) {
    case v1::IntegratorSpec::EXPLICIT_EULER: return "EXPLICIT_EULER";
    case v1::IntegratorSpec::SEMI_IMPLICIT_EULER: return "SEMI_IMPLICIT_EULER";
    case v1::IntegratorSpec::RK4: return "RK4";
    case v1::IntegratorSpec::DOPRI5: return "DOPRI5";
    default: return "METHOD_UNSPECIFIED";
  }
}

int MethodOrder(Method method) {
  switch (method) {
    case v1::IntegratorSpec::RK4: return 4;
    case v1::IntegratorSpec::DOPRI5: return 5;
    default: return 1;
  }
}

Integrator::Integrator(const v1::IntegratorSpec& spec, int n)
    : method_(spec.method()),
      n_(n),
      h_(spec.step_size()),
      rtol_(spec.rtol() > 0 ? spec.rtol() : 1e-6),
      atol_(spec.atol() > 0 ? spec.atol() : 1e-9),
      max_step_(spec.max_step()),
      Qs_(static_cast<size_t>(7 * n)),
      Vs_(static_cast<size_t>(7 * n)),
      As_(static_cast<size_t>(7 * n)),
      qt_(static_cast<size_t>(n)),
      vt_(static_cast<size_t>(n)) {}

void Integrator::Dopri5Dense(double theta, double h, const double* q, const double* v,
                             const double* q1, const double* v1, double* qo,
                             double* vo) const {
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
    accel(0, &e0, &w0, &a0);
    if (method == v1::IntegratorSpec::DOPRI5) {
      double err;
      (void)integrator.Dopri5Attempt<1>(h, 0, &e0, &w0, &a0, accel, &e1, &w1, &err);
    } else {
      (void)integrator.StepFixed<1>(h, 0, &e0, &w0, &a0, accel, &e1, &w1);
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

}  // namespace tether
