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
# (default build-fuzz), FUZZ_JOBS (build parallelism, default nproc),
# FUZZ_PARALLEL (targets fuzzed at once, each a single process for
# FUZZ_SECONDS, default nproc: on 2 cores five targets take 3 x 30 s instead
# of 5 x 30 s, and each still has a core of its own for its 30 s; measured:
# 94 s for the five in .ci/run).
# FUZZ_BUILD_DIR=build-asan fuzzes from scripts/sanitize.sh's build (clang,
# ASan, UBSan, coverage instrumentation, the fuzz targets and the tests in
# one build; .ci/run does this): a build dir configured with TETHER_FUZZ and
# the tests on is used as it is, only its fuzz targets are brought up to
# date; any other is configured here with the flags below.
# Needs clang and libclang-rt-14-dev (scripts/install-deps.sh --fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-30}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${FUZZ_JOBS:-$(nproc)}
PARALLEL=${FUZZ_PARALLEL:-$(nproc)}
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
if grep -qx 'TETHER_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null \
    && grep -qx 'TETHER_BUILD_TESTS:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  echo "fuzz: using $BUILD as configured (scripts/sanitize.sh's flags)"
else
  source scripts/cmake-generator.sh
  # shellcheck disable=SC2046  # the generator's words
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" $(generator_args "$BUILD") -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="$FLAGS" -DTETHER_FUZZ=ON \
    -DTETHER_BUILD_TESTS=OFF -DTETHER_BUILD_BENCH=OFF -DTETHER_BUILD_SERVICE=OFF >/dev/null
fi
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
# fuzz_one TARGET: fuzzes it for FUZZ_SECONDS; what it says goes to
# $BUILD/fuzz-work/TARGET/report (printed when it ends), and it returns 1 on
# a finding.
fuzz_one() {
  local t=$1 work="$BUILD/fuzz-work/$1"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/findings"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  local dict=()
  if [[ -f fuzz/dictionaries/$t.dict ]]; then dict=(-dict="fuzz/dictionaries/$t.dict"); fi
  # The first directory is the (writable) working corpus; the regressions
  # (when the target has any: git keeps no empty folder) are read as seeds.
  local seeds=()
  if [[ -d fuzz/regressions/$t ]]; then seeds=("fuzz/regressions/$t"); fi
  # -timeout: an input that runs this long is a finding (a hang). 30 s, not
  # 5: beside the sanitized tests on a 2-core CI machine an input of
  # run_encoder_fuzz was stopped at 5 s that replays in 0.05 s.
  if "$BUILD/bin/$t" "$work/corpus" "${seeds[@]}" "${dict[@]}" \
      -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=2048 -max_len=4096 \
      -artifact_prefix="$work/findings/" -print_final_stats=1 >"$work/fuzz.log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$work/fuzz.log" | tail -2 \
      | sed "s/^/fuzz: $t: /" >"$work/report"
    return 0
  fi
  {
    echo "fuzz: $t FOUND A PROBLEM; the end of its log:"
    tail -40 "$work/fuzz.log"
    local f
    for f in "$work"/findings/*; do
      if [[ -e "$f" ]]; then echo "fuzz: reproducer: $f (replay: $BUILD/bin/$t $f)"; fi
    done
  } >"$work/report"
  return 1
}

failed=()
declare -A running=()  # pid -> target
# reap: waits for one running target, prints its report, records a finding.
reap() {
  local pid rc=0 t
  wait -n -p pid "${!running[@]}" || rc=$?
  t=${running[$pid]}
  unset "running[$pid]"
  if [[ $rc -eq 0 ]]; then
    cat "$BUILD/fuzz-work/$t/report"
  else
    failed+=("$t")
    cat "$BUILD/fuzz-work/$t/report" >&2 2>/dev/null \
      || echo "fuzz: $t failed (exit $rc) before it could fuzz" >&2
  fi
}
for t in "${TARGETS[@]}"; do
  while [[ ${#running[@]} -ge $PARALLEL ]]; do reap; done
  echo "fuzz: $t for ${FUZZ_SECONDS} s (log $BUILD/fuzz-work/$t/fuzz.log)"
  fuzz_one "$t" &
  running[$!]=$t
done
while [[ ${#running[@]} -gt 0 ]]; do reap; done
echo "fuzz: done in $(( $(date +%s) - start )) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
