#!/usr/bin/env python3
"""Memplan's warm model on recorded CUDA snapshots: plans made from a
recording, applied to the same recording and to other recordings of the job.

    bench/plans/warm_snapshots.py [--memplan PATH] [--pairs] SNAPSHOT.pickle...

For each snapshot: `memplan snapshot F --json --save-plans` gives the window's
load and the peak reserved of the recorded run and of memplan's models (cold:
the window alone while learning; steady: after an identical window; warm: the
window alone from plans made of this very window). With --pairs, each
snapshot's plans are also given (`--plans`) to every other snapshot of the
list whose file name differs only in its ctx<N> part (the same job at another
context length): a plan from one length applied to another must load, fall
back where it stops fitting, and end without error. Prints Markdown tables,
peak reserved as a ratio to the window's load.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def analyse(memplan, path, extra):
    out = subprocess.run([memplan, "snapshot", path, "--json"] + extra, check=True, capture_output=True, text=True)
    device = json.loads(out.stdout)["devices"][0]
    return device


def size(n):
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


def ratio(value, load):
    return f"{value / load:.3f}x" if value else "–"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memplan", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "memplan"))
    parser.add_argument("--pairs", action="store_true", help="apply each snapshot's plans to its other context lengths")
    parser.add_argument("snapshots", nargs="+")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="memplan-warm-snapshots-")
    try:
        tables(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tables(args, work):
    plans = {}
    print("| snapshot | load | recorded | memplan cold | memplan steady | memplan warm (own plans) | served warm |")
    print("|---|---|---|---|---|---|---|")
    for path in args.snapshots:
        name = os.path.basename(path)
        plans[path] = os.path.join(work, name + ".plans")
        d = analyse(args.memplan, path, ["--save-plans", plans[path]])
        load = d["load_bytes"]
        sim = d["simulated"]
        warm = sim["memplan_warm"]
        print(f"| {name} | {size(load)} | {ratio(d['recorded']['peak_reserved_bytes'], load)} | "
              f"{ratio(sim['memplan_cold']['peak_reserved_bytes'], load)} | "
              f"{ratio(sim['memplan']['peak_reserved_bytes'], load)} | {ratio(warm['peak_reserved_bytes'], load)} | "
              f"{warm['served']} of {warm['served'] + warm['fallback']} |")
        sys.stdout.flush()
    if not args.pairs:
        return
    print()
    print("| window | plans from | memplan cold | memplan warm (other plans) | served warm |")
    print("|---|---|---|---|---|")
    job = {p: re.sub(r"ctx\d+", "ctx*", os.path.basename(p)) for p in args.snapshots}
    for target in args.snapshots:
        for source in args.snapshots:
            if source == target or job[source] != job[target]:
                continue
            d = analyse(args.memplan, target, ["--plans", plans[source]])
            load = d["load_bytes"]
            warm = d["simulated"]["memplan_warm"]
            if "error" in warm:
                raise SystemExit(f"{target} with the plans of {source}: {warm['error']}")
            print(f"| {os.path.basename(target)} | {os.path.basename(source)} | "
                  f"{ratio(d['simulated']['memplan_cold']['peak_reserved_bytes'], load)} | "
                  f"{ratio(warm['peak_reserved_bytes'], load)} | {warm['served']} of {warm['served'] + warm['fallback']} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
