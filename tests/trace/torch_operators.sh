#!/bin/sh
# torch_operators.sh MEMPLAN EXAMPLE PYTHON WORKDIR — the libtorch example
# under the tracer: a TorchScript squeezenet1_1 (traced by torch.jit.trace
# from torchvision, weights=None, 32x32) runs 3 marked passes with the
# operator recorder. Checks that trace-info ranks ATen operators by bytes,
# that the steady passes repeat and extract to identical problems. (That the
# records take no ticks is OperatorRecords.TakeNoTicksSoExtractionIsUnchanged;
# a second libtorch run to show it again would double this test's time.)
set -eu
memplan=$1 example=$2 python=$3 work=$4
mkdir -p "$work"
cd "$work"
rm -f model.pt ops.trace ops3.csv ops2.csv
"$python" -c "
import torch, torchvision
torch.set_num_threads(1)
model = torchvision.models.squeezenet1_1(weights=None).eval()
torch.jit.trace(model, torch.randn(1, 3, 32, 32)).save('model.pt')"
"$memplan" trace --output ops.trace -- "$example" model.pt --size 32 --iterations 3 > run.txt
grep -q "operators recorded into the trace" run.txt || { cat run.txt; echo "the recorder did not install" >&2; exit 1; }
"$memplan" trace-info ops.trace > info.txt
fail() { cat info.txt; echo "$1" >&2; exit 1; }
grep -q "repeating    iterations 1..3 allocate alike" info.txt || fail "iterations do not repeat"
grep -q "^top operators by bytes allocated, iterations 1..3" info.txt || fail "no operator table"
# Convolutions and pooling must be among the operators that allocate.
grep -Eq "^aten::(empty|resize_|_convolution|cat|max_pool2d_with_indices) " info.txt || fail "no ATen operator ranked"
"$memplan" extract ops.trace --iteration 2 --output ops2.csv > /dev/null
"$memplan" extract ops.trace --iteration 3 --output ops3.csv > /dev/null
cmp ops2.csv ops3.csv || { echo "iterations 2 and 3 extract to different problems" >&2; exit 1; }
echo "operators ranked; iterations 2 and 3 extract to identical problems"
