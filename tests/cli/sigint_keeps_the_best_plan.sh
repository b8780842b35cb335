#!/usr/bin/env bash
# Ctrl-C during a long `memplan plan` writes the best plan found so far and
# exits 130 (tests/cli/cli_tests.cmake runs this; label cli).
#   sigint_keeps_the_best_plan.sh MEMPLAN PROBLEM WORKDIR
set -u
memplan=$1 problem=$2 workdir=$3
mkdir -p "$workdir" && cd "$workdir" || exit 1
rm -f best.csv err.txt
# 60 s of exact minimisation that cannot finish: D is not proven optimal.
"$memplan" plan "$problem" --planner exact --time-limit 60 --output best.csv >out.txt 2>err.txt &
pid=$!
sleep 1.5
kill -INT "$pid"
start=$(date +%s)
wait "$pid"
status=$?
took=$(( $(date +%s) - start ))
cat out.txt err.txt
if [ "$status" -ne 130 ]; then echo "FAIL: exit status $status, expected 130"; exit 1; fi
if [ "$took" -gt 10 ]; then echo "FAIL: took ${took} s to stop after SIGINT"; exit 1; fi
grep -q "interrupted after .*wrote the best plan found to best.csv" err.txt || { echo "FAIL: no interruption message"; exit 1; }
"$memplan" validate "$problem" best.csv || { echo "FAIL: the written plan is not valid"; exit 1; }
echo "PASS: exit 130 within ${took} s, valid plan written"
