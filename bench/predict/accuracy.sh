#!/usr/bin/env bash
# accuracy.sh — memplan predict against CUDA snapshots recorded on real GPUs
# (bench/predict/accuracy.py): a table of recorded vs predicted peak
# allocated and peak reserved per snapshot, or --json.
#
# Usage: bench/predict/accuracy.sh CS336_SYSTEMS CS336_BASICS [accuracy.py options]
#   CS336_SYSTEMS  github.com/kkaitlyn111/cs336-a2-systems: a work tree, or its
#                  git directory (a bare clone or mirror), whose memory_files/
#                  hold the snapshots (files missing from the clone are skipped)
#   CS336_BASICS   github.com/kkaitlyn111/cs336-assignment1: a work tree or git
#                  directory (its cs336_basics/ package, which the snapshots'
#                  benchmark imports)
#   options        --gpu h100 (default), --json, --only NAME, --precision fp32|bf16,
#                  --keep DIR (write the predicted snapshots there)
# Environment: BUILD (memplan's build tree, default build/: its python/ is the
#   package used), PYTHON (default /usr/bin/python3, which has torch).
# Nothing of the checkouts enters memplan's tree: a git directory's files are
# read into a temporary folder, removed at exit.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,20p' "$0" >&2
  exit 2
fi
systems=$1 basics=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
build=${BUILD:-$root/build}
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A work tree as it is; a git directory: the named paths at HEAD into $work/NAME.
tree() {
  local source=$1 name=$2
  shift 2
  if [[ -d "$source/.git" || ! -d "$source/objects" ]]; then
    (cd "$source" && pwd)
    return
  fi
  local file
  mkdir -p "$work/$name"
  for file in $(git -C "$source" ls-tree -r --name-only HEAD -- "$@"); do
    mkdir -p "$work/$name/$(dirname "$file")"
    # Large files of some clones are absent (LFS, partial clones): skipped.
    git -C "$source" show "HEAD:$file" >"$work/$name/$file" 2>/dev/null || rm -f "$work/$name/$file"
  done
  echo "$work/$name"
}

systems=$(tree "$systems" systems memory_files)
basics=$(tree "$basics" basics cs336_basics)
[[ -d "$build/python/memplan" ]] || { echo "accuracy.sh: $build/python: build memplan_python first" >&2; exit 2; }
PYTHONPATH="$build/python" "$python" "$here/accuracy.py" --cs336-systems "$systems" --cs336-basics "$basics" "$@"
