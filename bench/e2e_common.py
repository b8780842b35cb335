"""What the end-to-end benchmarks share (bench/e2e_torchvision.py,
e2e_dynamic.py, e2e_training.py): the allocators and how each run is
launched, the interleaved rounds, the MEMPLAN_STATS line, and the markdown
tables. Not a program.

Allocators: glibc (no preload), jemalloc / tcmalloc / mimalloc (LD_PRELOAD of
Debian's libraries), `memplan` (`memplan run` with MEMPLAN_STATS=1; the
program calls memplan_mark()), `memplan-keyed` (the same, with the program's
--keyed flag: it calls memplan_mark_key(k) with a key per variant), and
`memplan-warm` (the drop-in serving plans from a file that an earlier,
untimed run of the same command saved: `memplan run --save-plans`, then
`--plans`), and `memplan+KNOB=VALUE+...` (the drop-in with
MEMPLAN_KNOB=VALUE, for A/B runs).

Every run is a fresh process whose last stdout line is a JSON summary
(examples/marks.py writes it for the example loops). Rounds are interleaved:
in each round every configuration runs once under every allocator, in an
order rotated by one each round, so that slow phases of a shared machine hit
every allocator alike.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBDIR = "/usr/lib/x86_64-linux-gnu"
PRELOADS = {
    "jemalloc": ["libjemalloc.so.2"],
    "tcmalloc": ["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"],
    "mimalloc": ["libmimalloc.so.2"],
}
KEYED = "memplan-keyed"
WARM = "memplan-warm"

# The drop-in's exit line (src/runtime/preload/replay_interpose.cc). The first
# six counters have been there from the start; the rest are read when present.
STATS = re.compile(r"memplan replay: threads (\d+), iterations (\d+), profiled (\d+), served (\d+), "
                   r"unplanned (\d+), fallback (\d+)")
STATS_EXTRA = {
    "longest_stall_ms": re.compile(r"plan stall [\d.]+ ms \(longest ([\d.]+) ms\)"),
    "plans_held": re.compile(r"plans held (\d+)"),
    "variants": re.compile(r"variants (\d+)"),
    "evictions": re.compile(r"evictions (\d+)"),
    "served_fraction": re.compile(r"served fraction ([\d.]+)"),
    "small": re.compile(r"small (\d+)"),
}


def find_preload(names):
    for name in names:
        path = os.path.join(LIBDIR, name)
        if os.path.exists(path):
            return path
    return None


def resolve_allocators(names, memplan):
    """The allocators of a comma-separated list that can run here (a missing
    Debian library is skipped with a message), glibc always first: it is the
    reference for bit-identity and the ratios. Returns (allocators, preload
    paths)."""
    preloads, allocators = {}, []
    for a in names.split(","):
        if a in PRELOADS:
            path = find_preload(PRELOADS[a])
            if path is None:
                print(f"skipping {a}: none of {PRELOADS[a]} in {LIBDIR}", file=sys.stderr)
                continue
            preloads[a] = path
        elif a.startswith("memplan"):
            if not os.access(memplan, os.X_OK):
                sys.exit(f"{memplan} is not executable: build memplan first, or pass --memplan")
        elif a != "glibc":
            sys.exit(f"unknown allocator {a}")
        if a not in allocators:
            allocators.append(a)
    if "glibc" in allocators:
        allocators.remove("glibc")
    return ["glibc"] + allocators, preloads


def is_memplan(allocator):
    return allocator.startswith("memplan")


def command_for(allocator, memplan, preloads, argv, keyed_flag="--keyed"):
    """(argv, extra environment) of one run of `argv` under `allocator`."""
    if allocator == "glibc":
        return argv, {}
    if allocator == KEYED:
        return [memplan, "run", "--", *argv, keyed_flag], {"MEMPLAN_STATS": "1"}
    if allocator == WARM:
        return [memplan, "run", "--plans", warm_plans(memplan, argv), "--", *argv], {"MEMPLAN_STATS": "1"}
    if is_memplan(allocator):
        env = {"MEMPLAN_STATS": "1"}
        for knob in allocator.split("+")[1:]:
            name, _, value = knob.partition("=")
            env["MEMPLAN_" + name] = value
        return [memplan, "run", "--", *argv], env
    return argv, {"LD_PRELOAD": preloads[allocator]}


def warm_plans(memplan, argv):
    """The plan file of `argv` for memplan-warm: saved by one untimed run of
    the same command under `memplan run --save-plans` the first time it is
    asked for (in a folder of this process, removed when it exits)."""
    import atexit
    import hashlib
    import shutil
    folder = os.path.join("/tmp", f"memplan-warm-{os.getpid()}")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, hashlib.sha1("\0".join(argv).encode()).hexdigest() + ".plans")
    if not os.path.exists(path):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        result = subprocess.run([memplan, "run", "--save-plans", path, "--", *argv], capture_output=True, text=True,
                                env=env)
        if result.returncode != 0 or not os.path.exists(path):
            raise SystemExit(f"memplan-warm: the run that saves plans failed: {result.stderr.strip()[-400:]}")
    return path


def parse_stats(stderr):
    """The counters of the last statistics line: child processes (DataLoader
    workers) inherit the drop-in and print theirs when they exit, before the
    main process does."""
    matches = list(STATS.finditer(stderr))
    if not matches:
        return None
    match = matches[-1]
    stats = {"profiled": int(match.group(3)), "served": int(match.group(4)), "unplanned": int(match.group(5)),
             "fallback": int(match.group(6))}
    for field, pattern in STATS_EXTRA.items():
        extra = pattern.search(stderr, match.start())
        if extra:
            stats[field] = float(extra.group(1))
    return stats


def run_once(argv, extra_env):
    """Runs one process and returns its JSON summary (plus "stats" when the
    drop-in printed its line), or {"error": ...}."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(extra_env)
    result = subprocess.run(argv, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        return {"error": f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1:] or ''}"}
    try:
        summary = json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": "no JSON summary on the last stdout line"}
    stats = parse_stats(result.stderr)
    if stats:
        summary["stats"] = stats
    return summary


