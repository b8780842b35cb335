#!/usr/bin/env bash
# npm_ci.sh SOURCE_DIR WORK_DIR — installs the browser tests' node packages
# (package-lock.json) into WORK_DIR/node_modules. Never downloads a browser:
# the tests use Debian's chromium. Exit 77 (CTest: skipped) without npm.
set -euo pipefail
source_dir=$1
work=$2
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node and npm are needed for the browser tests (Debian: apt-get install nodejs npm)"
  exit 77
fi
mkdir -p "$work"
# Up to date already: the same lock file was installed before.
if [ -d "$work/node_modules/puppeteer-core" ] && cmp -s "$source_dir/package-lock.json" "$work/package-lock.json"; then
  echo "puppeteer-core already installed in $work/node_modules"
  exit 0
fi
cp "$source_dir/package.json" "$source_dir/package-lock.json" "$work/"
export PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROME_DOWNLOAD=1 PUPPETEER_SKIP_CHROME_HEADLESS_SHELL_DOWNLOAD=1
cd "$work"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
echo "installed puppeteer-core $(node -p "require('./node_modules/puppeteer-core/package.json').version") in $work/node_modules"
