// The FMI 3.0 C API's types and function declarations, written for this
// project from the function signatures and type definitions of the FMI 3.0
// standard (sections 2.2.1-2.2.4): Debian 12 packages no FMI headers (no
// FMI library, no FMPy). Only what this FMU and its importer use is here;
// the values of the enumerations are the standard's (an importer passes
// and reads them as integers across the C ABI).
//
// The functions' list is fmi3_functions.inc (one X-macro table: declared
// here, forwarded by shim3.cc, loaded by tests/support/fmu_import3.cc).
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void* fmi3Instance;
typedef void* fmi3InstanceEnvironment;
typedef void* fmi3FMUState;
typedef uint32_t fmi3ValueReference;

typedef float fmi3Float32;
typedef double fmi3Float64;
typedef int8_t fmi3Int8;
typedef uint8_t fmi3UInt8;
typedef int16_t fmi3Int16;
typedef uint16_t fmi3UInt16;
typedef int32_t fmi3Int32;
typedef uint32_t fmi3UInt32;
typedef int64_t fmi3Int64;
typedef uint64_t fmi3UInt64;
typedef bool fmi3Boolean;
typedef char fmi3Char;
typedef const fmi3Char* fmi3String;
typedef uint8_t fmi3Byte;
typedef const fmi3Byte* fmi3Binary;
typedef bool fmi3Clock;

#define fmi3True true
#define fmi3False false
#define fmi3ClockActive true
#define fmi3ClockInactive false

#define fmi3Version "3.0"

typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;

typedef enum { fmi3ModelExchange, fmi3CoSimulation, fmi3ScheduledExecution } fmi3Type;

typedef enum {
  fmi3Independent,
  fmi3Constant,
  fmi3Fixed,
  fmi3Tunable,
  fmi3Discrete,
  fmi3Dependent
} fmi3DependencyKind;

typedef enum {
  fmi3IntervalNotYetKnown,
  fmi3IntervalUnchanged,
  fmi3IntervalChanged
} fmi3IntervalQualifier;

typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment instanceEnvironment,
                                       fmi3Status status, fmi3String category, fmi3String message);
typedef void (*fmi3ClockUpdateCallback)(fmi3InstanceEnvironment instanceEnvironment);
typedef void (*fmi3IntermediateUpdateCallback)(
    fmi3InstanceEnvironment instanceEnvironment, fmi3Float64 intermediateUpdateTime,
    fmi3Boolean intermediateVariableSetRequested, fmi3Boolean intermediateVariableGetAllowed,
    fmi3Boolean intermediateStepFinished, fmi3Boolean canReturnEarly,
    fmi3Boolean* earlyReturnRequested, fmi3Float64* earlyReturnTime);
typedef void (*fmi3LockPreemptionCallback)(void);
typedef void (*fmi3UnlockPreemptionCallback)(void);

// Exported from the FMU's libraries whatever their default visibility
// (the version scripts then keep only fmi3*).
#define TETHER_FMI3_EXPORT __attribute__((visibility("default")))

TETHER_FMI3_EXPORT const char* fmi3GetVersion(void);

#define TETHER_FMI3_FN(result, name, parameters, arguments) \
  TETHER_FMI3_EXPORT result name parameters;
#include "fmu/fmi3_functions.inc"
#undef TETHER_FMI3_FN

#ifdef __cplusplus
}
#endif
