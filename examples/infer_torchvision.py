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

The last line is a JSON summary (examples/marks.py: latencies, minor page
faults per timed pass from getrusage, peak RSS, requests memplan served
during the timed passes, output hash) for bench/e2e_torchvision.py and the
fixed-shape row of bench/e2e_dynamic.py.
"""
import argparse
import hashlib
import json
import sys

from marks import Meter


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
    meter = Meter(warmup=args.warmup)

    hashes = set()
    output = None
    with torch.inference_mode():
        for i in range(args.warmup + args.iterations):
            meter.begin_pass()
            output = as_tensor(model(x))
            elapsed_ms = meter.end_pass()
            if i >= args.warmup and not args.quiet:
                print(f"pass {i - args.warmup + 1}: {elapsed_ms:.2f} ms", flush=True)
            # Hashing is outside the timed region, and between passes a
            # replayed slab block of the output may be reused by the next pass,
            # so each pass's output is hashed before it is dropped.
            hashes.add(tensor_hash(output))
    summary = meter.finish()  # closes the last iteration

    digest = tensor_hash(output)
    if args.save_output:
        with open(args.save_output, "wb") as f:
            f.write(output.contiguous().numpy().tobytes())
    print(f"{args.model} batch {args.batch} size {args.size} threads {args.threads}: "
          f"median {summary['median_ms']:.2f} ms, best {min(summary['latencies_ms']):.2f} ms over {args.iterations} "
          f"passes, {summary['minor_faults_per_pass']:.1f} minor faults per pass, "
          f"peak RSS {summary['peak_rss_kib'] / 1024:.1f} MiB")
    print(f"output sha256 {digest} ({'the same' if len(hashes) == 1 else 'DIFFERENT'} in all "
          f"{args.warmup + args.iterations} passes)")
    print(json.dumps({
        "model": args.model, "batch": args.batch, "size": args.size, "threads": args.threads,
        "output_sha256": digest, "passes_agree": len(hashes) == 1, **summary,
    }))
    # Passes of one run that disagree are a wrong result, whatever the allocator.
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
