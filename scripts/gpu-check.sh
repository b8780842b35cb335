#!/usr/bin/env bash
# gpu-check.sh — measures memplan's CUDA allocator (libmemplan_cuda_alloc.so)
# against PyTorch's own on one GPU, in one command that needs only what a bare
# GPU machine has: a C++ compiler, CMake, the CUDA toolkit, and a Python with
# PyTorch (transformers and torchvision for the full-size models).
#
#   1. configures the minimal build (MEMPLAN_MINIMAL: no package beyond the
#      compiler, CMake and the toolkit) in build-gpu/ and builds the CUDA
#      library alone;
#   2. runs each workload under each allocator (default caching,
#      expandable_segments, cudaMallocAsync, memplan through
#      CUDAPluggableAllocator, memplan through torch.cuda.MemPool), one fresh
#      process per run with its own time limit, within a budget for the
#      whole script (bench/gpu/gpu_check.py);
#   3. writes to $OUT (else out/gpu/): gpu-check.md (the table), gpu-check.json
#      (the same numbers and every step's), gpu-check.log, and the default
#      allocator's snapshots (snapshot-<workload>.pickle), at most 8 files.
#      Both result files are rewritten after every run.
#
# --dry-run does every step that needs no GPU, in well under a minute: the
# arguments, the minimal configure (in a scratch folder; the CUDA library is
# configured where the toolkit is found, built only on the GPU machine), the
# workloads at tiny sizes on the CPU for a few steps, a repeat run compared
# bit for bit, and the table and JSON, which it then checks. Its last line is
# "gpu-check: dry run passed" only when all of that held.
#
# Usage: scripts/gpu-check.sh [--dry-run] [--out DIR] [--budget-s SECONDS]
#          [--workloads W,...] [--allocators A,...] [--jobs N] [--build-dir DIR]
# docs/gpu.md: what is measured, what each column means, the limits.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

usage() {
  sed -n 's/^# Usage: /usage: /p; s/^#          /         /p' "$0"
}

dry_run=0
out=${OUT:-out/gpu}
budget=480
workloads=lm_train_fixed,resnet50_train,lm_train_varlen,bert_infer,lm_train_compiled
allocators=default,expandable,async,memplan_pluggable,memplan_mempool
jobs=$(nproc)
build="build-gpu"
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --out|--budget-s|--workloads|--allocators|--jobs|--build-dir)
      if [ $# -lt 2 ]; then echo "gpu-check: $1 needs a value" >&2; usage >&2; exit 2; fi
      case $1 in
        --out) out=$2 ;;
        --budget-s) budget=$2 ;;
        --workloads) workloads=$2 ;;
        --allocators) allocators=$2 ;;
        --jobs) jobs=$2 ;;
        --build-dir) build=$2 ;;
      esac
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
case $budget in ''|*[!0-9]*) echo "gpu-check: --budget-s takes whole seconds, not '$budget'" >&2; exit 2 ;; esac
case $jobs in ''|*[!0-9]*) echo "gpu-check: --jobs takes a number, not '$jobs'" >&2; exit 2 ;; esac

# The Python that has PyTorch: $PYTHON, else python3 (the GPU machine's), else
# Debian's (a pyenv python3 first on PATH may have none).
python=
for candidate in "${PYTHON:-}" python3 /usr/bin/python3; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null && "$candidate" -c 'import torch' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "gpu-check: no Python with PyTorch (tried \$PYTHON, python3, /usr/bin/python3)" >&2
  exit 1
fi

