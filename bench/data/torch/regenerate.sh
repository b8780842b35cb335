#!/bin/sh
# regenerate.sh — captures the problems in this folder again: each model runs
# under memplan's tracer (Debian's python3-torch 1.13, one intra-op thread,
# batch 1, 64x64 input) for 4 marked forward passes after 2 warm-up passes,
# and iteration 3 is extracted with every size kept; train_MODEL is one
# training step of MODEL (examples/train_loop.py, batch 4, 32x32 input).
# Needs a built memplan (MEMPLAN, default: build/memplan of this checkout,
# else memplan on PATH) and an interpreter with torch and torchvision (PYTHON, default: /usr/bin/python3,
# Debian's, which the README's numbers are for).
# Usage: bench/data/torch/regenerate.sh [MODEL...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [ -z "${MEMPLAN:-}" ] && [ -x "$root/build/memplan" ]; then MEMPLAN=$root/build/memplan; fi
memplan=${MEMPLAN:-memplan}
python=${PYTHON:-/usr/bin/python3}
models=${*:-resnet18 mobilenet_v2 squeezenet1_1 shufflenet_v2_x1_0 vit_b_16 lraspp_mobilenet_v3_large train_resnet18 train_squeezenet1_1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in $models; do
  case $model in
    train_*)  # one optimizer step of ${model#train_}: batch 4, 32x32 input, SGD with momentum
      "$memplan" trace --output "$work/$model.trace" -- "$python" "$root/examples/train_loop.py" "${model#train_}" \
        --batch 4 --size 32 --warmup 0 --steps 4 --threads 1 --quiet ;;
    *)
      "$memplan" trace --output "$work/$model.trace" -- \
        "$python" "$root/examples/trace_torchvision.py" "$model" --size 64 --iterations 4 --threads 1 ;;
  esac
  "$memplan" trace-info "$work/$model.trace" | sed -n '1,12p'
  "$memplan" extract "$work/$model.trace" --iteration 3 --output "$here/$model.csv"
  "$memplan" extract "$work/$model.trace" --iteration 4 --output "$work/$model.4.csv"
  if cmp -s "$here/$model.csv" "$work/$model.4.csv"; then
    echo "$model: iterations 3 and 4 give identical problems"
  else
    case $model in
      train_*) echo "$model: iterations 3 and 4 differ (in training, a few 16-byte Python objects die at other ticks)" ;;
      *) echo "$model: iterations 3 and 4 differ (more than one intra-op thread?)" >&2 ;;
    esac
  fi
done
