#!/usr/bin/python3
"""Does where torch's operands live change how fast its kernels run? The
torch-level twin of bench_operand_placement (which times libblas's sgemm
alone): torch's own vectorised kernels (an add, one Adam update written as
torch.optim.Adam's in-place steps), a batch-1 linear layer (vgg16's second,
which streams its weight from memory) and oneDNN's convolution, on one thread,
with their tensors placed one factor at a time:

  fresh   each tensor in an anonymous mapping of its own (page-aligned, so
          all agree modulo 4 KiB), as a large-block allocator hands them out
  slab    one mapping, each tensor at a 64 KiB boundary plus the offsets
          named (modulo 4 KiB); "huge" slabs are advised MADV_HUGEPAGE from
          a 2 MiB boundary before they are touched

The convolution's input and weight are placed; its output comes from torch's
allocator in every variant. Variants run interleaved: each round runs every
variant once (one untimed call, then timed calls), the order rotated each
round; the table gives per workload and variant the median over rounds of ms
per call and its ratio to fresh ("fresh again" is fresh once more: its ratio
is the run's noise). Every variant's result is compared bytewise with
fresh's.

    /usr/bin/python3 bench/operand_placement_torch.py [--rounds 9] [--min-ms 60]
"""
import argparse
import ctypes
import mmap
import statistics
import time

import torch

REGION = 64 * 1024
HUGE = 2 * 1024 * 1024
FLOAT = 4


def add_workload(n):
    shapes = [(n,), (n,), (n,)]

    def run(t):
        torch.add(t[0], t[1], out=t[2])
        return t[2]
    return shapes, run


def adam_workload(n):
    # param, grad, exp_avg, exp_avg_sq, denominator: torch.optim.Adam's
    # single-tensor step with the denominator placed too.
    shapes = [(n,)] * 5

    def run(t):
        p, g, m, v, d = t
        m.mul_(0.9).add_(g, alpha=0.1)
        v.mul_(0.999).addcmul_(g, g, value=0.001)
        torch.sqrt(v, out=d)
        d.add_(1e-8)
        p.addcdiv_(m, d, value=-1e-3)
        return p
    return shapes, run


def mm_workload(m, n, k):
    shapes = [(m, k), (k, n), (m, n)]

    def run(t):
        torch.mm(t[0], t[1], out=t[2])
        return t[2]
    return shapes, run


def linear_workload(batch, features_in, features_out):
    # x, W and the output: torch's linear without bias, x @ W^T (a
    # transposed gemm; at batch 1 it streams W once).
    shapes = [(batch, features_in), (features_out, features_in), (batch, features_out)]

    def run(t):
        torch.mm(t[0], t[1].t(), out=t[2])
        return t[2]
    return shapes, run


def conv_workload(batch, channels, px):
    shapes = [(batch, channels, px, px), (channels, channels, 3, 3)]

    def run(t):
        return torch.nn.functional.conv2d(t[0], t[1], padding=1)
    return shapes, run


WORKLOADS = {
    "add 64K floats (L2)": add_workload(64 * 1024),
    "add 1M floats": add_workload(1024 * 1024),
    "adam 64K floats (L2)": adam_workload(64 * 1024),
    "adam 1M floats": adam_workload(1024 * 1024),
    "mm 512x64x256": mm_workload(512, 64, 256),
    "linear 1x4096x4096 (64 MiB weight)": linear_workload(1, 4096, 4096),
    "conv resnet 8x64x16x16": conv_workload(8, 64, 16),
    "conv vgg 1x512x8x8": conv_workload(1, 512, 8),
}

