#!/usr/bin/env python3
"""Serves a torchvision model's forward pass, one marked iteration per pass, and
reports each pass's latency and a hash of the output, so that allocators can be
compared on speed and on results:

    memplan run -- /usr/bin/python3 examples/infer_torchvision.py resnet18
    memplan run --stats -- /usr/bin/python3 examples/infer_torchvision.py resnet50 --batch 4 --threads 2
    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 \\
        /usr/bin/python3 examples/infer_torchvision.py resnet18

Everything that decides the output is fixed: the weights come from
torch.manual_seed (weights=None, nothing is downloaded), the input from the
same seed, and the number of torch threads is set explicitly (Debian's torch
defaults to 1; the reduction order, and so the last bits of the output, depend
on it). Two runs with the same arguments must therefore print the same output
hash under any allocator; a different hash means an allocator handed out
memory that was still in use.

Every pass, warm-up included, is one iteration for memplan: memplan_mark() is
called before each pass and after the last one, so that `memplan run` learns
the iteration during the warm-up (profile, plan) and serves the timed passes
from its slab. Without memplan the marks do nothing.

The last line is a JSON summary (latencies, minor page faults per timed pass
from getrusage, peak RSS, output hash) for bench/e2e_torchvision.py.
"""
import argparse
import ctypes
import hashlib
import json
import resource
import sys
import time


def find_mark():
    """memplan_mark from the preloaded memplan library (replay or tracer), or a no-op."""
    try:
        return ctypes.CDLL(None).memplan_mark
    except AttributeError:
        return lambda: None


def as_tensor(output):
    """The tensor of a model's output (segmentation and detection models return dicts)."""
    import torch
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, dict):
        return output["out"] if "out" in output else next(iter(output.values()))
    return output[0]


def tensor_hash(tensor):
    # Hash the bytes, not the values: bit-identical is the claim, and -0.0/NaN
    # payloads must count.
    return hashlib.sha256(tensor.contiguous().numpy().tobytes()).hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a torchvision.models constructor name, e.g. resnet18")
    parser.add_argument("--batch", type=int, default=1, help="images per pass (default 1)")
    parser.add_argument("--size", type=int, default=224, help="image height and width (default 224)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--warmup", type=int, default=4,
                        help="untimed passes first (default 4: memplan profiles 2 and plans, "
                             "the first pass fills torch's caches)")
    parser.add_argument("--iterations", type=int, default=20, help="timed passes (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the input (default 0)")
    parser.add_argument("--save-output", metavar="PATH",
                        help="write the last pass's output tensor bytes (raw, native float32) to PATH")
    parser.add_argument("--quiet", action="store_true", help="print only the summary lines")
    args = parser.parse_args()
    if args.iterations < 1 or args.warmup < 0 or args.threads < 1 or args.batch < 1 or args.size < 1:
        parser.error("--iterations, --threads, --batch and --size must be positive, --warmup not negative")

    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    constructor = getattr(torchvision.models, args.model, None)
    if constructor is None:
        parser.error(f"torchvision.models has no model '{args.model}'")
    model = constructor(weights=None).eval()
    x = torch.randn(args.batch, 3, args.size, args.size)
    mark = find_mark()

    latencies_ms = []
    cpu_ms = []  # process CPU time per pass: on a shared machine it is not inflated by waiting for a core
    hashes = set()
    output = None
    faults_before = faults_after = 0
    with torch.inference_mode():
        for i in range(args.warmup + args.iterations):
            if i == args.warmup:
                faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            mark()
            start, start_cpu = time.perf_counter(), time.process_time()
            output = as_tensor(model(x))
            elapsed_ms = (time.perf_counter() - start) * 1e3
            if i >= args.warmup:
                latencies_ms.append(elapsed_ms)
                cpu_ms.append((time.process_time() - start_cpu) * 1e3)
                if not args.quiet:
                    print(f"pass {i - args.warmup + 1}: {elapsed_ms:.2f} ms", flush=True)
            # Hashing is outside the timed region, and between passes a
            # replayed slab block of the output may be reused by the next pass,
            # so each pass's output is hashed before it is dropped.
            hashes.add(tensor_hash(output))
        mark()  # closes the last iteration
        faults_after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    digest = tensor_hash(output)
    if args.save_output:
        with open(args.save_output, "wb") as f:
            f.write(output.contiguous().numpy().tobytes())
    ordered = sorted(latencies_ms)
    median = ordered[len(ordered) // 2] if len(ordered) % 2 else (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
    faults_per_pass = (faults_after - faults_before) / args.iterations
    peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    served = None
    try:
        served = int(ctypes.CDLL(None).memplan_replay_served())
    except AttributeError:
        pass
    print(f"{args.model} batch {args.batch} size {args.size} threads {args.threads}: "
          f"median {median:.2f} ms, best {ordered[0]:.2f} ms over {args.iterations} passes, "
          f"{faults_per_pass:.1f} minor faults per pass, peak RSS {peak_rss_kib / 1024:.1f} MiB")
    print(f"output sha256 {digest} ({'the same' if len(hashes) == 1 else 'DIFFERENT'} in all "
          f"{args.warmup + args.iterations} passes)")
    print(json.dumps({
        "model": args.model, "batch": args.batch, "size": args.size, "threads": args.threads,
        "latencies_ms": latencies_ms, "median_ms": median, "cpu_ms": cpu_ms, "minor_faults_per_pass": faults_per_pass,
        "peak_rss_kib": peak_rss_kib, "output_sha256": digest, "passes_agree": len(hashes) == 1,
        "memplan_served": served,
    }))
    # Passes of one run that disagree are a wrong result, whatever the allocator.
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
