#!/usr/bin/env bash
# Runs ctest in one build folder and fails unless tests ran and all passed.
#
#   scripts/run-ctest.sh BUILD_DIR MIN_TESTS [ctest arguments...]
#
# ctest exits 0 when a label filter or a build configured without tests
# selects nothing; a test command that can pass with no test run is a defect.
# So: --no-tests=error, and the number of tests ctest reports having run
# must be at least MIN_TESTS (each stage of scripts/test.sh states the
# smallest count it expects, well below the real one, to catch a stage whose
# tests vanished, not to track the count exactly).
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR MIN_TESTS [ctest arguments...]" >&2
  exit 2
fi
build_dir=$1
min_tests=$2
shift 2
log=$(mktemp)
# The tests' temporary directory (TMPDIR, and TEST_TMPDIR for GoogleTest's
# TempDir()) is a fresh one of this run's, removed at the end, so that a run
# leaves nothing behind and what a passing run failed to remove can be seen.
test_tmp=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$test_tmp"' EXIT
TMPDIR=$test_tmp TEST_TMPDIR=$test_tmp ctest --test-dir "$build_dir" --no-tests=error "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "run-ctest: ctest failed in $build_dir (exit $status)" >&2
  exit "$status"
fi
# Folders a test creates per run must be gone after it passes (a leak here
# fills the machine's /tmp over many runs).
leftovers=$(find "$test_tmp" -mindepth 1 -maxdepth 1 -name 'memplan_preload_*' | head -5)
if [ -n "$leftovers" ]; then
  echo "run-ctest: the passing tests left temporary folders behind in $build_dir's run:" >&2
  echo "$leftovers" >&2
  exit 1
fi
# ctest's summary: "100% tests passed, 0 tests failed out of 123".
ran=$(sed -n 's/.*tests failed out of \([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
if [ -z "$ran" ]; then
  echo "run-ctest: no test summary from ctest in $build_dir: no tests ran" >&2
  exit 1
fi
if [ "$ran" -lt "$min_tests" ]; then
  echo "run-ctest: only $ran tests ran in $build_dir, expected at least $min_tests" >&2
  exit 1
fi
echo "run-ctest: $ran tests ran and passed in $build_dir"
# scripts/test.sh adds up the stages' counts for its closing line.
if [ -n "${MEMPLAN_CTEST_TALLY:-}" ]; then echo "$ran" >> "$MEMPLAN_CTEST_TALLY"; fi
