#!/usr/bin/env bash
# Installs what is missing, builds (all but the benchmarks), and runs the
# whole test suite.
#   scripts/test.sh          every test (the README's command; .ci/run runs it)
#   scripts/test.sh --fast   all but the tests labelled slow (ctest -LE slow;
#                            the labels are in tests/CMakeLists.txt): 348 of
#                            the 355 tests, leaving out seven that take 5 to
#                            28 s each. Measured after a build on 2
#                            cores, one after the other at load 3-4 (another
#                            engineer's build beside them): --fast 100 s,
#                            everything 134 s.
# After the build, ctest's other labels pick a part: ctest --test-dir build
# -L unit (or cli, service, fmu, fuzz, check).
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
case "${1:-}" in
  "") ;;
  --fast) select=(-LE slow) ;;
  *) echo "usage: $0 [--fast]" >&2; exit 2 ;;
esac
./scripts/install-deps.sh
# Without the benchmarks (bench/: no test runs them; about 100 s of CPU of
# the build), which scripts/build.sh builds into the same ./build.
./scripts/build.sh -DTETHER_BUILD_BENCH=OFF
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600 "${select[@]}"
