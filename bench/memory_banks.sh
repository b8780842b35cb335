#!/usr/bin/env bash
# Memory banks (include/memplan/banks.h) on the captured torchvision problems
# and the ONNX models' problems (bench/data/onnx):
# a fast bank of 1/8, 1/4 and 1/2 of the load (the most bytes live at once)
# in front of an unbounded slow one. Prints, per problem and fast-bank size,
# the bytes and the share of the priority (size x lifetime) kept in the fast
# bank by greedy spill (ExecuTorch's banked greedy), by memplan's default
# (`--bank-strategy best`) and by its exact mode (`--bank-strategy exact`,
# the exact decision solver per bank within --time-limit, 1 s by default),
# and the time of each of memplan's two.
#
# Usage: bench/memory_banks.sh [BUILD_DIR] [PROBLEM.csv...]
#   BUILD_DIR defaults to build; the problems to bench/data/torch/*.csv and
#   bench/data/onnx/*.csv.
#   MEMPLAN_BANK_TIME_LIMIT=SECONDS sets exact mode's budget.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
problems=("$@")
[ ${#problems[@]} -eq 0 ] && problems=(bench/data/torch/*.csv bench/data/onnx/*.csv)
memplan="$build/memplan"

exact_args=()
[ -n "${MEMPLAN_BANK_TIME_LIMIT:-}" ] && exact_args=(--time-limit "$MEMPLAN_BANK_TIME_LIMIT")
printf '| problem | fast bank | greedy spill: bytes, priority | best: bytes, priority | best time | exact: bytes, priority | exact time |\n'
printf '|---|---|---|---|---|---|---|\n'
for p in "${problems[@]}"; do
  load=$("$memplan" bound --json "$p" | python3 -c 'import json,sys; print(json.load(sys.stdin)["load"])')
  for div in 8 4 2; do
    cap=$((load / div))
    row=()
    times=()
    for strategy in greedy best exact; do
      extra=()
      [ "$strategy" = exact ] && extra=("${exact_args[@]}")
      start=$(date +%s.%N)
      fast=$("$memplan" plan "$p" --bank "fast=$cap" --bank slow --bank-strategy "$strategy" "${extra[@]}" --json |
        python3 -c 'import json, sys
d = json.load(sys.stdin); f = d["banks"][0]
print(f"{f['"'"'bytes'"'"'] / 2**20:.2f} MiB, {100 * f['"'"'priority'"'"'] / d['"'"'total_priority'"'"']:.1f}%")')
      end=$(date +%s.%N)
      row+=("$fast")
      times+=("$(python3 -c "print(f'{$end - $start:.2f} s')")")
    done
    printf '| %s | 1/%d (%s B) | %s | %s | %s | %s | %s |\n' "$(basename "$p" .csv)" "$div" "$cap" "${row[0]}" \
      "${row[1]}" "${times[1]}" "${row[2]}" "${times[2]}"
  done
done