def run_interleaved(configs, allocators, run, rounds, describe=str):
    """runs[(config, allocator)] = [summary of each round]; `run(config,
    allocator)` returns one summary or None when that pair does not apply."""
    runs = {}
    start = time.time()
    total = rounds * len(configs) * len(allocators)
    done = 0
    for r in range(rounds):
        for config in configs:
            order = allocators[r % len(allocators):] + allocators[:r % len(allocators)]
            for allocator in order:
                summary = run(config, allocator)
                done += 1
                if summary is None:
                    continue
                runs.setdefault((config, allocator), []).append(summary)
                shown = summary.get("median_ms", summary.get("error"))
                print(f"[{done}/{total}, {time.time() - start:.0f} s] round {r + 1} {describe(config)} {allocator}: "
                      f"{shown}", file=sys.stderr, flush=True)
    return runs, time.time() - start


def save_runs(path, runs):
    with open(path, "w") as f:
        json.dump([{"config": c, "allocator": a, "runs": s} for (c, a), s in runs.items()], f, indent=1)


def load_runs(path):
    """(configs in their first order, runs, allocators in their first order)
    from a file written by save_runs (--json), to print its tables again."""
    with open(path) as f:
        entries = json.load(f)
    configs, allocators, runs = [], [], {}
    for entry in entries:
        config = tuple(entry["config"])
        if config not in configs:
            configs.append(config)
        if entry["allocator"] not in allocators:
            allocators.append(entry["allocator"])
        runs[(config, entry["allocator"])] = entry["runs"]
    allocators.sort(key=lambda a: a != "glibc")  # glibc first, the rest as they were
    return configs, runs, allocators


