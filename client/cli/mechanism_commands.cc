#include "cli/mechanism_commands.h"

#include <fstream>
#include <iostream>

#include <google/protobuf/util/json_util.h>

#include "engine/mechanism.h"
#include "engine/spec_json.h"
#include "urdf/urdf_import.h"

namespace tether::cli {

namespace {

// Indented protobuf JSON.
std::string PrettyJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = false;
  if (!google::protobuf::util::MessageToJsonString(m, &out, opts).ok()) return ToJson(m);
  return out;
}

int Write(const Options& o, const std::string& text) {
  if (o.output) {
    std::ofstream f(*o.output, std::ios::binary);
    f << text;
    f.close();
    if (!f) {
      std::cerr << "tether: cannot write " << *o.output << "\n";
      return kExitFailure;
    }
    return kExitOk;
  }
  std::cout << text;
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "tether: write error on standard output\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int UrdfCommand(const Options& o) {
  urdf::Import imp;
  if (Status s = urdf::ImportUrdfFile(o.args[0], &imp); !s.ok()) {
    std::cerr << "tether urdf: " << s.message() << "\n";
    return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
  }
  if (!o.quiet) {
    for (const auto& w : imp.warnings) std::cerr << "tether urdf: " << w << "\n";
    std::cerr << "tether urdf: robot " << QuoteForMessage(imp.robot_name) << ": "
              << imp.spec.system().mechanism().bodies_size() << " links, "
              << imp.spec.system().mechanism().joints_size() << " joints, "
              << imp.spec.initial().q_size() << " coordinates\n";
  }
  return Write(o, PrettyJson(imp.spec));
}

int ExpandCommand(const Options& o) {
  v1::SimulationSpec spec;
  if (Status s = LoadSpecFile(o.args[0], &spec); !s.ok()) {
    std::cerr << "tether expand: " << s.message() << "\n";
    for (const auto& v : s.violations())
      std::cerr << "  " << v.field << ": " << v.description << "\n";
    return s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
  }
  std::vector<v1::Diagnostic> diags;
  v1::SystemSpec expanded = ExpandMechanism(spec.system(), &diags);
  bool error = false;
  for (const auto& d : diags) {
    error = error || d.severity() == v1::Diagnostic::ERROR;
    std::cerr << (d.severity() == v1::Diagnostic::ERROR ? "error: " : "warning: ") << d.field()
              << ": " << d.message() << "\n";
  }
  if (error) return kExitBadInput;
  *spec.mutable_system() = std::move(expanded);
  return Write(o, PrettyJson(spec));
}

}  // namespace tether::cli
