#!/usr/bin/env bash
# Replays every trace (the built-in pattern and bench/data/torch/*.csv) with 1
# and 2 threads under each allocator and prints one markdown table:
#   glibc, jemalloc, tcmalloc, mimalloc (Debian packages, LD_PRELOADed into
#   bench_replay's malloc mode), memplan's drop-in libmemplan_replay.so
#   (LD_PRELOAD, memplan_mark after each iteration), memplan's replay
#   allocator through its C++ API, and page_unit_pool.
# Each cell is one process, so peak RSS is that allocator's alone.
#
# Usage: bench/replay_allocators.sh [BUILD_DIR] [ITERATIONS]
#   BUILD_DIR defaults to build; it needs bench_replay and memplan_replay_preload:
#   cmake --build BUILD_DIR --target bench_replay memplan_replay_preload
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
iterations=${2:-50}
bench=$build/bench/bench_replay
dropin=$(find "$build" -name 'libmemplan_replay.so' -print -quit)
libdir=/usr/lib/x86_64-linux-gnu
[ -x "$bench" ] || { echo "no $bench: build the bench_replay target" >&2; exit 1; }

traces=("")
for f in bench/data/torch/*.csv; do [ -e "$f" ] && traces+=("$f"); done

"$bench" --header
for trace in "${traces[@]}"; do
  csv=()
  [ -n "$trace" ] && csv=(--csv "$trace")
  for threads in 1 2; do
    run() { "$bench" "${csv[@]}" --threads "$threads" --iterations "$iterations" "$@"; }
    run --allocator none --label "(loop and calls alone)"
    run --allocator malloc --label glibc
    for pair in jemalloc:libjemalloc.so.2 tcmalloc:libtcmalloc.so.4 mimalloc:libmimalloc.so.2; do
      name=${pair%%:*} lib=$libdir/${pair#*:}
      if [ -e "$lib" ]; then LD_PRELOAD=$lib run --allocator malloc --label "$name"; fi
    done
    run --allocator page_unit --label page_unit_pool
    if [ -n "$dropin" ]; then LD_PRELOAD=$dropin run --allocator malloc --label "memplan drop-in"; fi
    run --allocator replay --label "memplan replay (C++)"
  done
done
