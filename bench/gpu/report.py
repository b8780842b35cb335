"""report.py — the results of scripts/gpu-check.sh as a markdown table
(gpu-check.md) and a JSON file of the same numbers (gpu-check.json).

Each row is one run (a workload under an allocator, run_one.py's JSON) with
three derived fields, each against the default allocator's main run of the
same workload:
  reserved_vs_default  peak reserved / the default's peak reserved;
  compare              'identical' when every step's loss (every request's
                       output digest) equals the default's bit for bit, else
                       where the first difference is;
  served_fraction      memplan's requests served from a slab / all its
                       requests (memplan_cuda_memory_stats), else / the
                       requests its learner saw (profiled + served +
                       unplanned + fallback, the counters printed at exit);
                       null for other allocators.
"""

import json
import os

SCHEMA = "memplan-gpu-check/1"
MIB = float(1 << 20)


def served_fraction(stats, memory=None):
    """From the library's memory statistics (served / every request) where
    the run has them, else from the counters it printed at exit."""
    if memory and memory.get("requests"):
        return memory["served"] / memory["requests"]
    if not stats:
        return None
    seen = sum(stats.get(k, 0) for k in ("profiled", "served", "unplanned", "fallback"))
    return stats.get("served", 0) / seen if seen else None


def compare(row, base):
    if row is base:
        return "reference"
    if base is None or base.get("status") != "ok":
        return "no default run to compare with"
    mine, theirs = row.get("values", []), base.get("values", [])
    unit = "request" if row.get("workload", "").endswith("_infer") else "step"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if a != b:
            return f"differs from {unit} {i}"
    if len(mine) != len(theirs):
        return f"{len(mine)} {unit}s against the default's {len(theirs)}"
    return "identical"


def derive(rows):
    """Adds the derived fields to every run that finished."""
    defaults = {r["workload"]: r for r in rows if r.get("allocator") == "default" and r.get("run", "main") == "main"}
    for row in rows:
        if row.get("status") != "ok":
            continue
        base = defaults.get(row["workload"])
        row["compare"] = compare(row, base)
        mine = row.get("peak_reserved_bytes")
        theirs = base.get("peak_reserved_bytes") if base and base.get("status") == "ok" else None
        row["reserved_vs_default"] = mine / theirs if mine is not None and theirs else None
        row["served_fraction"] = served_fraction(row.get("memplan"), row.get("memplan_memory"))
    return rows


def _mib(value):
    return "–" if value is None else f"{value / MIB:,.0f}"


def _ms(value):
    return "–" if value is None else f"{value:.1f}"


def _ratio(value):
    return "–" if value is None else f"{value:.2f}x"


def _fraction(value):
    return "–" if value is None else f"{100 * value:.1f}%"


COLUMNS = ("workload", "allocator", "peak reserved (MiB, driver)", "vs default", "peak allocated (MiB)",
           "median step (ms)", "p99 step (ms)", "served", "losses / outputs vs default", "notes")


def _label(row):
    run = row.get("run", "main")
    return row["allocator"] if run == "main" else f"{row['allocator']} ({run})"


def _notes(row):
    notes = []
    if row.get("status") != "ok":
        notes.append(f"{row.get('status')}: {row.get('reason', '')}".strip())
    for key in ("exit_note", "peak_allocated_note", "cudnn_benchmark"):
        if row.get(key) and row.get(key) != "ok":
            notes.append(str(row[key]))
        elif key == "cudnn_benchmark" and row.get(key) == "ok":
            notes.append("cudnn.benchmark ok")
    if row.get("nondeterminism_warnings"):
        notes.append("nondeterministic ops warned")
    left = (row.get("memplan_memory_at_end") or {}).get("allocated_bytes")
    if left:
        notes.append(f"{left / MIB:,.1f} MiB still allocated in memplan after the workload was released")
    return "; ".join(notes).replace("|", "/")


def table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        ok = row.get("status") == "ok"
        cells = [row["workload"], _label(row),
                 _mib(row.get("peak_reserved_bytes")) if ok else "–",
                 _ratio(row.get("reserved_vs_default")) if ok else "–",
                 _mib(row.get("peak_allocated_bytes")) if ok else "–",
                 _ms(row.get("step_ms_median")) if ok else "–",
                 _ms(row.get("step_ms_p99")) if ok else "–",
                 _fraction(row.get("served_fraction")) if ok else "–",
                 row.get("compare", "–") if ok else "–",
                 _notes(row)]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


