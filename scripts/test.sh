#!/usr/bin/env bash
# The whole test suite: install, then
#   1. Release build: unit, conformance, property, CLI, install and browser
#      tests (the HTML report in headless chromium; skipped without it), the
#      Python module's pytest files (label python), and the replay stress
#      program and the exact solver's helper threads under ThreadSanitizer;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build of the unit and
#      conformance tests;
#   3. clang libFuzzer build: every fuzz target for a short time.
# Budget: under 15 minutes on 2 cores. Set MEMPLAN_SKIP_SANITIZE=1 or
# MEMPLAN_SKIP_FUZZ=1 to skip a stage locally.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
start=$(date +%s)
# Each stage's count of tests run (scripts/run-ctest.sh appends), for the closing line.
export MEMPLAN_CTEST_TALLY
MEMPLAN_CTEST_TALLY=$(mktemp)
trap 'rm -f "$MEMPLAN_CTEST_TALLY"' EXIT
stage() { echo; echo "=== $* ($(( $(date +%s) - start )) s elapsed)"; }

stage "1/3 Release build and tests"
# MEMPLAN_TSAN: the replay stress program and the solver's helper threads under
# ThreadSanitizer (their own files only; ~1 min).
# Every option this stage relies on is stated: build/ is shared with
# scripts/demo.sh, and a cached value from another configure must not change
# what runs here.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_BUILD_TESTS=ON -DMEMPLAN_BUILD_BENCH=ON \
  -DMEMPLAN_TSAN=ON -DMEMPLAN_SANITIZE=OFF -DMEMPLAN_BUILD_FUZZ=OFF >/dev/null
cmake --build build -j"$jobs"
scripts/run-ctest.sh build 300 -j"$jobs" --output-on-failure -LE "long|fuzz"

if [ "${MEMPLAN_SKIP_SANITIZE:-0}" != 1 ]; then
  stage "2/3 ASan+UBSan build and tests"
  # libtorch, ONNX and the Python module are off in this build (their Debian
  # libraries and the interpreter are not instrumented), so are their tests.
  # -O1 -g1: quick to compile, still fast enough to run, still readable reports.
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMEMPLAN_SANITIZE=ON -DMEMPLAN_BUILD_BENCH=OFF \
    -DMEMPLAN_EXPENSIVE_CHECKS=ON -DMEMPLAN_BUILD_TESTS=ON -DMEMPLAN_WITH_PYTHON=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  # A quarter of the Release stage's 200 random problems per (planner, shape):
  # the sanitizers look for memory errors, which do not need every seed.
  MEMPLAN_PROPERTY_ITERATIONS=50 scripts/run-ctest.sh build-asan 200 -j"$jobs" --output-on-failure -LE "long|fuzz|install|browser"
fi

if [ "${MEMPLAN_SKIP_FUZZ:-0}" != 1 ]; then
  stage "3/3 libFuzzer targets"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMPLAN_BUILD_FUZZ=ON \
    -DMEMPLAN_BUILD_TESTS=ON -DMEMPLAN_BUILD_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs" --target memplan_fuzz_targets
  scripts/run-ctest.sh build-fuzz 3 -j"$jobs" --output-on-failure -L fuzz
fi
stage "all tests passed"
echo "tests: $(awk '{ n += $1 } END { print n + 0 }' "$MEMPLAN_CTEST_TALLY") passed, 0 failed"
