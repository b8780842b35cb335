#!/usr/bin/env python3
"""Serves a small torch.nn.TransformerEncoder on requests of varying length,
one marked iteration per batch, as an NLP server would:

    memplan run --stats -- /usr/bin/python3 examples/serve_transformer.py
    memplan run --stats -- /usr/bin/python3 examples/serve_transformer.py --batching
    memplan run --stats -- /usr/bin/python3 examples/serve_transformer.py --keyed --threads 2

Two request streams, both drawn from --seed (so every run of the same
arguments sees the same batches, whatever the allocator):

  * default: each pass is a batch of B sequences of L tokens, B uniform in
    1..--max-batch, L log-normal with median --median-tokens (ln L ~
    Normal(ln median, --sigma^2)), rounded and clipped to 8..512 tokens. With
    the defaults (median 64, sigma 0.9) about 13% of the batches are shorter
    than 24 tokens and 6% longer than 256: a long tail, as sentence and
    prompt lengths have.
  * --batching (a dynamic-batching loop): requests of that same length
    distribution arrive as a Poisson process, --arrival-rate requests per
    pass on average; each pass serves everything waiting (at most
    --max-batch; the server waits for one request when none is), padded to
    its longest request, with a key padding mask for the padding. The queue is
    simulated, not timed, so the batches do not depend on the speed of the
    run.

The model: token embedding (vocabulary 1000) and a --layers encoder of
d_model --d-model, 4 heads, feed-forward 4 x d_model, batch-first, built with
torch.manual_seed(--seed), in eval mode under torch.inference_mode() (torch
1.13 takes its fused "fast path" there, and with a padding mask converts the
batch to a nested tensor).

memplan: every pass is one iteration, marked before it (memplan_mark(), or
with --keyed memplan_mark_key(k)) and once after the last. The key is the
batch size B by default (--key-by batch: passes of one batch size make the
same requests at other lengths, so they share one upper-bound plan per B,
sized by the longest length seen), or B << 16 | L with --key-by shape (one
plan per exact shape; with lengths drawn from 8..512 such keys seldom
repeat). The first --warmup passes are untimed. The last line is a
JSON summary (examples/marks.py) with the SHA-256 of every pass's output
bytes in order, latency per timed pass (median, p99), minor faults per timed
pass, peak RSS, and the requests memplan served during the timed passes;
bench/e2e_dynamic.py reads it. --save-output writes the outputs of all
passes (raw float32, in order) for a bit-for-bit comparison of two runs.
"""
import argparse
import json
import math
import random
import sys
import warnings

from marks import Meter, bytes_hash

MIN_TOKENS, MAX_TOKENS = 8, 512


def draw_length(rng, median, sigma):
    """One request length in tokens: log-normal, rounded, clipped to 8..512."""
    return min(MAX_TOKENS, max(MIN_TOKENS, round(rng.lognormvariate(math.log(median), sigma))))


def draw_poisson(rng, mean):
    """A Poisson variate by counting exponential gaps (mean is small here)."""
    count, elapsed = 0, rng.expovariate(1.0)
    while elapsed < mean:
        count += 1
        elapsed += rng.expovariate(1.0)
    return count


