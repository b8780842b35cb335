#!/usr/bin/env python3
"""What memplan's tracer costs a real program: torchvision forward passes
(batch 1, one intra-op thread, Debian's torch) timed with and without
libmemplan_trace.so preloaded.

Each run is a fresh process running examples/trace_torchvision.py (two
untimed warm-up passes, then --passes timed passes; the script prints their
median). Plain and traced runs alternate, and which goes first alternates
from round to round, so that the load of a shared machine falls on both
alike. Passes are timed by the thread's CPU time by default (--clock cpu),
which other processes on a shared machine do not inflate; the tracer's work,
file writes included, runs on the allocating thread and is counted. The
table gives, per model, the median over rounds of the per-run
medians and the fastest single pass of all runs, and the traced/plain ratio
of each. On a loaded machine the fastest pass is the steadier of the two
(a pass that ran uncontended); on a quiet one they agree.

    bench/torch_trace_overhead.py                      # resnet18 mobilenet_v2 squeezenet1_1, 224 px
    bench/torch_trace_overhead.py --size 64 --rounds 9 squeezenet1_1

Needs a built memplan (--memplan, default build/memplan) and an interpreter
with torch and torchvision (--python, default /usr/bin/python3).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEDIAN = re.compile(r"median ([0-9.]+) ms, best ([0-9.]+) ms")


def one_run(args, model, traced, trace_path):
    command = [args.python, os.path.join(ROOT, "examples", "trace_torchvision.py"), model,
               "--size", str(args.size), "--iterations", str(args.passes), "--threads", "1", "--clock", args.clock]
    if traced:
        command = [args.memplan, "trace", "--output", trace_path, "--"] + command
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    found = MEDIAN.search(out)
    if not found:
        sys.exit(f"no median in the output of {' '.join(command)}:\n{out}")
    return float(found.group(1)), float(found.group(2))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=["resnet18", "mobilenet_v2", "squeezenet1_1"])
    parser.add_argument("--rounds", type=int, default=5, help="plain/traced pairs of runs per model (default 5)")
    parser.add_argument("--passes", type=int, default=10, help="timed forward passes per run (default 10)")
    parser.add_argument("--size", type=int, default=224, help="image height and width (default 224)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="time passes by the thread's CPU time (default: steady on a shared machine; "
                             "it includes the tracer's writes, which run on the allocating thread) or wall clock")
    parser.add_argument("--memplan", default=os.path.join(ROOT, "build", "memplan"))
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as work:
        trace_path = os.path.join(work, "run.trace")
        for model in args.models:
            plain, traced = [], []  # (median, best) per run
            for r in range(args.rounds):
                for is_traced in ((False, True) if r % 2 == 0 else (True, False)):
                    (traced if is_traced else plain).append(one_run(args, model, is_traced, trace_path))
                print(f"{model}: round {r + 1}/{args.rounds}: median of passes plain {plain[-1][0]:.2f} ms, "
                      f"traced {traced[-1][0]:.2f} ms", file=sys.stderr, flush=True)
            rows.append((model, statistics.median(m for m, _ in plain), statistics.median(m for m, _ in traced),
                         min(b for _, b in plain), min(b for _, b in traced)))

    print(f"\nforward pass, batch 1, {args.size}x{args.size}, 1 thread, {args.rounds} runs of {args.passes} "
          f"timed passes each way, {args.clock} time\n")
    print("| model | median plain ms | median traced ms | ratio | fastest plain ms | fastest traced ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for model, plain, traced, best_plain, best_traced in rows:
        print(f"| {model} | {plain:.2f} | {traced:.2f} | {traced / plain:.3f} | {best_plain:.2f} | "
              f"{best_traced:.2f} | {best_traced / best_plain:.3f} |")


if __name__ == "__main__":
    main()
