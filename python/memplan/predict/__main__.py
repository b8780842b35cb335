"""python3 -m memplan.predict [options] SCRIPT ARGS — run a script written for
a GPU, unchanged, on the meta device and predict its GPU memory.

Options: --gpu h100|a100 (add that GPU's CUDA rules), --capacity BYTES (say whether it fits and the headroom), --json
(one JSON object on stdout), --output FILE (write the predicted snapshot),
--steps N (stop after N iterations; an iteration ends at each
optimizer.step()), --device cuda:N, --sweep NAME=V1,V2 (one prediction per
value, `{NAME}` in the command replaced by it, in this process one after
the other: a table and, with --capacity, the largest value that fits).
Exit status: 0 success (fits, or no capacity; a sweep: some value fits), 2
does not fit the capacity, 1 the script cannot be predicted (the message
names the operator and the script's line) or failed.
"""
import argparse
import contextlib
import json
import os
import runpy
import sys
import warnings


class _StopAfterSteps(BaseException):
    """Ends the script after --steps iterations (a BaseException, so that the
    script's own `except Exception` does not catch it)."""


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="python3 -m memplan.predict",
                                     description="Predict a PyTorch script's GPU memory without a GPU.")
    parser.add_argument("--capacity", help="the GPU's memory, e.g. 24GiB: fits or not, and the headroom")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--output", help="write the predicted CUDA memory snapshot (a pickle) here")
    parser.add_argument("--steps", type=int, help="stop after N iterations (optimizer.step() calls)")
    parser.add_argument("--device", default="cuda", help="the CUDA device the script is predicted for")
    parser.add_argument("--gpu", help="h100 or a100: add that GPU's CUDA rules (the cuBLAS workspaces)")
    parser.add_argument("--sweep", metavar="NAME=V1,V2,...",
                        help="predict once per value, with {NAME} in the command replaced by it")
    parser.add_argument("script", help="the Python script, run as __main__")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    options = parser.parse_args(argv)
    if options.steps is not None and options.steps < 1:
        parser.error("--steps: expected a positive number")
    return options


def _run_script(options, script, args, rec):
    def stop(iterations):
        if options.steps is not None and iterations >= options.steps:
            raise _StopAfterSteps()
    rec.on_step = stop
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script] + args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except _StopAfterSteps:
        pass
    except SystemExit as exit:
        if exit.code not in (0, None):
            raise
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _gib(n):
    """Bytes for people: the largest binary unit that keeps the number >= 1."""
    value, unit = float(n), "B"
    for name in ("KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024:
            break
        value, unit = value / 1024, name
    return f"{value:.2f} {unit} ({n:,} bytes)" if unit != "B" else f"{n:,} bytes"


def _print_text(options, summary):
    print(f"memplan predict: {options.script}: {summary['operators']} operators, "
          f"{summary['iterations']} iterations marked")
    for d in summary["devices"]:
        print(f"cuda:{d['device']}: peak allocated   {_gib(d['peak_allocated_bytes'])}")
        print(f"        peak reserved    {_gib(d['peak_reserved_bytes'])} (caching allocator)")
        print(f"                         {_gib(d['expandable_segments_peak_reserved_bytes'])} (expandable segments)")
        print(f"        memplan plan     {_gib(d['arena_bytes'])} (arena)")
        if "fits" in d:
            verdict = "fits" if d["fits"] else "does NOT fit"
            print(f"        capacity {_gib(d['capacity_bytes'])}: {verdict}, headroom {_gib(d['headroom_bytes'])}")
    if not summary["devices"]:
        print("cuda: nothing allocated on the device")
    print(f"host: peak {_gib(summary['host_peak_bytes'])} (not on the GPU)")
    if summary["cuda_rules"]:
        rules = summary["cuda_rules"]
        print(f"cuBLAS: {rules['cublas_workspaces']} workspaces of {_gib(rules['cublas_workspace_bytes'])} included")
    if summary["placeholder_reads"]:
        print(f"note: values are not computed: {summary['placeholder_reads']} reads of tensor values returned "
              f"placeholders")


def _predict(options, script, args, capacity):
    """One prediction: the summary dict, or PredictionError."""
    from .recording import recording
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="memplan.predict: values are not computed")
        # With --json, stdout is the JSON object alone: the script prints to stderr.
        output = contextlib.redirect_stdout(sys.stderr) if options.json else contextlib.nullcontext()
        with output, recording(device=options.device, gpu=options.gpu) as rec:
            _run_script(options, script, args, rec)
    if options.output:
        rec.snapshot(options.output)
    summary = rec.summary(capacity=capacity)
    summary["script"] = script
    summary["snapshot"] = options.output
    return summary


