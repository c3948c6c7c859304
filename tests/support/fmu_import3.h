// An FMI 3.0 importer's loading steps, written from the FMI 3.0 standard
// (as fmu_import.h is for FMI 2.0, whose unzip and command helpers it
// uses): write an FMU with `tether fmu --fmi 3`, unzip it, read its
// modelDescription.xml (fmiVersion 3.0: Float64 and String variables,
// instantiationToken, CoSimulation) and dlopen its
// binaries/x86_64-linux/<modelIdentifier>.so, looking up every function of
// the standard (fmu/fmi3_functions.inc). Links neither the engine nor
// protobuf.
//
// Threading: as fmu_import.h.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fmu/fmi3.h"

namespace tether::fmu_import {

// The fmi3* functions of one dlopen()ed FMU.
struct Fmi3 {
  void* handle = nullptr;
  decltype(&::fmi3GetVersion) fmi3GetVersion = nullptr;
#define TETHER_FMI3_FN(result, name, parameters, arguments) decltype(&::name) name = nullptr;
#include "fmu/fmi3_functions.inc"
#undef TETHER_FMI3_FN

  // "" on success, else what failed (dlopen's message, missing symbols).
  std::string Load(const std::string& path);
};

struct Variable3 {
  std::string type;  // "Float64", "String"
  std::string name, causality, variability, initial;
  unsigned vr = 0;
  bool has_start = false;
  double start = 0;
};

// One FMI 3.0 FMU written by `tether fmu --fmi 3` and imported.
struct Fmu3 {
  std::filesystem::path dir;  // where it was unzipped
  std::string xml_text;
  std::string fmi_version, token, model_identifier;
  std::map<std::string, std::string> cosimulation;  // the CoSimulation element's attributes
  std::vector<Variable3> vars;                      // every variable, in document order
  std::map<std::string, unsigned> vr;               // by name
  std::vector<unsigned> outputs;                    // ModelStructure's Output elements
  Fmi3 api;
  std::string resource_path;  // the resources directory, a native path ending in '/'
};

// Writes `spec`'s FMU as DIR/NAME.fmu with `cli fmu --fmi 3`, unzips it
// into "DIR/unzipped NAME", reads the model description and loads the
// library. nullptr with *error saying what failed.
std::unique_ptr<Fmu3> Import3(const std::string& cli, const std::string& spec,
                              const std::filesystem::path& dir, const std::string& name,
                              std::string* error);

}  // namespace tether::fmu_import
