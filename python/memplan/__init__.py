"""memplan: plan the memory of deep-learning tensors from Python.

The C++ library's binding (memplan._memplan) plus what is easier in Python:
running a program under memplan's tracer or serving drop-in. The guide, with
examples, is docs/python.md.

    import memplan
    problem = memplan.Problem([(0, 2, 64), (1, 3, 32), (2, 4, 64)])
    result = memplan.plan(problem, "greedy_by_size")
    print(result.verdict, result.arena, result.offsets)
    print(memplan.validate(problem, result))      # ok
"""
import os
import subprocess
import sys

from ._memplan import *  # noqa: F401,F403  (the binding's public names)
from ._memplan import __version__, _build_library_paths, _snapshot_from_pickle_bytes  # noqa: F401

# memplan.predict: the meta-device predictor (a subpackage, light until used);
# the module is callable, so memplan.predict(model, inputs=...) is still the
# binding's ONNX prediction that the star import above brought in.
# (`from . import predict` would find the binding's function and stop there.)
import importlib  # noqa: E402

predict = importlib.import_module(".predict", __name__)  # noqa: F811

_LIBRARY_FILES = {"trace": "libmemplan_trace.so", "replay": "libmemplan_replay.so"}


def library_path(kind, env=None):
    """The path of memplan's preload library `kind`: 'trace' (the tracer,
    libmemplan_trace.so) or 'replay' (the serving drop-in,
    libmemplan_replay.so).

    Looked for, in order: the variable MEMPLAN_TRACE_LIBRARY or
    MEMPLAN_REPLAY_LIBRARY of `env` (default: os.environ); the package's own
    folder (where `pip install .` puts it); the library folders of the prefix
    this package is installed under (<prefix>/lib, lib64, lib/<multiarch>); the
    build tree the module was built in. Raises FileError listing where it looked."""
    if kind not in _LIBRARY_FILES:
        raise InputError(f"library kind {kind!r}: expected 'trace' or 'replay'")  # noqa: F405
    name = _LIBRARY_FILES[kind]
    override = (os.environ if env is None else env).get(f"MEMPLAN_{kind.upper()}_LIBRARY")
    if override:
        if not os.path.isfile(override):
            raise FileError(f"MEMPLAN_{kind.upper()}_LIBRARY={override}: no such file")  # noqa: F405
        return override
    package = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(package, name)]
    # <prefix>/lib/python3.X/dist-packages/memplan/__init__.py -> <prefix>
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(package))))
    multiarch = getattr(sys.implementation, "_multiarch", "") or ""
    for folder in ("lib", "lib64", os.path.join("lib", multiarch) if multiarch else None):
        if folder:
            candidates.append(os.path.join(prefix, folder, name))
    if _build_library_paths.get(kind):
        candidates.append(_build_library_paths[kind])
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise FileError(f"{name} not found; looked in: {', '.join(candidates)} "  # noqa: F405
                    f"(set MEMPLAN_{kind.upper()}_LIBRARY to its path)")


def preload_environment(kind, env=None, **knobs):
    """A copy of `env` (default: os.environ) with memplan's library `kind`
    ('trace' or 'replay') prepended to LD_PRELOAD, and knobs set as
    MEMPLAN_<NAME> variables (trace_file='x.trace' -> MEMPLAN_TRACE_FILE=x.trace,
    stats=1 -> MEMPLAN_STATS=1). For subprocess.run(..., env=...)."""
    result = dict(os.environ if env is None else env)
    library = library_path(kind, result)
    preload = result.get("LD_PRELOAD", "")
    result["LD_PRELOAD"] = library + (":" + preload if preload else "")
    for name, value in knobs.items():
        result["MEMPLAN_" + name.upper()] = str(value)
    return result


def trace(command, output, *, mark_signal=None, env=None, check=True, **run_options):
    """Runs `command` (a list, as for subprocess.run) with the tracer
    preloaded, as `memplan trace --output OUTPUT -- COMMAND` does, and returns
    the Trace it wrote. The program marks its iterations with memplan.mark().

    mark_signal: a signal that also marks (USR1, USR2, HUP, WINCH or a number),
    for programs that cannot call mark(). check: raise
    subprocess.CalledProcessError when the command fails (it still leaves its
    trace). Other keyword arguments go to subprocess.run."""
    output = os.path.abspath(os.fspath(output))
    knobs = {"trace_file": output}
    if mark_signal is not None:
        knobs["mark_signal"] = mark_signal
    environment = preload_environment("trace", env, **knobs)
    # Only the command itself is traced, not what it starts: the tracer sets
    # MEMPLAN_TRACE_PID to the first process it finds itself in.
    environment.pop("MEMPLAN_TRACE_PID", None)
    completed = subprocess.run(command, env=environment, **run_options)
    if check and completed.returncode != 0:
        raise subprocess.CalledProcessError(completed.returncode, command, completed.stdout, completed.stderr)
    return read_trace(output)  # noqa: F405


def snapshot_problem(snapshot, device=0):
    """The window of a PyTorch CUDA memory snapshot as a memplan.Problem, from
    a live snapshot (the dict torch.cuda.memory._snapshot() returns) or the
    bytes of one, without writing a file:

        problem = memplan.snapshot_problem(torch.cuda.memory._snapshot())
        print(memplan.plan(problem).arena)

    The dict is pickled with Python's pickle and read back as plain data, as
    read_snapshot reads a file (docs/snapshots.md: each block is a buffer from
    its alloc to its free, blocks from before the window live from its start).
    `device`: the device whose window to take. For the rest of what a snapshot
    says (peaks, live blocks, iterations), call read_snapshot or
    _snapshot_from_pickle_bytes."""
    import pickle

    data = bytes(snapshot) if isinstance(snapshot, (bytes, bytearray)) else pickle.dumps(snapshot, protocol=4)
    return _snapshot_from_pickle_bytes(data, device)["devices"][0]["problem"]
