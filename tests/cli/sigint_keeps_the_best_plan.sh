#!/usr/bin/env bash
# Ctrl-C during a long `memplan plan` writes the best plan found so far and
# exits 130 (tests/cli/cli_tests.cmake runs this; label cli).
#   sigint_keeps_the_best_plan.sh MEMPLAN PROBLEM WORKDIR
set -u
memplan=$1 problem=$2 workdir=$3
mkdir -p "$workdir" && cd "$workdir" || exit 1
rm -f best.csv err.txt
# Exact minimisation of D cannot finish (D is not proven optimal) and its
# 600 s limit is far beyond the test's: only the SIGINT can end it early, so
# exit status 130 and the message show the interrupt was honoured. How fast it
# stops is not checked here (ctest's TIMEOUT is the watchdog against a hang).
"$memplan" plan "$problem" --planner exact --time-limit 600 --output best.csv >out.txt 2>err.txt &
pid=$!
sleep 1.5
kill -INT "$pid"
wait "$pid"
status=$?
cat out.txt err.txt
if [ "$status" -ne 130 ]; then echo "FAIL: exit status $status, expected 130"; exit 1; fi
grep -q "interrupted after .*wrote the best plan found to best.csv" err.txt || { echo "FAIL: no interruption message"; exit 1; }
"$memplan" validate "$problem" best.csv || { echo "FAIL: the written plan is not valid"; exit 1; }
echo "PASS: exit 130 after SIGINT, valid plan written"
