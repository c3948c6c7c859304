#include "cli/output.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <vector>

#include "engine/ensemble.h"
#include "engine/spec_json.h"

namespace tether::cli {

namespace {

std::string Num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

std::string Short(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// A time: three digits near t = 0, as Short; from 1000 on, enough digits to
// tell the times of a run that starts at a Unix time apart (Short printed
// t = 1e+09 .. 1e+09 for two seconds from 10^9).
std::string Time(double t) {
  if (!(std::fabs(t) >= 1000)) return Short(t);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.12g", t);
  return buf;
}

class EnsembleJsonlWriter : public EnsembleWriter {
 public:
  explicit EnsembleJsonlWriter(std::ostream* out) : out_(out) {}
  void Write(const v1::EnsembleInstanceResult& r) override {
    *out_ << EnsembleResultToJson(r) << '\n';
  }

 private:
  std::ostream* out_;
};

class EnsembleCsvWriter : public EnsembleWriter {
 public:
  EnsembleCsvWriter(const std::vector<std::string>& value_names,
                    const std::vector<std::string>& coordinates, std::ostream* out)
      : out_(out) {
    *out_ << "index";
    for (const auto& n : value_names) *out_ << "," << n;
    *out_ << ",ok,steps,t";
    for (const auto& c : coordinates) *out_ << ",q_" << c;
    for (const auto& c : coordinates) *out_ << ",v_" << c;
    *out_ << ",initial_consistent,feedback_verified,step_stable,max_position_residual,"
             "max_velocity_residual,position_bound,error,failed_step,failed_time,seed\n";
  }
  void Write(const v1::EnsembleInstanceResult& r) override {
    *out_ << r.index();
    for (const auto& v : r.values()) *out_ << "," << Num(v.value());
    const auto& s = r.final_state();
    *out_ << "," << (r.ok() ? 1 : 0) << "," << r.steps() << "," << Num(s.t());
    for (double x : s.q()) *out_ << "," << Num(x);
    for (int i = 0; i < s.q_size(); ++i) *out_ << "," << Num(i < s.v_size() ? s.v(i) : 0.0);
    const auto& c = r.certificate();
    *out_ << "," << c.initial_consistent() << "," << c.feedback_verified() << "," << c.step_stable()
          << "," << Num(c.max_position_residual()) << "," << Num(c.max_velocity_residual()) << ","
          << Num(c.position_bound()) << ",";
    // The error quoted, its quotes doubled (RFC 4180).
    *out_ << '"';
    for (char ch : r.error()) *out_ << (ch == '"' ? "\"\"" : std::string(1, ch));
    *out_ << "\"," << r.failed_step() << "," << Num(r.failed_time()) << "," << r.seed() << "\n";
  }

 private:
  std::ostream* out_;
};

class JsonlWriter : public FrameWriter {
 public:
  explicit JsonlWriter(std::ostream* out) : out_(out) {}
  void WriteFrame(const v1::Frame& frame) override { *out_ << ToJson(frame) << '\n'; }
  void WriteCertificate(const v1::Certificate& certificate) override {
    *out_ << "{\"certificate\":" << ToJson(certificate) << "}\n";
  }

 private:
  std::ostream* out_;
};

class CsvWriter : public FrameWriter {
 public:
  CsvWriter(const ColumnNames& names, std::ostream* out) : out_(out) {
    std::string h = "step,t";
    for (const auto& n : names.coordinates) h += "," + n;
    for (const auto& n : names.coordinates) h += ",v_" + n;
    for (const auto& n : names.coordinates) h += ",a_" + n;
    for (const auto& n : names.constraints) h += ",lambda_" + n;
    for (const auto& n : names.constraints) h += ",g_" + n;
    for (const auto& n : names.constraints) h += ",gdot_" + n;
    h += ",dynamics_residual,constraint_residual";
    for (const auto& n : names.outputs) h += "," + n;
    *out_ << h << '\n';
  }
  void WriteFrame(const v1::Frame& f) override {
    std::string row = std::to_string(f.step()) + "," + Num(f.t());
    for (double x : f.q()) row += "," + Num(x);
    for (double x : f.v()) row += "," + Num(x);
    for (double x : f.a()) row += "," + Num(x);
    for (double x : f.lambda()) row += "," + Num(x);
    for (double x : f.residuals().position()) row += "," + Num(x);
    for (double x : f.residuals().velocity()) row += "," + Num(x);
    row += "," + Num(f.residuals().dynamics()) + "," + Num(f.residuals().constraint());
    for (double x : f.outputs()) row += "," + Num(x);
    *out_ << row << '\n';
  }
  void WriteCertificate(const v1::Certificate&) override {}

 private:
  std::ostream* out_;
};

const char* YesNo(bool b) { return b ? "yes" : "NO "; }

}  // namespace

std::unique_ptr<EnsembleWriter> EnsembleWriter::Create(const std::string& format,
                                                       const std::vector<std::string>& value_names,
                                                       const std::vector<std::string>& coordinates,
                                                       std::ostream* out) {
  if (format == "jsonl") return std::make_unique<EnsembleJsonlWriter>(out);
  if (format == "csv") return std::make_unique<EnsembleCsvWriter>(value_names, coordinates, out);
  return nullptr;
}

std::unique_ptr<FrameWriter> FrameWriter::Create(const std::string& format,
                                                 const ColumnNames& names, std::ostream* out) {
  if (format == "jsonl") return std::make_unique<JsonlWriter>(out);
  if (format == "csv") return std::make_unique<CsvWriter>(names, out);
  return nullptr;
}

namespace {
// How many of n names a summary limited to `max` (0: no limit) shows.
int Shown(int n, uint64_t max) {
  return max == 0 || static_cast<uint64_t>(n) <= max ? n : static_cast<int>(max);
}
}  // namespace

void PrintCertificate(const v1::Certificate& c, std::ostream& out, uint64_t max_constraints) {
  out << "Residual certificate, t = " << Time(c.t_start()) << " .. " << Time(c.t_end()) << " ("
      << c.steps() << " steps)\n";
  // Without constraints there is no residual to be consistent or to damp.
  const bool constrained = c.constraints_size() > 0;
  if (constrained) {
    out << "  (a) initial state consistent     " << YesNo(c.initial_consistent())
        << "  |g| = " << Short(c.initial_position_residual())
        << ", |g'| = " << Short(c.initial_velocity_residual()) << "\n";
  } else {
    out << "  (a) initial state consistent     not applicable (no constraints)\n";
  }
  out << "  (b) feedback equation solved     " << YesNo(c.feedback_verified())
      << "  backward error " << Short(c.kkt_backward_error())
      << " x gamma_n (pass <= " << Short(c.kkt_backward_error_tolerance()) << ")";
  if (!c.worst_kkt_row().empty()) {
    out << ", worst: " << c.worst_kkt_row() << " at t = " << Time(c.worst_kkt_time());
  }
  out << "; max KKT row residual " << Short(c.max_kkt_residual()) << "\n";
  if (constrained) {
    out << "      cond_1(W) estimate " << Short(c.max_w_condition())
        << " at t = " << Time(c.worst_w_condition_time());
    if (const int n = c.worst_w_condition_constraints_size(); n > 0) {
      const int shown = Shown(n, max_constraints);
      out << " (";
      for (int i = 0; i < shown; ++i) out << (i ? ", " : "") << c.worst_w_condition_constraints(i);
      if (shown < n) out << " and " << n - shown << " more";
      out << ")";
    }
    out << (c.conditioning_warning() ? "  WARNING: ill-conditioned (>= 1e8)" : "") << "\n";
    // The margin 1 - rho is the per-step decay factor's distance from 1; it
    // is small whenever h is small. The rates say what it means.
    double rate = 0, gains = 0, ratio = HUGE_VAL;
    for (const auto& k : c.constraints()) {
      if (k.gains_decay_rate() > 0 && k.residual_decay_rate() / k.gains_decay_rate() < ratio) {
        ratio = k.residual_decay_rate() / k.gains_decay_rate();
        rate = k.residual_decay_rate();
        gains = k.gains_decay_rate();
      }
    }
    out << "  (c) step stable for the gains    " << YesNo(c.step_stable()) << "  margin "
        << Short(c.stability_margin()) << " per step of " << Short(c.max_step_size());
    if (std::isfinite(ratio)) {
      out << ": residual decays at " << Short(rate) << "/s, the gains' own rate " << Short(gains)
          << "/s";
    }
    out << " (linear test-system diagnostic)\n";
  } else {
    out << "  (c) step stable for the gains    not applicable (no constraints)\n";
  }
  out << "  (d) residuals over every step         max |g| = " << Short(c.max_position_residual())
      << ", max |g'| = " << Short(c.max_velocity_residual()) << "\n";
  if (!c.worst_local_error_coordinate().empty()) {
    out << "  accuracy estimate: local error about " << Short(c.max_local_error_estimate())
        << " in '" << c.worst_local_error_coordinate()
        << "' at t = " << Time(c.worst_local_error_time())
        << " (the dynamics' defect at 2/5 of a step)\n";
  }
  if (!c.worst_method_error_coordinate().empty()) {
    // An adaptive method's error control (its scaled norm beside it), or a
    // fixed-step method's step doubling (no norm: no tolerances).
    out << "  method's own estimate: local error about " << Short(c.max_method_error_estimate())
        << " in '" << c.worst_method_error_coordinate()
        << "' in the step from t = " << Time(c.worst_method_error_time());
    if (c.max_method_error_norm() > 0) {
      out << " (error control's scaled norm <= " << Short(c.max_method_error_norm()) << ")";
    }
    out << "\n";
  }
  if (!c.accuracy_warning().empty()) out << "  WARNING: " << c.accuracy_warning() << "\n";
  if (!constrained) return;
  out << "  bound: |g(t)| <= " << Short(c.position_bound())
      << " on the window, <= " << Short(c.final_position_bound()) << " at t_end; defect sup "
      << Short(c.defect_bound());
  if (c.mode() == v1::CertificateOptions::ENCLOSED) {
    out << " enclosed over every step (" << c.enclosure_pieces() << " pieces; proven for the "
        << "interpolated trajectory)\n";
    if (c.unenclosed_steps()) {
      out << "  not enclosed: " << c.unenclosed_steps()
          << " steps, the first at t = " << Time(c.first_unenclosed_time())
          << " (a non-smooth point crossed, a singularity or an overflow): no bound is claimed\n";
    }
  } else {
    out << " over " << c.defect_samples() << " samples (sampled)\n";
    if (c.refuted_bounds_size()) {
      out << "  REFUTED for " << c.refuted_bounds_size() << " of " << c.constraints_size()
          << " constraints (the first: '" << c.refuted_bounds(0)
          << "'): a residual measured at a step's end exceeds the sampled bound: the samples "
             "missed the defect (aliasing with the step, or a non-smooth point crossed), so no "
             "bound is claimed there; ENCLOSED encloses every step\n";
    }
  }
  // The constraints with the largest bounds first (then the largest
  // residuals; ties in description order).
  std::vector<int> order(static_cast<size_t>(c.constraints_size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    const auto &a = c.constraints(x), &b = c.constraints(y);
    if (a.position_bound() != b.position_bound()) return a.position_bound() > b.position_bound();
    return a.max_position_residual() > b.max_position_residual();
  });
  const int shown = Shown(c.constraints_size(), max_constraints);
  if (shown < c.constraints_size()) {
    out << "  the " << shown << " largest bounds of " << c.constraints_size()
        << " constraints (--constraints all lists every one):\n";
  }
  for (int i = 0; i < shown; ++i) {
    const auto& k = c.constraints(order[static_cast<size_t>(i)]);
    out << "    " << k.name() << " (alpha " << Short(k.alpha()) << ", beta " << Short(k.beta())
        << "): max |g| " << Short(k.max_position_residual());
    if (k.bound_refuted()) {
      // Refuted: the sampled form it came from, not a bound.
      const double sampled =
          std::min(k.supremum_position_bound(), k.convolution_position_bound() > 0
                                                    ? k.convolution_position_bound()
                                                    : k.supremum_position_bound());
      out << ", above its sampled bound " << Short(sampled) << " (refuted); spectral radius "
          << Short(k.spectral_radius()) << "\n";
      continue;
    }
    out << " <= bound " << Short(k.position_bound()) << " = free response "
        << Short(k.homogeneous_bound());
    if (k.position_bound() < k.supremum_position_bound()) {
      // The convolution form (docs/MATH.md section 10.2).
      out << " + step-mean defect " << Short(k.step_mean_defect_bound()) << " x gain "
          << Short(k.defect_gain()) << " + deviations up to " << Short(k.defect_deviation_bound())
          << " (sup form: " << Short(k.supremum_position_bound()) << ")";
    } else {
      out << " + defect " << Short(k.defect_bound()) << " x gain " << Short(k.defect_gain());
    }
    out << "; spectral radius " << Short(k.spectral_radius()) << "\n";
  }
  for (const auto& j : c.defect_jumps()) {
    out << "  defect jump x" << Short(j.jump_factor()) << " on '" << j.constraint()
        << "' in t = " << Time(j.t_start()) << " .. " << Time(j.t_end())
        << " (a non-smooth point crossed?)\n";
  }
}

void PrintValidationReport(const v1::ValidationReport& report, std::ostream& out) {
  int errors = 0, warnings = 0;
  for (const auto& d : report.diagnostics()) {
    const bool error = d.severity() == v1::Diagnostic::ERROR;
    (error ? errors : warnings)++;
    out << (error ? "error: " : "warning: ") << d.field() << ": " << d.message() << "\n";
  }
  if (!report.valid()) {
    out << "invalid: " << errors << (errors == 1 ? " error" : " errors") << ", " << warnings
        << (warnings == 1 ? " warning" : " warnings") << "\n";
    return;
  }
  out << "valid (" << warnings << (warnings == 1 ? " warning" : " warnings") << ")\n";
  // The initial evaluation has one position residual per constraint.
  if (report.initial().residuals().position_size() == 0) {
    out << "  (a) initial state consistent   not applicable (no constraints)\n";
    out << "  (c) step stable for the gains  not applicable (no constraints)\n";
  } else {
    out << "  (a) initial state consistent   " << YesNo(report.initial_consistent())
        << "  |g| = " << Short(report.initial_position_residual())
        << ", |g'| = " << Short(report.initial_velocity_residual()) << "\n";
    out << "  (c) step stable for the gains  " << YesNo(report.step_stable()) << "  margin "
        << Short(report.stability_margin()) << " (1 - spectral radius, per step)\n";
  }
  out << "  initial evaluation: " << ToJson(report.initial()) << "\n";
}

void Progress::Update(double position) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  double f = end_ > start_ ? (position - start_) / (end_ - start_) : 0;
  f = std::clamp(f, 0.0, 1.0);
  int filled = static_cast<int>(f * 40);
  std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%", filled, "########################################",
               40 - filled, "", 100 * f);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::Done() {
  if (drawn_) std::fprintf(stderr, "\r%*s\r", 60, "");
}

}  // namespace tether::cli
