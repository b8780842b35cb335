"""accuracy.py — memplan.predict against CUDA snapshots recorded on real GPUs.

Each pair is a public program's training (or forward) step and a snapshot
its author recorded on a GPU. The step is rebuilt from the public code (a
checkout given on the command line; nothing of it is committed here) with
the same shapes and settings, recorded by memplan.predict on the meta
device, and compared with the snapshot's recorded window:
  peak allocated: the recording's vs the snapshot's recorded peak;
  peak reserved: memplan's caching-allocator model replaying the prediction
  vs the snapshot's recorded peak reserved.

    accuracy.py --cs336-systems A2 --cs336-basics A1 [--gpu h100] [--json] [--only NAME]

A2: a directory holding memory_files/*.pickle of
github.com/kkaitlyn111/cs336-a2-systems (the snapshots); A1: a checkout of
github.com/kkaitlyn111/cs336-assignment1 (the cs336_basics package the
snapshots' benchmark imports). einops and jaxtyping come from shims/ (ours),
as does the cs336_basics-1.0.dist-info that the package's __init__ asks
importlib.metadata for (its version only).
Each pair is predicted in a child process (`--worker`), so one pair's
recording does not weigh on the next one's.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# The snapshots of cs336_systems/benchmark.py at c1c174d
# (run_memory_foward_fullstep): model '2.7b' (d_model 2560, d_ff 10240, 32
# layers, 32 heads), batch 4, vocab 10000, theta 10000, AdamW(lr 1e-4,
# weight_decay 0.01, eps 1e-8, betas (0.9, 0.95)); the model is built in fp32
# (mixed: autocast to bfloat16 around the step).
CS336 = [
    ("memory_ctx128_forward_.pickle", 128, "forward", "fp32"),
    ("memory_ctx256_forward_.pickle", 256, "forward", "fp32"),
    ("memory_ctx512_forward_.pickle", 512, "forward", "fp32"),
    ("memory_ctx128_fullstep.pickle", 128, "fullstep", "fp32"),
    ("memory_ctx128_fullstep_.pickle", 128, "fullstep", "fp32"),
    ("memory_ctx256_fullstep_.pickle", 256, "fullstep", "fp32"),
    ("memory_ctx512_fullstep_.pickle", 512, "fullstep", "fp32"),
    ("memory_ctx128_forward_mixed.pickle", 128, "forward", "bf16"),
    ("memory_ctx256_forward_mixed.pickle", 256, "forward", "bf16"),
    ("memory_ctx512_forward_mixed.pickle", 512, "forward", "bf16"),
]


def cs336_step(basics, context_length, mode, precision, gpu, output=None):
    """Records run_memory_foward_fullstep of cs336_systems/benchmark.py
    (c1c174d) as written, from the model's construction on; returns the
    recording's summary."""
    sys.path[:0] = [os.path.join(HERE, "shims"), basics]
    import torch
    from memplan.predict.recording import recording
    from contextlib import nullcontext
    from cs336_basics.transformer import TransformerLM
    from cs336_basics.optimizers import AdamW
    from cs336_basics.training import cross_entropy_loss

    if precision == "fp32":
        torch.set_float32_matmul_precision("high")
    with recording(device="cuda", gpu=gpu) as rec:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = TransformerLM(d_model=2560, d_ff=10240, vocab_size=10000, context_length=context_length,
                              num_heads=32, num_layers=32, theta=10000, device=device, dtype=torch.float32)
        model.to(device)
        optimizer = AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-8, betas=(0.9, 0.95))
        batch = torch.randint(low=0, high=10000, size=(4, context_length)).to(device)
        inputs = targets = batch
        casting = torch.autocast(device_type="cuda", dtype=torch.bfloat16) if precision == "bf16" else nullcontext()
        with casting:
            torch.cuda.synchronize()
            if mode == "forward":
                logits = model(inputs)
            else:
                optimizer.zero_grad()
                logits = model(inputs)
                loss = cross_entropy_loss(logits, targets)
                loss.backward()
                optimizer.step()
            torch.cuda.synchronize()
    if output:
        rec.snapshot(output)
    return rec.summary()


def recorded(path):
    """The snapshot's recorded peaks on its device (memplan's analysis)."""
    import memplan
    device = memplan.analyze_snapshot(path)["devices"][0]
    return device["recorded"]["peak_allocated_bytes"], device["recorded"]["peak_reserved_bytes"]


