#!/bin/sh
# torch_iterations_repeat.sh MEMPLAN PYTHON SCRIPT WORKDIR — traces a tiny
# torchvision forward pass (squeezenet1_1, 32x32, one thread) for 3 marked
# iterations and checks that iterations 2 and 3 extract to byte-identical,
# non-empty problems that plan validly: with one intra-op thread every warm
# pass of Debian's torch allocates exactly alike (docs/capture.md).
set -eu
memplan=$1 python=$2 script=$3 work=$4
mkdir -p "$work"
cd "$work"
rm -f tiny.trace it2.csv it3.csv
"$memplan" trace --output tiny.trace -- "$python" "$script" squeezenet1_1 --size 32 --iterations 3 --threads 1
"$memplan" trace-info tiny.trace > info.txt
grep -q "repeating    iterations 1..3 allocate alike" info.txt || { cat info.txt; echo "iterations do not repeat" >&2; exit 1; }
"$memplan" extract tiny.trace --iteration 2 --output it2.csv
"$memplan" extract tiny.trace --iteration 3 --output it3.csv
buffers=$(($(wc -l < it2.csv) - 1))
[ "$buffers" -gt 100 ] || { echo "iteration 2 has only $buffers buffers" >&2; exit 1; }
cmp it2.csv it3.csv || { echo "iterations 2 and 3 extract to different problems" >&2; exit 1; }
"$memplan" plan it3.csv --output plan3.csv > /dev/null
"$memplan" validate it3.csv plan3.csv
echo "iterations 2 and 3: identical problems of $buffers buffers"
