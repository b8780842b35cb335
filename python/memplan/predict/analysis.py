"""analysis.py — memplan's analysis of a predicted snapshot, and the
prediction's numbers read from it.

`memplan.analyze_snapshot(path)` returns the document of `memplan snapshot
--json` (docs/snapshots.md): `recorded` is the recording itself (its peak
allocated is the prediction's), `simulated` the allocator models replaying
its requests from an empty start (their peak reserved bytes are the
prediction's reserved bytes), `planned` memplan's plan of the window.
"""
import os


class AnalysisError(RuntimeError):
    """An allocator model failed on the predicted requests."""


def analyze_snapshot(path):
    import memplan
    return memplan.analyze_snapshot(os.fspath(path))


def _simulated(device, model):
    entry = device["simulated"][model]
    if "error" in entry:
        raise AnalysisError(f"the {model} model failed on the prediction: {entry['error']}")
    return entry["peak_reserved_bytes"]


def device_numbers(device):
    """The prediction's numbers for one device of the analysis."""
    return {"device": device["device"],
            "peak_allocated_bytes": device["recorded"]["peak_allocated_bytes"],
            "peak_reserved_bytes": _simulated(device, "caching"),
            "expandable_segments_peak_reserved_bytes": _simulated(device, "expandable_segments"),
            "arena_bytes": device["planned"]["arena_bytes"],
            "warnings": list(device.get("warnings", []))}
