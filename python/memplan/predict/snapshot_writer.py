"""snapshot_writer.py — a recording as a PyTorch CUDA memory snapshot pickle.

The file is PyTorch's newer format (`torch.cuda.memory._dump_snapshot`),
plain dicts, lists, ints, floats, strings and booleans only, so that
`memplan snapshot` and PyTorch's memory_viz read it:

    {"segments": [dump-time segments and their blocks],
     "device_traces": [[events of device 0], [device 1], ...],
     "allocator_settings": {from PYTORCH_CUDA_ALLOC_CONF}}

Events: alloc, then free_requested and free_completed together (meta work
has no stream to wait for), each with addr, size (the requested bytes),
stream 0, time_us (the event's index) and the allocating frames; a
`snapshot` marker after each iteration the runner detected.

Addresses and the recorded reserved bytes (Note [Recorded reserved]): a
recording has no allocator, so the file gives each block an address from a
simple rule: a first-fit heap of 512-byte-rounded blocks (PyTorch's block
alignment) in one expandable segment at a fixed base, grown by segment_map
events in 2 MiB pages as the heap's top rises and never shrunk. Addresses are
unique among live blocks and 512-aligned; the dump-time segment holds the
blocks still live at the end and the free gaps between them, so the file is
self-consistent (the window starts with nothing reserved). The file's
"recorded reserved" is therefore that heap's high-water mark rounded up to
2 MiB: a reference, not a prediction. The prediction's reserved bytes are
the allocator models' (`simulated` in `memplan snapshot --json`), which
replay the requests from an empty start.
"""
import os
import pickle

BLOCK = 512
PAGE = 2 << 20
BASE = 0x7F0000000000


def _round(n, unit):
    return (n + unit - 1) // unit * unit


class FirstFitHeap:
    """Offsets for blocks: first fit among the free gaps, else the top."""

    def __init__(self):
        self.free = []  # sorted [offset, size] gaps below top
        self.top = 0

    def allocate(self, size):
        for i, (offset, gap) in enumerate(self.free):
            if gap >= size:
                if gap == size:
                    del self.free[i]
                else:
                    self.free[i] = [offset + size, gap - size]
                return offset
        if self.free and self.free[-1][0] + self.free[-1][1] == self.top:
            offset = self.free.pop()[0]
        else:
            offset = self.top
        self.top = offset + size
        return offset

    def release(self, offset, size):
        lo, hi = 0, len(self.free)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.free[mid][0] < offset:
                lo = mid + 1
            else:
                hi = mid
        self.free.insert(lo, [offset, size])
        if lo + 1 < len(self.free) and offset + size == self.free[lo + 1][0]:
            self.free[lo][1] += self.free.pop(lo + 1)[1]
        if lo > 0 and self.free[lo - 1][0] + self.free[lo - 1][1] == offset:
            self.free[lo - 1][1] += self.free.pop(lo)[1]


