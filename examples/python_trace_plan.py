#!/usr/bin/env python3
"""Traces a torchvision model with memplan's tracer, plans one of its
iterations and draws the plan, all from Python with the memplan module:

    PYTHONPATH=build/python python3 examples/python_trace_plan.py resnet18 --out /tmp/resnet18

1. memplan.trace() runs this script again (with --run-model) under the
   tracer, libmemplan_trace.so in LD_PRELOAD; that child builds the model
   (weights=None: nothing is downloaded), runs two warm-up passes, then marks
   each forward pass with memplan.mark().
2. The parent reads the trace, extracts one iteration as a problem
   (memplan.Trace.extract), plans it with every fast planner and the default
   one (memplan.plan), checks each plan (memplan.validate),
3. and writes the problem (CSV), the best plan (JSON), its heap map (SVG) and
   an HTML report comparing the planners.

Without the tracer the child still runs (memplan.mark() does nothing).
"""
import argparse
import os
import sys
import time


def run_model(args):
    """The traced child: forward passes of the model, one iteration each."""
    import torch
    import torchvision

    import memplan

    torch.set_num_threads(1)  # one thread: every iteration repeats exactly
    constructor = getattr(torchvision.models, args.model, None)
    if not callable(constructor):
        raise SystemExit(f"no torchvision model named {args.model!r}")
    model = constructor(weights=None).eval()
    x = torch.randn(1, 3, args.size, args.size)
    with torch.inference_mode():
        for _ in range(2):  # warm-up: the first passes allocate caches later ones reuse
            model(x)
        for _ in range(args.iterations):
            memplan.mark()
            model(x)
        memplan.mark()  # closes the last iteration


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", default="resnet18", help="a torchvision.models constructor (resnet18)")
    parser.add_argument("--size", type=int, default=64, help="image height and width in pixels (default 64)")
    parser.add_argument("--iterations", type=int, default=3, help="marked forward passes (default 3)")
    parser.add_argument("--min-size", default="4K", help="leave out buffers below this many bytes (default 4K)")
    parser.add_argument("--out", default=".", help="folder for the files written (default: here)")
    parser.add_argument("--run-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_model:
        return run_model(args)

    import memplan

    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, args.model)
    start = time.perf_counter()
    child = [sys.executable, os.path.abspath(__file__), args.model, "--run-model", "--size", str(args.size),
             "--iterations", str(args.iterations)]
    trace = memplan.trace(child, base + ".trace")
    print(f"traced     {trace.events} events, {trace.marks} marks in {time.perf_counter() - start:.1f} s "
          f"({base}.trace)")

    # The middle iteration: the first may still warm caches, the last is like the others.
    iteration = max(1, (args.iterations + 1) // 2)
    extraction = trace.extract(iteration, min_size=args.min_size)
    problem = extraction.problem
    print(f"iteration  {iteration}: {len(problem)} buffers, load {problem.load()} B; left out "
          f"{extraction.escaped} escaping, {extraction.inherited} inherited, "
          f"{extraction.below_min_size} below {args.min_size}")
    memplan.write_problem(base + ".csv", problem)

    results = {}
    for name in memplan.planners():
        info = next(i for i in memplan.planner_info() if i["name"] == name)
        if not info["fast"] and name != memplan.DEFAULT_PLANNER:
            continue  # exact search and MIP: minutes on a real model
        result = memplan.plan(problem, name, time_limit=10)
        check = memplan.validate(problem, result)
        if not check:
            raise SystemExit(f"{name}: invalid plan: {check}")
        results[name] = result
    print(f"{'planner':<26} {'arena B':>12} {'gap':>8} {'time ms':>9}")
    for name, result in sorted(results.items(), key=lambda item: item[1].arena):
        print(f"{name:<26} {result.arena:>12} {result.gap * 100:>7.2f}% {result.planning_seconds * 1e3:>9.2f}")

    best_name, best = min(results.items(), key=lambda item: item[1].arena)
    memplan.write_plan(base + ".plan.json", problem, best)
    memplan.render_svg(problem, best, base + ".svg", title=f"{args.model}, iteration {iteration}")
    memplan.report_html(problem, {name: results[name] for name in ("naive", "greedy_by_size", best_name)},
                        base + ".html", title=f"{args.model} {args.size}x{args.size}")
    print(f"wrote      {base}.csv, {base}.plan.json, {base}.svg, {base}.html")


if __name__ == "__main__":
    main()
