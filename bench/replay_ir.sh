#!/usr/bin/env bash
# Instructions (callgrind's Ir) per alloc+free pair of the replay fast path:
# deterministic, so it can be compared across builds on a busy machine where
# wall-clock nanoseconds cannot.
#
# For each trace and each subject (the loop alone, the C++ API, the
# LD_PRELOAD drop-in), bench_replay runs twice under callgrind with
# collection limited to its timed loop (`run`), once with 5 and once with 15
# timed iterations; the difference divided by 10 x the trace's allocations is
# the cost of one pair in a replayed (steady-state) iteration. The warm-up
# iterations (profiling, planning) and the touched iterations are the same in
# both runs and cancel out.
#
# Usage: bench/replay_ir.sh [BUILD_DIR] [TRACE.csv...]
#   BUILD_DIR defaults to build; it needs bench_replay and memplan_replay_preload.
#   Traces default to bench/data/torch/*.csv. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then traces=(bench/data/torch/*.csv); fi
bench=$build/bench/bench_replay
dropin=$(find "$build" -name 'libmemplan_replay.so' -print -quit)
[ -n "$dropin" ] && dropin=$(realpath "$dropin")
command -v valgrind > /dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
[ -x "$bench" ] || { echo "no $bench: build the bench_replay target" >&2; exit 1; }
[ -n "$dropin" ] || { echo "no libmemplan_replay.so in $build: build memplan_replay_preload" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Ir collected inside run() for one bench_replay process; args: ITERATIONS then the command's own.
collected() {
  local n=$1
  shift
  # Few threads: valgrind cannot reserve the default 64 slab windows of address space.
  # Planned at the boundary: under valgrind's one-thread-at-a-time scheduling a
  # background plan may arrive after the 5 timed iterations.
  # A generous planning budget: under valgrind greedy_by_size on 7,000 buffers
  # can outrun the default 0.25 s and the plan would fail.
  env MEMPLAN_MAX_THREADS=4 MEMPLAN_PLANNER=greedy_by_size MEMPLAN_PLAN_IN_BACKGROUND=0 MEMPLAN_PLAN_TIME_LIMIT=60 "$@" --iterations "$n" > "$work/row" 2> "$work/err"
  if grep -q '| 0 requests |' "$work/row"; then echo "the drop-in served nothing: $*" >&2; exit 1; fi
  grep -o 'Collected : [0-9]*' "$work/err" | awk '{print $3}'
}

cg=(valgrind --tool=callgrind "--toggle-collect=*namespace)::run(*" --callgrind-out-file=/dev/null)
echo "| trace (allocations) | loop alone | memplan replay (C++) | memplan drop-in |"
echo "|---|---|---|---|"
for trace in "${traces[@]}"; do
  allocs=$(($(wc -l < "$trace") - 1))
  row="| $(basename "$trace") ($allocs) |"
  for subject in none replay dropin; do
    case $subject in
      none) cmd=("${cg[@]}" "$bench" --csv "$trace" --allocator none) ;;
      replay) cmd=("${cg[@]}" "$bench" --csv "$trace" --allocator replay --planner greedy_by_size) ;;
      dropin) cmd=(env "LD_PRELOAD=$dropin" "${cg[@]}" "$bench" --csv "$trace" --allocator malloc) ;;
    esac
    a=$(collected 5 "${cmd[@]}")
    b=$(collected 15 "${cmd[@]}")
    row="$row $(awk -v a="$a" -v b="$b" -v n="$allocs" 'BEGIN { printf "%.1f", (b - a) / (10 * n) }') |"
  done
  echo "$row"
done
