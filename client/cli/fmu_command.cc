#include "cli/fmu_command.h"

#include <unistd.h>
#include <zip.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/driver.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"
#include "fmu/model_description.h"

// The FMU is a zip archive (FMI 2.0 section 2.3). libzip (Debian's
// libzip-dev) writes it: a maintained, packaged library that does the
// deflate, the central directory and the CRCs, where a hand-written zip
// writer would be one more format to get right and test.

namespace tether::cli {
namespace {

namespace fs = std::filesystem;

// The FMU's binaries/<platform>/<modelIdentifier>.so (server/fmu/shim.cc
// for FMI 2.0, shim3.cc for FMI 3.0) and the engine library beside it,
// which it loads (one engine library serves both standards).
constexpr const char* kLibraryName = "tether-fmi2.so";
constexpr const char* kLibraryName3 = "tether-fmi3.so";
constexpr const char* kEngineName = "libtether-fmi2.so.1";
// The platform directories: FMI 2.0's "linux64", FMI 3.0's platform tuple.
constexpr const char* kPlatform2 = "binaries/linux64/";
constexpr const char* kPlatform3 = "binaries/x86_64-linux/";

// The FMU library (tether-fmi2.so, with libtether-fmi2.so.1 in the same
// directory): $TETHER_FMU_LIBRARY, else next to this executable in
// ../lib/tether/ (the build tree's build/lib/tether/, an install's
// PREFIX/lib/tether/), else in the executable's own directory. "" when none
// exists; `looked` lists where it looked.
std::string FindFmuLibrary(std::string* looked) {
  if (const char* env = std::getenv("TETHER_FMU_LIBRARY"); env != nullptr && *env != '\0') {
    *looked = std::string(env) + " (TETHER_FMU_LIBRARY)";
    std::error_code ec;
    return fs::is_regular_file(env, ec) ? std::string(env) : "";
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    *looked = "(the tether executable's location is unknown)";
    return "";
  }
  const std::vector<fs::path> candidates = {
      exe.parent_path() / ".." / "lib" / "tether" / kLibraryName, exe.parent_path() / kLibraryName};
  for (const fs::path& p : candidates) {
    if (!looked->empty()) *looked += ", ";
    *looked += p.lexically_normal().string();
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  }
  return "";
}

// The description file's bytes (they go into the FMU unchanged) and its
// parse, with LoadSpecFile's messages and exit codes.
bool ReadSpec(const std::string& path, std::string* bytes, v1::SimulationSpec* spec,
              int* exit_code) {
  if (Status s = ReadFileBounded(path, kMaxSpecJsonBytes, "a description file", bytes); !s.ok()) {
    std::cerr << "tether: " << s.message() << "\n";
    *exit_code = s.code() == StatusCode::kNotFound ? kExitFailure : kExitBadInput;
    return false;
  }
  Status s = ParseSpecJson(*bytes, spec, path);
  if (!s.ok()) {
    std::cerr << "tether: " << s.message() << "\n";
    *exit_code = kExitBadInput;
    return false;
  }
  return true;
}

// Adds `src` as `name` (freeing `src` when it cannot), at a fixed time
// (1980-01-01, the zip format's epoch): the same description gives the same
// bytes. Deflated at zlib's default level 6, not libzip's default 9: on the
// engine's shared library, most of an archive, level 9 took 0.76 s against
// 0.31 s for a result 0.8% smaller (the 6.5 MB Release build; 6.1 s against
// 1.9 s for the 51 MB sanitizer build, which the FMU tests pack; gzip).
bool AddSource(zip_t* zip, const std::string& name, zip_source_t* src) {
  if (src == nullptr) return false;
  const zip_int64_t idx = zip_file_add(zip, name.c_str(), src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
  if (idx < 0) {
    zip_source_free(src);
    return false;
  }
  const auto index = static_cast<zip_uint64_t>(idx);
  return zip_set_file_compression(zip, index, ZIP_CM_DEFLATE, 6) == 0 &&
         zip_file_set_mtime(zip, index, 315532800, 0) == 0;
}

// Adds `data` (kept alive by the caller until zip_close) as `name`.
bool AddBuffer(zip_t* zip, const std::string& name, const std::string& data) {
  return AddSource(zip, name, zip_source_buffer(zip, data.data(), data.size(), 0));
}

// Adds the file at `path` (read at zip_close) as `name`.
bool AddFile(zip_t* zip, const std::string& name, const std::string& path) {
  return AddSource(zip, name, zip_source_file(zip, path.c_str(), 0, -1));
}

}  // namespace

int WriteFmu(const Options& o) {
  const bool fmi3 = o.fmi_version && *o.fmi_version == 3;
  if (!o.output) return BadUsage("fmu: --output NAME.fmu is required");
  const fs::path out_path(*o.output);
  if (out_path.extension() != ".fmu" || out_path.stem().empty()) {
    return BadUsage("--output: expected a file name ending in .fmu, found '" + *o.output + "'");
  }
  std::string bytes;
  v1::SimulationSpec spec;
  int exit_code = kExitOk;
  if (!ReadSpec(o.args[0], &bytes, &spec, &exit_code)) return exit_code;

  std::vector<v1::Diagnostic> warnings;
  auto created = Simulation::Create(spec, &warnings);
  if (!created.ok()) {
    const Status& s = created.status();
    BackendStatus b;
    b.kind = s.code() == StatusCode::kInvalidArgument ||
                     (s.code() == StatusCode::kResourceExhausted && !s.violations().empty())
                 ? BackendStatus::Kind::kBadInput
                 : BackendStatus::Kind::kFailure;
    b.code = StatusCodeName(s.code());
    b.message = s.message();
    b.violations = s.violations();
    return ReportFailure(b);
  }
  const Simulation& sim = **created;
  if (!o.quiet) {
    for (const auto& w : warnings)
      std::cerr << "warning: " << w.field() << ": " << w.message() << "\n";
    for (const std::string& name : fmu::UnusedParameters(spec))
      std::cerr << "warning: system.parameters: " << fmu::UnusedParameterWarning(name) << "\n";
  }
  // Names are identifiers and the generated ones have a '.', so they are
  // unique whenever the description is valid; checked all the same, since
  // an FMU with two variables of one name is invalid. A description's name
  // may still be the first part of the FMU's own structured names (q.x,
  // lambda.rod, tether.server) or FMI 3's independent variable time: under
  // variableNamingConvention="structured" a variable q beside q.x, or a
  // second time, makes the FMU invalid too.
  const int version = fmi3 ? 3 : 2;
  std::set<std::string> names;
  for (const fmu::Variable& v : fmu::Variables(sim)) {
    const char* list = v.kind == fmu::VariableKind::kParameter ? "parameters"
                       : v.kind == fmu::VariableKind::kInput   ? "inputs"
                       : v.kind == fmu::VariableKind::kOutput  ? "outputs"
                                                               : nullptr;
    if (list != nullptr && fmu::IsReservedFmuName(v.name, version)) {
      std::cerr << "tether: INVALID_ARGUMENT\nerror: system." << list << "[" << v.index
                << "].name: '" << v.name << "' is a name the FMU gives its own variables ("
                << fmu::ReservedFmuNames(version)
                << "); an FMU's variable names must be unique: rename it\n";
      return kExitBadInput;
    }
    if (!names.insert(v.name).second) {
      std::cerr << "tether: INVALID_ARGUMENT\nerror: system: the name '" << v.name
                << "' is used twice; an FMU's variable names must be unique\n";
      return kExitBadInput;
    }
  }

  std::string looked;
  const std::string library = FindFmuLibrary(&looked);
  if (library.empty()) {
    // An FMI 3.0 FMU needs the FMI 3.0 shim too, which is looked for beside
    // the FMI 2.0 library.
    std::cerr << "tether: fmu: the FMU library " << kLibraryName
              << (fmi3 ? std::string(" (beside which the FMI 3.0 library ") + kLibraryName3 +
                             " is looked for)"
                       : std::string())
              << " was not found (looked at " << looked
              << "); set TETHER_FMU_LIBRARY to its path\n";
    return kExitFailure;
  }

  const std::string engine = (fs::path(library).parent_path() / kEngineName).string();
  // The FMI 3.0 shim beside the FMI 2.0 one (both built with the engine).
  const std::string shim =
      fmi3 ? (fs::path(library).parent_path() / kLibraryName3).string() : library;
  if (std::error_code ec; !fs::is_regular_file(shim, ec)) {
    std::cerr << "tether: fmu: the FMI 3.0 FMU library " << shim << " was not found (it must be "
              << "beside " << library << ")\n";
    return kExitFailure;
  }
  if (std::error_code ec; !fs::is_regular_file(engine, ec)) {
    std::cerr << "tether: fmu: the FMU engine library " << engine << " was not found (it must be "
              << "beside " << library << ")\n";
    return kExitFailure;
  }

  const std::string stem = out_path.stem().string();
  const std::string model_identifier = fmu::ModelIdentifier(stem);
  // --server: the remote mode's default address (the tether.server
  // parameter's start value, read by the FMU from resources/).
  const std::string server = o.server ? *o.server : "";
  const std::string xml = fmi3 ? fmu::ModelDescriptionXml3(sim, model_identifier, stem, server)
                               : fmu::ModelDescriptionXml(sim, model_identifier, stem, server);

  int err = 0;
  zip_t* zip = zip_open(o.output->c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (zip == nullptr) {
    zip_error_t e;
    zip_error_init_with_code(&e, err);
    std::cerr << "tether: --output " << *o.output << ": cannot open for writing ("
              << zip_error_strerror(&e) << ")\n";
    zip_error_fini(&e);
    return kExitFailure;
  }
  bool ok =
      AddBuffer(zip, "modelDescription.xml", xml) && AddBuffer(zip, "resources/spec.json", bytes);
  const std::string server_file = server + "\n";  // alive until zip_close
  if (!server.empty()) {
    ok = ok && AddBuffer(zip, std::string("resources/") + fmu::kServerResource, server_file);
  }
  const std::string platform = fmi3 ? kPlatform3 : kPlatform2;
  ok = ok && AddFile(zip, platform + model_identifier + ".so", shim) &&
       AddFile(zip, platform + kEngineName, engine);
  if (!ok) {
    std::cerr << "tether: --output " << *o.output << ": " << zip_strerror(zip) << "\n";
    zip_discard(zip);
    return kExitFailure;
  }
  // zip_close writes a temporary file and renames it over --output: a
  // failed write leaves no half-written FMU.
  if (zip_close(zip) != 0) {
    std::cerr << "tether: --output " << *o.output << ": cannot write (" << zip_strerror(zip)
              << ")\n";
    zip_discard(zip);
    return kExitFailure;
  }
  if (!o.quiet) {
    std::cerr << "tether: wrote " << *o.output << " (FMI " << (fmi3 ? "3.0" : "2.0")
              << " Co-Simulation, modelIdentifier " << model_identifier
              << ", "
              // tether.server, tether.certificate, tether.project_start and
              // FMI 3's time beside the description's.
              << names.size() + (fmi3 ? 4 : 3) << " variables, GUID " << fmu::Guid(spec) << ")\n";
  }
  return kExitOk;
}

}  // namespace tether::cli
