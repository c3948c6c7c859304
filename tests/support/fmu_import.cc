#include "support/fmu_import.h"

#include <dlfcn.h>
#include <tinyxml2.h>
#include <zip.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

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

std::string WriteAndUnzip(const std::string& cli, const std::string& spec, const fs::path& dir,
                          const std::string& name, const std::string& flags, fs::path* unzipped,
                          std::string* xml_text) {
  const fs::path file = dir / (name + ".fmu");
  int rc = 0;
  std::string out = RunCommand(ShellQuote(cli) + " fmu " + ShellQuote(spec) + flags + " --output " +
                                   ShellQuote(file.string()) + " 2>&1",
                               &rc);
  if (rc != 0) return "tether fmu" + flags + " exited with " + std::to_string(rc) + ": " + out;
  *unzipped = dir / ("unzipped " + name);
  if (std::string e = Unzip(file.string(), *unzipped); !e.empty()) return e;
  std::ifstream in(*unzipped / "modelDescription.xml");
  std::stringstream ss;
  ss << in.rdbuf();
  *xml_text = ss.str();
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