# The targets a training row of memplan is held to: peak reserved at most
# RESERVED_VS_DEFAULT x the default allocator's and no more than expandable
# segments'; median step within STEP_SLACK of the fastest allocator's; losses
# identical to the default's.
RESERVED_VS_DEFAULT = 0.85
STEP_SLACK = 1.02


def targets(rows):
    """One verdict per (training workload, memplan allocator) that ran."""
    ran = [r for r in rows if r.get("status") == "ok" and r.get("run", "main") == "main"]
    verdicts = []
    for row in ran:
        if not row["allocator"].startswith("memplan") or row.get("kind") != "train":
            continue
        same = {r["allocator"]: r for r in ran if r["workload"] == row["workload"]}
        default, expandable = same.get("default"), same.get("expandable")
        reserved = row.get("peak_reserved_bytes")
        fastest = min(r["step_ms_median"] for r in same.values())
        verdict = {"workload": row["workload"], "allocator": row["allocator"]}
        if default and reserved is not None and default.get("peak_reserved_bytes"):
            verdict["reserved_vs_default"] = reserved / default["peak_reserved_bytes"]
            verdict["reserved_target_met"] = verdict["reserved_vs_default"] <= RESERVED_VS_DEFAULT
        if expandable and reserved is not None and expandable.get("peak_reserved_bytes") is not None:
            verdict["reserved_vs_expandable"] = reserved / expandable["peak_reserved_bytes"]
            verdict["not_above_expandable"] = reserved <= expandable["peak_reserved_bytes"]
        verdict["step_vs_fastest"] = row["step_ms_median"] / fastest
        verdict["step_target_met"] = verdict["step_vs_fastest"] <= STEP_SLACK
        verdict["losses_identical"] = row.get("compare") == "identical"
        verdicts.append(verdict)
    return verdicts


def _yes(value):
    return "–" if value is None else ("yes" if value else "**no**")


def targets_table(verdicts):
    if not verdicts:
        return ""
    lines = ["", f"Targets (training rows of memplan): peak reserved ≤ {RESERVED_VS_DEFAULT}x the default's and ≤ "
             f"expandable segments'; median step ≤ {STEP_SLACK}x the fastest allocator's; losses identical.", "",
             "| workload | allocator | reserved vs default | ≤ 0.85x | vs expandable | ≤ expandable | step vs fastest "
             "| ≤ 1.02x | losses identical |", "|" + "---|" * 9]
    for v in verdicts:
        lines.append(f"| {v['workload']} | {v['allocator']} | {_ratio(v.get('reserved_vs_default'))} | "
                     f"{_yes(v.get('reserved_target_met'))} | {_ratio(v.get('reserved_vs_expandable'))} | "
                     f"{_yes(v.get('not_above_expandable'))} | {_ratio(v.get('step_vs_fastest'))} | "
                     f"{_yes(v.get('step_target_met'))} | {_yes(v.get('losses_identical'))} |")
    return "\n".join(lines) + "\n"


def markdown(rows, meta):
    env = meta.get("environment") or {}
    head = [f"# memplan GPU check{' (dry run)' if meta.get('dry_run') else ''}", ""]
    where = ", ".join(f"{k} {v}" for k, v in env.items() if v is not None and k != "gpu_memory_bytes")
    if where:
        head += [f"Measured on: {where}.", ""]
    head += [f"Started {meta.get('started', '?')}; {meta.get('finished_runs', 0)} of "
             f"{meta.get('planned_runs', 0)} runs done{' (partial)' if meta.get('partial') else ''}. "
             "Columns: docs/gpu.md.", "", ""]
    return "\n".join(head) + table(rows) + targets_table(targets(rows))


def write(out_dir, rows, meta):
    """Writes gpu-check.json and gpu-check.md into out_dir (each replaced
    whole, so a reader never sees half a file). Returns their paths."""
    rows = derive(rows)
    document = dict(meta, schema=SCHEMA, rows=rows, targets=targets(rows))
    paths = []
    files = (("gpu-check.json", json.dumps(document, indent=1) + "\n"), ("gpu-check.md", markdown(rows, meta)))
    for name, text in files:
        path = os.path.join(out_dir, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        paths.append(path)
    return paths
