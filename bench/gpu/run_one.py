"""run_one.py — one measured run: workloads under one allocator, in this
process (an allocator is chosen once per process, before CUDA starts), each
written to its own JSON file. Started by gpu_check.py, one process per
(workload, allocator) on the GPU; the dry run puts its tiny workloads in one
CPU process.

  python3 run_one.py --allocator NAME --device cuda|cpu [--tiny] \
      --workload W --out W.json [--snapshot W.pickle] [--lib libmemplan_cuda_alloc.so] ...

What a run records (docs/gpu.md has the columns):
  peak_reserved_bytes   the driver's view: the largest fall of cudaMemGetInfo's
                        free bytes below its value before the workload was
                        built, read inside every step after the forward pass,
                        the backward pass and the optimizer step;
  peak_allocated_bytes  torch.cuda.max_memory_allocated() where the allocator
                        keeps PyTorch's statistics; under CUDAPluggableAllocator
                        memplan's own (memplan_cuda_memory_stats);
  step_ms               every step's time (the host waits for the GPU at the
                        end of each step); the first step is left out of the
                        median and p99 (start-up: kernels loaded, handles made);
  values                each step's loss as float.hex, or a digest of each
                        request's output bytes, for the bit-for-bit comparison.
The environment (PYTORCH_CUDA_ALLOC_CONF, CUBLAS_WORKSPACE_CONFIG) is set by
the caller before this process starts.
"""

import argparse
import ctypes
import gc
import json
import os
import pickle
import platform
import statistics
import sys
import time
import traceback
import warnings

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, before torch starts CUDA

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workloads import WORKLOADS, Unsupported, Workload, digest  # noqa: E402

ALLOCATORS = ("default", "expandable", "async", "memplan_pluggable", "memplan_mempool")
SNAPSHOT_STEPS = 2  # steps recorded into the snapshot, after the timed ones
BENCHMARK_STEPS = 2  # steps run with cudnn.benchmark=True, after the timed ones


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def summarize_times(step_ms):
    timed = step_ms[1:] if len(step_ms) > 1 else step_ms
    return {"step_ms_median": statistics.median(timed), "step_ms_p99": percentile(timed, 99), "timed_steps": len(timed)}


class Driver:
    """cudaMemGetInfo around a workload: the largest fall of free bytes below
    the baseline taken before the workload was built."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.device = device
        self.baseline_free = self.free() if self.cuda else None
        self.peak = 0

    def free(self):
        return torch.cuda.mem_get_info(self.device)[0]

    def probe(self, phase=None):
        if self.cuda:
            self.peak = max(self.peak, self.baseline_free - self.free())

    def held(self):
        return self.baseline_free - self.free() if self.cuda else None


MEMPLAN_STATS_FIELDS = ("allocated_bytes", "peak_allocated_bytes", "reserved_bytes", "peak_reserved_bytes", "requests",
                        "served")


class MemplanStats(ctypes.Structure):
    """memplan_cuda_memory_stats's six counters (DeviceMemoryStats)."""
    _fields_ = [(name, ctypes.c_uint64) for name in MEMPLAN_STATS_FIELDS]


class Memplan:
    """libmemplan_cuda_alloc.so: the allocator object PyTorch loads, the
    library's marks and its own memory statistics (ctypes loads the same copy
    as PyTorch's dlopen)."""

    def __init__(self, lib):
        if not lib or not os.path.exists(lib):
            raise Unsupported(f"libmemplan_cuda_alloc.so not found at {lib!r} (did the build fail?)")
        self.path = os.path.abspath(lib)
        self.allocator = torch.cuda.memory.CUDAPluggableAllocator(self.path, "memplan_cuda_malloc", "memplan_cuda_free")
        self.lib = ctypes.CDLL(self.path)

    def mark(self):
        self.lib.memplan_cuda_mark()

    def memory_stats(self):
        """The library's statistics as a dict, or None (a library without
        them, or an allocator that did not start)."""
        get = getattr(self.lib, "memplan_cuda_memory_stats", None)
        if get is None:
            return None
        get.restype, get.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]
        stats = MemplanStats()
        if get(ctypes.byref(stats), ctypes.sizeof(stats)) != 0:
            return None
        return {name: getattr(stats, name) for name in MEMPLAN_STATS_FIELDS}

    def reset_peaks(self):
        reset = getattr(self.lib, "memplan_cuda_reset_peak_memory_stats", None)
        if reset is not None:
            reset()


