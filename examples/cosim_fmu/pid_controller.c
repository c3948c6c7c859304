/* A PID controller as an FMI 2.0 Co-Simulation FMU, written from the
 * standard (FMI 2.0, sections 2.1 and 4.2) for the coupling example of
 * docs/COSIMULATION.md "A pipeline of two FMUs": the second FMU the master
 * (cosim_pid.py) couples with Tether's pendulum.
 *
 * Value references (modelDescription.xml beside this file says the same):
 *   0 kp, 1 ki, 2 kd, 3 setpoint, 4 max_step   parameters (fixed)
 *   5 angle, 6 omega                           inputs (continuous)
 *   7 F                                        output: kp e + ki z - kd omega
 *   8 z                                        output: the integral of e
 * with e = setpoint - angle. Over a communication step of size h the
 * inputs are held, so the integral state advances exactly: z += h e. The
 * output is computed from the inputs and z at the communication point
 * (a direct feedthrough of angle and omega).
 *
 * A step longer than max_step (> 0) is answered fmi2Discard with the state
 * unchanged: a master that couples this FMU must roll both FMUs back and
 * retry shorter, which the example's master does (and its test checks).
 *
 * FMU states (fmi2GetFMUstate and serialization) are a copy of the
 * instance's variables: 9 doubles and the time. Threading: one caller per
 * instance, as the standard requires. */
#include <stdlib.h>
#include <string.h>

#include "fmu/fmi2.h"

#define PID_GUID "{6d1b7c2e-2f0a-4b8e-9a51-3c1f0e7d5a10}"
enum { kKp, kKi, kKd, kSetpoint, kMaxStep, kAngle, kOmega, kF, kZ, kNumVariables };

typedef struct {
  double v[kNumVariables];
  double time;
} PidState;

typedef struct {
  PidState s;
  fmi2CallbackLogger logger;
  fmi2ComponentEnvironment env;
  char name[64];
  int initialized;
} Pid;

static void Defaults(PidState* s) {
  memset(s, 0, sizeof *s);
  s->v[kKp] = 20;
  s->v[kKi] = 30;
  s->v[kKd] = 6;
  s->v[kSetpoint] = 0.3;
  s->v[kMaxStep] = 0;
}

static void Output(PidState* s) {
  const double e = s->v[kSetpoint] - s->v[kAngle];
  s->v[kF] = s->v[kKp] * e + s->v[kKi] * s->v[kZ] - s->v[kKd] * s->v[kOmega];
}

// `message` is a literal without '%', passed as the logger's printf format
// with no arguments: masters that print the format as it is (FMPy's Python
// logger cannot reach variadic arguments) read it as well as those that
// format it.
static fmi2Status Fail(Pid* p, fmi2Status status, const char* message) {
  if (p != NULL && p->logger != NULL)
    p->logger(p->env, p->name, status,
              status == fmi2Discard ? "logStatusDiscard" : "logStatusError", message);
  return status;
}

const char* fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char* fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cat[]) {
  (void)c, (void)on, (void)n, (void)cat;
  return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                              const fmi2CallbackFunctions* functions, fmi2Boolean visible,
                              fmi2Boolean logging) {
  (void)resources, (void)visible, (void)logging;
  if (type != fmi2CoSimulation || guid == NULL || strcmp(guid, PID_GUID) != 0) {
    if (functions != NULL && functions->logger != NULL)
      functions->logger(functions->componentEnvironment, name, fmi2Error, "logStatusError",
                        "fmi2Instantiate: expected Co-Simulation and GUID " PID_GUID);
    return NULL;
  }
  Pid* p = (Pid*)calloc(1, sizeof(Pid));
  if (p == NULL) return NULL;
  Defaults(&p->s);
  Output(&p->s);
  if (functions != NULL) {
    p->logger = functions->logger;
    p->env = functions->componentEnvironment;
  }
  strncpy(p->name, name != NULL ? name : "", sizeof p->name - 1);
  return p;
}

void fmi2FreeInstance(fmi2Component c) { free(c); }

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, fmi2Real tol,
                               fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop) {
  (void)tol_defined, (void)tol, (void)stop_defined, (void)stop;
  ((Pid*)c)->s.time = start;
  return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
  (void)c;
  return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  Pid* p = (Pid*)c;
  p->initialized = 1;
  Output(&p->s);
  return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c) {
  (void)c;
  return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c) {
  Pid* p = (Pid*)c;
  Defaults(&p->s);
  Output(&p->s);
  p->initialized = 0;
  return fmi2OK;
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Pid* p = (Pid*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= kNumVariables) return Fail(p, fmi2Error, "fmi2GetReal: unknown value reference");
    v[i] = p->s.v[vr[i]];
  }
  return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                       const fmi2Real v[]) {
  Pid* p = (Pid*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= kF) return Fail(p, fmi2Error, "fmi2SetReal: not a parameter or an input");
    if (vr[i] < kAngle && p->initialized)
      return Fail(p, fmi2Error, "fmi2SetReal: parameters are fixed after initialization");
  }
  for (size_t i = 0; i < n; ++i) p->s.v[vr[i]] = v[i];
  Output(&p->s);
  return fmi2OK;
}

