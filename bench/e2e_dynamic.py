#!/usr/bin/env python3
"""End-to-end benchmark: inference whose shapes change from pass to pass, under
glibc, jemalloc, tcmalloc, mimalloc (LD_PRELOAD of Debian's packages),
`memplan run` (plain marks) and `memplan run` with keyed marks, printed as
markdown tables (docs/benchmarks.md, "Dynamic shapes").

    bench/e2e_dynamic.py --quick        # smoke run: 1 thread, 1 round, resnet18 only (about 3 min)
    bench/e2e_dynamic.py                # the full table (about 12 min on a quiet 2-core machine)
    bench/e2e_dynamic.py --workloads transformer,batching --threads 2 --rounds 3

Workloads (the programs are under examples/; each has --help):
  cnn:MODEL     examples/infer_rotating_shapes.py: a torchvision model
                (weights=None) whose input rotates among six batch/resolution
                pairs (1x64, 2x64, 1x80, 3x64, 2x80, 4x64); --keyed names each
                shape. Full mode: resnet18, mobilenet_v2, squeezenet1_1.
  transformer   examples/serve_transformer.py: TransformerEncoder (d_model
                64, 2 layers), batch uniform in 1..8, sequence length
                log-normal (median 64 tokens, sigma 0.9 of the log) clipped to
                8..512, seeded; --keyed names each batch size (lengths share
                its upper-bound plan; until 24 Nov 2026 each (batch, length)).
  batching      examples/serve_transformer.py --batching: Poisson arrivals (3
                requests per pass on average) of requests of that length
                distribution, each pass serving everything waiting (at most
                8), padded to the longest, with a padding mask.
  fixed         examples/infer_torchvision.py resnet18, batch 1, 128 px: the
                fixed-shape case of bench/e2e_torchvision.py, to show nothing
                regressed (no keyed run: it has one shape).
  workers       examples/serve_threads.py resnet18: two Python threads serve
                requests of their own (64 and 80 px) on one shared model, each
                request marked with memplan_mark_thread (a boundary for that
                worker only); --threads is torch's threads per worker; keyed:
                memplan_mark_thread_key(worker + 1). Full mode only.

Method (as bench/e2e_torchvision.py; bench/e2e_common.py): every run a fresh
process; rounds interleaved, the allocators' order rotated each round;
untimed warm-up passes first (memplan learns during them), then timed passes,
each one marked iteration. Per workload, thread count and allocator: median
and p99 latency per pass over all timed passes of all rounds; minor faults per
timed pass (getrusage, whole process; median over rounds); peak RSS (largest
over rounds); the SHA-256 of every pass's output bytes compared with glibc's
in every round; for memplan, the fraction of requests served from slabs
during the timed passes (memplan_replay_served / memplan_replay_requests
before and after them) and, from MEMPLAN_STATS, the longest boundary stall,
plans held and variants seen.
"""
import argparse
import os
import sys

from e2e_common import (KEYED, REPO, add_run_options, command_for, print_saved_tables, print_tables,
                        resolve_allocators, run_interleaved, run_once, save_runs)

EXAMPLES = os.path.join(REPO, "examples")
ALL_WORKLOADS = ["cnn:resnet18", "cnn:mobilenet_v2", "cnn:squeezenet1_1", "transformer", "batching", "fixed",
                 "workers"]
QUICK_WORKLOADS = ["cnn:resnet18", "transformer", "batching", "fixed"]
# (warm-up, timed) for each kind: rounds of six shapes for cnn, passes otherwise.
# cnn warms up for 4 rounds: the first round differs from the later ones, and
# a shape's plan, made in the background one agreeing pass early, is adopted
# at its second agreeing pass (its third while the stream is unpredictable).
FULL_PASSES = {"cnn": (4, 3), "transformer": (10, 30), "batching": (10, 30), "fixed": (4, 15), "workers": (6, 20)}
QUICK_PASSES = {"cnn": (4, 2), "transformer": (10, 20), "batching": (10, 20), "fixed": (4, 10), "workers": (6, 10)}


