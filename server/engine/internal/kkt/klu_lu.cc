#include "engine/internal/kkt/klu_lu.h"

#include <string>

#include <klu.h>

namespace tether {

struct KluLu::Impl {
  int n;
  int* Ap;  // KLU's arguments are not const; it does not write them
  int* Ai;
  bool complex;
  klu_common common;
  klu_symbolic* symbolic = nullptr;
  klu_numeric* numeric = nullptr;
  Status analyzed;  // the symbolic analysis' outcome, reported by Factor
  int64_t symbolic_bytes = 0;
};

KluLu::KluLu(int n, const int* Ap, const int* Ai, bool complex) : impl_(new Impl) {
  impl_->n = n;
  impl_->Ap = const_cast<int*>(Ap);
  impl_->Ai = const_cast<int*>(Ai);
  impl_->complex = complex;
  klu_defaults(&impl_->common);
  // The defaults otherwise: AMD ordering on the blocks of a block
  // triangular form, partial pivoting with threshold 0.001 (a diagonal
  // entry is kept if it is at least that fraction of its column's largest),
  // rows scaled by their largest entry; halt on a singular matrix.
  impl_->symbolic = klu_analyze(n, impl_->Ap, impl_->Ai, &impl_->common);
  impl_->symbolic_bytes = static_cast<int64_t>(impl_->common.memusage);
  if (impl_->symbolic == nullptr) {
    impl_->analyzed = Internal("KLU could not analyse the Newton matrix's pattern (status " +
                               std::to_string(impl_->common.status) + ")");
  }
}

KluLu::~KluLu() {
  if (impl_->numeric != nullptr) klu_free_numeric(&impl_->numeric, &impl_->common);
  if (impl_->symbolic != nullptr) klu_free_symbolic(&impl_->symbolic, &impl_->common);
  delete impl_;
}

Status KluLu::FactorValues(const double* interleaved, const char* what) {
  Impl& k = *impl_;
  if (!k.analyzed.ok()) return k.analyzed;
  if (k.numeric != nullptr) klu_free_numeric(&k.numeric, &k.common);
  double* x = const_cast<double*>(interleaved);
  k.numeric = k.complex ? klu_z_factor(k.Ap, k.Ai, x, k.symbolic, &k.common)
                        : klu_factor(k.Ap, k.Ai, x, k.symbolic, &k.common);
  if (k.numeric == nullptr) {
    if (k.common.status == KLU_SINGULAR) {
      return Aborted(std::string("the ") + what + " of the implicit step is singular");
    }
    return Aborted(std::string("KLU could not factorise the ") + what +
                   " of the implicit step (status " + std::to_string(k.common.status) + ")");
  }
  return Status::Ok();
}

Status KluLu::Factor(const double* values, const char* what) {
  if (impl_->complex) return Internal("KluLu: real values for a complex factorisation");
  return FactorValues(values, what);
}

Status KluLu::Factor(const std::complex<double>* values, const char* what) {
  if (!impl_->complex) return Internal("KluLu: complex values for a real factorisation");
  // std::complex<double> is laid out as (real, imaginary) pairs, KLU's form.
  return FactorValues(reinterpret_cast<const double*>(values), what);
}

void KluLu::Solve(double* b) {
  klu_solve(impl_->symbolic, impl_->numeric, impl_->n, 1, b, &impl_->common);
}

void KluLu::Solve(std::complex<double>* b) {
  klu_z_solve(impl_->symbolic, impl_->numeric, impl_->n, 1, reinterpret_cast<double*>(b),
              &impl_->common);
}

int64_t KluLu::heap_bytes() const {
  const Impl& k = *impl_;
  if (k.symbolic == nullptr) return k.symbolic_bytes;
  const int64_t scalar = k.complex ? 16 : 8, n = k.n;
  const double lu = k.symbolic->lnz + k.symbolic->unz + k.symbolic->nzoff;
  // Entries with their row indices; per column Lip, Uip, Llen, Ulen, Pnum,
  // Pinv, Offp, Rs; Udiag and the solve's workspace (4 n scalars).
  return k.symbolic_bytes + static_cast<int64_t>(lu) * (scalar + 4) + 9 * n * 4 + 5 * n * scalar;
}

}  // namespace tether
