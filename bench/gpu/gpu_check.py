"""gpu_check.py — runs the GPU check's workloads under each allocator, one
fresh process per run (an allocator is chosen once per process), each with a
time limit, and rewrites the table and JSON after every run so that a run cut
short still leaves its results. Started by scripts/gpu-check.sh, which builds
libmemplan_cuda_alloc.so first; docs/gpu.md describes the output.

Order: every eager workload under every allocator (the default allocator
first, the reference of the comparisons), then a second default run of
lm_train_fixed (does the workload repeat itself bit for bit at all?), then
lm_train_fixed once more under memplan_pluggable from the plan file its first
memplan_pluggable run saved (run "warm": served from the first steps, kept
blocks in resident slots; docs/runtime.md, "Plans that outlive the
process"), then lm_train_compiled, whose first step compiles. A run starts
only while the time budget lasts; one that does not start is a row that says
so.

Files in --out (at most 8, the GPU machine's limit): gpu-check.md,
gpu-check.json, gpu-check.log (the build's and each run's last lines) and the
snapshots of the default allocator's runs, snapshot-<workload>.pickle. The
runs' own files go to --work.

--dry-run: the tiny workloads on the CPU in one process, then the repeat run,
then the same table and JSON, then a check of what was written.
"""

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402

WORKLOADS = ("lm_train_fixed", "resnet50_train", "lm_train_varlen", "bert_infer", "lm_train_compiled")
ALLOCATORS = ("default", "expandable", "async", "memplan_pluggable", "memplan_mempool")
ALLOCATOR_CONF = {"expandable": "expandable_segments:True", "async": "backend:cudaMallocAsync"}
# memplan's knobs for these runs (an environment that sets one keeps its own):
# the defaults (1 GiB of slab and of plans per stream) are sized for host
# threads, and a training step of these workloads needs several GiB. The
# slab's size is address space reserved, not memory.
MEMPLAN_ENV = {"MEMPLAN_MAX_SLAB_BYTES": str(32 << 30), "MEMPLAN_MAX_PLAN_BYTES": str(32 << 30)}
COMPILED = "lm_train_compiled"
WARM = "lm_train_fixed"  # the workload run again from its own plan file
MIN_RUN_S = 20  # a run is not started with less of the budget left
LOG_TAIL_LINES = 60


def parse_memplan_stats(text):
    """The counters libmemplan_cuda_alloc.so prints at exit with
    MEMPLAN_STATS=1 ('memplan cuda: streams 1, iterations 30, ...', the
    counters of docs/runtime.md's "Statistics"), by field name; the last such
    line, or None."""
    lines = [line for line in text.splitlines() if line.startswith("memplan cuda: streams")]
    if not lines:
        return None
    return {name.strip().replace(" ", "_"): float(value) if "." in value else int(value)
            for name, value in re.findall(r"([a-z][a-z ]*?) (\d+(?:\.\d+)?)", lines[-1][len("memplan cuda: "):])}


