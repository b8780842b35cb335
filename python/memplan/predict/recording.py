"""recording.py — `memplan.predict.recording()`: record a step on the meta
device and say what it needs on the GPU.

    with memplan.predict.recording(device="cuda") as rec:
        step()                      # code written for a GPU, unchanged
    rec.snapshot("p.pickle")        # PyTorch's snapshot format
    print(rec.summary(capacity="24GiB"))

The recording's peak allocated is exact for what it records (recorder.py);
peak reserved bytes come from memplan's allocator models over the written
snapshot (analysis.py).
"""
import contextlib
import os
import tempfile
import warnings

import torch

from . import analysis, cuda_ops, cuda_rules, snapshot_writer
from .fake_cuda import fake_cuda, patched
from .recorder import Recorder
from .units import parse_bytes


class Recording:
    """What a recording saw. `device_index`: the CUDA device number the
    requests are written for; `markers`: device-event counts at the end of
    each detected iteration (optimizer.step())."""

    def __init__(self, recorder, device_index=0):
        self.recorder = recorder
        self.device_index = device_index
        self.markers = []
        self.on_step = None  # called with the number of iterations after each mark
        self._analysis = None

    # ---- the events ----------------------------------------------------------------------
    def device_events(self):
        """The device's requests in order as (action, key, nbytes, stack):
        storages that existed before the recording first (allocated before
        the window, no frames), then the recorded ones."""
        # A storage key (the StorageImpl's address) can be reused: a storage
        # first seen as an input after an earlier one at its address was
        # freed is moved to the front under a key of its own, so the frees
        # that follow match their allocations.
        before, during, alias = [], [], {}
        for e in self.recorder.events:
            if e.device != "cuda":
                continue
            if e.before_window:
                alias[e.key] = ("before the window", len(before))
                before.append((e.action, alias[e.key], e.nbytes, e.stack))
            elif e.action == "free" and e.key in alias:
                during.append((e.action, alias.pop(e.key), e.nbytes, e.stack))
            else:
                alias.pop(e.key, None)
                during.append((e.action, e.key, e.nbytes, e.stack))
        return before + during

    def _curve_peak(self, device):
        current = peak = 0
        for e in sorted(self.recorder.events, key=lambda e: not e.before_window):
            if e.device == device:
                current += e.nbytes if e.action == "alloc" else -e.nbytes
                peak = max(peak, current)
        return peak

    @property
    def peak_allocated_bytes(self):
        """The most device bytes live at once (requested sizes)."""
        return self._curve_peak("cuda")

    @property
    def host_peak_bytes(self):
        """The most host bytes live at once (meta storages on logical "cpu")."""
        return self._curve_peak("cpu")

    @property
    def placeholder_reads(self):
        return self.recorder.placeholder_reads

    def mark(self):
        """Ends an iteration (called after each optimizer.step()). A marker
        counts the device events recorded so far, those from before the
        window apart: they go first in the file (device_events)."""
        count = sum(1 for e in self.recorder.events if e.device == "cuda" and not e.before_window)
        if not self.markers or self.markers[-1] != count:
            self.markers.append(count)
            if self.on_step is not None:
                self.on_step(len(self.markers))

    # ---- the answer ----------------------------------------------------------------------
    def snapshot(self, path, alloc_conf=None):
        """Writes the recording as a PyTorch CUDA memory snapshot pickle;
        `alloc_conf`: PYTORCH_CUDA_ALLOC_CONF for allocator_settings (default:
        the environment's). Returns the path."""
        events = self.device_events()
        before = sum(1 for e in self.recorder.events if e.device == "cuda" and e.before_window)
        data = snapshot_writer.snapshot_dict(events, self.recorder.stacks, [before + m for m in self.markers],
                                             self.device_index, alloc_conf)
        snapshot_writer.write_snapshot(os.fspath(path), data)
        return path

    def analysis(self):
        """memplan's analysis of the written snapshot (the dict of `memplan
        snapshot --json`), computed once."""
        if self._analysis is None:
            with tempfile.TemporaryDirectory() as folder:
                path = self.snapshot(os.path.join(folder, "predicted.pickle"))
                self._analysis = analysis.analyze_snapshot(path)
        return self._analysis

    def summary(self, capacity=None):
        """A dict: per device peak_allocated_bytes (the recording),
        peak_reserved_bytes (PyTorch's caching allocator as configured),
        expandable_segments_peak_reserved_bytes, arena_bytes (memplan's plan),
        and with `capacity` (bytes or '24GiB') fits and headroom_bytes (capacity
        − peak reserved); host_peak_bytes; placeholder_reads; operators."""
        budget = None if capacity is None else parse_bytes(capacity)
        devices = []
        if self.peak_allocated_bytes > 0:
            for device in self.analysis()["devices"]:
                row = analysis.device_numbers(device)
                if budget is not None:
                    row["capacity_bytes"] = budget
                    row["fits"] = row["peak_reserved_bytes"] <= budget
                    row["headroom_bytes"] = budget - row["peak_reserved_bytes"]
                devices.append(row)
        workspaces = [r for r in self.recorder.rules if isinstance(r, cuda_rules.CublasWorkspaces)]
        rules = {"cublas_workspace_bytes": workspaces[0].bytes, "cublas_workspaces": len(workspaces[0].allocated)} \
            if workspaces else {}
        return {"devices": devices, "host_peak_bytes": self.host_peak_bytes, "cuda_rules": rules,
                "placeholder_reads": self.placeholder_reads, "operators": self.recorder.operators,
                "iterations": len(self.markers)}


