// An FMI 2.0 importer's loading steps, shared by the FMU's tests and its
// benchmark: write an FMU with the CLI, unzip it (libzip), read its
// modelDescription.xml (tinyxml2) and dlopen its library. Links neither the
// engine nor protobuf, so the FMU's own copies are the only ones in the
// process.
//
// Threading: plain functions and values; a loaded Fmu is used by one thread
// at a time, as an importer uses an FMU (instances are the FMU's concern).
#pragma once

#include <cstdarg>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fmu/fmi2.h"

namespace tether::fmu_import {

// The fmi2* functions of one dlopen()ed FMU.
struct Fmi2 {
  void* handle = nullptr;
#define TETHER_FMI2_SHIM_FN(name) decltype(&::name) name = nullptr;
#include "fmu/fmi2_functions.inc"
#undef TETHER_FMI2_SHIM_FN

  // "" on success, else what failed (dlopen's message, missing symbols).
  std::string Load(const std::string& path);
};

struct ModelVariable {
  std::string name, causality, variability, initial;
  unsigned vr = 0;
  bool has_start = false;
  double start = 0;
};

// One FMU written by `tether fmu` and imported.
struct Fmu {
  std::filesystem::path dir;  // where it was unzipped
  std::string xml_text;
  std::string guid, model_identifier;
  std::vector<ModelVariable> vars;     // the Real variables
  std::map<std::string, unsigned> vr;  // by name (every variable)
  std::vector<unsigned> inputs;        // value references of the inputs
  Fmi2 api;
  std::string resource_uri;
};

// An fmi2CallbackLogger's message: `format` (printf-style, as the FMU
// passes it) with its arguments, cut at 8 KiB.
std::string FormatLogMessage(fmi2String format, va_list args);

// Runs `command` with popen; its stdout, and its exit status in *rc.
std::string RunCommand(const std::string& command, int* rc);
// `s` quoted for /bin/sh.
std::string ShellQuote(const std::string& s);
// "file:///a/fmu%20dir/resources": the URI of a local path.
std::string FileUri(const std::filesystem::path& path);
// Unzips `zip_path` into `dir`; "" or what failed.
std::string Unzip(const std::string& zip_path, const std::filesystem::path& dir);

// `cli fmu SPEC FLAGS --output DIR/NAME.fmu`, unzipped into
// *unzipped = "DIR/unzipped NAME" (a space: its URI needs %20), and its
// modelDescription.xml's text: "" or what failed (shared by both
// importers).
std::string WriteAndUnzip(const std::string& cli, const std::string& spec,
                          const std::filesystem::path& dir, const std::string& name,
                          const std::string& flags, std::filesystem::path* unzipped,
                          std::string* xml_text);

// Writes `spec`'s FMU as DIR/NAME.fmu with the CLI at `cli`, unzips it into
// "DIR/unzipped NAME" (a space: its URI needs %20), reads the model
// description and loads the library. nullptr with *error saying what failed.
std::unique_ptr<Fmu> Import(const std::string& cli, const std::string& spec,
                            const std::filesystem::path& dir, const std::string& name,
                            std::string* error);

}  // namespace tether::fmu_import