class Runner:
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.started = time.monotonic()
        self.meta = {"dry_run": args.dry_run, "started": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), "budget_s": args.budget_s, "run_timeout_s": args.run_timeout_s,
            "compile_timeout_s": args.compile_timeout_s, "environment": None, "planned_runs": 0, "finished_runs": 0}
        # What the memplan runs get: MEMPLAN_ENV under this environment's own MEMPLAN_* settings.
        self.memplan_env = dict(MEMPLAN_ENV, **{k: v for k, v in os.environ.items() if k.startswith("MEMPLAN_")})
        self.meta["memplan_environment"] = self.memplan_env
        self.log = open(os.path.join(args.out, "gpu-check.log"), "a")

    def say(self, text):
        print(text, flush=True)
        self.log.write(text + "\n")
        self.log.flush()

    def left_s(self):
        return self.args.budget_s - (time.monotonic() - self.started)

    def write(self, partial):
        self.meta.update(partial=partial, finished_runs=sum(1 for r in self.rows if r.get("status") in ("ok", "failed",
                                                                                                       "timed out")))
        report.write(self.args.out, self.rows, self.meta)

    def run(self, allocator, workloads, run="main", snapshot=False, timeout_s=None):
        """One process: `workloads` under `allocator`. Appends a row per workload."""
        timeout_s = min(timeout_s or self.args.run_timeout_s, self.left_s())
        if timeout_s < MIN_RUN_S:
            for w in workloads:
                self.rows.append({"workload": w, "allocator": allocator, "run": run, "status": "not run",
                                  "reason": f"the {self.args.budget_s} s budget was spent"})
            self.write(partial=True)
            return
        tag = f"{'+'.join(workloads) if len(workloads) < 3 else 'tiny'}.{allocator}.{run}"
        outs = [os.path.join(self.args.work, f"{w}.{allocator}.{run}.json") for w in workloads]
        for path in outs:
            if os.path.exists(path):
                os.remove(path)
        command = [self.args.python, os.path.join(HERE, "run_one.py"), "--allocator", allocator, "--run", run,
                   "--device", "cpu" if self.args.dry_run else "cuda"]
        if self.args.dry_run:
            command.append("--tiny")
        for w, path in zip(workloads, outs):
            command += ["--workload", w, "--out", path]
        if snapshot:
            command += ["--snapshot", os.path.join(self.args.out, f"snapshot-{workloads[0]}.pickle"),
                        "--max-entries", str(self.args.max_entries)]
        if self.args.lib:
            command += ["--lib", self.args.lib]
        # Offline: models are built from configurations, and a GPU machine may
        # have no network, where an attempt to reach a hub would only wait.
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", MEMPLAN_STATS="1",
                   CUBLAS_WORKSPACE_CONFIG=":4096:8", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   HF_HUB_DISABLE_TELEMETRY="1")
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        env.pop("PYTORCH_ALLOC_CONF", None)
        if allocator in ALLOCATOR_CONF:
            env["PYTORCH_CUDA_ALLOC_CONF"] = ALLOCATOR_CONF[allocator]
        if allocator.startswith("memplan"):
            env.update(self.memplan_env)
        if allocator == "memplan_pluggable" and workloads == [WARM]:
            plans = os.path.join(self.args.work, f"{WARM}.plans")
            if run == "main":
                env["MEMPLAN_SAVE_PLANS"] = plans
            elif run == "warm":
                why = any_program(plans)
                if why:
                    self.rows.append({"workload": WARM, "allocator": allocator, "run": run, "status": "not run",
                                      "reason": why})
                    self.write(partial=True)
                    return
                env["MEMPLAN_PLANS"] = plans
        self.say(f"gpu-check: {tag}: starting (limit {timeout_s:.0f} s, {self.left_s():.0f} s of the budget left)")
        log_path = os.path.join(self.args.work, f"{tag}.log")
        start = time.monotonic()
        with open(log_path, "w") as log:
            # Its own process group: a timed-out run is killed with the
            # compile workers it started.
            child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            try:
                rc = child.wait(timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                rc = child.wait()
                timed_out = True
        wall = time.monotonic() - start
        with open(log_path) as f:
            text = f.read()
        tail = text.splitlines()[-LOG_TAIL_LINES:]
        self.log.write("\n".join(f"  | {line}" for line in tail) + "\n")
        stats = parse_memplan_stats(text)
        for w, path in zip(workloads, outs):
            if os.path.exists(path):
                with open(path) as f:
                    row = json.load(f)
                if rc != 0 and row.get("status") == "ok":  # the run finished, its process did not end cleanly
                    row["exit_note"] = ("killed at its time limit" if timed_out
                                        else f"its process exited with status {rc}")
            else:
                status = "timed out" if timed_out else "failed"
                last = next((line for line in reversed(tail) if line.strip()), "")
                row = {"workload": w, "allocator": allocator, "run": run, "status": status,
                       "reason": f"after {wall:.0f} s" if timed_out else f"exit status {rc}: {last[:200]}"}
            if stats and allocator.startswith("memplan"):
                row["memplan"] = stats
            row["wall_s"] = round(wall, 1)
            if self.meta["environment"] is None and row.get("environment"):
                self.meta["environment"] = row["environment"]
            self.rows.append(row)
            self.say(f"gpu-check: {w} under {allocator} ({run}): {row['status']}"
                     + (f" ({row['reason']})" if row.get("reason") else "") + f", {wall:.0f} s")
        self.write(partial=True)


def any_program(path):
    """Makes the plan file at `path` one for any program: its `program`
    line becomes `program -` (the warm run's command line differs from the
    saving run's in its --run and --out arguments, and a plan file names
    the command line that learnt it). None when done, else why not."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError as e:
        return f"no plan file from the first memplan_pluggable run ({e.strerror})"
    for i, line in enumerate(lines[:4]):
        if line.startswith("program "):
            lines[i] = "program -"
            with open(path, "w") as f:
                f.write("\n".join(lines))
            return None
    return f"{path} has no program line: not a plan file"


def plan(args):
    """(allocator, workloads, run, snapshot, timeout_s) for each process, in order."""
    if args.dry_run:
        return [("default", list(args.workloads), "main", False, args.run_timeout_s),
                ("default", ["lm_train_fixed"], "repeat", False, args.run_timeout_s)]
    runs = []
    eager = [w for w in args.workloads if w != COMPILED]
    for w in eager:
        for a in args.allocators:
            runs.append((a, [w], "main", a == "default", args.run_timeout_s))
    if "lm_train_fixed" in eager and "default" in args.allocators:
        runs.append(("default", ["lm_train_fixed"], "repeat", False, args.run_timeout_s))
    if WARM in eager and "memplan_pluggable" in args.allocators:
        runs.append(("memplan_pluggable", [WARM], "warm", False, args.run_timeout_s))
    if COMPILED in args.workloads:
        for a in args.allocators:
            runs.append((a, [COMPILED], "main", a == "default", args.compile_timeout_s))
    return runs


def check_dry_run(args, rows):
    """What the dry run must have produced; a list of problems."""
    problems = []
    with open(os.path.join(args.out, "gpu-check.json")) as f:
        document = json.load(f)
    with open(os.path.join(args.out, "gpu-check.md")) as f:
        table = f.read()
    if document.get("schema") != report.SCHEMA or len(document.get("rows", [])) != len(rows):
        problems.append("gpu-check.json does not hold every row")
    for row in document["rows"]:
        label = f"{row['workload']} ({row.get('run')})"
        if f"| {row['workload']} |" not in table:
            problems.append(f"{label}: no line in gpu-check.md")
        if row["status"] == "skipped" and row["workload"] == COMPILED:
            continue  # torch.compile needs PyTorch >= 2.0; the reason is in the row
        if row["status"] != "ok":
            problems.append(f"{label}: {row['status']}: {row.get('reason')}")
            continue
        if not (row["steps"] == len(row["values"]) == len(row["step_ms"]) > 0):
            problems.append(f"{label}: {row['steps']} steps, {len(row['values'])} values, {len(row['step_ms'])} times")
        if row["step_ms_median"] is None or row["step_ms_median"] <= 0:
            problems.append(f"{label}: no step time")
    repeats = [r for r in document["rows"] if r.get("run") == "repeat"]
    if not repeats or repeats[0].get("compare") != "identical":
        problems.append("the repeated default run of lm_train_fixed does not compare identical: "
                        + str(repeats[0].get("compare") if repeats else "missing"))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True, help="folder for the runs' own JSON and logs")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--lib", help="libmemplan_cuda_alloc.so")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--allocators", default=",".join(ALLOCATORS))
    parser.add_argument("--budget-s", type=float, default=480)
    parser.add_argument("--run-timeout-s", type=float, default=90)
    parser.add_argument("--compile-timeout-s", type=float, default=150)
    parser.add_argument("--max-entries", type=int, default=8000)
    args = parser.parse_args()
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.allocators = [a for a in args.allocators.split(",") if a]
    for w in args.workloads:
        if w not in WORKLOADS:
            parser.error(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    for a in args.allocators:
        if a not in ALLOCATORS:
            parser.error(f"unknown allocator {a!r}; known: {', '.join(ALLOCATORS)}")
    if not args.dry_run and "default" not in args.allocators:
        parser.error("the default allocator is the reference of every comparison: keep it in --allocators")
    if args.dry_run and "lm_train_fixed" not in args.workloads:
        parser.error("the dry run repeats lm_train_fixed: keep it in --workloads")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)

    runner = Runner(args)
    runs = plan(args)
    runner.meta["planned_runs"] = sum(len(r[1]) for r in runs)
    for allocator, workloads, run, snapshot, timeout_s in runs:
        runner.run(allocator, workloads, run, snapshot, timeout_s)
    runner.write(partial=False)
    counts = {}
    for row in runner.rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    runner.say("gpu-check: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" in {args.out}")
    if args.dry_run:
        problems = check_dry_run(args, runner.rows)
        for p in problems:
            runner.say(f"gpu-check: dry run: {p}")
        if problems:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
