"""fake_cuda.py — makes a program written for a GPU see a CUDA device that is
really the meta device, so that it runs unchanged under the Recorder.

What the program sees (everything is restored on exit):
- `torch.cuda`: is_available() True; device_count, current_device,
  set_device, device(...), synchronize, get_device_name/capability/properties,
  streams and events (no-ops), seeds, empty_cache; memory_allocated,
  max_memory_allocated, memory_stats, mem_get_info answered from the
  recording (memory_reserved answers the allocated bytes: reserved bytes are
  the allocator models' prediction, after the run).
- Factories (`torch.zeros`, `torch.randn`, ... with or without `device=`)
  make meta tensors: "cuda" (or "meta") makes the storage's logical device
  "cuda", "cpu" or no device makes it "cpu" (host bytes, counted apart). A
  factory result of at most one element with no device or "cpu" stays a real
  host tensor: torch's own scalar bookkeeping (an optimizer's step counter,
  `torch.tensor(0.)`) keeps its value.
- `.cuda()`, `.cpu()`, `.to(device)`, `nn.Module.cuda()/.to()`: a copy of the
  storage on the other logical device (a meta clone, differentiable as the
  real copy is); no copy when it is already there.
- Reads of values (`.item()`, `float(t)`, `bool(t)`, `.tolist()`,
  `.numpy()`) return placeholders (0, 0.0, False, zeros) and are counted.
- DataLoaders load in the program's process (num_workers is 0).
- Mixed precision enabled for CUDA (`torch.autocast("cuda")`,
  `torch.cuda.amp.autocast`, `GradScaler`) is a PredictionError naming the
  line: not predicted yet.

A tensor's `.device` still reads `meta`; `torch.zeros(..., device=t.device)`
is taken as the device's.
"""
import contextlib
import types

import torch
from torch.overrides import TorchFunctionMode

_FACTORIES = {torch.zeros, torch.ones, torch.empty, torch.full, torch.rand, torch.randn, torch.randint,
              torch.randperm, torch.arange, torch.range, torch.linspace, torch.logspace, torch.eye, torch.tensor,
              torch.as_tensor, torch.empty_strided, torch.scalar_tensor, torch.normal, torch.tril_indices,
              torch.triu_indices}

# A tensor of at most this many elements created on the host stays real.
_REAL_HOST_ELEMENTS = 1


def _device_type(device):
    if device is None:
        return None
    if isinstance(device, int):
        return "cuda"
    return torch.device(device).type


def _logical(device_type):
    return "cpu" if device_type in (None, "cpu") else "cuda"


