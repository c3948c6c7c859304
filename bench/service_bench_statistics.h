// Summary statistics and number formatting for the service benchmark's
// table. Empty inputs give NAN.
#pragma once

#include <string>
#include <vector>

namespace tether::service_bench {

double Median(std::vector<double> xs);
// The p-quantile (0 <= p <= 1) by nearest rank.
double Percentile(std::vector<double> xs, double p);
double Mean(const std::vector<double>& xs);
// 1234567 -> "1.23M", 12345 -> "12.3k"; "n/a" when not finite.
std::string Si(double x);
// snprintf of one double.
std::string Fmt(const char* fmt, double x);

}  // namespace tether::service_bench
