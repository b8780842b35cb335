#!/usr/bin/env bash
# The whole test suite (scripts/test.sh) while a CPU hog keeps every core
# busy, several rounds in a row; any failure stops it. Tests assert on what
# the code does, never on how fast it ran, so a busy machine must not fail
# them: this script is the proof.
#
#   scripts/test-under-load.sh [ROUNDS]      (default 3)
#
# The hog is Debian's stress-ng (one CPU worker per core) when installed,
# else one shell busy-loop per core. The first round builds what the suite
# needs (as scripts/test.sh does); later rounds rebuild nothing and only run
# the tests. Each round's time and the load average are printed, and a summary
# at the end. Environment: as scripts/test.sh (MEMPLAN_SKIP_SANITIZE=1,
# MEMPLAN_SKIP_FUZZ=1 skip a stage).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [ROUNDS]  (a positive number of rounds; got '$rounds')" >&2
  exit 2
fi
cores=$(nproc)
hog_pids=()
stop_hog() {
  if [ ${#hog_pids[@]} -gt 0 ]; then kill "${hog_pids[@]}" 2>/dev/null || true; wait "${hog_pids[@]}" 2>/dev/null || true; fi
  hog_pids=()
}
trap stop_hog EXIT
start_hog() {
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$cores" --cpu-method all --quiet >/dev/null 2>&1 &
    hog_pids+=($!)
    echo "hog: stress-ng --cpu $cores"
  else
    for _ in $(seq "$cores"); do
      nice -n 0 bash -c 'while :; do :; done' &
      hog_pids+=($!)
    done
    echo "hog: $cores shell busy-loops (stress-ng is not installed)"
  fi
}

results=()
for round in $(seq "$rounds"); do
  start_hog
  echo "=== round $round of $rounds under load ($(date -u +%H:%M:%S) UTC)"
  begin=$(date +%s)
  set +e
  scripts/test.sh
  status=$?
  set -e
  took=$(( $(date +%s) - begin ))
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  stop_hog
  results+=("round $round: exit $status after ${took} s (load average at the end: $load)")
  echo "${results[-1]}"
  if [ "$status" -ne 0 ]; then
    echo "test-under-load: round $round failed" >&2
    printf '%s\n' "${results[@]}"
    exit "$status"
  fi
done
echo
echo "test-under-load: $rounds of $rounds rounds passed with every core busy"
printf '%s\n' "${results[@]}"
