#include "cli/ensemble_command.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/driver.h"
#include "cli/output.h"
#include "engine/spec_json.h"

namespace tether::cli {
namespace {

v1::EnsembleSpec ToEnsembleSpec(const Options& o) {
  v1::EnsembleSpec e;
  for (const auto& s : o.sweeps) {
    auto* sweep = e.add_sweeps();
    sweep->set_name(s.name);
    sweep->set_start(s.start);
    sweep->set_stop(s.stop);
    sweep->set_count(s.count);
  }
  for (const auto& r : o.randoms) {
    auto* d = e.add_random();
    d->set_name(r.name);
    d->set_kind(r.normal ? v1::EnsembleDistribution::NORMAL : v1::EnsembleDistribution::UNIFORM);
    d->set_a(r.a);
    d->set_b(r.b);
  }
  if (!o.randoms.empty()) e.set_random_count(o.count.value_or(1));
  e.set_seed(o.seed);
  return e;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

int EnsembleCommand(const Options& o, Backend& backend) {
  if (!o.until) return BadUsage("ensemble: --until T is required");
  if (o.count && o.randoms.empty()) return BadUsage("ensemble: --count needs --random");
  if (o.sweeps.empty() && o.randoms.empty()) {
    return BadUsage("ensemble: expected at least one --sweep or --random");
  }
  v1::SimulationSpec spec;
  if (Status s = LoadSpecFile(o.args[0], &spec); !s.ok()) {
    std::cerr << "tether: " << s.message() << "\n";
    return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
  }
  std::string format = o.format;
  if (o.output && EndsWith(*o.output, ".csv")) format = "csv";
  std::vector<std::string> value_names;
  for (const auto& s : o.sweeps) value_names.push_back(s.name);
  for (const auto& r : o.randoms) value_names.push_back(r.name);
  std::vector<std::string> coordinates(spec.system().coordinates().begin(),
                                       spec.system().coordinates().end());

  std::ofstream file;
  std::ostream* out = OpenOutput(o, &file);
  if (out == nullptr) return kExitFailure;
  auto writer = EnsembleWriter::Create(format, value_names, coordinates, out);
  if (!writer) return BadUsage("--format: expected jsonl or csv, found '" + format + "'");

  Backend::EnsemblePlan plan;
  plan.ensemble = ToEnsembleSpec(o);
  plan.until = *o.until;
  plan.certificate = o.certificate;
  plan.workers = static_cast<int>(o.workers.value_or(1));
  uint64_t instances = 0, failed = 0;
  BackendStatus s = backend.RunEnsemble(spec, plan, [&](const v1::EnsembleInstanceResult& r) {
    writer->Write(r);
    ++instances;
    if (!r.ok()) ++failed;
  });
  out->flush();
  if (!*out) {
    std::cerr << "tether: write error on " << (o.output ? *o.output : "standard output") << "\n";
    return kExitFailure;
  }
  if (!s.ok()) return ReportFailure(s);
  if (!o.quiet) {
    std::cerr << "ensemble: " << instances << " instances, " << failed << " failed, seed " << o.seed
              << "\n";
  }
  return failed > 0 ? kExitRunFailed : kExitOk;
}

}  // namespace tether::cli
