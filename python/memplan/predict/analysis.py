"""analysis.py — memplan's analysis of a predicted snapshot: the one place
that asks for it, so that the library call and the CLI are interchangeable.

`analyze_snapshot(path)` returns the dict of `memplan snapshot --json`
(docs/snapshots.md): memplan.analyze_snapshot when the module has it, else
the `memplan` command (MEMPLAN_CLI, else the build tree's `memplan` beside
this package's build folder, else `memplan` on PATH).
"""
import json
import os
import shutil
import subprocess


class AnalysisError(RuntimeError):
    """memplan could not analyse the predicted snapshot."""


def _cli():
    override = os.environ.get("MEMPLAN_CLI")
    if override:
        return override
    # <build>/python/memplan/predict/analysis.py -> <build>/memplan
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    candidate = os.path.join(build, "memplan")
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("memplan")
    if found:
        return found
    raise AnalysisError("the memplan command was not found (set MEMPLAN_CLI to its path)")


def analyze_snapshot(path):
    import memplan
    library = getattr(memplan, "analyze_snapshot", None)
    if library is not None:
        return library(os.fspath(path))
    completed = subprocess.run([_cli(), "snapshot", os.fspath(path), "--json"], capture_output=True, text=True)
    if completed.returncode != 0:
        raise AnalysisError(f"memplan snapshot {path}: {completed.stderr.strip()}")
    return json.loads(completed.stdout)


def _simulated(device, model):
    entry = device.get("simulated", {}).get(model, {})
    if "error" in entry:
        raise AnalysisError(f"the {model} model failed on the prediction: {entry['error']}")
    return entry.get("peak_reserved_bytes")


def device_numbers(device):
    """The prediction's numbers for one device of the analysis."""
    return {"device": device["device"],
            "peak_allocated_bytes": device["recorded"]["peak_allocated_bytes"],
            "peak_reserved_bytes": _simulated(device, "caching"),
            "expandable_segments_peak_reserved_bytes": _simulated(device, "expandable_segments"),
            "arena_bytes": device["planned"]["arena_bytes"],
            "warnings": list(device.get("warnings", []))}