def allocator_settings(conf=None):
    """allocator_settings as PyTorch writes them, from PYTORCH_CUDA_ALLOC_CONF
    (`conf`, default: the environment's): max_split_size (bytes, -1:
    unlimited), garbage_collection_threshold, expandable_segments,
    roundup_power2_divisions (MiB interval -> divisions)."""
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") if conf is None else conf
    settings = {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": -1, "garbage_collection_threshold": 0.0,
                "expandable_segments": False, "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
    for item in _split_conf(conf):
        if ":" not in item:
            raise ValueError(f"PYTORCH_CUDA_ALLOC_CONF: '{item}' is not NAME:VALUE")
        name, value = (part.strip() for part in item.split(":", 1))
        if name == "max_split_size_mb":
            settings["max_split_size"] = int(value) << 20
        elif name == "garbage_collection_threshold":
            settings["garbage_collection_threshold"] = float(value)
        elif name == "expandable_segments":
            settings["expandable_segments"] = value.lower() == "true"
        elif name == "roundup_power2_divisions":
            settings["roundup_power2_divisions"] = _divisions(value)
    return settings


def _split_conf(conf):
    """Splits on commas outside brackets ("a:1,b:[256:1,>:4]")."""
    items, depth, current = [], 0, ""
    for ch in conf:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    return [item.strip() for item in items if item.strip()]


def _divisions(value):
    keys = [1 << i for i in range(16)]
    if not value.startswith("["):
        return {str(k): int(value) for k in keys}
    result, last = {}, 0
    for pair in value.strip("[]").split(","):
        size, divisions = (p.strip() for p in pair.split(":"))
        if size == ">":
            for k in keys:
                result.setdefault(str(k), int(divisions))
            continue
        for k in keys:
            if last < k <= int(size):
                result[str(k)] = int(divisions)
        last = int(size)
    return {str(k): result.get(str(k), 0) for k in keys}


def _frames(stack):
    return [{"filename": filename, "line": line, "name": name} for filename, line, name in stack]


def snapshot_dict(device_events, stacks, markers=(), device_index=0, alloc_conf=None):
    """The snapshot as a dict. `device_events`: (action, key, nbytes, stack)
    tuples of the device, action "alloc" or "free", in order; `stacks`:
    frame tuples by index; `markers`: event positions after which a
    `snapshot` marker goes."""
    heap = FirstFitHeap()
    mapped = 0
    trace, live = [], {}
    frames_of = {}
    marker_set = sorted(markers)
    m = 0

    def add(action, addr, size, stack=0):
        if stack not in frames_of:
            frames_of[stack] = _frames(stacks[stack])
        trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": len(trace),
                      "frames": frames_of[stack]})

    for position, (action, key, nbytes, stack) in enumerate(device_events):
        while m < len(marker_set) and marker_set[m] <= position:
            add("snapshot", 0, 0)
            m += 1
        if action == "alloc":
            size = _round(max(nbytes, 1), BLOCK)
            offset = heap.allocate(size)
            if heap.top > mapped:
                grow = _round(heap.top, PAGE) - mapped
                add("segment_map", BASE + mapped, grow)
                mapped += grow
            live[key] = (offset, size, nbytes, stack)
            add("alloc", BASE + offset, nbytes, stack)
        else:
            offset, size, requested, alloc_stack = live.pop(key)
            add("free_requested", BASE + offset, requested, alloc_stack)
            add("free_completed", BASE + offset, requested, alloc_stack)
            heap.release(offset, size)
    while m < len(marker_set):
        add("snapshot", 0, 0)
        m += 1
    segments = [_segment(live, mapped, device_index, frames_of, stacks)] if mapped else []
    traces = [[] for _ in range(device_index)] + [trace]
    return {"segments": segments, "device_traces": traces, "allocator_settings": allocator_settings(alloc_conf)}


def _segment(live, mapped, device_index, frames_of, stacks):
    blocks, cursor = [], 0
    allocated = requested_total = 0
    for offset, size, requested, stack in sorted(live.values()):
        if offset > cursor:
            blocks.append({"address": BASE + cursor, "size": offset - cursor, "requested_size": 0,
                           "state": "inactive", "frames": []})
        if stack not in frames_of:
            frames_of[stack] = _frames(stacks[stack])
        blocks.append({"address": BASE + offset, "size": size, "requested_size": requested,
                       "state": "active_allocated", "frames": frames_of[stack]})
        allocated += size
        requested_total += requested
        cursor = offset + size
    if cursor < mapped:
        blocks.append({"address": BASE + cursor, "size": mapped - cursor, "requested_size": 0,
                       "state": "inactive", "frames": []})
    return {"device": device_index, "address": BASE, "total_size": mapped, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": True, "allocated_size": allocated,
            "active_size": allocated, "requested_size": requested_total, "blocks": blocks}


def write_snapshot(path, snapshot):
    with open(path, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
