#include "support/fmu_import3.h"

#include <dlfcn.h>
#include <tinyxml2.h>

#include "support/fmu_import.h"

namespace tether::fmu_import {

namespace fs = std::filesystem;

std::string Fmi3::Load(const std::string& path) {
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return std::string("dlopen: ") + dlerror();
  std::string missing;
  fmi3GetVersion = reinterpret_cast<decltype(fmi3GetVersion)>(dlsym(handle, "fmi3GetVersion"));
  if (fmi3GetVersion == nullptr) missing += " fmi3GetVersion";
#define TETHER_FMI3_FN(result, name, parameters, arguments)      \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, #name)); \
  if (name == nullptr) missing += " " #name;
#include "fmu/fmi3_functions.inc"
#undef TETHER_FMI3_FN
  return missing.empty() ? "" : "dlsym found no" + missing;
}

std::unique_ptr<Fmu3> Import3(const std::string& cli, const std::string& spec, const fs::path& dir,
                              const std::string& name, std::string* error) {
  auto fmu = std::make_unique<Fmu3>();
  *error = WriteAndUnzip(cli, spec, dir, name, " --fmi 3", &fmu->dir, &fmu->xml_text);
  if (!error->empty()) return nullptr;
  tinyxml2::XMLDocument doc;
  if (doc.Parse(fmu->xml_text.c_str()) != tinyxml2::XML_SUCCESS) {
    *error = std::string("modelDescription.xml: ") + doc.ErrorStr();
    return nullptr;
  }
  const auto* root = doc.FirstChildElement("fmiModelDescription");
  const auto* cs = root ? root->FirstChildElement("CoSimulation") : nullptr;
  const auto* variables = root ? root->FirstChildElement("ModelVariables") : nullptr;
  const auto* structure = root ? root->FirstChildElement("ModelStructure") : nullptr;
  if (cs == nullptr || variables == nullptr || structure == nullptr) {
    *error =
        "modelDescription.xml: no fmiModelDescription with CoSimulation, ModelVariables and "
        "ModelStructure";
    return nullptr;
  }
  auto attr = [](const tinyxml2::XMLElement* e, const char* a, const char* otherwise = "") {
    const char* v = e->Attribute(a);
    return std::string(v ? v : otherwise);
  };
  fmu->fmi_version = attr(root, "fmiVersion");
  fmu->token = attr(root, "instantiationToken");
  fmu->model_identifier = attr(cs, "modelIdentifier");
  for (const auto* a = cs->FirstAttribute(); a != nullptr; a = a->Next())
    fmu->cosimulation[a->Name()] = a->Value();
  // FMI 3.0: a variable is an element named by its type.
  for (const auto* e = variables->FirstChildElement(); e != nullptr; e = e->NextSiblingElement()) {
    Variable3 v;
    v.type = e->Name();
    v.name = attr(e, "name");
    v.causality = attr(e, "causality", "local");
    v.variability = attr(e, "variability", "continuous");
    v.initial = attr(e, "initial");
    v.vr = e->UnsignedAttribute("valueReference", 999999);
    if (v.type == "Float64" && e->Attribute("start")) {
      v.has_start = true;
      v.start = e->DoubleAttribute("start");
    }
    fmu->vr[v.name] = v.vr;
    fmu->vars.push_back(v);
  }
  for (const auto* o = structure->FirstChildElement("Output"); o != nullptr;
       o = o->NextSiblingElement("Output"))
    fmu->outputs.push_back(o->UnsignedAttribute("valueReference", 999999));
  const fs::path so = fmu->dir / "binaries" / "x86_64-linux" / (fmu->model_identifier + ".so");
  if (std::string e = fmu->api.Load(so.string()); !e.empty()) {
    *error = so.string() + ": " + e;
    return nullptr;
  }
  // FMI 3.0 passes the resources directory as a native path.
  fmu->resource_path = (fmu->dir / "resources").string() + "/";
  return fmu;
}

}  // namespace tether::fmu_import