def percentile(values, q):
    """Nearest-rank percentile: a measured value, never an interpolation."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def summarize(runs, config, allocators):
    """Per allocator: median and p99 over every timed pass of every round,
    faults per pass (median over rounds), peak RSS (largest), bit-identity with
    glibc in every round, and memplan's counters."""
    result = {}
    reference = {s.get("output_sha256") for s in runs.get((config, "glibc"), []) if "error" not in s}
    for a in allocators:
        all_runs = runs.get((config, a))
        if not all_runs:
            continue
        good = [s for s in all_runs if "error" not in s]
        if not good:
            result[a] = {"failed": all_runs[0]["error"]}
            continue
        latencies = [ms for s in good for ms in s["latencies_ms"]]
        row = {
            "median": statistics.median(latencies),
            "p99": percentile(latencies, 99),
            "cpu": statistics.median([ms for s in good for ms in s["cpu_ms"]]) if all("cpu_ms" in s for s in good)
            else None,
            "faults": statistics.median([s["minor_faults_per_pass"] for s in good]),
            "rss_mib": max(s["peak_rss_kib"] for s in good) / 1024,
            "identical": (len(good) == len(all_runs) and len(reference) == 1 and
                          all(s["output_sha256"] in reference and s.get("passes_agree", True) for s in good)),
        }
        served = [s["memplan_served_after_warmup"] for s in good if s.get("memplan_served_after_warmup") is not None]
        requests = [s["memplan_requests_after_warmup"] for s in good
                    if s.get("memplan_requests_after_warmup") is not None]
        if served and requests and sum(requests):
            row["served_after_warmup"] = sum(served) / sum(requests)
            pooled = [s["memplan_pooled_after_warmup"] for s in good
                      if s.get("memplan_pooled_after_warmup") is not None]
            if pooled:
                row["pooled_after_warmup"] = sum(pooled) / sum(requests)
        per_pass = [s["memplan_per_pass"] for s in good if s.get("memplan_per_pass")]
        if per_pass:
            row["slab_share_per_pass"] = slab_share_per_pass(per_pass)
            firsts = [first_served_pass(p) for p in per_pass]
            row["first_served_pass"] = None if None in firsts else statistics.median(firsts)
        stats = [s["stats"] for s in good if "stats" in s]
        if stats:
            row["stats"] = stats
            stalls = [s["longest_stall_ms"] for s in stats if "longest_stall_ms" in s]
            row["longest_stall_ms"] = max(stalls) if stalls else None
            for field in ("plans_held", "variants", "evictions", "served_fraction"):
                values = [s[field] for s in stats if field in s]
                row[field] = statistics.median(values) if values else None
        result[a] = row
    return result


def slab_share_per_pass(per_pass):
    """Per pass index (warm-up included), over the runs: requests served from
    slabs over the requests the small-request pool did not serve, or None
    where there were none. `per_pass`: each run's [served, pooled, requests]
    per pass (examples/marks.py)."""
    shares = []
    for i in range(min(len(p) for p in per_pass)):
        served = sum(p[i][0] for p in per_pass)
        rest = sum(p[i][2] - p[i][1] for p in per_pass)
        shares.append(served / rest if rest > 0 else None)
    return shares


