#!/usr/bin/env python3
"""Fast against exact functions on the lane path, per example
(docs/ENSEMBLES.md, "Bits"; docs/benchmarks.md): each example that an
ensemble can vary (a coordinate of its own or, for the cart pole, its input)
run by `tether ensemble ... --no-certificate --until 1` with --functions exact
and fast, 8 instances; prints the largest difference of the final q and v.

    /usr/bin/python3 bench/ensemble_functions_examples.py [build/bin/tether]
"""
import glob
import json
import subprocess
import sys

tether = sys.argv[1] if len(sys.argv) > 1 else "build/bin/tether"


def sweep_of(path):
    spec = json.load(open(path))
    coords = spec.get("system", {}).get("coordinates", [])
    if coords:
        q0 = spec.get("initial", {}).get("q", [0])[0]
        return ["--sweep", f"{coords[0]}={q0 - 0.05}:{q0 + 0.05}:8"]
    inputs = spec.get("system", {}).get("inputs", [])
    if inputs:
        return ["--sweep", f"{inputs[0]['name']}=-1:1:8"]
    return None  # a mechanism with nothing an ensemble can vary


for path in sorted(glob.glob("examples/*.json")):
    sweep = sweep_of(path)
    if sweep is None:
        print(f"{path}: nothing to vary (a mechanism without inputs), skipped")
        continue
    out = {}
    for mode in ("exact", "fast"):
        p = subprocess.run([tether, "ensemble", path, *sweep, "--until", "1.0", "--quiet",
                            "--no-certificate", "--functions", mode],
                           capture_output=True, text=True, check=True)
        out[mode] = [json.loads(line) for line in p.stdout.splitlines()]
    fast = sum(r.get("fastFunctions", False) for r in out["fast"])
    worst_abs = worst_rel = 0.0
    for a, b in zip(out["exact"], out["fast"]):
        for k in ("q", "v"):
            for x, y in zip(a["finalState"].get(k, []), b["finalState"].get(k, [])):
                worst_abs = max(worst_abs, abs(x - y))
                worst_rel = max(worst_rel, abs(x - y) / max(abs(x), 1e-300))
    print(f"{path}: fast on {fast}/{len(out['fast'])} instances; max |fast - exact| "
          f"{worst_abs:.3g} absolute, {worst_rel:.3g} relative")
