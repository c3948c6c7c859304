"""A co-simulation pipeline of two FMUs (docs/COSIMULATION.md "A pipeline of
two FMUs"): Tether's pendulum (examples/pendulum_force_input.json, exported
with `tether fmu`) and a PID controller written in C from the FMI 2.0
standard (examples/cosim_fmu/pid_controller.c, built by CMake as
BUILD/examples/cosim_fmu/pid_controller.fmu), coupled by this master.

The master is written from the FMI 2.0 standard with ctypes (no FMI
library): at each communication point it reads the pendulum's angle and
omega, gives them to the controller, reads the controller's force F and
gives it to the pendulum as its input Fx (Gauss-Seidel for the exchange,
both FMUs then step from the same point), after saving both FMUs' states.
When either FMU answers the step with fmi2Discard, both are rolled back to
the saved states and the step is retried at half the size; after 50
accepted steps the size grows back (doubling, up to --step).

Usage:
  cosim_pid.py --tether BUILD/bin/tether \\
      --pid-fmu BUILD/examples/cosim_fmu/pid_controller.fmu \\
      [--stop 10] [--step 0.01] [--setpoint 0.3] [--max-step 0] [--csv out.csv]

Prints one summary line as JSON (final angle, omega, F, steps, rollbacks)
and writes the trajectory as CSV when asked (plot it with
examples/python/plot_cosim_pid.py).
"""
import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile

OK, WARNING, DISCARD = 0, 1, 2
LOGGER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_char_p)


@LOGGER
def _log(env, instance, status, category, message):
    # FMI 2's logger is variadic, which ctypes cannot reach; the FMUs here
    # pass the message as the format, with no arguments ('%' doubled).
    if status != OK:
        print(f"[{instance.decode()}] status {status} {category.decode()}: "
              f"{message.decode().replace('%%', '%')}", file=sys.stderr)


class CallbackFunctions(ctypes.Structure):
    _fields_ = [("logger", LOGGER), ("allocateMemory", ctypes.c_void_p),
                ("freeMemory", ctypes.c_void_p), ("stepFinished", ctypes.c_void_p),
                ("componentEnvironment", ctypes.c_void_p)]


CALLOC = ctypes.cast(ctypes.CDLL(None).calloc, ctypes.c_void_p).value
FREE = ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p).value
CALLBACKS = CallbackFunctions(_log, CALLOC, FREE, None, None)


class Fmu2:
    """One FMI 2.0 Co-Simulation FMU: unzipped, loaded, instantiated."""

    def __init__(self, path, work, name):
        root_dir = os.path.join(work, name)
        zipfile.ZipFile(path).extractall(root_dir)
        root = ET.parse(os.path.join(root_dir, "modelDescription.xml")).getroot()
        assert root.get("fmiVersion") == "2.0", path
        ident = root.find("CoSimulation").get("modelIdentifier")
        self.vr = {v.get("name"): int(v.get("valueReference"))
                   for v in root.find("ModelVariables") if v.find("Real") is not None}
        lib = ctypes.CDLL(os.path.join(root_dir, "binaries", "linux64", ident + ".so"))
        self.lib = lib
        c_vp, c_d, c_i, P = ctypes.c_void_p, ctypes.c_double, ctypes.c_int, ctypes.POINTER
        lib.fmi2Instantiate.restype = c_vp
        lib.fmi2Instantiate.argtypes = [ctypes.c_char_p, c_i, ctypes.c_char_p, ctypes.c_char_p,
                                        P(CallbackFunctions), c_i, c_i]
        lib.fmi2SetupExperiment.argtypes = [c_vp, c_i, c_d, c_d, c_i, c_d]
        for f in ("fmi2EnterInitializationMode", "fmi2ExitInitializationMode", "fmi2Terminate",
                  "fmi2FreeInstance"):
            getattr(lib, f).argtypes = [c_vp]
        lib.fmi2GetReal.argtypes = [c_vp, P(ctypes.c_uint), ctypes.c_size_t, P(c_d)]
        lib.fmi2SetReal.argtypes = [c_vp, P(ctypes.c_uint), ctypes.c_size_t, P(c_d)]
        lib.fmi2DoStep.argtypes = [c_vp, c_d, c_d, c_i]
        lib.fmi2GetFMUstate.argtypes = [c_vp, P(c_vp)]
        lib.fmi2SetFMUstate.argtypes = [c_vp, c_vp]
        lib.fmi2FreeFMUstate.argtypes = [c_vp, P(c_vp)]
        resources = "file://" + os.path.join(root_dir, "resources")
        self.c = lib.fmi2Instantiate(name.encode(), 1, root.get("guid").encode(),
                                     resources.encode(), ctypes.byref(CALLBACKS), 0, 0)
        assert self.c, f"{name}: fmi2Instantiate failed"
        self.c = ctypes.c_void_p(self.c)
        self.state = ctypes.c_void_p()

    def _refs(self, names):
        return (ctypes.c_uint * len(names))(*[self.vr[n] for n in names])

    def get(self, *names):
        out = (ctypes.c_double * len(names))()
        assert self.lib.fmi2GetReal(self.c, self._refs(names), len(names), out) == OK
        return list(out)

    def set(self, **values):
        names = list(values)
        vals = (ctypes.c_double * len(names))(*values.values())
        assert self.lib.fmi2SetReal(self.c, self._refs(names), len(names), vals) == OK, names

    def initialize(self, t0, **parameters):
        if parameters:
            self.set(**parameters)
        assert self.lib.fmi2SetupExperiment(self.c, 0, 0.0, t0, 0, 0.0) == OK
        assert self.lib.fmi2EnterInitializationMode(self.c) == OK
        assert self.lib.fmi2ExitInitializationMode(self.c) == OK

    def save(self):
        assert self.lib.fmi2GetFMUstate(self.c, ctypes.byref(self.state)) == OK

    def restore(self):
        assert self.lib.fmi2SetFMUstate(self.c, self.state) == OK

    def step(self, t, h):
        status = self.lib.fmi2DoStep(self.c, t, h, 0)
        assert status in (OK, WARNING, DISCARD), f"fmi2DoStep: status {status}"
        return status

    def close(self):
        self.lib.fmi2FreeFMUstate(self.c, ctypes.byref(self.state))
        self.lib.fmi2Terminate(self.c)
        self.lib.fmi2FreeInstance(self.c)


