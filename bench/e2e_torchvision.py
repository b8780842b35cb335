#!/usr/bin/env python3
"""End-to-end benchmark: torchvision inference (examples/infer_torchvision.py)
under glibc, jemalloc, tcmalloc, mimalloc (LD_PRELOAD of Debian's packages)
and `memplan run`, printed as markdown tables.

    bench/e2e_torchvision.py                 # the full table (see docs/benchmarks.md for its duration)
    bench/e2e_torchvision.py --quick         # 3 models, 1 thread, fewer rounds
    bench/e2e_torchvision.py --models resnet18 --threads 1 --rounds 2

Method:
  1. Configurations: every model x (batch 1, 128 px), (batch 4, 224 px) x
     torch threads (1, 2).
  2. Each run is a fresh process: `python3 infer_torchvision.py` with
     --warmup W untimed passes (memplan profiles 2 and plans during them)
     and --iterations N timed passes, one memplan_mark per pass.
  3. Interleaving: for each round, for each configuration, every allocator
     runs once, in an order rotated by one each round, so that slow phases of
     a shared machine hit every allocator alike.
  4. Per configuration and allocator: median latency over all timed passes of
     all rounds (rounds x N passes), minor page faults per timed pass (median
     over the rounds; getrusage in the script, whole process), peak RSS
     (largest over the rounds), and whether the output bytes' SHA-256 equals
     glibc's in every round.
     Also the median process CPU time per pass (all threads): on a shared
     machine it is not inflated by waiting for a core, so it ranks allocators
     more reliably than wall-clock latency while others run.
  5. memplan runs with MEMPLAN_STATS=1; its served / unplanned / fallback
     counts (whole run, warm-up included) go to a third table.
"""
import argparse
import json
import os
import statistics

from e2e_common import REPO, add_run_options, command_for, resolve_allocators, run_interleaved, run_once

SCRIPT = os.path.join(REPO, "examples", "infer_torchvision.py")
ALL_MODELS = ["googlenet", "resnet50", "squeezenet1_0", "mnasnet0_75", "vgg16", "resnet18", "mobilenet_v2"]
QUICK_MODELS = ["resnet18", "squeezenet1_0", "mobilenet_v2"]
SHAPES = [(1, 128), (4, 224)]


def run_config(args, python, iterations, config, allocator):
    """One run of infer_torchvision.py under `allocator`: its JSON summary."""
    model, batch, size, threads = config
    script_args = [model, "--batch", str(batch), "--size", str(size), "--threads", str(threads),
                   "--warmup", str(args.warmup), "--iterations", str(iterations), "--quiet"]
    argv, extra = command_for(allocator, args.memplan, args.preloads, [python, SCRIPT, *script_args])
    return run_once(argv, extra)


