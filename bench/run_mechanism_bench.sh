#!/usr/bin/env bash
# Mechanisms against MuJoCo: runs tether_mechanism_bench (agreement check
# first) and prints the table of docs/benchmarks.md ("Mechanisms").
#
#   bench/run_mechanism_bench.sh [extra Google Benchmark flags]
#
# Uses $BUILD_DIR (default build; build it with
# cmake --build build --target tether_mechanism_bench). Runs every benchmark
# 3 times, randomly interleaved so background load hits Tether and MuJoCo
# alike; the table uses the medians of CPU time and computes every ratio
# from this one run. The raw JSON is kept in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BIN="$BUILD_DIR/bin/tether_mechanism_bench"
OUT=${OUT:-$BUILD_DIR/mechanism_bench.json}
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$BIN" --benchmark_repetitions=3 --benchmark_min_time=0.3 \
  --benchmark_enable_random_interleaving=true \
  --benchmark_display_aggregates_only=true \
  --benchmark_out="$OUT" --benchmark_out_format=json "$@" >&2
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
rows = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    case, _, variant = b["run_name"].rpartition("/")
    rows.setdefault(case, {})[variant] = b
def rate(r, v):
    return r[v]["items_per_second"] if v in r else float("nan")
def ms(r, v):
    return r[v]["cpu_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6}[r[v]["time_unit"]] if v in r else float("nan")
print("| model | MuJoCo steps/s | Tether cert off steps/s | Tether cert on steps/s | cert on / MuJoCo | Tether URDF import ms | Tether compile ms | MuJoCo load ms |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
def order(case):  # arm7, then the chains by N
    return (case != "arm7", int(case.split("/")[1]) if "/" in case else 0)
for case, r in sorted(rows.items(), key=lambda kv: order(kv[0])):
    mj, off, on = rate(r, "mujoco"), rate(r, "tether_cert_off"), rate(r, "tether_cert_on")
    print(f"| {case} | {mj:,.0f} | {off:,.0f} | {on:,.0f} | {on / mj:.3f} | "
          f"{ms(r, 'tether_urdf_import'):.2f} | {ms(r, 'tether_compile'):.1f} | {ms(r, 'mujoco_load'):.2f} |")
PY
