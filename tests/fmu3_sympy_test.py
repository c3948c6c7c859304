"""The FMI 3.0 FMU's directional derivatives against sympy (an engine
independent of Tether's): the pendulum of examples/pendulum_force_input.json
written with `tether fmu --fmi 3`, loaded with ctypes as an FMI 3.0 importer
does, stepped to a moving state; there sympy solves the Baumgarte KKT system
in closed form,

    [ I  G^T ] [ a      ]   [ (Fx, -grav)                        ]
    [ G  0   ] [ lambda ] = [ -H - 2 alpha G v - beta^2 g         ]

with g = (x^2 + y^2 - l^2)/2, G = (x, y), H = vx^2 + vy^2, differentiates
a and lambda with respect to x, y, vx, vy and Fx, and evaluates at the
FMU's q, v and input. Every partial must agree to 1e-9 relative.

Usage: fmu3_sympy_test.py --tether PATH --source-dir DIR
"""
import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
import xml.etree.ElementTree as ET

import sympy as sp

LOG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)
messages = []


@LOG
def logger(env, status, category, message):
    messages.append((status, category.decode(), message.decode()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tether", required=True)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.source_dir, "examples/pendulum_force_input.json")) as f:
        spec = json.load(f)
    spec["initial"] = {"q": [0.6, -0.8], "v": [0.0, 0.0]}
    spec["system"]["inputs"][0]["defaultValue"] = 0.75
    work = tempfile.mkdtemp(prefix="tether-fmu3-sympy.")
    spec_path = os.path.join(work, "pendulum.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    fmu_path = os.path.join(work, "pendulum.fmu")
    subprocess.run([args.tether, "fmu", spec_path, "--fmi", "3", "--output", fmu_path,
                    "--quiet"], check=True)
    unzipped = os.path.join(work, "unzipped")
    zipfile.ZipFile(fmu_path).extractall(unzipped)
    root = ET.parse(os.path.join(unzipped, "modelDescription.xml")).getroot()
    assert root.get("fmiVersion") == "3.0"
    token = root.get("instantiationToken").encode()
    vr = {v.get("name"): int(v.get("valueReference")) for v in root.find("ModelVariables")}
    lib = ctypes.CDLL(os.path.join(unzipped, "binaries", "x86_64-linux", "pendulum.so"))

    inst_fn = lib.fmi3InstantiateCoSimulation
    inst_fn.restype = ctypes.c_void_p
    inst_fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_bool,
                        ctypes.c_bool, ctypes.c_bool, ctypes.c_bool, ctypes.c_void_p,
                        ctypes.c_size_t, ctypes.c_void_p, LOG, ctypes.c_void_p]
    c = inst_fn(b"sympy", token, (os.path.join(unzipped, "resources") + "/").encode(), False,
                False, False, True, None, 0, None, logger, None)
    assert c, messages
    c = ctypes.c_void_p(c)
    lib.fmi3EnterInitializationMode.argtypes = [ctypes.c_void_p, ctypes.c_bool, ctypes.c_double,
                                                ctypes.c_double, ctypes.c_bool, ctypes.c_double]
    assert lib.fmi3EnterInitializationMode(c, False, 0.0, 0.0, False, 0.0) == 0, messages
    assert lib.fmi3ExitInitializationMode(c) == 0, messages
    lib.fmi3DoStep.argtypes = [ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_bool,
                               ctypes.POINTER(ctypes.c_bool), ctypes.POINTER(ctypes.c_bool),
                               ctypes.POINTER(ctypes.c_bool), ctypes.POINTER(ctypes.c_double)]
    b1, b2, b3, last = ctypes.c_bool(), ctypes.c_bool(), ctypes.c_bool(), ctypes.c_double()
    t = 0.0
    for _ in range(25):
        assert lib.fmi3DoStep(c, t, 0.01, True, ctypes.byref(b1), ctypes.byref(b2),
                              ctypes.byref(b3), ctypes.byref(last)) == 0, messages
        t += 0.01

    P = ctypes.POINTER
    lib.fmi3GetFloat64.argtypes = [ctypes.c_void_p, P(ctypes.c_uint32), ctypes.c_size_t,
                                   P(ctypes.c_double), ctypes.c_size_t]
    lib.fmi3GetDirectionalDerivative.argtypes = [
        ctypes.c_void_p, P(ctypes.c_uint32), ctypes.c_size_t, P(ctypes.c_uint32),
        ctypes.c_size_t, P(ctypes.c_double), ctypes.c_size_t, P(ctypes.c_double),
        ctypes.c_size_t]
    lib.fmi3FreeInstance.argtypes = [ctypes.c_void_p]
    lib.fmi3ExitInitializationMode.argtypes = [ctypes.c_void_p]

    def refs(names):
        return (ctypes.c_uint32 * len(names))(*[vr[n] for n in names])

    def get(names):
        out = (ctypes.c_double * len(names))()
        assert lib.fmi3GetFloat64(c, refs(names), len(names), out, len(names)) == 0, messages
        return list(out)

    x, y, vx, vy, fx = get(["q.x", "q.y", "v.x", "v.y", "Fx"])
    assert abs(vx) + abs(vy) > 0.1, "the pendulum should move"
    unknowns = ["a.x", "a.y", "lambda.rod"]
    knowns = ["q.x", "q.y", "v.x", "v.y", "Fx"]
    fmu_jac = []
    for j in range(len(knowns)):
        seed = (ctypes.c_double * len(knowns))(*[1.0 if k == j else 0.0
                                                  for k in range(len(knowns))])
        out = (ctypes.c_double * len(unknowns))()
        assert lib.fmi3GetDirectionalDerivative(c, refs(unknowns), len(unknowns), refs(knowns),
                                                len(knowns), seed, len(knowns), out,
                                                len(unknowns)) == 0, messages
        fmu_jac.append(list(out))

    X, Y, VX, VY, FX, A1, A2, LAM = sp.symbols("X Y VX VY FX A1 A2 LAM")
    grav, length, alpha, beta = 9.81, 1, 10, 10
    g = (X**2 + Y**2 - length**2) / 2
    ed = X * VX + Y * VY
    H = VX**2 + VY**2
    sol = sp.solve([A1 + X * LAM - FX, A2 + Y * LAM + grav,
                    X * A1 + Y * A2 + H + 2 * alpha * ed + beta**2 * g], [A1, A2, LAM], dict=True)[0]
    point = {X: x, Y: y, VX: vx, VY: vy, FX: fx}
    worst = 0.0
    for i, expr in enumerate([sol[A1], sol[A2], sol[LAM]]):
        for j, var in enumerate([X, Y, VX, VY, FX]):
            exact = float(sp.diff(expr, var).subs(point))
            got = fmu_jac[j][i]
            rel = abs(got - exact) / max(1.0, abs(exact))
            worst = max(worst, rel)
            if rel > 1e-9:
                print(f"d{unknowns[i]}/d{knowns[j]}: FMU {got!r}, sympy {exact!r}")
                return 1
    lib.fmi3FreeInstance(c)
    shutil.rmtree(work, ignore_errors=True)
    print(f"15 partials agree with sympy, worst relative difference {worst:.1e}")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