# name, fresh, huge, offset of tensor i modulo 4 KiB (as a function of i)
VARIANTS = [
    ("fresh (page-aligned)", True, False, lambda i: 0),
    ("fresh again (noise control)", True, False, lambda i: 0),
    ("slab +0 each", False, False, lambda i: 0),
    ("slab +16 each", False, False, lambda i: 16),
    ("slab +64 each", False, False, lambda i: 64),
    ("slab +64*i", False, False, lambda i: 64 * i),
    ("slab +256*i", False, False, lambda i: 256 * i),
    ("slab +1344*i mod 4K", False, False, lambda i: 1344 * i % 4096),
    ("slab +16+1024*i mod 4K", False, False, lambda i: (16 + 1024 * i) % 4096),
    ("huge slab +0 each", False, True, lambda i: 0),
    ("huge slab +1344*i mod 4K", False, True, lambda i: 1344 * i % 4096),
]


def address_of(buf):
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def place(variant, shapes, sources):
    _, fresh, huge, offset = variant
    sizes = [FLOAT * s.numel() for s in sources]
    keep, tensors = [], []
    if fresh:
        for i, size in enumerate(sizes):
            buf = mmap.mmap(-1, size + offset(i))
            keep.append(buf)
            tensors.append(torch.frombuffer(buf, dtype=torch.float32, count=size // FLOAT, offset=offset(i)))
    else:
        spans = [(size + offset(i) + REGION - 1) // REGION * REGION for i, size in enumerate(sizes)]
        buf = mmap.mmap(-1, sum(spans) + HUGE)
        keep.append(buf)
        start = (-address_of(buf)) % HUGE
        if huge:
            buf.madvise(mmap.MADV_HUGEPAGE, start, sum(spans))
        at = start
        for i, size in enumerate(sizes):
            tensors.append(torch.frombuffer(buf, dtype=torch.float32, count=size // FLOAT, offset=at + offset(i)))
            at += spans[i]
    for t, s, shape in zip(tensors, sources, shapes):
        t.copy_(s.reshape(-1))
    return keep, [t.view(shape) for t, shape in zip(tensors, shapes)]


def bench(name, shapes, run, rounds, min_ms):
    generator = torch.Generator().manual_seed(1)
    sources = [torch.rand(shape, generator=generator) + 0.5 for shape in shapes]
    placed = [place(v, shapes, sources) for v in VARIANTS]
    # In-place workloads change their tensors each call: every variant makes
    # the same calls in the same order, so results stay comparable.
    start = time.perf_counter()
    run(placed[0][1])
    once = time.perf_counter() - start
    calls = max(1, int(min_ms / 1e3 / max(once, 1e-9)))
    for v in range(1, len(VARIANTS)):  # first calls (oneDNN builds its primitives) stay out of the rounds
        run(placed[v][1])
    ms = [[] for _ in VARIANTS]
    for r in range(rounds):
        for j in range(len(VARIANTS)):
            v = (j + r) % len(VARIANTS)
            run(placed[v][1])
            start = time.perf_counter()
            for _ in range(calls):
                out = run(placed[v][1])
            ms[v].append((time.perf_counter() - start) * 1e3 / calls)
    reference = run(placed[0][1]).clone()
    base = statistics.median(ms[0])
    for v, variant in enumerate(VARIANTS):
        out = run(placed[v][1]) if v else reference
        same = torch.equal(out, reference)
        print(f"| {name} | {variant[0]} | {statistics.median(ms[v]):.3f} | {statistics.median(ms[v]) / base:.3f} "
              f"| {'yes' if same else 'NO'} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9)")
    parser.add_argument("--min-ms", type=float, default=60, help="timed calls per variant and round: about this many "
                        "ms (default 60)")
    parser.add_argument("--workload", action="append", help="run only workloads whose name starts with this "
                        "(repeatable)")
    args = parser.parse_args()
    if args.rounds < 1 or args.min_ms <= 0:
        parser.error("--rounds and --min-ms must be positive")
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, median ms per call over {args.rounds} interleaved rounds; "
          "ratio to fresh\n")
    print("| workload | tensors (offset mod 4 KiB) | ms | ratio | result identical |")
    print("|---|---|---|---|---|")
    for name, (shapes, run) in WORKLOADS.items():
        if args.workload and not any(name.startswith(w) for w in args.workload):
            continue
        bench(name, shapes, run, args.rounds, args.min_ms)


if __name__ == "__main__":
    main()
