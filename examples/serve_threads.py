#!/usr/bin/env python3
"""Serves a torchvision model from several Python threads at once, as a web
server's workers share one model: each worker answers requests of its own,
one marked iteration per request:

    memplan run --stats -- /usr/bin/python3 examples/serve_threads.py resnet18 --workers 2
    memplan run --stats -- /usr/bin/python3 examples/serve_threads.py resnet18 --marks process

Each worker has its own input (batch --batch, worker w at --size + 16 w px,
so that the workers' requests differ) and runs --warmup untimed and
--requests timed requests. torch releases the GIL inside its operators, so
the workers' requests interleave in time; --intra-threads sets torch's own
threads per operator (default 1, so that the concurrency is the workers').

Marks (--marks): `thread` (default) calls memplan_mark_thread() before each
request — a boundary for the calling worker only (docs/runtime.md, "How it
works"); `process` calls memplan_mark(), a boundary for every thread, which
falls in the middle of the other workers' requests; `none` marks nothing.
Without memplan loaded the marks do nothing. --keyed names each worker's
variant (memplan_mark_thread_key(worker + 1)).

Outputs: every request's output bytes are hashed; a worker whose requests
disagree exits 1 (an allocator handed out memory still in use). The last
line is a JSON summary for bench/e2e_dynamic.py: latencies of every timed
request of every worker, per-request CPU time of its thread, minor faults per
timed request (whole process), peak RSS, the SHA-256 of the workers' last
outputs in worker order, and memplan's served counters over the timed part.
"""
import argparse
import ctypes
import hashlib
import json
import os
import resource
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marks import counter_fields, counters, percentile  # noqa: E402  (beside this file)

_PROCESS = ctypes.CDLL(None)


def find(name, argtypes=None):
    try:
        function = getattr(_PROCESS, name)
    except AttributeError:
        return None
    if argtypes is not None:
        function.argtypes = argtypes
    return function


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", default="resnet18", help="a torchvision.models name (default resnet18)")
    parser.add_argument("--workers", type=int, default=2, help="Python threads serving requests (default 2)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per worker (default 20)")
    parser.add_argument("--warmup", type=int, default=6, help="untimed requests per worker first (default 6)")
    parser.add_argument("--batch", type=int, default=1, help="images per request (default 1)")
    parser.add_argument("--size", type=int, default=64, help="worker 0's image size; worker w gets size + 16 w")
    parser.add_argument("--intra-threads", "--threads", dest="intra_threads", type=int, default=1,
                        help="torch threads per operator (default 1)")
    parser.add_argument("--marks", choices=["thread", "process", "none"], default="thread",
                        help="which boundary each request marks (default thread)")
    parser.add_argument("--keyed", action="store_true", help="name each worker's variant (thread marks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-output", metavar="PATH",
                        help="write the workers' last output tensors' bytes (raw float32, worker order) to PATH")
    parser.add_argument("--quiet", action="store_true", help="print only the summary lines")
    args = parser.parse_args()
    if min(args.workers, args.requests, args.batch, args.size, args.intra_threads) < 1 or args.warmup < 0:
        parser.error("--workers, --requests, --batch, --size and --threads must be positive, --warmup not negative")

    import torch
    import torchvision

    torch.set_num_threads(args.intra_threads)
    torch.manual_seed(args.seed)
    constructor = getattr(torchvision.models, args.model, None)
    if constructor is None:
        parser.error(f"torchvision.models has no model '{args.model}'")
    model = constructor(weights=None).eval()
    inputs = [torch.randn(args.batch, 3, args.size + 16 * w, args.size + 16 * w) for w in range(args.workers)]

    mark_thread = find("memplan_mark_thread")
    mark_thread_key = find("memplan_mark_thread_key", [ctypes.c_uint64])
    mark_process = find("memplan_mark")

    def mark(worker):
        if args.marks == "thread":
            if args.keyed and mark_thread_key is not None:
                mark_thread_key(worker + 1)
            elif mark_thread is not None:
                mark_thread()
        elif args.marks == "process" and mark_process is not None:
            mark_process()

    warm = threading.Barrier(args.workers + 1)
    timed = threading.Barrier(args.workers + 1)
    latencies = [[] for _ in range(args.workers)]
    cpu = [[] for _ in range(args.workers)]
    hashes = [set() for _ in range(args.workers)]
    last = [None] * args.workers
    failures = []

    def worker(w):
        try:
            with torch.inference_mode():
                for i in range(args.warmup + args.requests):
                    if i == args.warmup:
                        warm.wait()   # every worker is warm: the main thread reads the counters
                        timed.wait()
                    mark(w)
                    start, start_cpu = time.perf_counter(), time.thread_time()
                    out = model(inputs[w])
                    if i >= args.warmup:
                        latencies[w].append((time.perf_counter() - start) * 1e3)
                        cpu[w].append((time.thread_time() - start_cpu) * 1e3)
                    data = out.contiguous().numpy().tobytes()
                    hashes[w].add(hashlib.sha256(data).hexdigest())
                    last[w] = data
                mark(w)  # closes the worker's last iteration
        except Exception as error:  # reported below; the barriers must not hang
            failures.append(f"worker {w}: {error!r}")
            warm.abort()
            timed.abort()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(args.workers)]
    for t in threads:
        t.start()
    try:
        warm.wait()
        faults_start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        counters_start = counters()
        timed.wait()
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_start
    counters_end = counters()
    all_latencies = [x for per in latencies for x in per]
    all_cpu = [x for per in cpu for x in per]
    digest = hashlib.sha256(b"".join(last)).hexdigest()
    if args.save_output:
        with open(args.save_output, "wb") as f:
            f.write(b"".join(last))
    agree = all(len(h) == 1 for h in hashes)
    median = statistics.median(all_latencies)
    if not args.quiet:
        print(f"{args.model}: {args.workers} workers x {args.requests} requests, {args.marks} marks: "
              f"median {median:.2f} ms, p99 {percentile(all_latencies, 99):.2f} ms per request, "
              f"{faults / len(all_latencies):.1f} minor faults per request")
        print(f"outputs sha256 {digest} ({'the same' if agree else 'DIFFERENT'} in every request of each worker)")
    summary = {
        "workload": "workers", "workers": args.workers, "marks": args.marks,
        "latencies_ms": all_latencies, "cpu_ms": all_cpu, "median_ms": median,
        "p99_ms": percentile(all_latencies, 99), "minor_faults_per_pass": faults / len(all_latencies),
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "output_sha256": digest,
    }
    summary.update(counter_fields(counters_start, counters_end))
    print(json.dumps(summary))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
