#!/usr/bin/env bash
# The main job: install, build (Release), and plan every shipped instance —
# the torchvision forward passes captured with memplan's tracer
# (bench/data/torch) and the public benchmark suites (bench/data/dsa) — with
# every fast planner, printing the quality table and writing heap maps (SVG)
# of the default planner's plans under out/heapmaps/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_BUILD_TESTS=OFF -DMEMPLAN_BUILD_BENCH=OFF >/dev/null
cmake --build build -j"$(nproc)" --target memplan
mkdir -p out/heapmaps
build/memplan bench bench/data/torch bench/data/dsa --progress --svg-dir out/heapmaps "$@"
echo "heap maps: $(find out/heapmaps -name '*.svg' | wc -l) SVG files under out/heapmaps/"
