#!/bin/sh
# regenerate.sh — captures the problems in this folder again: each model runs
# under memplan's tracer for 6 marked forward passes (after 2 warm-up passes)
# and iteration 3 is extracted. Needs a built memplan (MEMPLAN, default: memplan
# on PATH) and python3 with torch and torchvision (PYTHON, default: python3).
# Usage: bench/data/torch/regenerate.sh [MODEL...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
memplan=${MEMPLAN:-memplan}
python=${PYTHON:-python3}
models=${*:-resnet18 mobilenet_v2 squeezenet1_1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in $models; do
  "$memplan" trace --output "$work/$model.trace" -- "$python" "$root/examples/trace_torchvision.py" "$model" --iterations 6
  "$memplan" trace-info "$work/$model.trace" | sed -n '1,20p'
  "$memplan" extract "$work/$model.trace" --iteration 3 --output "$here/$model.csv"
  "$memplan" extract "$work/$model.trace" --iteration 4 --output "$work/$model.4.csv"
  if cmp -s "$here/$model.csv" "$work/$model.4.csv"; then
    echo "$model: iterations 3 and 4 give identical problems"
  else
    echo "$model: iterations 3 and 4 differ (more than one intra-op thread?)" >&2
  fi
done
