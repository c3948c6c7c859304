// Included first by every header under engine/internal/: those headers are
// the engine's internals, for the engine itself, its tests and its
// benchmarks (CMake target tether_engine_internal, which defines
// TETHER_ENGINE_INTERNAL). The service and the CLI see only the public
// headers beside this folder: engine/simulation.h, engine/status.h,
// engine/spec_json.h and engine/session_export.h. Reaching past them is a
// compile error, not a convention.
#pragma once

#ifndef TETHER_ENGINE_INTERNAL
#error \
    "engine/internal/ is private to the engine; include engine/simulation.h, engine/status.h or engine/spec_json.h"
#endif

// Forced inlining, for the evaluation kernels' helpers (a function, and a
// lambda: `[&](int x) TETHER_INLINE_LAMBDA { ... }`). Plain `inline` where
// TETHER_NO_FORCE_INLINE is defined: the sanitizer build's -O0 units
// (server/CMakeLists.txt), where forced inlining only multiplies the code
// to compile.
#if defined(TETHER_NO_FORCE_INLINE)
#define TETHER_INLINE inline
#define TETHER_INLINE_LAMBDA
#else
#define TETHER_INLINE inline __attribute__((always_inline))
#define TETHER_INLINE_LAMBDA __attribute__((always_inline))
#endif
