"""What the example loops share: memplan's marks, looked up in the running
process (a no-op without memplan), and the measurements every loop reports in
its last line, a JSON summary that bench/e2e_common.py reads.

Not a program: examples/infer_rotating_shapes.py, serve_transformer.py and
train_loop.py import it (Python finds it beside them).

A loop calls `meter.begin_pass(key)` before each pass (it marks the
iteration boundary and starts the clock), `meter.end_pass()` after it, and
`meter.finish()` after the last one (the closing mark). The first `warmup`
passes are untimed; when the first timed pass begins, the meter notes minor
page faults and memplan's request counters, so that faults per pass and the
fraction of requests served from slabs are those of the timed passes alone.
Every pass, warm-up included, also gets its own counts (`memplan_per_pass`:
[served from slabs, pooled, requests] between its begin_pass and the next),
so that the served fraction can be read per iteration index.
"""
import ctypes
import hashlib
import resource
import statistics
import time

_PROCESS = ctypes.CDLL(None)


def _symbol(name, argtypes=None, restype=None):
    try:
        function = getattr(_PROCESS, name)
    except AttributeError:  # memplan is not loaded
        return None
    if argtypes is not None:
        function.argtypes = argtypes
    if restype is not None:
        function.restype = restype
    return function


_MARK = _symbol("memplan_mark")
_MARK_KEY = _symbol("memplan_mark_key", [ctypes.c_uint64])
_SERVED = _symbol("memplan_replay_served", [], ctypes.c_ulonglong)
_REQUESTS = _symbol("memplan_replay_requests", [], ctypes.c_ulonglong)
_POOLED = _symbol("memplan_replay_pooled", [], ctypes.c_ulonglong)


def mark(key=None):
    """An iteration boundary: memplan_mark_key(key) when a key is given and
    the loaded memplan has it, else memplan_mark(); nothing without memplan."""
    if key is not None and _MARK_KEY is not None:
        _MARK_KEY(key)
    elif _MARK is not None:
        _MARK()


def counters():
    """(requests served from slabs, requests served from the small-request
    pools, requests seen) by memplan's drop-in so far; each is None when the
    loaded library lacks it (the tracer has none)."""
    def read(function):
        return int(function()) if function is not None else None
    return read(_SERVED), read(_POOLED), read(_REQUESTS)


def counter_fields(start, end):
    """The summary fields of two counters() readings: the served count at
    the end, and what was served, pooled and requested in between."""
    fields = {"memplan_served": end[0], "memplan_pooled": end[1]}
    for k, name in enumerate(("served", "pooled", "requests")):
        fields[f"memplan_{name}_after_warmup"] = (end[k] - start[k] if end[k] is not None and start[k] is not None
                                                  else None)
    return fields


def percentile(values, q):
    """The q-th percentile (0..100) by the nearest-rank rule: a value that was
    measured, never an interpolation."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n q / 100)
    return ordered[int(rank) - 1]


class Meter:
    """Times the passes of a loop and counts what happened during the timed ones."""

    def __init__(self, warmup):
        self.warmup = warmup
        self.passes = 0
        self.latencies_ms = []
        self.cpu_ms = []
        self._faults_start = None
        self._counters_start = (None, None, None)
        self._pass_counters = None
        self.per_pass = []
        self._start = self._start_cpu = 0.0

    def _count_pass(self, now):
        if self._pass_counters is not None and None not in now and None not in self._pass_counters:
            self.per_pass.append([now[k] - self._pass_counters[k] for k in range(3)])
        self._pass_counters = now

    def begin_pass(self, key=None):
        now = counters()
        self._count_pass(now)
        if self.passes == self.warmup:
            self._faults_start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            self._counters_start = now
        mark(key)
        self._start, self._start_cpu = time.perf_counter(), time.process_time()

    def end_pass(self):
        elapsed_ms = (time.perf_counter() - self._start) * 1e3
        if self.passes >= self.warmup:
            self.latencies_ms.append(elapsed_ms)
            self.cpu_ms.append((time.process_time() - self._start_cpu) * 1e3)
        self.passes += 1
        return elapsed_ms

    def finish(self):
        """Closes the last iteration and returns the summary fields."""
        mark()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        end = counters()
        self._count_pass(end)
        timed = len(self.latencies_ms)
        summary = {
            "latencies_ms": self.latencies_ms,
            "cpu_ms": self.cpu_ms,
            "median_ms": statistics.median(self.latencies_ms) if timed else None,
            "p99_ms": percentile(self.latencies_ms, 99),
            "minor_faults_per_pass": ((faults - self._faults_start) / timed
                                      if timed and self._faults_start is not None else None),
            "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # KiB on Linux
        }
        summary.update(counter_fields(self._counters_start, end))
        if self.per_pass:
            summary["memplan_per_pass"] = self.per_pass
        return summary


def bytes_hash(chunks):
    """SHA-256 of byte strings in order: bit-identical is the claim, so the
    bytes are hashed, not the values (-0.0 and NaN payloads count)."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()
