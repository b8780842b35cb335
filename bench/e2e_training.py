#!/usr/bin/env python3
"""End-to-end benchmark: training loops (examples/train_loop.py) under glibc,
jemalloc, tcmalloc, mimalloc (LD_PRELOAD of Debian's packages) and `memplan
run`, one memplan_mark per optimizer step, printed as markdown tables
(docs/benchmarks.md, "Training loops").

    bench/e2e_training.py --quick       # smoke run: 3 rows, 1 round (about 3 min on a quiet 2-core machine)
    bench/e2e_training.py               # the full table (about 10 min on a quiet 2-core machine)
    bench/e2e_training.py --rows resnet18:sgd:1,transformer:adam:2 --rounds 3

Rows (MODEL:OPTIMIZER:THREADS[:VARIANT]); the models are small enough that a
step takes roughly 100-300 ms on one core:
  resnet18 (batch 8, 64 px), mobilenet_v2 (batch 8, 64 px), squeezenet1_1
  (batch 16, 64 px), transformer (TransformerEncoder d_model 64, 2 layers,
  batch 8 of 64 tokens, a fixed length); sgd (momentum 0.9) or adam; and the
  variants
    accumulate  two micro-batches per optimizer step (gradient accumulation);
    eval        an evaluation pass (eval mode, no_grad) after every 3rd step,
                an iteration of its own; the only row with a memplan-keyed
                run (steps key 1, evaluation passes key 2);
    loader      a DataLoader with 2 worker processes started by fork.

Method (bench/e2e_common.py, as bench/e2e_torchvision.py): every run a fresh
process; rounds interleaved, the allocators' order rotated each round; 4
untimed warm-up steps (memplan profiles 2 and plans), then timed steps (8;
--quick 6). Per row and allocator: median and p99 step time over all timed
steps of all rounds (data loading included), minor faults per timed step
(median over rounds), peak RSS (largest), the final weights' SHA-256 compared
with glibc's in every round (and the evaluation outputs' where there are
some: a run is identical only if both agree), and for memplan the fraction of
requests served from slabs during the timed steps and, from MEMPLAN_STATS, the
longest boundary stall, plans held and variants.
"""
import argparse
import os
import sys

from e2e_common import (KEYED, REPO, add_run_options, command_for, print_saved_tables, print_tables,
                        resolve_allocators, run_interleaved, run_once, save_runs)

SCRIPT = os.path.join(REPO, "examples", "train_loop.py")
MODEL_ARGS = {
    "resnet18": ["--batch", "8", "--size", "64"],
    "mobilenet_v2": ["--batch", "8", "--size", "64"],
    "squeezenet1_1": ["--batch", "16", "--size", "64"],
    "transformer": ["--batch", "8", "--tokens", "64"],
}
VARIANT_ARGS = {
    "": [],
    "accumulate": ["--accumulate", "2"],
    "eval": ["--eval-every", "3"],
    "loader": ["--loader-workers", "2"],
}
ALL_ROWS = [
    "resnet18:sgd:1", "resnet18:adam:1", "mobilenet_v2:sgd:1", "mobilenet_v2:adam:1", "squeezenet1_1:sgd:1",
    "transformer:sgd:1", "transformer:adam:1",
    "resnet18:sgd:1:accumulate", "resnet18:sgd:1:eval", "resnet18:sgd:1:loader",
    "resnet18:sgd:2", "mobilenet_v2:sgd:2", "transformer:adam:2",
]
QUICK_ROWS = ["resnet18:sgd:1", "transformer:adam:1", "resnet18:sgd:1:eval"]


def parse_row(text):
    """(model, optimizer, threads, variant) or None."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or not parts[2].isdigit() or int(parts[2]) < 1:
        return None
    model, optimizer, threads = parts[0], parts[1], int(parts[2])
    variant = parts[3] if len(parts) == 4 else ""
    if model not in MODEL_ARGS or optimizer not in ("sgd", "adam") or variant not in VARIANT_ARGS:
        return None
    return model, optimizer, threads, variant


def label(config):
    model, optimizer, threads, variant = config
    values = dict(zip(MODEL_ARGS[model][::2], MODEL_ARGS[model][1::2]))
    shape = f"{values['--batch']} x " + (f"{values['--size']} px" if "--size" in values
                                         else f"{values['--tokens']} tokens")
    return [model, f"{optimizer}{' + ' + variant if variant else ''}", shape, str(threads)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"rows {','.join(QUICK_ROWS)}, 1 round, 6 timed steps")
    parser.add_argument("--rows", help="comma-separated MODEL:OPTIMIZER:THREADS[:VARIANT] (default: the full table; "
                                       f"models {','.join(MODEL_ARGS)}, variants accumulate, eval, loader)")
    parser.add_argument("--allocators", default=f"glibc,jemalloc,tcmalloc,mimalloc,memplan,{KEYED}",
                        help=f"comma-separated; {KEYED} runs only on eval rows; memplan+KNOB=VALUE runs the "
                             "drop-in with MEMPLAN_KNOB=VALUE")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 2; --quick 1)")
    parser.add_argument("--steps", type=int, help="timed steps per run (default 8; --quick 6)")
    parser.add_argument("--warmup", type=int, default=4, help="untimed steps per run (default 4)")
    add_run_options(parser)
    args = parser.parse_args()
    if args.tables_from:
        print_saved_tables(args.tables_from, args.note, ["model", "optimizer", "input", "threads"], label, unit="step")
        return

    texts = args.rows.split(",") if args.rows else (QUICK_ROWS if args.quick else ALL_ROWS)
    configs = []
    for text in texts:
        row = parse_row(text)
        if row is None:
            sys.exit(f"bad row {text!r}: expected MODEL:OPTIMIZER:THREADS[:VARIANT] with MODEL one of "
                     f"{', '.join(MODEL_ARGS)}, OPTIMIZER sgd or adam, VARIANT accumulate, eval or loader")
        configs.append(row)
    rounds = args.rounds or (1 if args.quick else 2)
    steps = args.steps or (6 if args.quick else 8)
    allocators, preloads = resolve_allocators(args.allocators, args.memplan)

    def run(config, allocator):
        model, optimizer, threads, variant = config
        if allocator == KEYED and variant != "eval":
            return None  # a single variant: its key would say nothing
        argv = [args.python, SCRIPT, model, "--optimizer", optimizer, "--threads", str(threads),
                "--warmup", str(args.warmup), "--steps", str(steps), "--quiet",
                *MODEL_ARGS[model], *VARIANT_ARGS[variant]]
        argv, extra = command_for(allocator, args.memplan, preloads, argv)
        summary = run_once(argv, extra)
        if "output_sha256" in summary:  # weights and evaluation outputs must both agree
            summary["output_sha256"] += ":" + summary.get("eval_sha256", "")
        return summary

    runs, elapsed = run_interleaved(configs, allocators, run, rounds, describe=lambda c: " ".join(label(c)))
    if args.json:
        save_runs(args.json, runs)

    print(f"{args.note}\n" if args.note else "", end="")
    print(f"{rounds} interleaved round(s) x {steps} timed steps (after {args.warmup} warm-up) per row and allocator; "
          f"{elapsed:.0f} s in all. Times are per optimizer step.\n")
    print_tables(configs, runs, allocators, ["model", "optimizer", "input", "threads"], label, unit="step")


if __name__ == "__main__":
    main()
