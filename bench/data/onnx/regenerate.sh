#!/bin/sh
# regenerate.sh — writes the problems in this folder again from ONNX models
# built with random weights (nothing is downloaded): torchvision's resnet18 and
# mobilenet_v2 exported at batch 1, 224x224 (opset 13), and a GPT-style
# decoder (bench/onnx/export_gpt.py: 6 layers, d_model 512, 8 heads, vocab
# 8,000, 512 positions) at 4 sequences of 256 tokens. `memplan extract`
# plans them before they run (ONNX shape inference; node k is tick k).
# Needs a memplan built with ONNX (MEMPLAN, default: build/memplan of this
# checkout, else memplan on PATH) and an interpreter with torch and
# torchvision (PYTHON, default: /usr/bin/python3, Debian's).
# Usage: bench/data/onnx/regenerate.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [ -z "${MEMPLAN:-}" ] && [ -x "$root/build/memplan" ]; then MEMPLAN=$root/build/memplan; fi
memplan=${MEMPLAN:-memplan}
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" - "$work" <<'PY'
import sys
import torch
import torchvision
torch.manual_seed(0)
for name in ("resnet18", "mobilenet_v2"):
    model = getattr(torchvision.models, name)().eval()
    torch.onnx.export(model, torch.zeros(1, 3, 224, 224), f"{sys.argv[1]}/{name}.onnx", input_names=["x"],
                      opset_version=13)
PY
"$python" "$root/bench/onnx/export_gpt.py" --out "$work/gpt.onnx" --layers 6 --d-model 512 --heads 8 \
  --vocab 8000 --context 512
"$memplan" extract "$work/resnet18.onnx" --output "$here/onnx_resnet18.csv"
"$memplan" extract "$work/mobilenet_v2.onnx" --output "$here/onnx_mobilenet_v2.csv"
"$memplan" extract "$work/gpt.onnx" --input ids=4x256 --output "$here/onnx_gpt_6l_512.csv"
