#!/usr/bin/env bash
# plans_torch_serve.sh SERVE MODEL — plan files for the libtorch allocator
# across processes (MEMPLAN_SAVE_PLANS, MEMPLAN_PLANS).
#
# SERVE is memplan_torch_serve, which exits 0 only when every pass under the
# allocator gives the default allocator's bytes and the allocator's
# invariants hold (no two live slab blocks share a byte); that is the oracle
# of every run here. A run saves its plans; a second process of the same
# command loads them and profiles nothing (every pass served from the file's
# plans: the operator keys are the same in both processes); the same with one
# plan per input shape (keyed marks), where only the second shape's first
# pass is profiled; the file given to another command line
# is ignored with one line; given to the same model at another input size
# (the file's program line edited so that it is taken), it falls back where
# the saved plan stops fitting, serves nothing wrong and learns its own.
set -euo pipefail
serve=$1 model=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Plans made at the boundary: a background plan may arrive after the last pass.
export MEMPLAN_PLAN_IN_BACKGROUND=0
# stat NAME OUTPUT: the first count named NAME in memplan_torch_serve's statistics.
stat() { head -1 <<<"$2" | grep -o "[ (]$1 [0-9]\+" | head -1 | grep -o "[0-9]\+$"; }

check_round_trip() {  # NAME VARIANTS ARGS...: save, then load in a second process
  local name=$1 variants=$2
  shift 2
  local plans=$work/$name.plans out
  out=$(MEMPLAN_SAVE_PLANS=$plans "$serve" "$model" "$@" 2>"$work/save.err") ||
    { cat "$work/save.err"; fail "$name: the saving run failed"; }
  grep -qx "memplan libtorch: saved plans to $plans (1 unit, $variants)" "$work/save.err" ||
    { cat "$work/save.err"; fail "$name: no save line"; }
  local saved_profiled
  saved_profiled=$(stat profiled "$out")
  (( saved_profiled > 0 )) || fail "$name: the saving run profiled nothing ($out)"
  sed -n 2p "$plans" | grep -qx "adapter libtorch" || fail "$name: not a libtorch plan file"

  out=$(MEMPLAN_PLANS=$plans "$serve" "$model" "$@" 2>"$work/load.err") ||
    { cat "$work/load.err"; fail "$name: the loading run failed (outputs or invariants)"; }
  grep -qx "memplan libtorch: serving plans from $plans (1 unit, $variants) from the first iteration" \
    "$work/load.err" || { cat "$work/load.err"; fail "$name: no load line"; }
  # The variant saved first serves the first pass; each other variant's first
  # pass is profiled (Note [Plans from a file]) and its saved plan serves the rest.
  if [[ $variants == "1 variant" ]]; then
    [[ $(stat profiled "$out") == 0 ]] || fail "$name: the loading run profiled ($out)"
  else
    (( $(stat profiled "$out") < saved_profiled )) || fail "$name: the loading run profiled as much as the saving one ($out)"
  fi
  [[ $(stat deviations "$out") == 0 ]] || fail "$name: the loading run deviated ($out)"
  (( $(stat "plans loaded" "$out") > 0 )) || fail "$name: no plan loaded ($out)"
}

args=(--size 64 --threads 1 --iterations 4)
check_round_trip single "1 variant" "${args[@]}"
# Two input shapes in turn, each pass marked with its shape key: a variant each.
check_round_trip keyed "2 variants" --shapes 1x64,2x64 --threads 1 --iterations 4

# Another command line: ignored with one line, the run learns as without it.
out=$(MEMPLAN_PLANS=$work/single.plans "$serve" "$model" --size 80 --threads 1 --iterations 4 2>"$work/other.err") ||
  { cat "$work/other.err"; fail "another program: the run failed"; }
grep -q "ignored, learning from scratch: its plans were learnt by" "$work/other.err" ||
  { cat "$work/other.err"; fail "another program: no line refusing its plans"; }
[[ $(grep -c "memplan libtorch:" "$work/other.err") == 1 ]] || fail "another program: more than one line"
[[ $(stat "plans loaded" "$out") == 0 ]] || fail "another program: plans loaded ($out)"

# The same model at other input sizes, the file taken: fallbacks, never a wrong byte.
for size in 80 96; do
  sed "3s|.*|program $serve $model --size $size --threads 1 --iterations 6|" "$work/single.plans" >"$work/shape.plans"
  out=$(MEMPLAN_PLANS=$work/shape.plans "$serve" "$model" --size $size --threads 1 --iterations 6 2>"$work/shape.err") ||
    { cat "$work/shape.err"; fail "size $size: the run failed (outputs or invariants)"; }
  grep -q "serving plans from" "$work/shape.err" || { cat "$work/shape.err"; fail "size $size: plans not taken"; }
  (( $(stat fallback "$out") > 0 )) || fail "size $size: the saved plan fitted another size ($out)"
  (( $(stat plans "$out") >= 2 )) || fail "size $size: no plan of its own was learnt ($out)"
done
echo "plans_torch_serve: ok"