def worker(args):
    name, context_length, mode, precision = next(p for p in CS336 if p[0] == args.worker)
    start = time.monotonic()
    summary = cs336_step(args.cs336_basics, context_length, mode, precision, args.gpu, args.output)
    device = summary["devices"][0]
    json.dump({"predicted_allocated": device["peak_allocated_bytes"],
               "predicted_reserved": device["peak_reserved_bytes"],
               "seconds": round(time.monotonic() - start, 1)}, sys.stdout)


def error(recorded_bytes, predicted_bytes):
    return 100.0 * (predicted_bytes - recorded_bytes) / recorded_bytes


def run_pairs(args):
    rows = []
    for name, context_length, mode, precision in CS336:
        if args.only and args.only not in name or args.precision and args.precision != precision:
            continue
        path = os.path.join(args.cs336_systems, "memory_files", name)
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            print(f"accuracy: {path}: missing, skipped", file=sys.stderr)
            continue
        command = [sys.executable, os.path.abspath(__file__), "--worker", name,
                   "--cs336-basics", args.cs336_basics, "--gpu", args.gpu]
        if args.keep:
            command += ["--output", os.path.join(args.keep, name)]
        done = subprocess.run(command, capture_output=True, text=True)
        real_allocated, real_reserved = recorded(path)
        if done.returncode != 0:
            message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            print(f"accuracy: {name}: the prediction failed: {message}", file=sys.stderr)
            rows.append({"snapshot": name, "setting": f"ctx {context_length}, batch 4, {mode}, {precision}",
                         "recorded_allocated": real_allocated, "recorded_reserved": real_reserved, "error": message})
            continue
        predicted = json.loads(done.stdout)
        tolerance = 0.5 if precision == "fp32" else 2.0
        rows.append({"snapshot": name, "program": "cs336 TransformerLM 2.7B (kkaitlyn111/cs336-a2-systems)",
                     "setting": f"ctx {context_length}, batch 4, {mode}, {precision}",
                     "recorded_allocated": real_allocated, "predicted_allocated": predicted["predicted_allocated"],
                     "allocated_error_pct": round(error(real_allocated, predicted["predicted_allocated"]), 3),
                     "recorded_reserved": real_reserved, "predicted_reserved": predicted["predicted_reserved"],
                     "reserved_error_pct": round(error(real_reserved, predicted["predicted_reserved"]), 3),
                     "allocated_target_pct": tolerance, "reserved_target_pct": 1.0 if precision == "fp32" else 2.0,
                     "seconds": predicted["seconds"]})
    return rows


def print_table(rows):
    print(f"{'snapshot':36} {'setting':32} {'recorded alloc':>15} {'predicted':>15} {'err %':>7} "
          f"{'recorded resv':>15} {'predicted':>15} {'err %':>7}")
    for r in rows:
        if "error" in r:
            print(f"{r['snapshot']:36} {r['setting']:32} {r['recorded_allocated']:>15,} {'-':>15} {'-':>7} "
                  f"{r['recorded_reserved']:>15,} {'-':>15} {'-':>7}  {r['error']}")
            continue
        print(f"{r['snapshot']:36} {r['setting']:32} {r['recorded_allocated']:>15,} {r['predicted_allocated']:>15,} "
              f"{r['allocated_error_pct']:>7.3f} {r['recorded_reserved']:>15,} {r['predicted_reserved']:>15,} "
              f"{r['reserved_error_pct']:>7.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cs336-systems", help="directory with memory_files/*.pickle of cs336-a2-systems")
    parser.add_argument("--cs336-basics", required=True, help="checkout of cs336-assignment1 (cs336_basics/)")
    parser.add_argument("--gpu", default="h100", help="the GPU the snapshots were recorded on (default h100: "
                        "their cuBLAS workspace is 32 MiB, sm90's)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--only", help="only the snapshots whose name contains this")
    parser.add_argument("--precision", choices=["fp32", "bf16"], help="only the pairs of this precision")
    parser.add_argument("--keep", help="directory to write the predicted snapshots to (same names)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if not args.cs336_systems:
        parser.error("--cs336-systems is required")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    rows = run_pairs(args)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        print_table(rows)


if __name__ == "__main__":
    main()
