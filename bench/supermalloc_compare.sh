#!/usr/bin/env bash
# supermalloc_compare.sh — memplan beside SuperMalloc (OmniMalloc's exact
# planner) on the thirteen problems of OmniMalloc's published benchmark:
# MiniMalloc's A-K (bench/data/dsa/minimalloc/challenging) and OmniMalloc's two
# adversarial problems (pinwheel, 101 buffers; guillotine tiling, 100 buffers),
# made by its own generators.
#
# Usage: bench/supermalloc_compare.sh OMNIMALLOC_CHECKOUT [MEMPLAN_BINARY]
#   OMNIMALLOC_CHECKOUT  a clone of github.com/fpedd/omnimalloc (also $OMNIMALLOC)
#   MEMPLAN_BINARY       default build/memplan
# Environment: BUDGETS="1 3", THREADS="1 2 8", WORK (scratch folder, default a
#   temporary one), PROBLEMS (a subset of names, e.g. "E pinwheel").
#
# Steps:
#   1. Compile bench/supermalloc/driver.cc with the checkout's C++ sources
#      (src/cpp, without its Python bindings) into WORK; nothing of the
#      checkout enters memplan's build or tree.
#   2. Write the adversarial problems with the checkout's generators
#      (bench/supermalloc_problems.py).
#   3. Per problem: memplan's default (`memplan plan F`), then for every
#      budget T and thread count N `memplan plan F --time-limit T -jN` and
#      the driver with T seconds and N threads. Every plan is checked by
#      `memplan validate`, which also gives its arena and the load; wall and
#      CPU (user + system) seconds come from /usr/bin/time, so both sides
#      pay process start and file reading alike.
#   4. Print a markdown table: per configuration the mean load / arena, the
#      problems proven optimal, mean wall and CPU seconds; then load / arena
#      per problem (* = proven optimal).
# The raw rows (one per run) stay in WORK/runs.tsv.
set -euo pipefail

checkout=${1:-${OMNIMALLOC:-}}
if [[ -z "$checkout" || ! -d "$checkout/src/cpp/allocators" ]]; then
  echo "usage: $0 OMNIMALLOC_CHECKOUT [MEMPLAN_BINARY]" >&2
  exit 2
fi
checkout=$(cd "$checkout" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
memplan=${2:-$root/build/memplan}
[[ -x "$memplan" ]] || { echo "no memplan binary at $memplan" >&2; exit 2; }
budgets=${BUDGETS:-"1 3"}
threads=${THREADS:-"1 2 8"}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work/obj" "$work/problems" "$work/plans"

# 1. The driver, built with the checkout's sources (optimised as its package is).
driver=$work/supermalloc_driver
if [[ ! -x "$driver" ]]; then
  flags=(-std=c++20 -O3 -DNDEBUG -pthread -w -I"$checkout/src/cpp")
  srcs=("$here/supermalloc/driver.cc")
  while IFS= read -r f; do srcs+=("$f"); done < <(find "$checkout/src/cpp" -name '*.cpp' ! -name bindings.cpp | sort)
  for s in "${srcs[@]}"; do
    obj=$work/obj/$(basename "$(dirname "$s")")_$(basename "$s").o
    c++ "${flags[@]}" -c "$s" -o "$obj" &
    while (( $(jobs -r | wc -l) >= 2 )); do wait -n; done
  done
  wait
  c++ -pthread "$work"/obj/*.o -o "$driver"
fi

# 2. The problems.
python3 "$here/supermalloc_problems.py" "$checkout" "$work/problems"
for f in "$root"/bench/data/dsa/minimalloc/challenging/*.csv; do cp "$f" "$work/problems/"; done
names=${PROBLEMS:-"A B C D E F G H I J K pinwheel tiling"}

# One run: label, problem, plan file, command...; appends a row to runs.tsv:
# config problem load arena proven(0/1) wall cpu
runs=$work/runs.tsv
: > "$runs"
measure() {
  local config=$1 problem=$2 plan=$3 out=$4
  shift 4
  /usr/bin/time -f "%e %U %S" -o "$work/time.txt" "$@" > "$out"
  local verdict
  if ! verdict=$("$memplan" validate "$work/problems/$problem" "$plan"); then
    echo "INVALID plan from $config on $problem: $verdict" >&2
    exit 1
  fi
  # valid: N buffers, arena X B (..), load Y B (..), gap ..
  local arena load
  arena=$(sed -E 's/.*arena ([0-9]+) B.*/\1/' <<< "$verdict")
  load=$(sed -E 's/.*load ([0-9]+) B.*/\1/' <<< "$verdict")
  local proven=0
  if [[ "$arena" == "$load" ]] || grep -qE '"(result|ending)": ?"optimal|"proven": ?true' "$out"; then proven=1; fi
  read -r wall user sys < "$work/time.txt"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$config" "${problem%%.*}" "$load" "$arena" "$proven" "$wall" \
    "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')" >> "$runs"
}

configs=("memplan default")
for name in $names; do
  problem=$(cd "$work/problems" && ls "$name".*.csv | head -1)
  p=$work/problems/$problem
  echo "== $problem" >&2
  measure "memplan default" "$problem" "$work/plans/plan.csv" "$work/out.json" \
    "$memplan" plan "$p" --json -o "$work/plans/plan.csv"
  for t in $budgets; do
    for n in $threads; do
      measure "memplan ${t} s, -j${n}" "$problem" "$work/plans/plan.csv" "$work/out.json" \
        "$memplan" plan "$p" --time-limit "$t" -j "$n" --json -o "$work/plans/plan.csv"
      measure "SuperMalloc ${t} s, ${n} threads" "$problem" "$work/plans/sm.csv" "$work/out.json" \
        "$driver" "$p" "$t" "$n" "$work/plans/sm.csv"
    done
  done
done

# 4. The tables.
python3 - "$runs" <<'EOF'
import collections, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
by_config = collections.OrderedDict()
problems = []
for config, problem, load, arena, proven, wall, cpu in rows:
    by_config.setdefault(config, {})[problem] = (int(load) / int(arena), proven == "1", float(wall), float(cpu))
    if problem not in problems:
        problems.append(problem)
order = sorted(by_config, key=lambda c: (not c.startswith("memplan default"), c.split()[1:], c.split()[0]))
print("| configuration | mean load/arena | proven optimal | mean wall s | mean CPU s |")
print("|---|---:|---:|---:|---:|")
for c in order:
    runs = by_config[c].values()
    n = len(runs)
    print(f"| {c} | {100 * sum(r[0] for r in runs) / n:.2f}% | {sum(r[1] for r in runs)}/{n} "
          f"| {sum(r[2] for r in runs) / n:.2f} | {sum(r[3] for r in runs) / n:.2f} |")
print()
short = {c: c.replace("memplan ", "mp ").replace("SuperMalloc ", "SM ").replace(" threads", "t").replace(" s,", "s") for c in order}
print("| problem | " + " | ".join(short[c] for c in order) + " |")
print("|---|" + "---:|" * len(order))
for p in problems:
    cells = []
    for c in order:
        r = by_config[c].get(p)
        cells.append("" if r is None else f"{100 * r[0]:.2f}{'*' if r[1] else ''}")
    print(f"| {p} | " + " | ".join(cells) + " |")
EOF
