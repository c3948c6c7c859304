// The FMI 3.0 FMU's binaries/x86_64-linux/<modelIdentifier>.so: as shim.cc
// for FMI 2.0 (which says why a shim), a small library without the engine
// that forwards every fmi3* call (fmi3_functions.inc) to the one engine
// library of the process, libtether-fmi2.so.1 (it serves both standards:
// fmi2_api.cc and fmi3_api.cc), loaded from beside it at the first
// instantiation, or found by its soname when another Tether FMU loaded it.
// fmi3GetVersion answers without it.
#include <cstddef>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "fmu/engine_loader.h"
#include "fmu/fmi3.h"

namespace {

using tether::fmu_shim::kEngineSoname;

struct Engine {
  void* handle = nullptr;
  std::string error;
#define TETHER_FMI3_FN(result, name, parameters, arguments) decltype(&::name) name = nullptr;
#include "fmu/fmi3_functions.inc"
#undef TETHER_FMI3_FN
};

const Engine& LoadEngine() {
  static Engine engine;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = tether::fmu_shim::OpenEngine(&engine.error);
    if (h == nullptr) return;
    std::string missing;
#define TETHER_FMI3_FN(result, name, parameters, arguments)               \
  engine.name = reinterpret_cast<decltype(engine.name)>(dlsym(h, #name)); \
  if (engine.name == nullptr) missing += " " #name;
#include "fmu/fmi3_functions.inc"
#undef TETHER_FMI3_FN
    if (!missing.empty()) {
      engine.error = std::string("the engine library ") + kEngineSoname + " lacks" + missing;
      return;
    }
    engine.handle = h;
  });
  return engine;
}

// The value a forwarded call returns when there is no engine: fmi3Error,
// or a null instance (the instantiation functions), or nothing.
template <class R>
R NoEngine() {
  if constexpr (std::is_same_v<R, fmi3Status>) {
    return fmi3Error;
  } else if constexpr (!std::is_void_v<R>) {
    return nullptr;
  }
}

// Logs why the engine is missing, when the call is an instantiation
// (whose arguments hold the log callback and its environment: the 6th and
// 7th of fmi3InstantiateModelExchange and ...ScheduledExecution, the 10th
// and 11th of fmi3InstantiateCoSimulation); other calls have an instance,
// which cannot exist without the engine.
template <size_t kEnv, class Tuple>
void LogAt(const Tuple& t, const char* function) {
  using Env = std::tuple_element_t<kEnv, Tuple>;
  using Log = std::tuple_element_t<kEnv + 1, Tuple>;
  if constexpr (std::is_same_v<Env, fmi3InstanceEnvironment> &&
                std::is_same_v<Log, fmi3LogMessageCallback>) {
    if (std::get<kEnv + 1>(t) == nullptr) return;
    const std::string m = std::string(function) + ": " + LoadEngine().error;
    std::get<kEnv + 1>(t)(std::get<kEnv>(t), fmi3Error, "logStatusError", m.c_str());
  }
}

template <class... A>
void LogNoEngine(const char* function, A... args) {
  if (std::string(function).rfind("fmi3Instantiate", 0) != 0) return;
  const auto t = std::make_tuple(args...);
  if constexpr (sizeof...(A) == 12) {
    LogAt<9>(t, function);
  } else if constexpr (sizeof...(A) >= 7) {
    LogAt<5>(t, function);
  }
}

}  // namespace

extern "C" {

const char* fmi3GetVersion(void) { return fmi3Version; }

// Every function forwards; without an engine it answers NoEngine (the
// instantiation functions log why, through their callback).
#define TETHER_FMI3_LOG_ARGUMENTS(...) LogNoEngine(__VA_ARGS__)
#define TETHER_FMI3_FN(result, name, parameters, arguments)            \
  result name parameters {                                             \
    const Engine& e = LoadEngine();                                    \
    if (e.handle == nullptr) {                                         \
      TETHER_FMI3_LOG_ARGUMENTS(#name, TETHER_FMI3_UNPAREN arguments); \
      return NoEngine<result>();                                       \
    }                                                                  \
    return e.name arguments;                                           \
  }
#define TETHER_FMI3_UNPAREN(...) __VA_ARGS__
#include "fmu/fmi3_functions.inc"
#undef TETHER_FMI3_FN

}  // extern "C"
