#!/usr/bin/env bash
# run_browser_test.sh NODE_MODULES TEST.mjs — runs one browser test, or skips
# it (exit 77, which CTest reports as skipped) saying what is missing.
set -uo pipefail
modules=$1
test_file=$2
chromium=${CHROMIUM:-/usr/bin/chromium}
if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node is not installed (Debian: apt-get install nodejs npm)"
  exit 77
fi
if [ ! -x "$chromium" ]; then
  echo "SKIPPED: no chromium at $chromium (scripts/install-deps.sh installs Debian's chromium)"
  exit 77
fi
if [ ! -d "$modules/puppeteer-core" ]; then
  echo "SKIPPED: puppeteer-core is not installed in $modules (see the browser_npm_ci test)"
  exit 77
fi
export CHROMIUM="$chromium" MEMPLAN_BROWSER_MODULES="$modules"
exec node "$test_file"
