#!/usr/bin/env python3
"""Writes a synthetic PyTorch CUDA memory snapshot (plain-data pickle, the
newer format) of a training-like job, for measuring `memplan snapshot`:

    python3 bench/make_snapshot.py --events 400000 -o /tmp/snap400k.pickle

The job: weights allocated before the window (in the dump-time segments,
never touched), then repeated steps of `--allocs-per-step` allocations whose
sizes follow one fixed per-step sequence (activations freed in reverse order
after a forward/backward), each alloc followed later by free_requested and
free_completed, so an alloc costs three events. Each position of the step
has its own address (no reuse across positions), its own stack of 24 frames
drawn from a pool of distinct frames, and a 1 us clock. The last step is
cut where the event budget ends, so blocks are live at the dump as in a
real window. Deterministic for a given --seed.
"""
import argparse
import pickle
import random

MiB = 1 << 20


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=400000, help="events in the window (default 400000)")
    ap.add_argument("--allocs-per-step", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    files = [f"/home/user/model/layer{i}.py" for i in range(40)] + ["??"] * 5
    frames = [{"name": f"fn{i}", "filename": rng.choice(files), "line": rng.randint(1, 900)} for i in range(600)]
    stacks = [[rng.choice(frames) for _ in range(24)] for _ in range(300)]

    n = args.allocs_per_step
    sizes = []
    for _ in range(n):
        r = rng.random()
        sizes.append(rng.randint(1, 1 << 20) if r < 0.6 else rng.randint(1 << 20, 64 << 20))
    stack_of = [rng.randrange(len(stacks)) for _ in range(n)]
    base = 0x7F0000000000
    weights = [rng.randint(1 << 20, 256 << 20) for _ in range(64)]
    offsets, cursor = [], 0
    for s in weights + sizes:
        offsets.append(cursor)
        cursor += (s + 511) // 512 * 512
    total = (cursor + (2 * MiB - 1)) // (2 * MiB) * (2 * MiB)

    events, live, t = [], {}, 0

    def ev(action, i, size):
        nonlocal t
        t += 1
        events.append({"action": action, "addr": base + offsets[len(weights) + i], "size": size, "stream": 0,
                       "time_us": 1_700_000_000_000_000 + t, "frames": stacks[stack_of[i]]})

    while len(events) < args.events:
        # forward: allocate every position; backward: free in reverse order
        for i in range(n):
            if len(events) >= args.events:
                break
            ev("alloc", i, sizes[i])
            live[i] = sizes[i]
        for i in reversed(range(n)):
            if len(events) + 2 > args.events:
                break
            if i in live:
                ev("free_requested", i, live[i])
                ev("free_completed", i, live.pop(i))
    blocks, prev = [], 0
    allocated = [(offsets[k], w, None) for k, w in enumerate(weights)]
    allocated += [(offsets[len(weights) + i], s, i) for i, s in live.items()]
    for off, size, i in sorted(allocated):
        if off > prev:
            blocks.append({"address": base + prev, "size": off - prev, "requested_size": 0, "state": "inactive",
                           "frames": []})
        rounded = (size + 511) // 512 * 512
        blocks.append({"address": base + off, "size": rounded, "requested_size": size, "state": "active_allocated",
                       "frames": stacks[stack_of[i]] if i is not None else []})
        prev = off + rounded
    if prev < total:
        blocks.append({"address": base + prev, "size": total - prev, "requested_size": 0, "state": "inactive",
                       "frames": []})
    snapshot = {
        "segments": [{"device": 0, "address": base, "total_size": total, "allocated_size": 0, "active_size": 0,
                      "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                      "is_expandable": False, "frames": [], "blocks": blocks}],
        "device_traces": [events],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0, "expandable_segments": False,
                               "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}},
        "external_annotations": [],
    }
    with open(args.output, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    print(f"wrote {args.output}: {len(events)} events, {len(live)} blocks live at the dump")


if __name__ == "__main__":
    main()
