#!/usr/bin/env bash
# The whole test suite: install, then
#   1. Release build: unit, conformance, property, CLI, install and browser
#      tests (the HTML report in headless chromium; skipped without it), the
#      Python module's pytest files (label python), and the replay stress
#      program and the exact solver's helper threads under ThreadSanitizer;
#   2. one clang unity build with AddressSanitizer + UndefinedBehaviorSanitizer
#      and the libFuzzer instrumentation (in the libraries and fuzz targets,
#      not in the tests' own code): the unit, conformance, runtime, trace and
#      CLI tests under the sanitizers, then every fuzz target for 10 s (one
#      compile for both, instead of one each).
# Tests assert on behaviour, never on elapsed time (scripts/test-under-load.sh
# runs this suite with every core busy: 3 of 3 rounds passed). Target: under
# 15 minutes on 2 cores after scripts/demo.sh. Last fresh clone after the
# demo, 2-core machine, warm ccache: 600 s, 2,901 tests (Release 1,528,
# sanitizers 1,366, fuzz 7); without a warm cache 803 s for 2,825. The exact-solver tests run at full size here and on a spread
# sample under the sanitizers (tests/support/test_size.h).
# Each step's wall and CPU time and each stage's ten
# slowest tests are printed at the end. Set MEMPLAN_SKIP_SANITIZE=1 or
# MEMPLAN_SKIP_FUZZ=1 to skip a stage (or its fuzz half) locally.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
start=$(date +%s)
# Each stage's count of tests run (scripts/run-ctest.sh appends), for the closing line.
export MEMPLAN_CTEST_TALLY
MEMPLAN_CTEST_TALLY=$(mktemp)
timings=$(mktemp)
trap 'rm -f "$MEMPLAN_CTEST_TALLY" "$timings" "$timings.cpu" "$timings.cpu-after"' EXIT
stage() { echo; echo "=== $* ($(( $(date +%s) - start )) s elapsed)"; }
# CPU seconds (user + system) of this shell's finished children, from a file
# holding the output of bash's `times` (second line: "0m12.345s 0m1.234s").
# `times` itself must run in this shell, not in a $(...) subshell.
children_cpu() {
  awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"
}
# timed LABEL COMMAND...: runs the command and records its wall time and the
# CPU time it used (on a machine shared with other work, the CPU time is the
# steadier measure).
timed() {
  local label=$1 began
  shift
  began=$(date +%s)
  times > "$timings.cpu"
  "$@"
  times > "$timings.cpu-after"
  echo "$label $(( $(date +%s) - began )) $(( $(children_cpu "$timings.cpu-after") - $(children_cpu "$timings.cpu") ))" \
    >> "$timings"
}
# The ten slowest tests of the last ctest run in a build folder.
slowest() {
  local log=$1/Testing/Temporary/LastTest.log
  [ -f "$log" ] || return 0
  echo "slowest tests in $1:"
  # No `head` here: under pipefail a reader that stops early fails the writer (SIGPIPE).
  awk '/^[0-9]+\/[0-9]+ Testing: /{ name = $3 } /^Test time = /{ print $4, name }' "$log" | sort -rn |
    awk 'NR <= 10 { printf "  %8.1f s  %s\n", $1, $2 }'
}

stage "0 formatting (.clang-format)"
timed "format-check" scripts/check-format.sh

stage "1/2 Release build and tests"
# MEMPLAN_TSAN: the replay stress program and the solver's helper threads under
# ThreadSanitizer (their own files only; ~1 min).
# Every option this stage relies on is stated: build/ is shared with
# scripts/demo.sh, and a cached value from another configure must not change
# what runs here.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_BUILD_TESTS=ON -DMEMPLAN_BUILD_BENCH=ON \
  -DMEMPLAN_TSAN=ON -DMEMPLAN_SANITIZE=OFF -DMEMPLAN_BUILD_FUZZ=OFF >/dev/null
timed "release-build" cmake --build build -j"$jobs"
timed "release-tests" scripts/run-ctest.sh build 300 -j"$jobs" --output-on-failure -LE "long|fuzz"
slowest build > "$timings.release"

if [ "${MEMPLAN_SKIP_SANITIZE:-0}" != 1 ]; then
  stage "2/2 ASan+UBSan build (clang, with the libFuzzer instrumentation) and tests"
  # libtorch, MLIR and the Python module are off in this build (their Debian
  # libraries and the interpreter are not instrumented), so are their tests;
  # the ONNX front end is on for its fuzz target, and its torch-export tests
  # (label onnx) and the scripts' tests ran in stage 1.
  # -O1 -g1: quick to compile, still fast enough to run, still readable reports.
  # A unity build (each target's files compiled in batches, the headers parsed
  # once per batch; targets whose files share local names opt out): a third
  # less compile time. Each fuzz target runs 10 s beyond its seed corpus.
  CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_UNITY_BUILD=ON \
    -DMEMPLAN_SANITIZE=ON -DMEMPLAN_BUILD_FUZZ=ON -DMEMPLAN_FUZZ_SECONDS=10 -DMEMPLAN_BUILD_BENCH=OFF \
    -DMEMPLAN_EXPENSIVE_CHECKS=ON -DMEMPLAN_BUILD_TESTS=ON -DMEMPLAN_WITH_PYTHON=OFF >/dev/null
  timed "sanitize-build" cmake --build build-sanitize -j"$jobs"
  # A quarter of the Release stage's 200 random problems per (planner, shape):
  # the sanitizers look for memory errors, which do not need every seed.
  timed "sanitize-tests" env MEMPLAN_PROPERTY_ITERATIONS=50 scripts/run-ctest.sh build-sanitize 200 -j"$jobs" \
    --output-on-failure -LE "long|fuzz|install|browser|onnx|scripts"
  slowest build-sanitize > "$timings.sanitize"
  if [ "${MEMPLAN_SKIP_FUZZ:-0}" != 1 ]; then
    stage "2/2 libFuzzer targets (same build)"
    timed "fuzz-tests" scripts/run-ctest.sh build-sanitize 3 -j"$jobs" --output-on-failure -L fuzz
  fi
fi
stage "all tests passed"
echo "time per step (s):      wall    CPU"
awk '{ printf "  %-16s %5d  %5d\n", $1, $2, $3 }' "$timings"
cat "$timings.release" "$timings.sanitize" 2>/dev/null || true
rm -f "$timings.release" "$timings.sanitize"
echo "tests: $(awk '{ n += $1 } END { print n + 0 }' "$MEMPLAN_CTEST_TALLY") passed, 0 failed in $(( $(date +%s) - start )) s"