def shape_stream(args):
    """The passes' (lengths of the requests in the batch) lists, from --seed."""
    rng = random.Random(args.seed)
    passes = args.warmup + args.passes
    if not args.batching:
        for _ in range(passes):
            batch = rng.randint(1, args.max_batch)
            yield [draw_length(rng, args.median_tokens, args.sigma)] * batch
        return
    waiting = []
    for _ in range(passes):
        waiting += [draw_length(rng, args.median_tokens, args.sigma)
                    for _ in range(draw_poisson(rng, args.arrival_rate))]
        if not waiting:  # idle: the server takes the next request when it arrives
            waiting.append(draw_length(rng, args.median_tokens, args.sigma))
        batch, waiting = waiting[:args.max_batch], waiting[args.max_batch:]
        yield batch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batching", action="store_true",
                        help="dynamic batching: Poisson arrivals, each pass serves what is waiting, padded")
    parser.add_argument("--passes", type=int, default=40, help="timed passes (default 40)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed passes first (default 10)")
    parser.add_argument("--max-batch", type=int, default=8, help="largest batch (default 8)")
    parser.add_argument("--median-tokens", type=float, default=64.0,
                        help="median request length in tokens (default 64)")
    parser.add_argument("--sigma", type=float, default=0.9,
                        help="standard deviation of the log of the length (default 0.9)")
    parser.add_argument("--arrival-rate", type=float, default=3.0,
                        help="with --batching: mean requests arriving per pass (default 3)")
    parser.add_argument("--d-model", type=int, default=64, help="model width (default 64)")
    parser.add_argument("--layers", type=int, default=2, help="encoder layers (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the requests (default 0)")
    parser.add_argument("--keyed", action="store_true",
                        help="mark each pass with memplan_mark_key(k), k from --key-by")
    parser.add_argument("--key-by", choices=["batch", "shape"], default="batch",
                        help="with --keyed: k = the batch size (default), or batch << 16 | padded length")
    parser.add_argument("--save-output", metavar="PATH", help="write every pass's output (raw float32) to PATH")
    parser.add_argument("--quiet", action="store_true", help="print only the summary lines")
    args = parser.parse_args()
    if (args.passes < 1 or args.warmup < 0 or args.max_batch < 1 or args.threads < 1 or args.layers < 1
            or args.d_model < 4 or args.d_model % 4 or args.median_tokens <= 0 or args.sigma < 0
            or args.arrival_rate <= 0):
        parser.error("--passes, --max-batch, --threads, --layers, --median-tokens and --arrival-rate must be "
                     "positive, --d-model a positive multiple of 4 (4 heads), --warmup and --sigma not negative")

    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    vocabulary = 1000
    embedding = torch.nn.Embedding(vocabulary, args.d_model)
    layer = torch.nn.TransformerEncoderLayer(args.d_model, nhead=4, dim_feedforward=4 * args.d_model,
                                             batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=args.layers).eval()
    # torch 1.13 warns once that nested tensors (its padded fast path) are a prototype.
    warnings.filterwarnings("ignore", message=".*nested tensors is in prototype.*")
    embedding.eval()

    batches = list(shape_stream(args))
    tokens_gen = torch.Generator().manual_seed(args.seed + 1)
    inputs = []
    for lengths in batches:
        longest = max(lengths)
        ids = torch.randint(0, vocabulary, (len(lengths), longest), generator=tokens_gen)
        mask = None
        if args.batching:
            mask = torch.arange(longest)[None, :] >= torch.tensor(lengths)[:, None]  # True = padding
        inputs.append((ids, mask))

    meter = Meter(warmup=args.warmup)
    outputs = []
    with torch.inference_mode():
        for ids, mask in inputs:
            key = ids.shape[0] if args.key_by == "batch" else ids.shape[0] << 16 | ids.shape[1]
            meter.begin_pass(key if args.keyed else None)
            out = encoder(embedding(ids), src_key_padding_mask=mask)
            meter.end_pass()
            outputs.append(out.contiguous().numpy().tobytes())
            del out
    summary = meter.finish()

    digest = bytes_hash(outputs)
    if args.save_output:
        with open(args.save_output, "wb") as f:
            for chunk in outputs:
                f.write(chunk)
    sizes = [len(b) for b in batches]
    real = sum(sum(b) for b in batches)
    padded = sum(len(b) * max(b) for b in batches)
    shapes = len({(len(b), max(b)) for b in batches})
    print(f"{'dynamic batching' if args.batching else 'random batches'}: {len(batches)} passes, {shapes} distinct "
          f"shapes, mean batch {sum(sizes) / len(sizes):.2f}, {100 * (1 - real / padded):.1f}% padding; median "
          f"{summary['median_ms']:.2f} ms, p99 {summary['p99_ms']:.2f} ms per pass")
    print(json.dumps({"workload": "batching" if args.batching else "random", "threads": args.threads,
                      "distinct_shapes": shapes, "output_sha256": digest, **summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