class FakeCuda(TorchFunctionMode):
    """The torch-function half: devices of factories and copies, reads of
    values. `recorder`: the Recorder whose logical devices it sets."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _FACTORIES:
            return self._factory(func, args, kwargs)
        handler = _METHODS.get(func)
        if handler is not None:
            return handler(self, *args, **kwargs)
        return func(*args, **kwargs)

    @contextlib.contextmanager
    def on(self, device):
        self.recorder.push_device(device)
        try:
            yield
        finally:
            self.recorder.pop_device()

    def _factory(self, func, args, kwargs):
        kind = _device_type(kwargs.get("device"))
        logical = _logical(kind)
        kwargs["device"] = "meta"
        kwargs.pop("pin_memory", None)
        with self.on(logical):
            out = func(*args, **kwargs)
        if logical == "cpu" and isinstance(out, torch.Tensor) and out.numel() <= _REAL_HOST_ELEMENTS:
            kwargs["device"] = "cpu"
            out = func(*args, **kwargs)
        return out

    def copy_to(self, tensor, logical, dtype=None, memory_format=torch.preserve_format):
        """`tensor` on the logical device `logical`: itself when it is there
        already (and of `dtype`), else a new storage there."""
        if self.recorder.logical_device(tensor) == logical:  # a real host tensor stays one on the host
            return tensor if dtype is None else tensor.to(dtype=dtype)
        with self.on(logical):
            if tensor.device.type != "meta":
                return tensor.to(device="meta", dtype=dtype, memory_format=memory_format)
            if dtype is not None and dtype != tensor.dtype:
                return tensor.to(dtype=dtype, memory_format=memory_format)
            return tensor.clone(memory_format=memory_format)

    def placeholder(self, value):
        self.recorder.placeholder_reads += 1
        return value


def _cuda(self, tensor, device=None, non_blocking=False, memory_format=torch.preserve_format):
    return self.copy_to(tensor, "cuda", memory_format=memory_format)


def _cpu(self, tensor, memory_format=torch.preserve_format):
    return self.copy_to(tensor, "cpu", memory_format=memory_format)


def _to(self, tensor, *args, **kwargs):
    kwargs.pop("copy", None)
    device, dtype, _, memory_format = torch._C._nn._parse_to(*args, **kwargs)
    memory_format = memory_format or torch.preserve_format
    if device is None:
        return tensor.to(dtype=dtype, memory_format=memory_format) if dtype is not None else tensor
    return self.copy_to(tensor, _logical(device.type), dtype, memory_format)


def _tolist(self, tensor):
    if tensor.device.type != "meta":
        return tensor.tolist()

    def zeros(shape):
        if not shape:
            return _zero(tensor.dtype)
        return [zeros(shape[1:]) for _ in range(shape[0])]
    return self.placeholder(zeros(list(tensor.shape)))


def _numpy(self, tensor, *args, **kwargs):
    if tensor.device.type != "meta":
        return tensor.numpy(*args, **kwargs)
    return self.placeholder(torch.zeros(tensor.shape, dtype=tensor.dtype, device="cpu").numpy())


def _zero(dtype):
    if dtype == torch.bool:
        return False
    return 0.0 if dtype.is_floating_point else 0


def _itself(self, tensor, *args, **kwargs):
    return tensor


_METHODS = {
    torch.Tensor.cuda: _cuda,
    torch.Tensor.cpu: _cpu,
    torch.Tensor.to: _to,
    torch.Tensor.tolist: _tolist,
    torch.Tensor.numpy: _numpy,
    torch.Tensor.pin_memory: _itself,
}


# ---- torch.cuda ----------------------------------------------------------------------------

class _Stream:
    """A CUDA stream that orders nothing (meta work has no time)."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device = torch.device("cuda", 0)
        self.cuda_stream = 0
        self.priority = priority

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        return event or _Event()

    def query(self):
        return True

    def synchronize(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        pass

    def record(self, stream=None):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def synchronize(self):
        pass

    def elapsed_time(self, end_event):
        return 0.0


class FakeCudaModule:
    """The replacements for torch.cuda's functions, answering from
    `recorder`; `device_count` devices, the last (the one predicted for) current."""

    def __init__(self, recorder, device_count=1, capacity_bytes=80 << 30, gpu=None):
        self.recorder = recorder
        self.count = device_count
        self.current = device_count - 1  # the device predicted for, the last one there is
        self.capacity = capacity_bytes
        self.name = gpu["name"] + " (memplan prediction, meta)" if gpu else "memplan predicted GPU (meta)"
        self.capability = gpu["capability"] if gpu else (9, 0)

    def _allocated(self, device=None):
        # Frees since the last operator (a tensor dropped by the program) count now.
        self.recorder.check_frees()
        return self.recorder.current["cuda"]

    def _max_allocated(self, device=None):
        return self.recorder.peak["cuda"]

    def _reset_peak(self, device=None):
        self.recorder.peak["cuda"] = self.recorder.current["cuda"]

    def _set_device(self, device):
        index = device if isinstance(device, int) else torch.device(device).index
        self.current = index or 0

    def _memory_stats(self, device=None):
        allocated, peak = self._allocated(), self._max_allocated()
        return {"allocated_bytes.all.current": allocated, "allocated_bytes.all.peak": peak,
                "reserved_bytes.all.current": allocated, "reserved_bytes.all.peak": peak}

    def _properties(self, device=None):
        major, minor = self.capability
        return types.SimpleNamespace(name=self.name, total_memory=self.capacity, major=major, minor=minor,
                                     multi_processor_count=132, is_integrated=False, is_multi_gpu_board=False)

    def replacements(self):
        module = self

        @contextlib.contextmanager
        def device(index):
            before = module.current
            if index is not None and index != -1:
                module._set_device(index)
            try:
                yield
            finally:
                module.current = before

        stream = _Stream()
        nothing = lambda *args, **kwargs: None  # noqa: E731
        return {
            "is_available": lambda: True, "is_initialized": lambda: True, "init": nothing,
            "device_count": lambda: module.count, "current_device": lambda: module.current,
            "set_device": module._set_device, "device": device, "synchronize": nothing,
            "get_device_name": lambda device=None: module.name,
            "get_device_capability": lambda device=None: module.capability,
            "get_device_properties": module._properties,
            "is_bf16_supported": lambda: True,
            "Stream": _Stream, "Event": _Event, "current_stream": lambda device=None: stream,
            "default_stream": lambda device=None: stream, "stream": lambda s=None: contextlib.nullcontext(),
            "set_stream": nothing,
            "manual_seed": nothing, "manual_seed_all": nothing, "seed": nothing, "seed_all": nothing,
            "empty_cache": nothing, "set_per_process_memory_fraction": nothing, "ipc_collect": nothing,
            "memory_allocated": module._allocated, "max_memory_allocated": module._max_allocated,
            "memory_reserved": module._allocated, "max_memory_reserved": module._max_allocated,
            "reset_peak_memory_stats": module._reset_peak, "reset_max_memory_allocated": module._reset_peak,
            "reset_accumulated_memory_stats": nothing, "memory_stats": module._memory_stats,
            "mem_get_info": lambda device=None: (module.capacity - module._allocated(), module.capacity),
        }


@contextlib.contextmanager
def patched(target, replacements):
    """Sets the attributes of `target` for the duration; restores them (and
    removes those it did not have) on exit."""
    missing = object()
    saved = {name: getattr(target, name, missing) for name in replacements}
    try:
        for name, value in replacements.items():
            setattr(target, name, value)
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                delattr(target, name)
            else:
                setattr(target, name, value)


def _refuse_mixed_precision(what):
    from .recorder import PredictionError, _where
    raise PredictionError(f"{what}: mixed precision is not predicted yet (meta tensors ignore autocast, and "
                          f"GradScaler's unscale has no meta kernel), at {_where()}; predict with it disabled")


def _mixed_precision_replacements(recorder):
    """autocast and GradScaler, refused clearly when enabled for CUDA (a meta
    recording would silently predict the weights' dtype); disabled, the real
    ones. With `recorder.autocast` (cuda_ops.Autocast, under --gpu), CUDA
    autocast regions are its regions."""
    real_autocast, real_cuda_autocast, real_scaler = torch.autocast, torch.cuda.amp.autocast, torch.cuda.amp.GradScaler

    def autocast(device_type="cuda", *args, enabled=True, **kwargs):
        if device_type == "cuda" and recorder.autocast is not None:
            return recorder.autocast.region(kwargs.get("dtype", args[0] if args else None), enabled)
        if enabled and device_type == "cuda":
            _refuse_mixed_precision("torch.autocast('cuda')")
        return real_autocast(device_type, *args, enabled=enabled, **kwargs)

    def cuda_autocast(enabled=True, *args, **kwargs):
        if recorder.autocast is not None:
            return recorder.autocast.region(kwargs.get("dtype", args[0] if args else None), enabled)
        if enabled:
            _refuse_mixed_precision("torch.cuda.amp.autocast")
        return real_cuda_autocast(enabled, *args, **kwargs)

    def grad_scaler(*args, enabled=True, **kwargs):
        if enabled:
            _refuse_mixed_precision("torch.cuda.amp.GradScaler")
        return real_scaler(*args, enabled=False, **kwargs)

    return [(torch, {"autocast": autocast}),
            (torch.cuda.amp, {"autocast": cuda_autocast, "GradScaler": grad_scaler})]


def _single_process_data_loader():
    """DataLoader.__init__ that loads in the program's own process: worker
    processes would put meta batches in shared memory, which meta storages
    cannot be, and would run outside the recording."""
    from torch.utils.data import DataLoader
    real_init = DataLoader.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.num_workers = 0
    return DataLoader, {"__init__": init}


@contextlib.contextmanager
def fake_cuda(recorder, **options):
    """The whole fake: torch.cuda's functions, mixed precision refused, and
    the FakeCuda mode."""
    module = FakeCudaModule(recorder, **options)
    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(torch.cuda, module.replacements()))
        for target, replacements in _mixed_precision_replacements(recorder) + [_single_process_data_loader()]:
            stack.enter_context(patched(target, replacements))
        stack.enter_context(FakeCuda(recorder))
        yield module