mkdir -p "$out"
versions=$("$python" -c 'import platform, torch
try:
    import transformers
    t = "transformers " + transformers.__version__
except ImportError:
    t = "no transformers"
print("Python", platform.python_version(), "torch", torch.__version__, t)' 2>&1 | tail -1)
rm -f "$out"/gpu-check.md "$out"/gpu-check.json "$out"/snapshot-*.pickle
log=$out/gpu-check.log
: >"$log"
say() { echo "gpu-check: $*" | tee -a "$log"; }
say "$python: $versions"

# The minimal configure, then a check that it looked for none of the packages a
# bare GPU machine lacks (their cache entries would name them).
configure() {
  local dir=$1
  shift
  local generator=()
  if command -v ninja >/dev/null && [ ! -f "$dir/Makefile" ]; then generator=(-G Ninja); fi
  if ! cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_MINIMAL=ON "$@" >>"$log" 2>&1; then
    say "the minimal configure failed (its output is in $log)"
    tail -20 "$log" >&2
    return 1
  fi
  local looked
  local packages='nlohmann_json_DIR|CLI11_DIR|lemon_DIR|LEMON_LIBRARY|LEMON_INCLUDE_DIR|GTest_DIR|Torch_DIR'
  packages+='|ONNX_DIR|MLIR_DIR|pybind11_DIR|CBC_[A-Z_]*'
  looked=$(grep -E "^($packages):" "$dir/CMakeCache.txt" || true)
  if [ -n "$looked" ]; then
    say "the minimal configure looked for packages it must not need: $(echo "$looked" | cut -d: -f1 | tr '\n' ' ')"
    return 1
  fi
}
cuda_configured() { grep -q '^MEMPLAN_WITH_CUDA:BOOL=ON' "$1/CMakeCache.txt"; }

if [ "$dry_run" = 1 ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  say "dry run: configuring the minimal build in a scratch folder"
  configure "$scratch/build"
  # What the CUDA library compiles must include none of the packages a bare GPU
  # machine lacks, beyond the three files the minimal build leaves out.
  includes=$(grep -rlE '#include [<"](nlohmann|lemon|CLI)/' include src/core src/io src/render src/planners \
    src/solver src/planning src/runtime | grep -vxE 'src/io/json.cc|src/io/torch_profile.cc|src/planners/min_cost_flow.cc' ||
    true)
  if [ -n "$includes" ]; then
    say "the minimal build would compile files that need nlohmann-json, LEMON or CLI11: $(echo "$includes" | tr '\n' ' ')"
    say "leave them out under MEMPLAN_MINIMAL (src/CMakeLists.txt) or move the dependency out of them"
    exit 1
  fi
  if cuda_configured "$scratch/build"; then
    if ! cmake --build "$scratch/build" --target help 2>/dev/null | grep -q memplan_cuda_alloc; then
      say "the CUDA toolkit was found but the build has no memplan_cuda_alloc target"
      exit 1
    fi
    say "configured libmemplan_cuda_alloc.so (CUDA toolkit found; a dry run does not build it)"
  else
    say "no CUDA toolkit here: configured the minimal build without libmemplan_cuda_alloc.so"
  fi
  say "dry run: tiny workloads on the CPU with $python"
  if ! "$python" bench/gpu/gpu_check.py --dry-run --out "$out" --work "$scratch/work" --python "$python" \
      --workloads "$workloads" --allocators "$allocators"; then
    say "dry run FAILED ($(( $(date +%s) - start )) s)"
    exit 1
  fi
  say "dry run passed ($(( $(date +%s) - start )) s; results in $out)"
  exit 0
fi

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 |
    sed 's/^/gpu-check: gpu: /' | tee -a "$log"
fi
# The CUDA toolkit: nvcc on PATH, /usr/local/cuda, or the toolkit's Python
# wheels beside torch (nvidia/*/bin/nvcc); CMake is told its root.
cuda_root() {
  local nvcc
  for nvcc in "$(command -v nvcc || true)" /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
    if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
      dirname "$(dirname "$(readlink -f "$nvcc")")"
      return
    fi
  done
  "$python" -c 'import glob, os, sys
found = [c for d in sys.path for c in glob.glob(os.path.join(d or ".", "nvidia", "*", "bin", "nvcc"))]
print(os.path.dirname(os.path.dirname(found[0])) if found else "")' 2>/dev/null || true
}
root=$(cuda_root)
cuda_args=(-DMEMPLAN_WITH_CUDA=ON)
if [ -n "$root" ]; then
  cuda_args+=(-DCUDAToolkit_ROOT="$root")
  say "CUDA toolkit: $root ($("$root/bin/nvcc" --version 2>/dev/null | tail -1))"
else
  say "no nvcc found on PATH, in /usr/local/cuda or beside torch: CMake looks for the toolkit itself"
fi
lib=$build/src/runtime/libmemplan_cuda_alloc.so
say "building libmemplan_cuda_alloc.so in $build (minimal configure, $jobs jobs)"
if configure "$build" "${cuda_args[@]}" &&
    cmake --build "$build" --target memplan_cuda_alloc -j"$jobs" >>"$log" 2>&1; then
  say "built $lib ($(( $(date +%s) - start )) s)"
else
  say "the build failed ($(tail -3 "$log" | tr '\n' ' ')); the memplan rows will say so"
  lib=
fi
if ! "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  say "PyTorch ($python) sees no GPU: nothing to measure (--dry-run does the rest without one)"
  exit 1
fi
left=$(( budget - ($(date +%s) - start) ))
say "running the workloads ($left s of the $budget s budget left)"
"$python" bench/gpu/gpu_check.py --out "$out" --work "$build/runs" --python "$python" \
  ${lib:+--lib "$(readlink -f "$lib")"} --workloads "$workloads" --allocators "$allocators" --budget-s "$left"
say "done in $(( $(date +%s) - start )) s: $out/gpu-check.md"
