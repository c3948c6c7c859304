// What the two FMU shims (shim.cc for FMI 2.0, shim3.cc for FMI 3.0; each
// says why a shim) share: finding and opening the one engine library of
// the process, libtether-fmi2.so.1. Header-only: each shim is its own
// library, with its own copy (hidden symbols).
#pragma once

#include <dlfcn.h>

#include <string>

namespace tether::fmu_shim {

inline constexpr const char* kEngineSoname = "libtether-fmi2.so.1";

// The calling library's own directory (with a trailing '/'), from dladdr.
inline std::string OwnDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&OwnDirectory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "./" : path.substr(0, slash + 1);
}

// A Tether FMU loaded earlier in this process: its engine (found by
// soname); else the one beside this library. nullptr with *error saying
// why when neither loads.
inline void* OpenEngine(std::string* error) {
  void* h = dlopen(kEngineSoname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h != nullptr) return h;
  const std::string path = OwnDirectory() + kEngineSoname;
  h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    *error = "cannot load the engine library " + path + ": " + (e ? e : "?");
  }
  return h;
}

}  // namespace tether::fmu_shim
