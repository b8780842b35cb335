#!/usr/bin/env bash
# Installs the Debian 12 packages memplan builds and tests with. Idempotent.
# Runs apt-get as root (directly, or through sudo when not root).
set -euo pipefail
packages=(
  cmake g++ make ninja-build pkg-config clang-format
  libgtest-dev libgmock-dev libbenchmark-dev   # tests and benchmarks
  libcli11-dev nlohmann-json3-dev              # CLI and JSON
  liblemon-dev                                 # min-cost flow (network simplex)
  coinor-libcbc-dev                            # the MIP reference planner
  libcadical-dev                               # bench_sat_bound (SAT lower bounds)
  clang libclang-rt-14-dev                     # libFuzzer targets
  python3-torch python3-torchvision libtorch-dev   # capture and serving of real models
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools   # the MLIR merge-alloc pass and its mlir-opt plugin
  libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev   # allocator baselines in benchmarks
  libonnx-dev python3-onnx                     # the ONNX front end and its tests
  pybind11-dev python3-dev python3-numpy python3-pytest   # the Python module and its tests
  chromium                                     # the HTML report's browser tests (headless)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