def first_served_pass(passes, most=0.5):
    """The first pass (1-based) from which the slabs serve more than `most` of
    the requests the pool does not serve in every later pass, or None."""
    first = None
    for i, (served, pooled, requests) in enumerate(passes):
        rest = requests - pooled
        if rest > 0 and served > most * rest:
            first = first or i + 1
        elif rest > 0:
            first = None
    return first


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def table(header, rows):
    """A markdown table as text."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def print_tables(configs, runs, allocators, label_columns, label_of, unit="pass"):
    """The four tables of bench/e2e_dynamic.py and e2e_training.py:
    latency (median / p99 per pass, ratios to the best other allocator,
    bit-identity), process CPU time, faults and peak RSS, and memplan's own
    numbers."""
    memplans = [a for a in allocators if is_memplan(a)]
    others = [a for a in allocators if not is_memplan(a)]
    latency_rows, cpu_rows, memory_rows, memplan_rows, learning_rows = [], [], [], [], []
    for config in configs:
        label = label_of(config)
        s = summarize(runs, config, allocators)
        cells = []
        for a in allocators:
            if a not in s:
                cells.append("–")
            elif "failed" in s[a]:
                cells.append("failed")
            else:
                cells.append(f"{s[a]['median']:.1f} / {s[a]['p99']:.1f}")
        best_median = min((s[a]["median"] for a in others if a in s and "median" in s[a]), default=None)
        best_p99 = min((s[a]["p99"] for a in others if a in s and "p99" in s[a]), default=None)
        ratios = []
        for a in memplans:
            ok = a in s and "median" in s[a]
            ratios.append(f"{ratio(s[a]['median'], best_median)} / {ratio(s[a]['p99'], best_p99)}" if ok else "–")
        bad = [a for a in allocators if a in s and not s[a].get("identical")]
        latency_rows.append(label + cells + ratios + ["yes" if not bad else "NO: " + ", ".join(bad)])
        best_cpu = min((s[a]["cpu"] for a in others if a in s and s[a].get("cpu") is not None), default=None)
        cpu_rows.append(label + [f"{s[a]['cpu']:.1f}" if a in s and s[a].get("cpu") is not None else "–"
                                 for a in allocators]
                        + [ratio(s[a].get("cpu"), best_cpu) if a in s else "–" for a in memplans])
        memory_rows.append(label + [f"{s[a]['faults']:.0f}" if a in s and "faults" in s[a] else "–" for a in allocators]
                           + [f"{s[a]['rss_mib']:.0f}" if a in s and "rss_mib" in s[a] else "–" for a in allocators])
        for a in memplans:
            if a not in s or "median" not in s[a]:
                continue
            row = s[a]

            def show(value, fmt):
                return fmt.format(value) if value is not None else "–"

            shares = row.get("slab_share_per_pass") or []
            learning_rows.append(label + [a, show(row.get("first_served_pass"), "{:.0f}"),
                                          " ".join("–" if v is None else f"{v:.0%}" for v in shares[:12])])
            memplan_rows.append(label + [a, show(row.get("served_after_warmup"), "{:.1%}"),
                                         show(row.get("pooled_after_warmup"), "{:.1%}"),
                                         show(row.get("served_fraction"), "{:.1%}"),
                                         show(row.get("longest_stall_ms"), "{:.1f}"),
                                         show(row.get("plans_held"), "{:.0f}"), show(row.get("variants"), "{:.0f}"),
                                         show(row.get("evictions"), "{:.0f}")])
    plural = unit + ("es" if unit.endswith("s") else "s")
    print(f"Time per {unit}, ms: median / p99 over every timed {unit} of every round.\n")
    print(table(label_columns + [f"{a}" for a in allocators] + [f"{a} / best other" for a in memplans]
                + ["bit-identical to glibc"], latency_rows))
    print(f"\nProcess CPU time per {unit}, ms (median; all threads): on a shared machine it is not inflated by "
          "waiting for a core, so it ranks allocators more reliably than wall time while others run:\n")
    print(table(label_columns + [f"{a}" for a in allocators] + [f"{a} / best other" for a in memplans], cpu_rows))
    print(f"\nMinor page faults per timed {unit} (whole process, median over rounds) and peak RSS (MiB, largest):\n")
    print(table(label_columns + [f"{a} faults" for a in allocators] + [f"{a} MiB" for a in allocators],
                memory_rows))
    if memplan_rows:
        print(f"\nmemplan: requests served from slabs and from the small-request pools during the timed {plural} "
              "(all rounds), served from slabs over the whole run (MEMPLAN_STATS, median over rounds), longest "
              "boundary stall (largest over rounds), plans held and variants seen at exit, evictions:\n")
        print(table(label_columns + ["allocator", "served after warm-up", "pooled after warm-up", "served (whole run)",
                                     "longest stall ms", "plans held", "variants", "evictions"], memplan_rows))
    if any(r[-1] for r in learning_rows):
        print(f"\nmemplan's learning: the first {unit} (1-based, warm-up included) from which the slabs serve more "
              f"than half of the requests the small-request pool does not, in every later {unit} (median over rounds; "
              f"– never), and that share per {unit} index, the first 12, over all rounds:\n")
        print(table(label_columns + ["allocator", f"served from {unit}", f"slab share per {unit}"], learning_rows))


def add_run_options(parser, tables_from=True):
    """The options every end-to-end benchmark shares: the binaries, the note
    above the tables, and saving (--json) or reprinting (--tables-from) runs."""
    parser.add_argument("--memplan", default=os.path.join(REPO, "build", "memplan"), help="the memplan binary")
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--note", default="", help="a line printed above the tables (the machine, its load)")
    parser.add_argument("--json", metavar="PATH", help="also write every run's summary to PATH")
    if tables_from:
        parser.add_argument("--tables-from", metavar="PATH",
                            help="run nothing: print the tables of a --json file again")


def print_saved_tables(path, note, label_columns, label_of, unit="pass"):
    """--tables-from: the tables of a saved run, with the note above them."""
    configs, runs, allocators = load_runs(path)
    print(f"{note}\n" if note else "", end="")
    print_tables(configs, runs, allocators, label_columns, label_of, unit=unit)
