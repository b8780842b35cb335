#!/usr/bin/env bash
# The main job: install, build (Release), and plan every shipped instance —
# the torchvision forward passes captured with memplan's tracer
# (bench/data/torch) and the public benchmark suites (bench/data/dsa) — with
# every fast planner, printing the default planner's quality table (it fits
# 100 columns), writing every planner's columns to out/planners.csv and heap
# maps (SVG) of the default planner's plans under out/heapmaps/, and an interactive HTML
# report (out/report.html) of resnet18's captured forward pass, two planners
# side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Only the tool (and memplan-opt where MLIR 19 is installed) is built; the
# build folder's test and benchmark options are left as they are, so that
# scripts/test.sh, which shares build/, finds its configuration unchanged.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(memplan)
if grep -q '^MEMPLAN_WITH_MLIR:BOOL=ON' build/CMakeCache.txt; then targets+=(memplan-opt); fi
cmake --build build -j"$(nproc)" --target "${targets[@]}"
mkdir -p out/heapmaps
build/memplan bench bench/data/torch bench/data/dsa --progress --narrow --matrix-csv out/planners.csv \
  --svg-dir out/heapmaps "$@"
echo "every planner: out/planners.csv (arena, gap and time per planner and instance)"
echo "heap maps: $(find out/heapmaps -name '*.svg' | wc -l) SVG files under out/heapmaps/"
# The interactive report of a real captured model: the default planner beside
# a simpler one, on one time axis and one byte scale (docs/report.md).
build/memplan report bench/data/torch/resnet18.csv --planner portfolio,greedy_by_breadth --html out/report.html \
  >/dev/null
echo "report: $(pwd)/out/report.html (open it in a browser; everything is inside the file)"
