#!/usr/bin/env python3
"""Serves a torchvision model whose input shape rotates among several batch
sizes and resolutions, one marked iteration per pass, as a server would see
requests of different sizes:

    memplan run --stats -- /usr/bin/python3 examples/infer_rotating_shapes.py resnet18 \\
        --shapes 1x64,2x64,1x80,3x64,2x80,4x64 --rounds 4

Each pass runs the next shape of the list; --rounds passes over the whole
list. Every output is hashed; each shape must give the same bytes in every
round (a different hash means an allocator handed out memory still in use),
and the outputs of the last round are written, in list order, to
--save-output, so that two runs under different allocators can be compared
bit for bit (tests/torch_serving/run_matches_plain.py).

Without --keyed memplan tells the shapes apart by their request structure
and predicts the next one from the rotation (docs/runtime.md, "Variants:
predicted"). With --keyed each pass is marked with
memplan_mark_key(shape index + 1) instead, so that memplan keeps one plan per
shape without predicting (docs/runtime.md, "Keyed plans"). Like examples/infer_torchvision.py, memplan_mark() (when memplan is loaded)
is called before each pass and after the last one, and the last line is a
JSON summary (examples/marks.py): the output hash, latency per timed pass
(median and p99), minor faults per timed pass, peak RSS, and the requests
memplan served from slabs during the timed passes. The first --warmup-rounds
rounds are untimed (memplan learns during them); bench/e2e_dynamic.py runs
this script for its rotating-shapes rows.
"""
import argparse
import hashlib
import json
import sys

from marks import Meter, bytes_hash


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        batch, size = item.lower().split("x")
        shapes.append((int(batch), int(size)))
    if not shapes or any(b < 1 or s < 1 for b, s in shapes):
        raise ValueError(text)
    return shapes


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a torchvision.models constructor name, e.g. resnet18")
    parser.add_argument("--shapes", default="1x64,2x64,1x80,3x64,2x80,4x64",
                        help="comma-separated BATCHxSIZE input shapes, run in turn (default: six shapes)")
    parser.add_argument("--rounds", type=int, default=4, help="passes over the whole list (default 4)")
    parser.add_argument("--warmup-rounds", type=int, default=0,
                        help="untimed passes over the whole list before --rounds (default 0)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the inputs (default 0)")
    parser.add_argument("--keyed", action="store_true",
                        help="name each pass's shape with memplan_mark_key (its index in --shapes + 1), so that "
                             "memplan keeps a plan per shape")
    parser.add_argument("--save-output", metavar="PATH", help="write the last round's outputs (raw float32) to PATH")
    parser.add_argument("--quiet", action="store_true", help="print only the summary lines")
    args = parser.parse_args()
    try:
        shapes = parse_shapes(args.shapes)
    except ValueError:
        parser.error("--shapes: expected BATCHxSIZE[,BATCHxSIZE...], e.g. 1x64,2x80")
    if args.rounds < 1 or args.threads < 1 or args.warmup_rounds < 0:
        parser.error("--rounds and --threads must be positive, --warmup-rounds not negative")

    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = getattr(torchvision.models, args.model)(weights=None).eval()
    inputs = [torch.randn(b, 3, s, s) for b, s in shapes]
    meter = Meter(warmup=args.warmup_rounds * len(shapes))

    hashes = [set() for _ in shapes]
    last = [None] * len(shapes)
    with torch.inference_mode():
        for r in range(args.warmup_rounds + args.rounds):
            for k, x in enumerate(inputs):
                meter.begin_pass(k + 1 if args.keyed else None)
                out = model(x)
                meter.end_pass()
                data = out.contiguous().numpy().tobytes()
                hashes[k].add(hashlib.sha256(data).hexdigest())
                last[k] = data
    summary = meter.finish()  # closes the last iteration

    digest = bytes_hash(last)
    if args.save_output:
        with open(args.save_output, "wb") as f:
            f.write(b"".join(last))
    agree = all(len(h) == 1 for h in hashes)
    if not args.quiet:
        for (b, s), h in zip(shapes, hashes):
            print(f"shape {b}x3x{s}x{s}: {'the same' if len(h) == 1 else 'DIFFERENT'} output in all rounds")
    print(f"{args.model} over {len(shapes)} shapes x {args.rounds} rounds: median {summary['median_ms']:.2f} ms, "
          f"p99 {summary['p99_ms']:.2f} ms")
    print(json.dumps({"model": args.model, "shapes": args.shapes, "rounds": args.rounds, "threads": args.threads,
                      "output_sha256": digest, "passes_agree": agree, **summary}))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
