#!/usr/bin/env bash
# Fails, listing the files, when a tracked C or C++ file (or each FILE given)
# is not formatted as .clang-format says (Debian 12's clang-format 14).
# Usage: scripts/check-format.sh [FILE...]. Fix with:
#   git ls-files '*.cc' '*.h' '*.c' | xargs clang-format -i
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git -C "$root" ls-files '*.cc' '*.h' '*.c' | sed "s|^|$root/|"); fi
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (scripts/install-deps.sh)" >&2; exit 1; }
unformatted=()
for file in "${files[@]}"; do
  # The style file is the project's, wherever the file is.
  clang-format --style="file:$root/.clang-format" --dry-run --Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done
if [ ${#unformatted[@]} -ne 0 ]; then
  echo "check-format: ${#unformatted[@]} file(s) not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
