#!/usr/bin/env bash
# Compile benchmark (docs/benchmarks.md, "Compiles"): for each case, the
# in-process Validate time and VmHWM of build/bin/tether_compile_bench (one
# child process per case), then `tether validate` of the same description
# as a whole process (wall time and peak RSS from /usr/bin/time) for each
# TETHER binary given (e.g. a reference build of main and this build), the
# median of 3 runs.
#
# Usage: bench/run_compile_bench.sh [TETHER...]   (default: build/bin/tether)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bench="$root/build/bin/tether_compile_bench"
binaries=("$@")
[[ ${#binaries[@]} -gt 0 ]] || binaries=("$root/build/bin/tether")
cases=(cartesian/64 cartesian/128 cartesian/256 angles/20 angles/50)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## in process (tether_compile_bench; median of 3 after a first call)"
"$bench" "${cases[@]}"
echo
echo "## tether validate, whole process (median of 3 runs: wall s, peak RSS MB)"
printf '%-14s' case
for b in "${binaries[@]}"; do printf ' %28s' "${b: -28}"; done
echo
for c in "${cases[@]}"; do
  spec="$work/${c//\//_}.json"
  "$bench" --spec "$c" >"$spec"
  printf '%-14s' "$c"
  for b in "${binaries[@]}"; do
    rows=()
    for _ in 1 2 3; do
      /usr/bin/time -f '%e %M' -o "$work/time" "$b" validate "$spec" >/dev/null 2>&1 || true
      rows+=("$(cat "$work/time")")
    done
    printf ' %28s' "$(printf '%s\n' "${rows[@]}" | sort -n | sed -n 2p |
      awk '{printf "%.2f s %6.1f MB", $1, $2 / 1024}')"
  done
  echo
done