@contextlib.contextmanager
def recording(device="cuda", fake=True, capacity=None, gpu=None):
    """Records everything run inside on the meta device. device: "cuda" or
    "cuda:N" (the device the requests are written for). fake: make the code
    see a CUDA device (fake_cuda.py); without it, only meta tensors the code
    makes itself are recorded, as the device's. capacity: what
    torch.cuda.get_device_properties() and mem_get_info() report (default:
    the GPU's, else 80 GiB). gpu: "h100" or "a100" adds the CUDA rules of
    cuda_rules.py for that GPU (the cuBLAS workspaces, sized by
    CUBLAS_WORKSPACE_CONFIG); None records the requests alone."""
    target = torch.device(device)
    if target.type != "cuda":
        raise ValueError(f"recording(device={device!r}): only a CUDA device can be predicted")
    spec = cuda_rules.gpu_spec(gpu) if gpu is not None else None
    recorder = Recorder()
    if spec is not None:
        recorder.rules.append(cuda_rules.CublasWorkspaces.from_environment(gpu))
        recorder.autocast = cuda_ops.Autocast(recorder)
        recorder.rules.append(cuda_ops.IndexBackwardInPlace())
    rec = Recording(recorder, target.index or 0)
    with contextlib.ExitStack() as stack:
        if fake:
            default_capacity = spec["memory"] if spec else 80 << 30
            stack.enter_context(fake_cuda(recorder, device_count=(target.index or 0) + 1, gpu=spec,
                                          capacity_bytes=parse_bytes(capacity or default_capacity)))
        stack.enter_context(patched(*cuda_rules.engine_patch(recorder)))
        stack.enter_context(recorder)
        stack.enter_context(_step_marks(rec))
        yield rec
        recorder.check_frees()
    if recorder.placeholder_reads:
        warnings.warn(f"memplan.predict: values are not computed: {recorder.placeholder_reads} reads of tensor "
                      f"values (.item(), float(), bool(), .tolist(), .numpy()) returned placeholders",
                      stacklevel=3)


@contextlib.contextmanager
def _step_marks(rec):
    """Marks an iteration after every optimizer.step(): the step of every
    torch.optim.Optimizer subclass defined now is wrapped (torch 1.13 has no
    global step hook), and restored on exit."""
    originals = {}
    for cls in _optimizer_classes():
        step = cls.__dict__.get("step")
        if step is None:
            continue

        def wrapped(self, *args, __step=step, **kwargs):
            result = __step(self, *args, **kwargs)
            rec.mark()
            return result
        originals[cls] = step
        cls.step = wrapped
    try:
        yield
    finally:
        for cls, step in originals.items():
            cls.step = step


def _optimizer_classes():
    seen, todo = [], [torch.optim.Optimizer]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen
