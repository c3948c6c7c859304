#!/usr/bin/env bash
# CI's sanitizer job: the test suite built with AddressSanitizer (with
# LeakSanitizer) and UndefinedBehaviorSanitizer in a build dir of its own
# (build-asan; GCC, RelWithDebInfo so the frames in a report carry lines),
# then run by ctest. Any report is fatal: ASan and UBSan abort the process
# that has one, so the test that ran it fails. tether-server, started by
# the service tests as a child (tests/support/server_process.cc), is the
# sanitized build too, and inherits the options below; a report in that
# child goes to a log file (log_path), which this script checks after the
# run, so a child's report fails the job although the service tests do not
# check how the server exits (a report at its exit, e.g. a leak, is after
# every assertion). UBSan's reports ignore log_path in GCC 12's combined
# runtime (measured) and go to stderr; they abort the process all the same,
# so a UB in the server kills it under the RPC in flight and fails that
# test. Not caught: a UB in the server's shutdown path after the last RPC.
# tests/dynamics_test.cc replaces operator new to count allocations; it
# runs here unchanged (its operator new calls malloc, which ASan intercepts).
# Usage: scripts/sanitize.sh   (needs the packages scripts/install-deps.sh
# installs). Measured on 2 cores: a build from scratch 9.7 min (load 3-5
# from other builds; 26 min at load 6-10), then the tests 1.8-2.3 min.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build="$root/build-asan"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
  -DTETHER_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2

# With log_path an ASan/LSan report goes to $logs/asan.<program>.<pid>
# instead of stderr; the files are created only by a report, so a clean run
# leaves $logs empty, and any file in it fails the job (printed below).
# UBSan's reports go to stderr (above), hence no log_path for them.
logs="$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:print_stacktrace=1:log_path=$logs/asan:log_exe_name=1"
# c-ares (gRPC's DNS resolver, used when a channel names "localhost", as the
# TLS tests must for the certificate's name) keeps a few bytes per process
# that it never frees: a third-party leak, suppressed by library name only.
printf 'leak:libcares.so\n' > "$build/lsan.supp"
export LSAN_OPTIONS="suppressions=$build/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"

# Not run here: the two checks that compile or format source without running
# any of the project's code (clang_format_check, engine_internals_are_private);
# ./scripts/test.sh runs them.
excluded='^(clang_format_check|engine_internals_are_private)$'

status=0
ctest --test-dir "$build" -j2 --timeout 900 --output-on-failure -E "$excluded" || status=$?

if compgen -G "$logs/*" >/dev/null; then
  echo "sanitize.sh: sanitizer reports (in $logs):" >&2
  cat "$logs"/* >&2
  status=1
fi
exit "$status"
