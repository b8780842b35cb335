#!/usr/bin/env python3
"""Writes the small PyTorch memory snapshot fixtures of the CLI tests
(tests/cli/snapshot_tests.cmake) with pickle.dumps of plain dicts, as
torch.cuda.memory._dump_snapshot lays them out. Run from this folder:
    python3 make_snapshot_fixtures.py
"""
import pickle

MiB = 1 << 20
A = 0x7F0000000000  # a 20 MiB large segment
B = 0x7F1000000000  # a 2 MiB small segment


def stack(line):
    return [
        {"name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "filename": "??", "line": 0},
        {"name": "_call_impl", "filename": "/env/lib/python3.11/site-packages/torch/nn/modules/module.py", "line": 1750},
        {"name": "forward", "filename": "/home/me/train.py", "line": line},
    ]


def event(action, addr, size, t, line=None, stream=0):
    return {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": 1000 + t,
            "frames": stack(line) if line else []}


def segment(device, address, total, small, blocks, stream=0):
    return {"device": device, "address": address, "total_size": total, "allocated_size": 0, "active_size": 0,
            "requested_size": 0, "stream": stream, "segment_type": "small" if small else "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}


def block(address, size, requested, state, line=None):
    return {"address": address, "size": size, "requested_size": requested, "state": state,
            "frames": stack(line) if line else []}


def training_window():
    """Device 0: weights (4 MiB) allocated before the window, then three
    identical steps of activations (1, 2 and 3 MiB) and a small 300-byte
    tensor; device 1: one alloc and its free."""
    events, t = [], 0
    events.append(event("segment_alloc", B, 2 * MiB, t)); t += 1
    for step in range(3):
        for addr, size, line in ((A + 4 * MiB, 1 * MiB, 20), (A + 6 * MiB, 2 * MiB, 21), (B, 300, 22)):
            events.append(event("alloc", addr, size, t, line)); t += 1
        events.append(event("free_requested", A + 4 * MiB, 1 * MiB, t, 23))
        events.append(event("free_completed", A + 4 * MiB, 1 * MiB, t, 23)); t += 1
        events.append(event("alloc", A + 8 * MiB, 3 * MiB, t, 24)); t += 1
        for addr, size in ((A + 6 * MiB, 2 * MiB), (A + 8 * MiB, 3 * MiB), (B, 300)):
            events.append(event("free_requested", addr, size, t, 25))
            events.append(event("free_completed", addr, size, t, 25)); t += 1
    segments = [
        segment(0, A, 20 * MiB, False, [block(A, 4 * MiB, 4 * MiB, "active_allocated", 7),
                                       block(A + 4 * MiB, 16 * MiB, 0, "inactive")]),
        segment(0, B, 2 * MiB, True, [block(B, 2 * MiB, 0, "inactive")]),
        segment(1, A + 64 * MiB, 20 * MiB, False, [block(A + 64 * MiB, 20 * MiB, 0, "inactive")]),
    ]
    device1 = [event("alloc", A + 64 * MiB, 5 * MiB, 0, 40), event("free_completed", A + 64 * MiB, 5 * MiB, 1, 41)]
    return {"segments": segments, "device_traces": [events, device1]}


def newer_with_oom():
    """The newer format: allocator settings, annotations, and an
    out-of-memory event after a 12 MiB block filled the segment."""
    events = [
        event("alloc", A, 12 * MiB, 0, 30),
        {"action": "oom", "addr": 1 * MiB, "size": 64 * MiB, "stream": 0, "time_us": 1001, "frames": stack(31)},
        event("free_completed", A, 12 * MiB, 2, 32),
    ]
    return {
        "segments": [segment(0, A, 20 * MiB, False, [block(A, 20 * MiB, 0, "inactive")])],
        "device_traces": [events],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128", "max_split_size": 128 * MiB,
                               "garbage_collection_threshold": 0.0, "expandable_segments": False,
                               "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}},
        "external_annotations": [{"stage": "START", "name": "train_step", "device": 0, "time_us": 999}],
    }


def write(name, data):
    with open(name, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    small = pickle.dumps(training_window(), protocol=4)
    write("snapshot_training.pickle", small)
    write("snapshot_newer_oom.pickle", pickle.dumps(newer_with_oom(), protocol=4))
    write("snapshot_truncated.pickle", small[: len(small) // 2])
    write("snapshot_not_a_snapshot.pickle", pickle.dumps([1, 2, 3], protocol=4))
    # What a malicious file looks like: os.system('echo pwned') through GLOBAL and REDUCE.
    write("snapshot_global.pickle", b"\x80\x02cos\nsystem\nX\x0a\x00\x00\x00echo pwned\x85R.")
