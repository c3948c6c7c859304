#!/usr/bin/python3
"""Turns tether_bench's Google Benchmark JSON output into the engine-vs-
hand-written table (bench/run_engine_bench.sh).

Per benchmark the median over repetitions of items_per_second (= RK4 steps
per second of CPU time) is used; every ratio is computed from the same run.
"""
import json
import statistics
import sys
from collections import defaultdict

CIRCLE_TARGET = 0.25   # engine (cert off) / reference on the circle pendulum
OVERHEAD_TARGET = 2.0  # cert on time / cert off time


def fmt_rate(x):
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def main(path):
    with open(path) as f:
        data = json.load(f)
    reps = defaultdict(list)  # (model, n, variant) -> [steps/s]
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or "error_occurred" in b:
            continue
        model, n, variant = b["run_name"].split("/")
        reps[(model, int(n), variant)].append(b["items_per_second"])
    med = {k: statistics.median(v) for k, v in reps.items()}
    spread = {k: (max(v) - min(v)) / statistics.median(v) for k, v in reps.items()}

    order = {"circle": 0, "double": 1, "chain": 2}
    models = sorted({(m, n) for (m, n, _) in med}, key=lambda k: (order.get(k[0], 9), k[1]))
    ctx = data.get("context", {})
    print(f"# tether_bench, {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz, "
          f"load average {', '.join(f'{x:.2f}' for x in ctx.get('load_avg', []))}, "
          f"{max(len(v) for v in reps.values())} repetitions, medians of steps per CPU-second")
    print()
    head = ["model", "N", "reference steps/s", "engine cert off steps/s",
            "engine cert on steps/s", "engine/reference (cert off)",
            "engine/reference (cert on)", "cert overhead (on/off time)",
            "banded reference steps/s", "max spread"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
    circle_ratio = None
    overheads = []
    for m, n in models:
        ref = med.get((m, n, "reference"))
        off = med.get((m, n, "engine_cert_off"))
        on = med.get((m, n, "engine_cert_on"))
        banded = med.get((m, n, "reference_banded"))
        r_off = off / ref if ref and off else None
        r_on = on / ref if ref and on else None
        ovh = off / on if off and on else None
        if m == "circle":
            circle_ratio = r_off
        if ovh:
            overheads.append((ovh, m, n))
        sp = max(spread[k] for k in reps if k[0] == m and k[1] == n)
        print("| " + " | ".join([
            m, str(n), fmt_rate(ref), fmt_rate(off), fmt_rate(on),
            f"{r_off:.3f}x" if r_off else "-", f"{r_on:.3f}x" if r_on else "-",
            f"{ovh:.2f}x" if ovh else "-", fmt_rate(banded), f"{100 * sp:.0f}%"]) + " |")
    print()
    print("max spread: (max - min) / median over the repetitions, worst of the row's benchmarks.")
    print("banded reference: the chain's tridiagonal W exploited (O(N)); not the engine's "
          "dense algorithm, shown for context only.")
    print()
    if circle_ratio is not None:
        verdict = "MET" if circle_ratio >= CIRCLE_TARGET else "MISSED"
        print(f"target 1: circle pendulum, engine (cert off) / reference = {circle_ratio:.3f}x "
              f"(target >= {CIRCLE_TARGET}x): {verdict}")
    if overheads:
        worst = max(overheads)
        verdict = "MET" if worst[0] <= OVERHEAD_TARGET else "MISSED"
        over = [f"{m}/{n} {o:.2f}x" for o, m, n in sorted(overheads, reverse=True)
                if o > OVERHEAD_TARGET]
        print(f"target 2: certificate overhead (cert on time / cert off time), worst "
              f"{worst[1]}/{worst[2]} = {worst[0]:.2f}x (target <= {OVERHEAD_TARGET}x): {verdict}"
              + (f"; above target: {', '.join(over)}" if over else ""))


if __name__ == "__main__":
    main(sys.argv[1])
