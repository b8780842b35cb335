#!/usr/bin/env bash
# sat_bound_gaps.sh BENCH_SAT_BOUND MEMPLAN DIR — on every problem in DIR
# (small problems whose optimum lies above their load), the SAT bisection's
# proven optimum must equal the exact planner's, with the symmetry rules and
# dominance rule on (the default) and with all of them off. Two independent
# searches agreeing on problems where refuting the load takes a real proof.
set -euo pipefail
sat=$1 memplan=$2 dir=$3
checked=0
for f in "$dir"/*.csv; do
  out=$("$memplan" plan "$f" --planner exact)
  exact=$(awk '/^arena/{print $2}' <<<"$out")
  load=$(awk '/^load/{print $2}' <<<"$out")
  grep -q '^result *optimal' <<<"$out" || { echo "FAIL $f: the exact planner did not prove its plan optimal"; exit 1; }
  [ "$exact" -gt "$load" ] || { echo "FAIL $f: optimum $exact B is the load; not a gap problem"; exit 1; }
  for mode in "" "--no-normal --no-mirror --no-twins --no-cover"; do
    # shellcheck disable=SC2086
    line=$("$sat" "$f" --bisect --quiet $mode | grep '^bounds:')
    want="bounds: $exact B <= optimum <= $exact B: optimal"
    [[ "$line" == "$want"* ]] || { echo "FAIL $f [$mode]: exact $exact B, SAT said: $line"; exit 1; }
  done
  checked=$((checked + 1))
  echo "$(basename "$f"): load $load B, optimum $exact B: exact planner and SAT agree"
done
[ "$checked" -ge 10 ] || { echo "FAIL: only $checked problems in $dir"; exit 1; }
echo "sat_bound_gaps: $checked problems agree"