def run(tether, pid_fmu, stop, step, setpoint, max_step, csv=None, source_dir=None):
    source_dir = source_dir or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    work = tempfile.mkdtemp(prefix="tether-cosim-pid.")
    pendulum_fmu = os.path.join(work, "pendulum.fmu")
    subprocess.run([tether, "fmu", os.path.join(source_dir, "examples/pendulum_force_input.json"),
                    "--output", pendulum_fmu, "--quiet"], check=True)
    pendulum = Fmu2(pendulum_fmu, work, "pendulum")
    pid = Fmu2(pid_fmu, work, "pid_controller")
    pendulum.initialize(0.0)
    pid.initialize(0.0, setpoint=setpoint, max_step=max_step)

    rows = []
    t, h, accepted_since_discard, steps, rollbacks = 0.0, step, 0, 0, 0
    while t < stop - 1e-9:
        h = min(h, stop - t)
        # Exchange: the pendulum's measurements to the controller, the
        # controller's force (a feedthrough of them) to the pendulum.
        angle, omega = pendulum.get("angle", "omega")
        pid.set(angle=angle, omega=omega)
        (force,) = pid.get("F")
        pendulum.set(Fx=force)
        rows.append((t, angle, omega, force))
        pendulum.save()
        pid.save()
        if pendulum.step(t, h) == DISCARD or pid.step(t, h) == DISCARD:
            # Roll both back to the communication point and retry shorter.
            pendulum.restore()
            pid.restore()
            rollbacks += 1
            h /= 2
            accepted_since_discard = 0
            rows.pop()
            continue
        # Time on the engine's grid: steps are multiples of 1 ms here.
        t = round((t + h) * 1e9) / 1e9
        steps += 1
        accepted_since_discard += 1
        if accepted_since_discard >= 50 and h < step:
            h, accepted_since_discard = min(step, 2 * h), 0
    angle, omega = pendulum.get("angle", "omega")
    pid.set(angle=angle, omega=omega)
    (force,) = pid.get("F")
    rows.append((t, angle, omega, force))
    pendulum.close()
    pid.close()
    shutil.rmtree(work, ignore_errors=True)
    if csv:
        with open(csv, "w") as f:
            f.write("t,angle,omega,F\n")
            for r in rows:
                f.write(",".join(repr(x) for x in r) + "\n")
    return {"t": t, "angle": angle, "omega": omega, "F": force, "steps": steps,
            "rollbacks": rollbacks, "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tether", required=True, help="the tether CLI")
    ap.add_argument("--pid-fmu", required=True, help="pid_controller.fmu")
    ap.add_argument("--stop", type=float, default=10.0)
    ap.add_argument("--step", type=float, default=0.01, help="communication step (s)")
    ap.add_argument("--setpoint", type=float, default=0.3, help="angle to hold (rad)")
    ap.add_argument("--max-step", type=float, default=0.0,
                    help="the controller's max_step: longer steps are discarded (0: none)")
    ap.add_argument("--csv", help="write the trajectory here")
    args = ap.parse_args()
    result = run(args.tether, args.pid_fmu, args.stop, args.step, args.setpoint, args.max_step,
                 args.csv)
    del result["rows"]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
