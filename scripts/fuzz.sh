#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/) with clang, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer in their own build directory, runs each for a
# bounded time on a copy of its committed corpus (plus its regressions), and
# fails on any finding, printing the reproducer's path. fuzz/README.md says
# how to run one target longer and how to keep a finding as a regression.
#
#   scripts/fuzz.sh [TARGET...]        default: every target (fuzz/corpus/*)
#
# Environment: FUZZ_SECONDS (per target, default 30), FUZZ_BUILD_DIR
# (default build-fuzz), FUZZ_JOBS (build parallelism, default nproc).
# Needs clang and libclang-rt-14-dev (scripts/install-deps.sh --fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-30}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${FUZZ_JOBS:-$(nproc)}
# Every target has a seed corpus, named after it (fuzz/CMakeLists.txt).
mapfile -t TARGETS < <(ls fuzz/corpus)
if [[ $# -gt 0 ]]; then TARGETS=("$@"); fi

# The whole build (engine, messages, encoder) is instrumented for coverage
# and the sanitizers; asserts stay on (a Debug build at -O1). UBSan stops at
# the first report, so that libFuzzer keeps the input.
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
# (-Wno-mismatched-tags: clang's note that a class declared `struct` elsewhere
# would mangle differently under the Microsoft ABI, irrelevant here.)
FLAGS="-g -O1 -fno-omit-frame-pointer $SAN -fsanitize=fuzzer-no-link"
FLAGS+=" -Wno-unknown-warning-option -Wno-mismatched-tags"
start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="$FLAGS" -DTETHER_FUZZ=ON \
  -DTETHER_BUILD_TESTS=OFF -DTETHER_BUILD_BENCH=OFF -DTETHER_BUILD_SERVICE=OFF >/dev/null
mkdir -p "$BUILD"
if ! cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >"$BUILD/build.log" 2>&1; then
  grep -E -A5 "error" "$BUILD/build.log" | head -60 >&2
  echo "fuzz: the build failed (log $BUILD/build.log)" >&2
  exit 1
fi
grep -E -A3 "warning:" "$BUILD/build.log" >&2 || true
echo "fuzz: built ${#TARGETS[@]} target(s) in $(( $(date +%s) - start )) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${TARGETS[@]}"; do
  work="$BUILD/fuzz-work/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/findings"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  dict=()
  if [[ -f fuzz/dictionaries/$t.dict ]]; then dict=(-dict="fuzz/dictionaries/$t.dict"); fi
  echo "fuzz: $t for ${FUZZ_SECONDS} s (log $work/fuzz.log)"
  # The first directory is the (writable) working corpus; the regressions
  # (when the target has any: git keeps no empty folder) are read as seeds.
  seeds=()
  if [[ -d fuzz/regressions/$t ]]; then seeds=("fuzz/regressions/$t"); fi
  if "$BUILD/bin/$t" "$work/corpus" "${seeds[@]}" "${dict[@]}" \
      -max_total_time="$FUZZ_SECONDS" -timeout=5 -rss_limit_mb=2048 -max_len=4096 \
      -artifact_prefix="$work/findings/" -print_final_stats=1 >"$work/fuzz.log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$work/fuzz.log" | tail -2 | sed "s/^/fuzz: $t: /"
  else
    failed+=("$t")
    echo "fuzz: $t FOUND A PROBLEM; the end of its log:" >&2
    tail -40 "$work/fuzz.log" >&2
    for f in "$work"/findings/*; do
      [[ -e "$f" ]] && echo "fuzz: reproducer: $f (replay: $BUILD/bin/$t $f)" >&2
    done
  fi
done
echo "fuzz: done in $(( $(date +%s) - start )) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
