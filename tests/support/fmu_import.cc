#include "support/fmu_import.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <tinyxml2.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace tether::fmu_import {

namespace fs = std::filesystem;

std::string Fmi2::Load(const std::string& path) {
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::string("dlopen: ") + dlerror();
  std::string missing;
#define TETHER_FMI2_SHIM_FN(name)                                \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, #name)); \
  if (name == nullptr) missing += " " #name;
#include "fmu/fmi2_functions.inc"
#undef TETHER_FMI2_SHIM_FN
  return missing.empty() ? "" : "dlsym found no" + missing;
}

std::string FormatLogMessage(fmi2String format, va_list args) {
  char buf[8192];
  std::vsnprintf(buf, sizeof buf, format ? format : "", args);
  return buf;
}

std::string RunCommand(const std::string& command, int* rc) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string FileUri(const fs::path& path) {
  std::string uri = "file://";
  for (unsigned char c : path.string()) {
    if (std::isalnum(c) || std::strchr("/-._~", c)) {
      uri += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      uri += buf;
    }
  }
  return uri;
}

std::string Unzip(const std::string& zip_path, const fs::path& dir) {
  int err = 0;
  zip_t* z = zip_open(zip_path.c_str(), ZIP_RDONLY, &err);
  if (z == nullptr)
    return "cannot open " + zip_path + " as a zip (error " + std::to_string(err) + ")";
  std::string problem;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n && problem.empty(); ++i) {
    zip_stat_t st;
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) != 0) {
      problem = "zip_stat_index failed on entry " + std::to_string(i);
      break;
    }
    const std::string name = st.name;
    if (name.find("..") != std::string::npos) {
      problem = "entry name with '..': " + name;
      break;
    }
    const fs::path target = dir / name;
    if (!name.empty() && name.back() == '/') {
      fs::create_directories(target);
      continue;
    }
    fs::create_directories(target.parent_path());
    zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    if (f == nullptr) {
      problem = "cannot open entry " + name;
      break;
    }
    std::ofstream out(target, std::ios::binary);
    char buf[65536];
    zip_int64_t got;
    while ((got = zip_fread(f, buf, sizeof buf)) > 0) out.write(buf, got);
    if (got != 0) problem = "cannot read entry " + name;
    zip_fclose(f);
  }
  zip_close(z);
  return problem;
}

