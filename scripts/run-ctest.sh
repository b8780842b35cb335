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
trap 'rm -f "$log"' EXIT
ctest --test-dir "$build_dir" --no-tests=error "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "run-ctest: ctest failed in $build_dir (exit $status)" >&2
  exit "$status"
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