static fmi2Status NoneOfType(fmi2Component c, size_t n, const char* message) {
  return n == 0 ? fmi2OK : Fail((Pid*)c, fmi2Error, message);
}
fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                          fmi2Integer v[]) {
  (void)vr, (void)v;
  return NoneOfType(c, n, "fmi2GetInteger: no Integer variables");
}
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                          fmi2Boolean v[]) {
  (void)vr, (void)v;
  return NoneOfType(c, n, "fmi2GetBoolean: no Boolean variables");
}
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[]) {
  (void)vr, (void)v;
  return NoneOfType(c, n, "fmi2GetString: no String variables");
}
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                          const fmi2Integer v[]) {
  (void)vr, (void)v;
  return NoneOfType(c, n, "fmi2SetInteger: no Integer variables");
}
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                          const fmi2Boolean v[]) {
  (void)vr, (void)v;
  return NoneOfType(c, n, "fmi2SetBoolean: no Boolean variables");
}
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                         const fmi2String v[]) {
  (void)vr, (void)v;
  return NoneOfType(c, n, "fmi2SetString: no String variables");
}

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state) {
  if (*state == NULL) *state = malloc(sizeof(PidState));
  if (*state == NULL) return Fail((Pid*)c, fmi2Error, "fmi2GetFMUstate: out of memory");
  memcpy(*state, &((Pid*)c)->s, sizeof(PidState));
  return fmi2OK;
}
fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
  if (state == NULL) return Fail((Pid*)c, fmi2Error, "fmi2SetFMUstate: null state");
  memcpy(&((Pid*)c)->s, state, sizeof(PidState));
  return fmi2OK;
}
fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state) {
  (void)c;
  free(*state);
  *state = NULL;
  return fmi2OK;
}
fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t* size) {
  (void)c, (void)state;
  *size = sizeof(PidState);
  return fmi2OK;
}
fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[],
                                 size_t size) {
  if (size < sizeof(PidState)) return Fail((Pid*)c, fmi2Error, "fmi2SerializeFMUstate: too small");
  memcpy(bytes, state, sizeof(PidState));
  return fmi2OK;
}
fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                   fmi2FMUstate* state) {
  if (size != sizeof(PidState))
    return Fail((Pid*)c, fmi2Error, "fmi2DeSerializeFMUstate: expected the bytes of one state");
  if (*state == NULL) *state = malloc(sizeof(PidState));
  if (*state == NULL) return Fail((Pid*)c, fmi2Error, "fmi2DeSerializeFMUstate: out of memory");
  memcpy(*state, bytes, sizeof(PidState));
  return fmi2OK;
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                        const fmi2ValueReference k[], size_t nk,
                                        const fmi2Real dk[], fmi2Real du[]) {
  (void)u, (void)nu, (void)k, (void)nk, (void)dk, (void)du;
  return Fail((Pid*)c, fmi2Error, "fmi2GetDirectionalDerivative: not provided");
}
fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real v[]) {
  (void)vr, (void)n, (void)order, (void)v;
  return Fail((Pid*)c, fmi2Error, "fmi2SetRealInputDerivatives: canInterpolateInputs is false");
}
fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real v[]) {
  (void)vr, (void)n, (void)order, (void)v;
  return Fail((Pid*)c, fmi2Error, "fmi2GetRealOutputDerivatives: maxOutputDerivativeOrder is 0");
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no_set_prior) {
  (void)no_set_prior;
  Pid* p = (Pid*)c;
  if (!(h > 0)) return Fail(p, fmi2Error, "fmi2DoStep: expected communicationStepSize > 0");
  if (p->s.v[kMaxStep] > 0 && h > p->s.v[kMaxStep])
    return Fail(p, fmi2Discard, "fmi2DoStep: the step is longer than max_step; retry shorter");
  (void)t;
  p->s.v[kZ] += h * (p->s.v[kSetpoint] - p->s.v[kAngle]);
  p->s.time += h;
  Output(&p->s);
  return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c) {
  return Fail((Pid*)c, fmi2Error, "fmi2CancelStep: steps are synchronous");
}
fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status* v) {
  (void)s, (void)v;
  return Fail((Pid*)c, fmi2Discard, "fmi2GetStatus: steps are synchronous");
}
fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* v) {
  if (s != fmi2LastSuccessfulTime) return fmi2Discard;
  *v = ((Pid*)c)->s.time;
  return fmi2OK;
}
fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* v) {
  (void)c, (void)s, (void)v;
  return fmi2Discard;
}
fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean* v) {
  (void)c;
  if (s != fmi2Terminated) return fmi2Discard;
  *v = fmi2False;
  return fmi2OK;
}
fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* v) {
  (void)c, (void)s, (void)v;
  return fmi2Discard;
}