namespace {

// FNV-1a, 64 bits: a cache key, not a checksum (a collision would need two
// specs of the same name whose FMUs the suite compares; none are).
uint64_t Fnv1a(const std::string& bytes, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// What makes `cli fmu` write other bytes: the CLI and the libraries it
// packs (../lib/tether from the CLI, or TETHER_FMU_LIBRARY), by size and
// modification time (a rebuild changes both or at least the time).
std::string ToolFingerprint(const std::string& cli) {
  std::string f;
  std::error_code ec;
  auto add = [&](const fs::path& p) {
    const auto size = fs::file_size(p, ec);
    const auto time = fs::last_write_time(p, ec).time_since_epoch().count();
    f += p.string() + ":" + std::to_string(size) + ":" + std::to_string(time) + ";";
  };
  add(cli);
  // The CLI packs this library instead when it is set (fmu_command.cc).
  if (const char* library = std::getenv("TETHER_FMU_LIBRARY"); library != nullptr) add(library);
  const fs::path libs = fs::path(cli).parent_path() / ".." / "lib" / "tether";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(libs, ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) add(p);
  return f;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string WriteAndUnzip(const std::string& cli, const std::string& spec, const fs::path& dir,
                          const std::string& name, const std::string& flags, fs::path* unzipped,
                          std::string* xml_text) {
  const fs::path file = dir / (name + ".fmu");
  const std::string command = " fmu " + ShellQuote(spec) + flags + " --output ";
  // The FMU test processes (one per test: gtest_discover_tests) import the
  // same FMUs again and again; under the sanitizers packing one (deflating
  // the engine library) takes seconds. With TETHER_FMU_TEST_CACHE (a
  // directory; tests/CMakeLists.txt sets it) the archive is written once
  // per (spec bytes, name, flags, CLI and its libraries) and every process
  // unzips that file; an flock per key makes concurrent processes wait for
  // the first instead of writing it twice. Only successful writes are
  // cached: a failure is run (and reported) every time.
  const char* cache_env = std::getenv("TETHER_FMU_TEST_CACHE");
  std::string problem;
  if (cache_env != nullptr && *cache_env != '\0') {
    const fs::path cache(cache_env);
    std::error_code ec;
    fs::create_directories(cache, ec);
    char key[17];
    std::snprintf(key, sizeof key, "%016llx",
                  static_cast<unsigned long long>(Fnv1a(ReadFile(spec) + '\0' + name + '\0' +
                                                        flags + '\0' + ToolFingerprint(cli))));
    // The file keeps its name (the CLI takes the modelIdentifier from it),
    // in a directory per key, written whole into a sibling and renamed.
    const fs::path cached = cache / key / (name + ".fmu");
    const int lock = ::open((cache / (std::string(key) + ".lock")).c_str(), O_CREAT | O_RDWR, 0644);
    if (lock >= 0) ::flock(lock, LOCK_EX);
    if (!fs::is_regular_file(cached, ec)) {
      const fs::path partial = cache / (std::string(key) + ".partial");
      fs::remove_all(partial, ec);
      fs::create_directories(partial, ec);
      int rc = 0;
      std::string out = RunCommand(
          ShellQuote(cli) + command + ShellQuote((partial / (name + ".fmu")).string()) + " 2>&1",
          &rc);
      if (rc != 0) {
        problem = "tether fmu" + flags + " exited with " + std::to_string(rc) + ": " + out;
      } else {
        fs::rename(partial, cache / key, ec);
        if (ec) problem = "cannot rename " + partial.string() + ": " + ec.message();
      }
    }
    if (lock >= 0) ::close(lock);  // releases the flock
    if (problem.empty()) {
      fs::copy_file(cached, file, fs::copy_options::overwrite_existing, ec);
      if (ec) problem = "cannot copy " + cached.string() + ": " + ec.message();
    }
  } else {
    int rc = 0;
    std::string out =
        RunCommand(ShellQuote(cli) + command + ShellQuote(file.string()) + " 2>&1", &rc);
    if (rc != 0) problem = "tether fmu" + flags + " exited with " + std::to_string(rc) + ": " + out;
  }
  if (!problem.empty()) return problem;
  *unzipped = dir / ("unzipped " + name);
  if (std::string e = Unzip(file.string(), *unzipped); !e.empty()) return e;
  *xml_text = ReadFile(*unzipped / "modelDescription.xml");
  return "";
}

std::unique_ptr<Fmu> Import(const std::string& cli, const std::string& spec, const fs::path& dir,
                            const std::string& name, std::string* error) {
  auto fmu = std::make_unique<Fmu>();
  *error = WriteAndUnzip(cli, spec, dir, name, "", &fmu->dir, &fmu->xml_text);
  if (!error->empty()) return nullptr;
  tinyxml2::XMLDocument doc;
  if (doc.Parse(fmu->xml_text.c_str()) != tinyxml2::XML_SUCCESS) {
    *error = std::string("modelDescription.xml: ") + doc.ErrorStr();
    return nullptr;
  }
  const auto* root = doc.FirstChildElement("fmiModelDescription");
  const auto* cs = root ? root->FirstChildElement("CoSimulation") : nullptr;
  const auto* variables = root ? root->FirstChildElement("ModelVariables") : nullptr;
  if (cs == nullptr || variables == nullptr) {
    *error = "modelDescription.xml: no fmiModelDescription with CoSimulation and ModelVariables";
    return nullptr;
  }
  fmu->guid = root->Attribute("guid") ? root->Attribute("guid") : "";
  fmu->model_identifier = cs->Attribute("modelIdentifier") ? cs->Attribute("modelIdentifier") : "";
  for (const auto* sv = variables->FirstChildElement("ScalarVariable"); sv != nullptr;
       sv = sv->NextSiblingElement("ScalarVariable")) {
    ModelVariable v;
    v.name = sv->Attribute("name") ? sv->Attribute("name") : "";
    v.causality = sv->Attribute("causality") ? sv->Attribute("causality") : "local";
    v.variability = sv->Attribute("variability") ? sv->Attribute("variability") : "continuous";
    v.initial = sv->Attribute("initial") ? sv->Attribute("initial") : "";
    v.vr = sv->UnsignedAttribute("valueReference", 999999);
    fmu->vr[v.name] = v.vr;
    // `vars` are the Real variables; the String tether.server (the remote
    // mode's address) is only in `vr`.
    if (sv->FirstChildElement("Real") == nullptr) continue;
    if (const auto* real = sv->FirstChildElement("Real"); real->Attribute("start")) {
      v.has_start = true;
      v.start = real->DoubleAttribute("start");
    }
    if (v.causality == "input") fmu->inputs.push_back(v.vr);
    fmu->vars.push_back(v);
  }
  const fs::path so = fmu->dir / "binaries" / "linux64" / (fmu->model_identifier + ".so");
  if (std::string e = fmu->api.Load(so.string()); !e.empty()) {
    *error = so.string() + ": " + e;
    return nullptr;
  }
  fmu->resource_uri = FileUri(fmu->dir / "resources");
  return fmu;
}

}  // namespace tether::fmu_import
