#include "cli/ensemble_command.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

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

std::string Trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::vector<std::string> SplitCommas(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(Trim(field));
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// --instances FILE.jsonl: one JSON object per instance, {"NAME": value,
// ...}, every line with the same names; parsed by protobuf's JSON parser
// (google.protobuf.Struct, the library the project uses for JSON). A
// Struct's keys come unordered, so the values are set in the names' sorted
// order.
bool ReadJsonlInstances(std::istream& in, const std::string& path, v1::EnsembleSpec* e,
                        std::vector<std::string>* names, std::string* error) {
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (Trim(line).empty()) continue;
    const std::string where = "--instances " + path + ":" + std::to_string(number);
    google::protobuf::Struct row;
    if (!google::protobuf::util::JsonStringToMessage(line, &row).ok()) {
      *error = where + ": expected a JSON object of names and numbers, found '" +
               Trim(line).substr(0, 80) + "'";
      return false;
    }
    std::vector<std::string> keys;
    for (const auto& [key, value] : row.fields()) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    if (names->empty()) *names = keys;
    if (keys != *names || keys.empty()) {
      std::string expected;
      for (const auto& n : *names) expected += (expected.empty() ? "" : ", ") + n;
      *error = where + ": expected the names of the first instance (" + expected + "), found " +
               std::to_string(keys.size()) + " names that differ";
      return false;
    }
    auto* instance = e->add_instances();
    for (const std::string& key : keys) {
      const google::protobuf::Value& value = row.fields().at(key);
      if (value.kind_case() != google::protobuf::Value::kNumberValue ||
          !std::isfinite(value.number_value())) {
        std::string found;
        (void)google::protobuf::util::MessageToJsonString(value, &found);
        *error = where + ": '" + key + "': expected a finite number, found " + found;
        return false;
      }
      auto* v = instance->add_values();
      v->set_name(key);
      v->set_value(value.number_value());
    }
  }
  if (e->instances_size() == 0) {
    *error = "--instances " + path + ": expected at least one line with an instance";
    return false;
  }
  return true;
}

// --instances FILE.csv: a header of names, then one row of finite values
// per instance, into e->instances; *names gets the header (FILE.jsonl:
// ReadJsonlInstances). An error names the file, the line and the column,
// what was found and what was expected.
bool ReadInstances(const std::string& path, v1::EnsembleSpec* e, std::vector<std::string>* names,
                   std::string* error) {
  // Bounded as a description is (a directory, a pipe or /dev/zero ends in
  // an error naming it, not in an empty file or an unbounded line).
  std::string text;
  if (Status s =
          ReadFileBounded(path, kMaxSpecJsonBytes, "a CSV or JSONL file of instances", &text);
      !s.ok()) {
    *error = "--instances " + s.message();
    return false;
  }
  std::istringstream in(text);
  if (EndsWith(path, ".jsonl")) return ReadJsonlInstances(in, path, e, names, error);
  std::string line;
  int number = 0;
  while (names->empty() && std::getline(in, line)) {
    ++number;
    if (Trim(line).empty()) continue;
    *names = SplitCommas(line);
    for (std::size_t k = 0; k < names->size(); ++k) {
      if ((*names)[k].empty()) {
        *error = "--instances " + path + ":" + std::to_string(number) + ": column " +
                 std::to_string(k + 1) + " of the header: expected a name, found nothing";
        return false;
      }
    }
  }
  if (names->empty()) {
    *error = "--instances " + path + ": expected a header of names, found an empty file";
    return false;
  }
  while (std::getline(in, line)) {
    ++number;
    if (Trim(line).empty()) continue;
    const std::vector<std::string> fields = SplitCommas(line);
    const std::string where = "--instances " + path + ":" + std::to_string(number);
    if (fields.size() != names->size()) {
      *error = where + ": expected " + std::to_string(names->size()) + " values (" +
               std::to_string(names->size()) + " names in the header), found " +
               std::to_string(fields.size());
      return false;
    }
    auto* instance = e->add_instances();
    for (std::size_t k = 0; k < fields.size(); ++k) {
      double value = 0;
      const std::string& f = fields[k];
      auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), value);
      if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || !std::isfinite(value)) {
        *error =
            where + ": column '" + (*names)[k] + "': expected a finite number, found '" + f + "'";
        return false;
      }
      auto* v = instance->add_values();
      v->set_name((*names)[k]);
      v->set_value(value);
    }
  }
  if (e->instances_size() == 0) {
    *error = "--instances " + path + ": expected at least one row of values after the header";
    return false;
  }
  return true;
}

}  // namespace

int EnsembleCommand(const Options& o, Backend& backend) {
  if (!o.until) return BadUsage("ensemble: --until T is required");
  if (o.count && o.randoms.empty()) return BadUsage("ensemble: --count needs --random");
  if (o.sweeps.empty() && o.randoms.empty() && !o.instances_file) {
    return BadUsage("ensemble: expected at least one --instances, --sweep or --random");
  }
  if (o.reduce && !o.output_interval) {
    return BadUsage("--reduce: reductions are per output time: expected --output-interval");
  }
  v1::SimulationSpec spec;
  if (Status s = LoadSpecFile(o.args[0], &spec); !s.ok()) {
    std::cerr << "tether: " << s.message() << "\n";
    return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
  }
  std::string format = o.format;
  if (o.output && EndsWith(*o.output, ".csv")) format = "csv";
  if (format == "csv" && o.output_interval) {
    return BadUsage(
        "--output-interval: frames and reductions are written in jsonl only; expected --format "
        "jsonl");
  }
  v1::EnsembleSpec ensemble = ToEnsembleSpec(o);
  std::vector<std::string> value_names;
  if (o.instances_file) {
    std::string error;
    if (!ReadInstances(*o.instances_file, &ensemble, &value_names, &error)) {
      std::cerr << "tether: " << error << "\n";
      return kExitBadInput;
    }
  }
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
  plan.ensemble = std::move(ensemble);
  plan.output_interval = o.output_interval;
  plan.reduce = o.reduce;
  v1::EnsembleReduction reduction;
  plan.until = *o.until;
  plan.certificate = o.certificate;
  plan.workers = static_cast<int>(o.workers.value_or(1));
  plan.lanes = o.lanes;
  plan.fast_functions = o.fast_functions;
  uint64_t instances = 0, failed = 0;
  BackendStatus s = backend.RunEnsemble(
      spec, plan,
      [&](const v1::EnsembleInstanceResult& r) {
        writer->Write(r);
        ++instances;
        if (!r.ok()) ++failed;
      },
      &reduction);
  // The reductions: a last jsonl line.
  if (s.ok() && o.reduce) *out << "{\"reduction\":" << ToJson(reduction) << "}\n";
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