def _fits(summary):
    return all(d.get("fits", True) for d in summary["devices"])


def _parse_sweep(text, options):
    """--sweep NAME=V1,V2,...: (name, values); `{NAME}` must be in the command."""
    name, _, values = text.partition("=")
    values = [v for v in values.split(",") if v]
    if not name or not values:
        raise ValueError(f"--sweep {text}: expected NAME=V1,V2,...")
    if not any("{" + name + "}" in word for word in [options.script] + options.args):
        raise ValueError(f"--sweep {text}: the command has no {{{name}}} to substitute")
    return name, values


def _largest(values):
    """The largest of `values`: numerically when all are numbers, else the last given."""
    try:
        return max(values, key=float)
    except ValueError:
        return values[-1]


def _sweep(options, name, values, capacity):
    from .recorder import PredictionError
    rows = []
    for value in values:
        substitute = lambda word: word.replace("{" + name + "}", value)  # noqa: E731
        try:
            summary = _predict(options, substitute(options.script), [substitute(a) for a in options.args], capacity)
            rows.append({"value": value, **summary})
        except PredictionError as error:
            rows.append({"value": value, "error": str(error)})
    fitting = [r["value"] for r in rows if "error" not in r and capacity is not None and _fits(r)]
    result = {"sweep": name, "results": rows, "largest_fitting": _largest(fitting) if fitting else None}
    if options.json:
        print(json.dumps(result, indent=1))
    else:
        _print_sweep(result, capacity)
    return 2 if capacity is not None and not fitting else 0


def _print_sweep(result, capacity):
    print(f"{result['sweep']:>10}  {'peak allocated':>16}  {'peak reserved':>16}  {'expandable':>16}  "
          f"{'plan arena':>16}  {'fits' if capacity is not None else ''}")
    for row in result["results"]:
        if "error" in row:
            print(f"{row['value']:>10}  cannot predict: {row['error']}")
            continue
        for d in row["devices"] or [{}]:
            cells = [d.get(k, 0) for k in ("peak_allocated_bytes", "peak_reserved_bytes",
                                           "expandable_segments_peak_reserved_bytes", "arena_bytes")]
            verdict = ("yes" if d.get("fits") else "no") if capacity is not None else ""
            print(f"{row['value']:>10}  " + "  ".join(f"{c:>16,}" for c in cells) + f"  {verdict}")
    if capacity is not None:
        print(f"largest {result['sweep']} that fits {capacity:,} bytes: {result['largest_fitting']}")


def main(argv=None):
    options = _arguments(sys.argv[1:] if argv is None else argv)
    # The options are checked before torch is imported (seconds).
    from .cuda_rules import gpu_spec
    from .units import parse_bytes
    try:
        capacity = None if options.capacity is None else parse_bytes(options.capacity)
        if options.gpu is not None:
            gpu_spec(options.gpu)
        sweep = _parse_sweep(options.sweep, options) if options.sweep else None
        if sweep and options.output:
            raise ValueError("--output writes one snapshot; it cannot be combined with --sweep")
    except ValueError as error:
        print(f"memplan predict: {error}", file=sys.stderr)
        return 1
    if sweep:
        return _sweep(options, *sweep, capacity)
    from .recorder import PredictionError
    try:
        summary = _predict(options, options.script, options.args, capacity)
    except PredictionError as error:
        print(f"memplan predict: cannot predict {options.script}: {error}", file=sys.stderr)
        return 1
    if options.json:
        print(json.dumps(summary, indent=1))
    else:
        _print_text(options, summary)
    return 0 if _fits(summary) else 2


if __name__ == "__main__":
    sys.exit(main())
