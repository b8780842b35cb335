#!/usr/bin/env bash
# Peak RSS of examples/infer_torchvision.py under glibc, under glibc with a
# no-op memplan_mark preloaded, and under `memplan run`, over K runs each whose
# only difference is the length of one unused environment variable.
#
# Why: glibc's heap layout, and with it the peak RSS of a torch process, is a
# chaotic function of tiny differences in the program's early requests (the
# size of the environment is enough: with ASLR off and a fixed
# PYTHONHASHSEED, one environment gives one exact number, another environment
# a number up to 10-25 MiB away). One run per allocator, or the largest of a
# few rounds (bench/e2e_torchvision.py), compares two draws of that noise;
# K draws each compare the distributions. `glibc+mark` is the fair baseline:
# the script calls memplan_mark through ctypes only when a library exports
# it, and that alone changes the program's own requests (and glibc's layout).
#
#   1. For each allocator (glibc; glibc+mark: a library exporting a no-op
#      memplan_mark, built here with cc, preloaded; memplan) and i in 1..K:
#      run the script (4 warm-up passes, in which memplan profiles and plans,
#      and 2 timed) with MEMPLAN_RSS_PAD set to 37 * i characters; read
#      ru_maxrss from its JSON line.
#   2. Print each allocator's K peaks in MiB, sorted, and their median.
#
# Usage: bench/e2e_rss_spread.sh [--memplan BIN] [-k K] [-a LIST] MODEL BATCH SIZE [MODEL BATCH SIZE ...]
#   BIN defaults to build/memplan; K to 6; LIST (comma-separated) to
#   glibc,glibc+mark,memplan. Costs K runs per allocator and row (googlenet
#   at batch 4 / 224 px: about 20 s a run on the 2-core VM).
set -euo pipefail
cd "$(dirname "$0")/.."
memplan=build/memplan
k=6
allocators=glibc,glibc+mark,memplan
while [ $# -gt 0 ]; do
  case $1 in
    --memplan) memplan=$2; shift 2 ;;
    -k) k=$2; shift 2 ;;
    -a) allocators=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] && [ $(($# % 3)) -eq 0 ] || { echo "usage: $0 [--memplan BIN] [-k K] MODEL BATCH SIZE ..." >&2; exit 1; }
[ -x "$memplan" ] || { echo "$memplan is not executable: build the memplan target" >&2; exit 1; }
python=/usr/bin/python3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo 'void memplan_mark(void) {}' > "$scratch/mark.c"
cc -shared -fPIC -O2 -o "$scratch/libmark.so" "$scratch/mark.c"

peak_mib() { "$python" -c 'import json, sys; print(round(json.loads(sys.stdin.read().splitlines()[-1])["peak_rss_kib"] / 1024))'; }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "| model | batch/px | allocator | peak RSS MiB over $k runs (sorted) | median |"
echo "|---|---|---|---|---|"
while [ $# -gt 0 ]; do
  model=$1 batch=$2 size=$3
  shift 3
  for allocator in ${allocators//,/ }; do
    peaks=()
    for i in $(seq "$k"); do
      pad=$(printf "%$((37 * i))s" "" | tr ' ' x)
      case $allocator in
        glibc) runner=("$python") ;;
        glibc+mark) runner=(env LD_PRELOAD="$scratch/libmark.so" "$python") ;;
        memplan) runner=("$memplan" run -- "$python") ;;
        *) echo "unknown allocator $allocator" >&2; exit 1 ;;
      esac
      peaks+=("$(env MEMPLAN_RSS_PAD="$pad" "${runner[@]}" examples/infer_torchvision.py "$model" --batch "$batch" \
        --size "$size" --warmup 4 --iterations 2 --quiet 2>/dev/null | peak_mib)")
    done
    sorted=$(printf '%s\n' "${peaks[@]}" | sort -n | tr '\n' ' ')
    echo "| $model | $batch/$size | $allocator | ${sorted% } | $(printf '%s\n' "${peaks[@]}" | median) |"
  done
done
