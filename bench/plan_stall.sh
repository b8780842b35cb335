#!/usr/bin/env bash
# How long a thread stops at the boundary where its plan is made (the planner,
# the slab's commit and pre-fault), planning at the boundary and in the
# background (MEMPLAN_PLAN_IN_BACKGROUND=1, where only adopting the plan
# stops the thread), read from the drop-in's MEMPLAN_STATS line.
#
#   1. Traces: bench_replay replays each trace under the LD_PRELOADed drop-in
#      (memplan_mark after each iteration), portfolio and greedy_by_size.
#   2. Real programs (with --torch): `memplan run --stats --` the torchvision
#      inference script (batch 1, 64 px, 1 thread, 30 untimed and 10 timed
#      passes), which gives the stall and, beside it, the median pass: the
#      fraction of one iteration the stall costs.
#
# Usage: bench/plan_stall.sh [BUILD_DIR] [--torch MODEL...]
#   BUILD_DIR defaults to build; it needs bench_replay, memplan_replay_preload
#   and (for --torch) memplan.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
bench=$build/bench/bench_replay
dropin=$(realpath "$(find "$build" -name 'libmemplan_replay.so' -print -quit)")
[ -x "$bench" ] || { echo "no $bench: build the bench_replay target" >&2; exit 1; }

# "stall longest ms" and "plans" of a MEMPLAN_STATS line on stdin.
stall_of() { sed -n 's/.*plans \([0-9]*\),.*(longest \([0-9.]*\) ms).*/\2 ms (plans \1)/p' | tail -1; }

echo "| trace (allocations) | planner | stall at the boundary | stall in the background (adopting) |"
echo "|---|---|---|---|"
for trace in bench/data/torch/*.csv; do
  allocs=$(($(wc -l < "$trace") - 1))
  for planner in portfolio greedy_by_size; do
    row="| $(basename "$trace") ($allocs) | $planner |"
    for background in 0 1; do
      # A replayed iteration takes tens of microseconds here: a plan made in
      # the background (up to MEMPLAN_PLAN_TIME_LIMIT, 0.25 s) needs thousands.
      iterations=$((background ? 20000 : 50))
      stall=$(env LD_PRELOAD="$dropin" MEMPLAN_STATS=1 MEMPLAN_PLANNER=$planner MEMPLAN_PLAN_IN_BACKGROUND=$background \
        "$bench" --csv "$trace" --allocator malloc --iterations $iterations 2>&1 >/dev/null | stall_of)
      row="$row $stall |"
    done
    echo "$row"
  done
done

[ "${1:-}" = --torch ] || exit 0
shift
echo
echo "| model (batch 1, 64 px, 1 thread) | median pass | stall at the boundary | fraction of a pass | stall in the background | fraction of a pass |"
echo "|---|---|---|---|---|---|"
for model in "$@"; do
  row="| $model |"
  median=""
  for background in 0 1; do
    out=$(MEMPLAN_PLAN_IN_BACKGROUND=$background "$build/memplan" run --stats -- /usr/bin/python3 \
      examples/infer_torchvision.py "$model" --size 64 --warmup 30 --iterations 10 --quiet 2>&1)
    m=$(echo "$out" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1)
    s=$(echo "$out" | sed -n 's/.*(longest \([0-9.]*\) ms).*/\1/p' | tail -1)
    [ -z "$median" ] && median=$m && row="$row $m ms |"
    row="$row $s ms | $(awk -v s="$s" -v m="$m" 'BEGIN { printf "%.2f", s / m }') |"
  done
  echo "$row"
done