def fmt_ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"models {','.join(QUICK_MODELS)}, 1 thread, 2 rounds of 10 passes")
    parser.add_argument("--models", help=f"comma-separated (default {','.join(ALL_MODELS)})")
    parser.add_argument("--threads", help="comma-separated torch thread counts (default 1,2)")
    parser.add_argument("--shapes", help="comma-separated BATCHxSIZE (default 1x128,4x224)")
    parser.add_argument("--allocators", default="glibc,jemalloc,tcmalloc,mimalloc,memplan",
                        help="comma-separated; memplan+KNOB=VALUE runs the drop-in with MEMPLAN_KNOB=VALUE "
                             "(e.g. memplan+MIN_PLANNED_SIZE=32768)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3; --quick 2)")
    parser.add_argument("--iterations", type=int, help="timed passes per run (default 20; --quick 10)")
    parser.add_argument("--warmup", type=int, default=4, help="untimed passes per run (default 4)")
    add_run_options(parser, tables_from=False)
    args = parser.parse_args()

    models = args.models.split(",") if args.models else (QUICK_MODELS if args.quick else ALL_MODELS)
    threads = [int(t) for t in args.threads.split(",")] if args.threads else ([1] if args.quick else [1, 2])
    shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES)
    rounds = args.rounds or (2 if args.quick else 3)
    iterations = args.iterations or (10 if args.quick else 20)
    allocators, args.preloads = resolve_allocators(args.allocators, args.memplan)

    configs = [(m, b, s, t) for m in models for (b, s) in shapes for t in threads]
    runs, elapsed = run_interleaved(
        configs, allocators, lambda config, allocator: run_config(args, args.python, iterations, config, allocator),
        rounds)

    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"config": c, "allocator": a, "runs": s} for (c, a), s in runs.items()], f, indent=1)

    print(f"{args.note}\n" if args.note else "", end="")
    print(f"{rounds} interleaved rounds x {iterations} timed passes (after {args.warmup} warm-up) per configuration "
          f"and allocator; {elapsed:.0f} s in all.\n")
    header = "| model | batch/px | threads | " + " | ".join(f"{a} ms" for a in allocators)
    header += " | memplan / best other | memplan / glibc | bit-identical |" if "memplan" in allocators else " |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    table2, table3, table4 = [], [], []
    for config in configs:
        model, batch, size, t = config
        medians, cpu, faults, rss, identical = {}, {}, {}, {}, {}
        reference = {s.get("output_sha256") for s in runs[(config, "glibc")]}
        for a in allocators:
            good = [s for s in runs[(config, a)] if "error" not in s]
            if not good:
                continue
            medians[a] = statistics.median([ms for s in good for ms in s["latencies_ms"]])
            cpu[a] = statistics.median([ms for s in good for ms in s["cpu_ms"]])
            faults[a] = statistics.median([s["minor_faults_per_pass"] for s in good])
            rss[a] = max(s["peak_rss_kib"] for s in good) / 1024
            identical[a] = (len(good) == len(runs[(config, a)]) and len(reference) == 1 and
                            all(s["output_sha256"] in reference and s["passes_agree"] for s in good))
        cells = [f"{medians[a]:.1f}" if a in medians else "failed" for a in allocators]
        line = f"| {model} | {batch}/{size} | {t} | " + " | ".join(cells)
        if "memplan" in allocators:
            others = [medians[a] for a in allocators if not a.startswith("memplan") and a in medians]
            line += (f" | {fmt_ratio(medians.get('memplan'), min(others) if others else None)}"
                     f" | {fmt_ratio(medians.get('memplan'), medians.get('glibc'))}"
                     f" | {'yes' if all(identical.get(a) for a in allocators) else 'NO: ' + ','.join(a for a in allocators if not identical.get(a))} |")
        else:
            line += " |"
        print(line)
        best_cpu = min((cpu[a] for a in allocators if not a.startswith("memplan") and a in cpu), default=None)
        table4.append(f"| {model} | {batch}/{size} | {t} | " +
                      " | ".join(f"{cpu[a]:.1f}" if a in cpu else "–" for a in allocators) +
                      (f" | {fmt_ratio(cpu.get('memplan'), best_cpu)} |" if "memplan" in allocators else " |"))
        table2.append(f"| {model} | {batch}/{size} | {t} | " +
                      " | ".join(f"{faults[a]:.0f}" if a in faults else "–" for a in allocators) + " | " +
                      " | ".join(f"{rss[a]:.0f}" if a in rss else "–" for a in allocators) + " |")
        if "memplan" in allocators:
            stats = [s["stats"] for s in runs[(config, "memplan")] if "stats" in s]
            if stats:
                served = statistics.median([s["served"] for s in stats])
                unplanned = statistics.median([s["unplanned"] for s in stats])
                fallback = statistics.median([s["fallback"] for s in stats])
                profiled = statistics.median([s["profiled"] for s in stats])
                table3.append(f"| {model} | {batch}/{size} | {t} | {profiled:.0f} | {served:.0f} | {unplanned:.0f} | "
                              f"{fallback:.0f} |")
    print("\nProcess CPU ms per pass (median; all threads):\n")
    head4 = ("| model | batch/px | threads | " + " | ".join(f"{a} CPU ms" for a in allocators) +
             (" | memplan / best other |" if "memplan" in allocators else " |"))
    print(head4)
    print("|" + "---|" * (head4.count("|") - 1))
    print("\n".join(table4))
    print("\nMinor page faults per timed pass (whole process) and peak RSS (MiB):\n")
    head2 = ("| model | batch/px | threads | " + " | ".join(f"{a} faults" for a in allocators) + " | " +
             " | ".join(f"{a} MiB" for a in allocators) + " |")
    print(head2)
    print("|" + "---|" * (head2.count("|") - 1))
    print("\n".join(table2))
    if table3:
        print("\n`memplan run` statistics (MEMPLAN_STATS, whole run incl. warm-up, median over rounds):\n")
        print("| model | batch/px | threads | profiled | served | unplanned | fallback |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(table3))


if __name__ == "__main__":
    main()