def workload_argv(python, workload, threads, passes):
    """The command line of one workload, or None for an unknown one."""
    kind, _, model = workload.partition(":")
    warmup, timed = passes[kind] if kind in passes else (0, 0)
    common = ["--threads", str(threads), "--quiet"]
    if kind == "cnn" and model:
        return [python, os.path.join(EXAMPLES, "infer_rotating_shapes.py"), model, "--warmup-rounds", str(warmup),
                "--rounds", str(timed), *common]
    if kind in ("transformer", "batching") and not model:
        extra = ["--batching"] if kind == "batching" else []
        return [python, os.path.join(EXAMPLES, "serve_transformer.py"), *extra, "--warmup", str(warmup),
                "--passes", str(timed), *common]
    if kind == "fixed":
        return [python, os.path.join(EXAMPLES, "infer_torchvision.py"), model or "resnet18", "--batch", "1",
                "--size", "128", "--warmup", str(warmup), "--iterations", str(timed), *common]
    if kind == "workers":
        # Two Python threads serving requests of their own on one shared model
        # (64 and 80 px), each request a thread mark; `threads` is torch's per worker.
        return [python, os.path.join(EXAMPLES, "serve_threads.py"), model or "resnet18", "--workers", "2",
                "--warmup", str(warmup), "--requests", str(timed), *common]
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"workloads {','.join(QUICK_WORKLOADS)}, 1 thread, 1 round, fewer passes")
    parser.add_argument("--workloads", help=f"comma-separated (default {','.join(ALL_WORKLOADS)}; cnn:MODEL takes "
                                            "any torchvision model, fixed:MODEL too)")
    parser.add_argument("--threads", help="comma-separated torch thread counts (default 1,2; --quick 1)")
    parser.add_argument("--allocators", default=f"glibc,jemalloc,tcmalloc,mimalloc,memplan,{KEYED}",
                        help="comma-separated; memplan+KNOB=VALUE runs the drop-in with MEMPLAN_KNOB=VALUE")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 2; --quick 1)")
    parser.add_argument("--passes", help="override warm-up / timed passes per kind, e.g. "
                        "transformer=150/100,batching=150/100 (rounds of six shapes for cnn)")
    add_run_options(parser)
    args = parser.parse_args()
    if args.tables_from:
        print_saved_tables(args.tables_from, args.note, ["workload", "threads"], lambda c: [c[0], str(c[1])])
        return

    workloads = args.workloads.split(",") if args.workloads else (QUICK_WORKLOADS if args.quick else ALL_WORKLOADS)
    threads = [int(t) for t in args.threads.split(",")] if args.threads else ([1] if args.quick else [1, 2])
    rounds = args.rounds or (1 if args.quick else 2)
    passes = dict(QUICK_PASSES if args.quick else FULL_PASSES)
    for item in args.passes.split(",") if args.passes else []:
        kind, _, counts = item.partition("=")
        warmup, _, timed = counts.partition("/")
        if kind not in passes or not warmup.isdigit() or not timed.isdigit() or int(timed) == 0:
            sys.exit(f"--passes {item!r}: expected KIND=WARMUP/TIMED with KIND one of {', '.join(passes)} "
                     "and TIMED > 0")
        passes[kind] = (int(warmup), int(timed))
    for w in workloads:
        if workload_argv(args.python, w, 1, passes) is None:
            sys.exit(f"unknown workload {w!r}: expected cnn:MODEL, transformer, batching, fixed[:MODEL] or "
                     "workers[:MODEL]")
    allocators, preloads = resolve_allocators(args.allocators, args.memplan)

    def run(config, allocator):
        workload, t = config
        if allocator == KEYED and workload.startswith("fixed"):
            return None  # one shape: nothing to key
        argv, extra = command_for(allocator, args.memplan, preloads, workload_argv(args.python, workload, t, passes))
        return run_once(argv, extra)

    configs = [(w, t) for w in workloads for t in threads]
    runs, elapsed = run_interleaved(configs, allocators, run, rounds, describe=lambda c: f"{c[0]} {c[1]} threads")
    if args.json:
        save_runs(args.json, runs)

    print(f"{args.note}\n" if args.note else "", end="")
    print(f"{rounds} interleaved round(s) per workload and allocator; warm-up / timed passes per run: "
          + ", ".join(f"{k} {w} / {n}" + (" rounds of 6 shapes" if k == "cnn" else "") for k, (w, n) in passes.items())
          + f"; {elapsed:.0f} s in all.\n")
    print_tables(configs, runs, allocators, ["workload", "threads"], lambda c: [c[0], str(c[1])])


if __name__ == "__main__":
    main()
