#!/usr/bin/env bash
# plans_preloaded.sh MEMPLAN LIBRARY PROGRAM — plan files under the drop-in.
#
# For several seeds: a run saves its plans; a run of the same command with
# them serves its first iteration from the slabs and prints what a run
# without memplan prints; the file given to another program (another seed:
# another command line) is ignored with one line; the file given to the
# same program with other shapes (the command line edited to match, so the
# file is taken) serves nothing wrong: the output is the plain run's, no two
# live blocks share a byte (the program checks), and it falls back where
# the saved plan stops fitting and learns its own; a file made from a trace
# of the command (memplan extract --save-plans) serves its first iteration
# too. The oracle for every output is the program run without memplan.
set -euo pipefail
memplan=$1 library=$2 program=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Plans made at the boundary: the program's iterations take microseconds, a background
# plan would be adopted after its last one.
export MEMPLAN_PLAN_IN_BACKGROUND=0
run() { "$memplan" run --library "$library" "$@"; }

for seed in 1 7 42; do
  plain=$("$program" $seed 1 6 | head -1)
  plans=$work/p$seed.plans
  out=$(run --save-plans "$plans" -- "$program" $seed 1 6 2>"$work/save.err")
  [[ $(head -1 <<<"$out") == "$plain" ]] || fail "seed $seed: the saving run's output differs"
  grep -q "saved plans to $plans (1 unit, 1 variant)" "$work/save.err" || { cat "$work/save.err"; fail "seed $seed: no save line"; }
  head -1 "$plans" | grep -qx "memplan-plans 3" || fail "seed $seed: not a plan file"

  out=$(MEMPLAN_STATS=1 run --plans "$plans" -- "$program" $seed 1 6 2>"$work/load.err")
  [[ $(head -1 <<<"$out") == "$plain" ]] || fail "seed $seed: the loading run's output differs"
  grep -q "serving plans from $plans (1 unit, 1 variant) from the first iteration" "$work/load.err" ||
    { cat "$work/load.err"; fail "seed $seed: no load line"; }
  served=$(sed -n 's/^served in the first iteration //p' <<<"$out")
  (( served > 0 )) || fail "seed $seed: nothing served in the first iteration with plans ($out)"
  # Without plans the first iteration profiles: nothing served.
  cold=$(run -- "$program" $seed 1 6 2>/dev/null | sed -n 's/^served in the first iteration //p')
  (( cold == 0 )) || fail "seed $seed: a run without plans served its first iteration ($cold)"

  # Another program (another command line): ignored with one line, output intact.
  other=$(( seed + 1 ))
  out=$(run --plans "$plans" -- "$program" $other 1 6 2>"$work/other.err")
  [[ $(head -1 <<<"$out") == "$("$program" $other 1 6 | head -1)" ]] || fail "seed $seed: another program's output differs"
  grep -q "ignored, learning from scratch: its plans were learnt by" "$work/other.err" ||
    { cat "$work/other.err"; fail "seed $seed: no line refusing another program's plans"; }
  [[ $(grep -c "memplan replay:" "$work/other.err") == 1 ]] || fail "seed $seed: more than one line for a refused file"

  # The same program with other shapes: the file's program line is edited
  # to this command line, so the plans are taken and must fall back safely.
  for shape in 2 3; do
    sed "3s|.*|program $program $seed $shape 6|" "$plans" >"$work/shape.plans"
    expected=$("$program" $seed $shape 6 | head -1)
    out=$(MEMPLAN_STATS=1 run --plans "$work/shape.plans" -- "$program" $seed $shape 6 2>"$work/shape.err") ||
      { cat "$work/shape.err"; fail "seed $seed shape $shape: the run failed (shared bytes or changed contents)"; }
    [[ $(head -1 <<<"$out") == "$expected" ]] || fail "seed $seed shape $shape: output differs"
    grep -q "serving plans from" "$work/shape.err" || fail "seed $seed shape $shape: plans not taken"
    # It fell back where the saved plan stopped fitting, and learnt its own.
    grep -q "fallback [1-9]" "$work/shape.err" || { cat "$work/shape.err"; fail "seed $seed shape $shape: no fallback"; }
    grep -q "plans 2, plans loaded 1" "$work/shape.err" || { cat "$work/shape.err"; fail "seed $seed shape $shape: not learnt"; }
  done
done

# Offsets that overlap (every planned request at offset 0): the validator
# refuses them, the profile is planned again, and nothing shares a byte.
awk 'NR <= 5 || NF != 4 { print; next } { $4 = ($4 == "-") ? "-" : 0; print }' "$work/p1.plans" >"$work/overlap.plans"
grep -q " 0$" "$work/overlap.plans" || fail "the overlapping file has no offset 0"
out=$(MEMPLAN_STATS=1 run --plans "$work/overlap.plans" -- "$program" 1 1 6 2>"$work/overlap.err") ||
  { cat "$work/overlap.err"; fail "overlapping offsets were served"; }
[[ $(head -1 <<<"$out") == "$("$program" 1 1 6 | head -1)" ]] || fail "overlapping offsets: output differs"
grep -q "plans 1, plans loaded 1" "$work/overlap.err" || { cat "$work/overlap.err"; fail "overlapping offsets: the profile was not planned again"; }

# A plan file from a trace of the same command (memplan extract
# --save-plans): what the drop-in would have learnt; it serves the first
# iteration of a run, whose output is the plain run's.
"$memplan" trace --output "$work/run.trace" -- "$program" 5 1 6 >/dev/null 2>"$work/trace.err" ||
  { cat "$work/trace.err"; fail "tracing failed"; }
"$memplan" extract "$work/run.trace" --save-plans "$work/trace.plans" 2>"$work/extract.err" ||
  { cat "$work/extract.err"; fail "extract --save-plans failed"; }
grep -q "saved plans to $work/trace.plans (1 unit, 1 variant" "$work/extract.err" || { cat "$work/extract.err"; fail "no save line from extract"; }
out=$(run --plans "$work/trace.plans" -- "$program" 5 1 6 2>"$work/fromtrace.err")
[[ $(head -1 <<<"$out") == "$("$program" 5 1 6 | head -1)" ]] || fail "plans from a trace: output differs"
served=$(sed -n 's/^served in the first iteration //p' <<<"$out")
(( served > 0 )) || { cat "$work/fromtrace.err"; fail "plans from a trace served nothing in the first iteration"; }

# A malformed file: one line, the run goes on.
printf 'memplan-plans 2\nadapter drop-in\nprogram -\nunit 0 1\nvariant zz 1 sequence -\n' >"$work/bad.plans"
out=$(run --plans "$work/bad.plans" -- "$program" 1 1 3 2>"$work/bad.err")
[[ $(head -1 <<<"$out") == "$("$program" 1 1 3 | head -1)" ]] || fail "malformed file: output differs"
grep -q "plans ignored, learning from scratch: $work/bad.plans:5: " "$work/bad.err" || { cat "$work/bad.err"; fail "malformed file: no line naming it"; }
echo "plans_preloaded: ok"
