#!/usr/bin/env bash
# CI's sanitizer job: the test suite built with AddressSanitizer (with
# LeakSanitizer) and UndefinedBehaviorSanitizer in a build dir of its own
# (build-asan), then run by ctest. Any report is fatal: ASan and UBSan abort
# the process that has one, so the test that ran it fails. tether-server,
# started by the service tests as a child (tests/support/server_process.cc),
# is the sanitized build too, and inherits the options below; a report in
# that child goes to a log file (log_path), which this script checks after
# the run, so a child's report fails the job although the service tests do
# not check how the server exits (a report at its exit, e.g. a leak, is
# after every assertion). With clang's combined runtime UBSan's reports go to
# that log file too (measured; GCC 12's, used here before, sent them to
# stderr only), so a UB in the server's shutdown path fails the job as well.
#
# One build for the sanitizers and the fuzzing: clang, with libFuzzer's
# coverage instrumentation (-fsanitize=fuzzer-no-link) and the fuzz targets
# (TETHER_FUZZ=ON), so that scripts/fuzz.sh fuzzes from this very build
# (FUZZ_BUILD_DIR=build-asan; .ci/run does) instead of compiling the tree a
# third time; the fuzz targets' committed inputs are replayed by ctest here
# as in the ordinary build (fuzz_replay.<target>). Asserts on (Debug), the
# code the fuzz targets drive at -O1 with the coverage as fuzz.sh builds it
# (the rest at -O0 without it, below), line tables for the frames of a report
# (-gline-tables-only: file and line, without the cost of full -g). Before,
# a GCC RelWithDebInfo build here (9.7 min from scratch at load 3-5) and a
# clang build of the engine and fuzz targets in fuzz.sh (170 s) compiled the
# engine twice. Measured from scratch on 2 cores in .ci/run (beside another
# engineer's builds, load 2-4): the build 601 s at nice 10 beside
# scripts/test.sh (633 s of CPU), the tests 183 s (294 s of CPU); GCC's
# tests took 1.8-2.3 min.
# tests/counting_allocator.cc (in dynamics_test and memory_use_test) replaces
# operator new to count allocations; it runs here unchanged (its operator
# new calls malloc, which ASan intercepts).
# Usage: scripts/sanitize.sh [--build-only | --test-only]
# (installs clang and its sanitizer runtimes with scripts/install-deps.sh
# --fuzz when missing). --build-only stops after the build, --test-only
# runs the tests of a build made before: .ci/run builds in the background
# while scripts/test.sh's tests run, then tests.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build="$root/build-asan"
step=all
case "${1:-}" in
  "") ;;
  --build-only) step=build ;;
  --test-only) step=test ;;
  *) echo "usage: $0 [--build-only | --test-only]" >&2; exit 2 ;;
esac
./scripts/install-deps.sh --fuzz

# UBSan without four of its checks, which doubled clang's time on the
# engine's code (kkt/newton.cc at -O1: 28.3 s of CPU with every check, 17.2 s
# without these, 14.8 s with ASan alone) and which ASan or the platform make
# moot: null (ASan reports the access to a null pointer as a SEGV with its
# stack), object-size (ASan's redzones catch the out-of-bounds access itself),
# alignment (x86-64 accesses any alignment, and the lane kernels' SIMD loads
# and stores are the unaligned ones) and pointer-overflow (pointer arithmetic
# that wraps the address space). Signed overflow, shifts,
# division by zero, float-to-int overflow, array bounds, enums, bools,
# vptr, unreachable and missing returns stay checked.
san="-fsanitize=address,undefined -fno-sanitize=null,object-size,alignment,pointer-overflow"
san+=" -fno-sanitize-recover=undefined"
# Everything at -O0 but the engine (server/engine), at -O1 with libFuzzer's
# coverage (TETHER_ENGINE_COMPILE_OPTIONS; the fuzz harnesses and the run
# encoder add the coverage of their own, fuzz/ and server/service CMake):
# clang compiles the gRPC, protobuf and gtest code of the service, the
# clients and the tests in half the time at -O0 (server.cc: 9.6 s of CPU
# against 23.5 s), and the tests spend their CPU in the engine.
flags="-gline-tables-only -O0 -fno-omit-frame-pointer $san"
engine_flags="-O1;-fsanitize=fuzzer-no-link"
# (-Wno-mismatched-tags: clang's note that a class declared `struct` elsewhere
# would mangle differently under the Microsoft ABI, irrelevant here; the
# project's -Wno-restrict is GCC's only.)
flags+=" -Wno-unknown-warning-option -Wno-mismatched-tags"
if [[ $step != test ]]; then
  source scripts/cmake-generator.sh
  # shellcheck disable=SC2046  # the generator's words
  CC=clang CXX=clang++ cmake -S . -B "$build" $(generator_args "$build") -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="$flags" -DCMAKE_EXE_LINKER_FLAGS="$san" \
    -DCMAKE_SHARED_LINKER_FLAGS="$san" -DTETHER_FUZZ=ON \
    -DTETHER_ENGINE_COMPILE_OPTIONS="$engine_flags" \
    -DTETHER_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)"
