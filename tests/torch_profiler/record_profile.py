#!/usr/bin/python3
"""Records the test data of memplan's PyTorch profiler reader.

Runs a torchvision model (random weights, no download) for a few steps under
torch.profiler with memory profiling on, marks each step with prof.step(), and
writes the chrome trace. Usage:

    /usr/bin/python3 tests/torch_profiler/record_profile.py OUT.json [MODEL] [SIZE] [STEPS]

MODEL is a torchvision.models name (default resnet18), SIZE the side of the
square input image (default 32), STEPS the number of profiled steps (default 3).

With a PyTorch built with Kineto (the PyPI wheels) the file is what
prof.export_chrome_trace() writes. Debian's torch 1.13 is built without
Kineto: its export_chrome_trace() falls back to the legacy profiler's layout,
which has neither [memory] events nor ProfilerStep spans. There this script
marks each step with record_function("ProfilerStep#N") itself (what
prof.step() does in a Kineto build) and writes the profiler's own event tree
(ops and [memory] allocation records, the same records Kineto exports) in
Kineto's chrome-trace layout.
"""
import json
import os
import sys

import torch
import torchvision


def kineto_layout(prof, path):
    """Writes the profiler's ops and allocation records as Kineto would."""
    roots = prof.profiler.kineto_results.experimental_event_tree()
    nodes = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(node.children))
    t0 = min(n.start_time_ns for n in nodes)
    pid = os.getpid()
    events = []
    for n in nodes:
        ts = round((n.start_time_ns - t0) / 1000.0, 3)
        if n.name == "[memory]":
            f = n.extra_fields
            events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                           "pid": pid, "tid": n.start_tid, "ts": ts,
                           "args": {"Total Reserved": f.total_reserved, "Total Allocated": f.total_allocated,
                                    "Bytes": f.alloc_size, "Addr": f.ptr,
                                    "Device Type": int(f.device.type == "cuda"),
                                    "Device Id": -1 if f.device.index is None else f.device.index}})
        else:
            cat = "user_annotation" if n.name.startswith("ProfilerStep#") else "cpu_op"
            events.append({"ph": "X", "cat": cat, "name": n.name, "pid": pid, "tid": n.start_tid, "ts": ts,
                           "dur": round(n.duration_time_ns / 1000.0, 3), "args": {}})
    events.sort(key=lambda e: e["ts"])
    with open(path, "w") as out:
        json.dump({"schemaVersion": 1, "traceName": "memplan test data: " + " ".join(sys.argv[2:]),
                   "traceEvents": events}, out, separators=(",", ":"))


def main():
    out = sys.argv[1]
    model_name = sys.argv[2] if len(sys.argv) > 2 else "resnet18"
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    kineto = torch.autograd.kineto_available()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = getattr(torchvision.models, model_name)(weights=None).eval()
    x = torch.randn(1, 3, size, size)
    with torch.no_grad():
        model(x)  # warm-up outside the profile: one-time allocations stay out of it
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    profile_memory=True, record_shapes=False) as prof:
            for i in range(steps):
                if kineto:
                    model(x)
                else:
                    with torch.profiler.record_function("ProfilerStep#%d" % i):
                        model(x)
                prof.step()
    if kineto:
        prof.export_chrome_trace(out)
    else:
        kineto_layout(prof, out)


if __name__ == "__main__":
    main()
