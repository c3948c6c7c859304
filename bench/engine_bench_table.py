#!/usr/bin/python3
"""Turns tether_bench's Google Benchmark JSON output into the engine-vs-
hand-written table (bench/run_engine_bench.sh).

Per benchmark the median over repetitions of items_per_second (= RK4 steps
per second of CPU time) is used; every ratio is computed from the same run.
"""
import json
import math
import statistics
import sys
from collections import defaultdict

CIRCLE_TARGET = 0.25   # engine (cert off) / reference on the circle pendulum
OVERHEAD_TARGET = 2.0  # cert on time / cert off time
# Issue 10: the sparse KKT path.
CHAIN64_BANDED_TARGET = 0.5   # chain/64 engine (cert off) / banded reference
CHAIN256_TARGET = 20e3        # chain/256 steps/s (cert off)
GROWTH_TARGET = {"chain": 1.2, "ladder": 1.2, "grid": 1.5}  # per-step cost ~ N^p, N = 16..256


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

    order = {"circle": 0, "double": 1, "chain": 2, "ladder": 3, "grid": 4}
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


    scaling(med)


def fit_exponent(points):
    """Least-squares slope of log(time per step) against log(N)."""
    xs = [math.log(n) for n, _ in points]
    ys = [-math.log(r) for _, r in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def scaling(med):
    """The large systems (sparse KKT path): growth exponents and targets."""
    print()
    print("Scaling, N = 16..256 masses (per-step cost ~ N^p, least-squares fit of "
          "log(1/steps per s) on log N):")
    print()
    print("| model | " + " | ".join(f"N={n}" for n in (16, 32, 64, 128, 256)) +
          " | p (cert off) | p (cert on) | target |")
    print("|---|" + "---:|" * 8)
    for m in ("chain", "ladder", "grid"):
        row = []
        fits = []
        for variant in ("engine_cert_off", "engine_cert_on"):
            pts = sorted((n, r) for (mm, n, v), r in med.items()
                         if mm == m and v == variant and 16 <= n <= 256)
            fits.append(fit_exponent(pts) if len(pts) >= 2 else None)
        for n in (16, 32, 64, 128, 256):
            row.append(fmt_rate(med.get((m, n, "engine_cert_off"))))
        target = GROWTH_TARGET[m]
        verdict = ("MET" if all(f is not None and f <= target for f in fits) else "MISSED") \
            if fits[0] is not None else "-"
        print(f"| {m} | " + " | ".join(row) + " | " +
              " | ".join(f"{f:.2f}" if f is not None else "-" for f in fits) +
              f" | <= {target} {verdict} |")
    print()
    print("grid/N has k x k masses, N = 16, 64, 144, 256 (no N = 32, 128).")
    dense = [(n, med.get(("chain", n, "engine_dense_cert_off")), med.get(("chain", n,
             "engine_cert_off"))) for n in (16, 32, 64)]
    if any(d for _, d, _ in dense):
        print("chain, forced dense path (the algorithm before the switch) vs the automatic "
              "(sparse) one, cert off: " + ", ".join(
                  f"N={n}: {fmt_rate(d)} vs {fmt_rate(s)} ({s / d:.1f}x)" for n, d, s in dense
                  if d and s))
    c64 = med.get(("chain", 64, "engine_cert_off"))
    b64 = med.get(("chain", 64, "reference_banded"))
    if c64 and b64:
        r = c64 / b64
        print(f"target: chain/64 engine (cert off) / banded reference = {r:.3f}x "
              f"(target >= {CHAIN64_BANDED_TARGET}x): "
              f"{'MET' if r >= CHAIN64_BANDED_TARGET else 'MISSED'}")
    c256 = med.get(("chain", 256, "engine_cert_off"))
    if c256:
        print(f"target: chain/256 engine (cert off) = {fmt_rate(c256)} steps/s "
              f"(target >= {fmt_rate(CHAIN256_TARGET)}): "
              f"{'MET' if c256 >= CHAIN256_TARGET else 'MISSED'}")


if __name__ == "__main__":
    main(sys.argv[1])
