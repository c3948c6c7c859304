#!/usr/bin/env python3
"""Accuracy of the integrators under stiff Baumgarte gains (README).

    scripts/stiff_accuracy.py [TETHER]   (default: build/bin/tether)

Runs the Cartesian double pendulum (unit masses and links, released from
horizontal) to t = 1 with alpha = beta = 10 and 1000, under SDIRK3, RK4 and
RADAU_IIA at h = 0.01 .. 0.00125, and prints the max-norm error of the final
q against RK4 at h = 1e-5 with the same gains, and the observed order
between successive halvings of h. RADAU_IIA is adaptive: its rows take steps
of h with the error control off (rtol = atol = 1, maxStep = h, Newton
tolerance 1e-13; a step whose Newton iteration fails is still halved). A run
that fails prints its error instead. The error of RADAU_IIA's final q
reaches the reference's own (RK4 at 1e-5: about 1e-12) at the smallest h,
where the observed order means nothing.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

tether = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "build", "bin", "tether")


def spec(gain, method, h):
    return spec_with(gain, integrator(method, h))


def spec_with(gain, integrator_spec):
    return {"system": {"coordinates": ["x1", "y1", "x2", "y2"],
                       "parameters": [{"name": "g", "value": 9.81}],
                       "masses": {"values": [1, 1, 1, 1]}, "potentialEnergy": "g*(y1+y2)",
                       "constraints": [{"name": "r1", "expression": "(x1^2+y1^2-1)/2"},
                                       {"name": "r2", "expression": "((x2-x1)^2+(y2-y1)^2-1)/2"}],
                       "baumgarte": {"alpha": gain, "beta": gain}},
            "initial": {"q": [1, 0, 2, 0], "v": [0, 0, 0, 0]},
            "integrator": integrator_spec}


def integrator(method, h):
    if method != "RADAU_IIA":
        return {"method": method, "stepSize": h}
    return {"method": method, "stepSize": h, "maxStep": h, "rtol": 1, "atol": 1,
            "newtonTolerance": 1e-13}


def final_q(gain, method, h, work):
    path = os.path.join(work, "spec.json")
    with open(path, "w") as f:
        json.dump(spec(gain, method, h), f)
    out = subprocess.run([tether, "run", path, "--until", "1", "--every", "100000000",
                          "--quiet", "--no-certificate"], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1]
    return json.loads(out.stdout.splitlines()[-1])["q"], None


def main():
    with tempfile.TemporaryDirectory() as work:
        print("gains  method              h        error of q(1)   observed order")
        for gain in (10, 1000):
            ref, _ = final_q(gain, "RK4", 1e-5, work)
            for method in ("SDIRK3", "RK4", "RADAU_IIA", "RK4_POST_STABILIZED"):
                prev = None
                for h in (0.01, 0.005, 0.0025, 0.00125):
                    q, failure = final_q(gain, method, h, work)
                    if q is None:
                        print("%-6g %-19s %-8g %s" % (gain, method, h, failure))
                        prev = None
                        continue
                    err = max(abs(a - b) for a, b in zip(q, ref))
                    order = "%.2f" % math.log2(prev / err) if prev and err > 0 else ""
                    print("%-6g %-19s %-8g %-15.3g %s" % (gain, method, h, err, order))
                    prev = err


if __name__ == "__main__":
    main()