def set_up_allocator(name, lib, device):
    """Chooses the allocator before CUDA starts. Returns (memplan or None,
    context manager for the workload, a note for the row)."""
    import contextlib
    if device.type != "cuda":
        return None, contextlib.nullcontext(), "cpu: no CUDA allocator"
    if name in ("default", "expandable", "async"):
        return None, contextlib.nullcontext(), os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if name == "memplan_pluggable":
        memplan = Memplan(lib)
        torch.cuda.memory.change_current_allocator(memplan.allocator)
        return memplan, contextlib.nullcontext(), "CUDAPluggableAllocator"
    if name == "memplan_mempool":
        if not (hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool")):
            raise Unsupported(f"torch.cuda.MemPool needs PyTorch >= 2.5 (this is {torch.__version__})")
        memplan = Memplan(lib)
        torch.cuda.init()  # the pool lives in PyTorch's caching allocator, which must exist first
        pool = torch.cuda.MemPool(memplan.allocator.allocator())
        return memplan, torch.cuda.use_mem_pool(pool), "torch.cuda.MemPool (this thread's allocations)"
    raise ValueError(f"unknown allocator {name!r}; known: {', '.join(ALLOCATORS)}")


def peak_allocated(allocator, memplan):
    """(peak allocated bytes, a note or None): PyTorch's
    max_memory_allocated(), or memplan's own where PyTorch has none."""
    if allocator == "memplan_pluggable":
        stats = memplan.memory_stats()
        if stats is None:
            return None, "CUDAPluggableAllocator keeps no PyTorch statistics, and the library gave none"
        return stats["peak_allocated_bytes"], "memplan's own statistics (memplan_cuda_memory_stats)"
    try:
        return torch.cuda.max_memory_allocated(), None
    except RuntimeError as e:
        return None, str(e).splitlines()[0]


def trim_snapshot(path, limit_bytes):
    """Halves the recorded window of a snapshot until the file fits."""
    while os.path.getsize(path) > limit_bytes:
        with open(path, "rb") as f:
            snapshot = pickle.load(f)  # written by this process just now
        traces = snapshot.get("device_traces", [])
        if not any(traces):
            return False
        snapshot["device_traces"] = [t[len(t) // 2:] if len(t) > 1 else [] for t in traces]
        with open(path, "wb") as f:
            pickle.dump(snapshot, f)
    return True


def run_workload(args, name, device, memplan, context):
    row = {"workload": name, "allocator": args.allocator, "run": args.run, "device": str(device)}
    driver = Driver(device)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        try:
            torch.cuda.reset_peak_memory_stats(device)
        except RuntimeError:
            pass  # the pluggable allocator has no statistics to reset
        if memplan is not None:
            memplan.reset_peaks()
    caught = []
    with warnings.catch_warnings(record=True) as caught, context:
        warnings.simplefilter("always")
        work = Workload(name, device, tiny=args.tiny, seed=args.seed, probe=driver.probe)
        row["model"], row["kind"] = work.model_name, work.kind
        if memplan is not None:
            memplan.mark()  # the set-up (weights, inputs' generator) is a span of its own, not the first step's
        step_ms, values = [], []
        for i in range(work.steps):
            start = time.perf_counter()
            out = work.step(i)
            if memplan is not None:
                memplan.mark()  # inside the step's time: a boundary may plan
            if cuda:
                torch.cuda.synchronize()
            step_ms.append((time.perf_counter() - start) * 1e3)
            driver.probe()
            values.append(digest(out) if work.kind == "infer" else float(out).hex())
            del out
        row.update(steps=work.steps, step_ms=step_ms, values=values, **summarize_times(step_ms))
        row["peak_reserved_bytes"] = driver.peak if cuda else None
        row["peak_allocated_bytes"], why = peak_allocated(args.allocator, memplan) if cuda else (None, None)
        if why:
            row["peak_allocated_note"] = why
        if memplan is not None:
            row["memplan_memory"] = memplan.memory_stats()
        if args.snapshot and cuda:
            row["snapshot"] = record_snapshot(args, work, memplan)
        if name == "resnet50_train":
            row["cudnn_benchmark"] = benchmark_check(work, memplan, cuda)
        work.release()
        del work
    gc.collect()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    row["held_at_end_bytes"] = driver.held()
    if memplan is not None:
        # Every tensor of the workload is gone: what memplan still counts as
        # allocated is a leak (or a block PyTorch keeps, as the MemPool's).
        row["memplan_memory_at_end"] = memplan.memory_stats()
    notes = sorted({str(w.message).splitlines()[0] for w in caught if "determinis" in str(w.message)})
    if notes:
        row["nondeterminism_warnings"] = notes[:5]
    row["status"] = "ok"
    return row


def record_snapshot(args, work, memplan):
    """Runs SNAPSHOT_STEPS more steps with the allocator's history recorded
    and dumps PyTorch's snapshot (the dump-time segments and those steps'
    events). Not timed, not compared."""
    memory = torch.cuda.memory
    if not hasattr(memory, "_record_memory_history") or not hasattr(memory, "_dump_snapshot"):
        return {"status": "not recorded: this PyTorch has no _record_memory_history"}
    try:
        memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=args.max_entries)
    except TypeError:
        memory._record_memory_history(True, max_entries=args.max_entries)
    for i in range(SNAPSHOT_STEPS):
        work.step(work.steps + i)
        if memplan is not None:
            memplan.mark()
    torch.cuda.synchronize()
    memory._dump_snapshot(args.snapshot)
    memory._record_memory_history(enabled=None)
    fits = trim_snapshot(args.snapshot, args.snapshot_limit_bytes)
    return {"status": "recorded" if fits else "too large even with no events", "path": os.path.basename(args.snapshot),
            "bytes": os.path.getsize(args.snapshot), "steps": SNAPSHOT_STEPS, "max_entries": args.max_entries}


def benchmark_check(work, memplan, cuda):
    """cudnn.benchmark=True for BENCHMARK_STEPS more steps: 'ok' or the error."""
    if not cuda:
        return "not checked: cpu"
    saved = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        for i in range(BENCHMARK_STEPS):
            work.step(work.steps + SNAPSHOT_STEPS + i)
            if memplan is not None:
                memplan.mark()
        torch.cuda.synchronize()
        return "ok"
    except Exception as e:  # the error is the result
        return f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        torch.backends.cudnn.benchmark = saved


def environment(device):
    env = {"python": platform.python_version(), "torch": torch.__version__}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(gpu=props.name, gpu_memory_bytes=props.total_memory, cuda=torch.version.cuda)
        if hasattr(torch.cuda, "get_allocator_backend"):
            env["allocator_backend"] = torch.cuda.get_allocator_backend()
    try:
        import transformers
        env["transformers"] = transformers.__version__
    except ImportError:
        env["transformers"] = None
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--allocator", required=True, choices=ALLOCATORS)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="the dry run's sizes")
    parser.add_argument("--workload", action="append", required=True, choices=tuple(WORKLOADS),
                        help="a workload to run (repeatable; each writes its own --out)")
    parser.add_argument("--out", action="append", required=True, help="the JSON file of each --workload, in order")
    parser.add_argument("--run", default="main", help="the run's label (main, repeat)")
    parser.add_argument("--snapshot", help="dump the allocator's snapshot here (one workload only)")
    parser.add_argument("--snapshot-limit-bytes", type=int, default=15 << 20)
    parser.add_argument("--max-entries", type=int, default=8000, help="events kept in the snapshot's window")
    parser.add_argument("--lib", help="libmemplan_cuda_alloc.so, for the memplan allocators")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if len(args.out) != len(args.workload):
        parser.error("give one --out per --workload")
    if args.device == "cuda" and len(args.workload) != 1:
        parser.error("one workload per process on the GPU: an allocator's state would carry over")
    if args.snapshot and len(args.workload) != 1:
        parser.error("--snapshot records one workload")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch.cuda.is_available() is False")

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    failed = False
    for name, out in zip(args.workload, args.out):
        try:
            memplan, context, note = set_up_allocator(args.allocator, args.lib, device)
            row = run_workload(args, name, device, memplan, context)
            row["allocator_note"] = note
            row["environment"] = environment(device)
        except Unsupported as e:
            row = {"workload": name, "allocator": args.allocator, "run": args.run, "status": "skipped",
                   "reason": str(e)}
        except Exception as e:  # a failed run is a row of the table, with its reason
            traceback.print_exc()
            failed = True
            row = {"workload": name, "allocator": args.allocator, "run": args.run, "status": "failed",
                   "reason": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
        with open(out + ".tmp", "w") as f:
            json.dump(row, f, indent=1)
        os.replace(out + ".tmp", out)
        print(f"run_one: {name} under {args.allocator}: {row['status']}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