fi
if [[ $step == build ]]; then exit 0; fi

# With log_path an ASan/LSan report goes to $logs/asan.<program>.<pid>
# instead of stderr; the files are created only by a report, so a clean run
# leaves $logs empty, and any file in it fails the job (printed below).
# UBSan's reports land there too (clang's runtime honours log_path for them).
logs="$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:print_stacktrace=1:log_path=$logs/asan:log_exe_name=1"
# c-ares (gRPC's DNS resolver, used when a channel names "localhost", as the
# TLS tests must for the certificate's name) keeps a few bytes per process
# that it never frees: a third-party leak, suppressed by library name only.
# OpenSSL's objects (allocated in libcrypto, whose frames end the stack: it
# has no frame pointers) that gRPC's TLS handshakes still hold when a test
# program exits with a handshake in flight: seen once in client_security_test
# at load 5 (MutualTlsWithAndWithoutAClientCertificate, whose last channel's
# handshake fails), not in four runs alone. The project's own use of
# libcrypto is one-shot digests (SHA256, EVP_Digest), which hold nothing.
printf 'leak:libcares.so\nleak:libcrypto.so\n' > "$build/lsan.supp"
export LSAN_OPTIONS="suppressions=$build/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"

# Not run here: the checks that compile, format or read source without
# running any of the project's code (clang_format_check,
# engine_internals_are_private, engine_layers_point_down); ./scripts/test.sh
# runs them.
excluded='^(clang_format_check|engine_internals_are_private|engine_layers_point_down)$'
# Nor the tests that drive the server from Python (the Python code is not
# instrumented; the C++ service tests run the same server calls here), nor
# the cloth's backward-error test (numerics on one thread, 67 s under the
# sanitizers, the longest test here; its code runs in other tests). They
# took some 60 s of this stage's wall time of about 340 s (cold CI, 1286 s
# in all, over the 20 minutes).
excluded+='|^(python_client_test|python_client_security_test|python_package_test)$'
# The mechanism examples' test drives `tether run` from Python on
# descriptions the C++ mechanism tests already cover.
excluded+='|^mechanism_examples_test$'
# A Python driver of the FMI 3.0 FMU (its C++ paths are fmu3_test's).
excluded+='|^fmu3_sympy_test$'
# A Python master of the coupling example (two FMUs through ctypes; the
# Tether FMU's C++ paths are fmu_test's, and the PID FMU is the example's C).
excluded+='|^cosim_pid_test$'
# The cluster tests drive processes (redis-server, HAProxy, replicas) from
# Python and check YAML; their C++ (the Redis store) runs in the Release
# pass (cluster_test), where its 22 s fit the CI budget.
excluded+='|^(cluster_test|k8s_manifest_test)$'
# The ensemble drain's Python driver, as the other Python drivers above.
# It was first left out because under the sanitizers the call often ended
# "Cancelling all calls" (the server's shutdown deadline) instead of the
# drain's status; the cause was a race in RunEnsemble (a helper lane that
# ended while the main lane was deciding to wait for it left the main lane
# asleep; ensemble_reactor.cc, LaneQuantum), fixed since, after which the
# test passed 5 of 5 runs against this build's server.
excluded+='|^ensemble_drain_test$'
excluded+='|^BackwardErrorTest\.NoFalseAlarmOnASaggingClothWhileAWrongSolveStillFails$'
# The stiff-gain run of RADAU_IIA against SDIRK3, as the cloth's test above
# (numerics on one thread, 31 s here, the longest test of this stage;
# RadauTest's other tests run its code).
excluded+='|^RadauTest\.RunsAtGains1e5WhereSdirk3Stops$'

# One test more than cores: under the sanitizers the tests mostly wait (at
# -j 2 on 2 cores they used half the CPU: 313 s, 305 s of CPU); -j 3 took
# 197 s (297 s of CPU, load 2-3 beside), every test passing.
# Nor the tests labelled slow (tests/CMakeLists.txt: each takes 5 s or
# more in the Release pass, mostly waiting on timers: fairness under
# saturation, a drain within the grace, an idle connection closed, the
# checkpoint schedule, a stalled call, the cluster's failover); the calls
# they make are the other service tests' calls, which run here. Under the
# sanitizers they were the longest tail of this stage, and with issue 25,
# 26 and 27's tests added the whole of CI went over its 20 minutes.
status=0
ctest --test-dir "$build" -j "$(( $(nproc) + 1 ))" --timeout 900 --output-on-failure \
  -E "$excluded" -LE slow || status=$?

if compgen -G "$logs/*" >/dev/null; then
  echo "sanitize.sh: sanitizer reports (in $logs):" >&2
  cat "$logs"/* >&2
  status=1
fi
exit "$status"
