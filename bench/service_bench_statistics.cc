#include "service_bench_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace tether::service_bench {

double Median(std::vector<double> xs) {
  if (xs.empty()) return NAN;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

double Percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return NAN;
  std::sort(xs.begin(), xs.end());
  size_t i = static_cast<size_t>(std::llround(p * static_cast<double>(xs.size() - 1)));
  return xs[std::min(i, xs.size() - 1)];
}

double Mean(const std::vector<double>& xs) {
  if (xs.empty()) return NAN;
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

std::string Si(double x) {
  char buf[32];
  if (!std::isfinite(x)) return "n/a";
  if (x >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.3gM", x / 1e6);
  } else if (x >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.3gk", x / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", x);
  }
  return buf;
}

std::string Fmt(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

}  // namespace tether::service_bench
