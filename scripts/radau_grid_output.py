#!/usr/bin/env python3
"""RADAU_IIA's frames on an output grid against its frames at step ends.

    scripts/radau_grid_output.py [TETHER]   (default: build/bin/tether)

Frames on an output grid come from the quintic Hermite interpolant of each
step's ends (docs/MATH.md section 7.2, "Output"). This checks that they add
no error of their own: the Cartesian double pendulum (as in
scripts/stiff_accuracy.py) to t = 1 under RADAU_IIA with its error control
(rtol 1e-4 and 1e-6, atol = rtol / 1000) at alpha = beta = 10 and 1000,
and prints the largest error of q on the grid t = 0.001 k (interpolated
inside steps) and at about 40 step ends spread over the run, each
against RK4 at h = 1e-5 run to that time. About a minute.
"""
import json
import os
import subprocess
import sys
import tempfile

tether = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "build", "bin", "tether")
sys.path.insert(0, os.path.dirname(__file__))
from stiff_accuracy import spec_with  # noqa: E402  (the model, written once)


def frames(work, gain, integrator, *flags):
    path = os.path.join(work, "spec.json")
    with open(path, "w") as f:
        json.dump(spec_with(gain, integrator), f)
    out = subprocess.run([tether, "run", path, "--quiet", "--no-certificate"] + list(flags),
                         capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if '"q"' in line]


def error(q, ref):
    return max(abs(a - b) for a, b in zip(q, ref))


with tempfile.TemporaryDirectory() as work:
    rk4 = {"method": "RK4", "stepSize": 1e-5}
    print("gains  rtol    steps  max error on the grid  max error at step ends")
    for gain in (10, 1000):
        ref = {round(f.get("t", 0), 9): f["q"]
               for f in frames(work, gain, rk4, "--until", "1", "--output-interval", "0.001")}
        for rtol in (1e-4, 1e-6):
            radau = {"method": "RADAU_IIA", "rtol": rtol, "atol": rtol / 1000}
            grid = frames(work, gain, radau, "--until", "1", "--output-interval", "0.001")
            on_grid = max(error(f["q"], ref[round(f.get("t", 0), 9)]) for f in grid
                          if round(f.get("t", 0), 9) in ref)
            ends = frames(work, gain, radau, "--until", "1", "--every", "1")[1:]
            at_ends = 0
            for f in ends[::max(1, len(ends) // 40)]:
                r = frames(work, gain, rk4, "--until", repr(f["t"]), "--every", "100000000")
                at_ends = max(at_ends, error(f["q"], r[-1]["q"]))
            print("%-6g %-7g %-6d %-22.3g %.3g" % (gain, rtol, len(ends), on_grid, at_ends))
