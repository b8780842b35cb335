"""recorder.py — records every storage a PyTorch program creates and frees on
the meta device, with exact lifetimes.

The rule (checked against torch 1.13): a TorchDispatchMode sees every ATen
operator below autograd, forward and backward alike (the autograd engine runs
meta work on the calling thread). After each operator, every output storage
not seen before is a new allocation: its key is the StorageImpl's identity
(`storage._cdata`), its size `storage.nbytes()`. A StorageWeakRef per live
storage says when the last reference went away, whoever held it: a Python
tensor, autograd's saved activations, a hook. Expiry is checked before each
operator (frees by the program between operators: `del x`, a rebinding) and
after it (frees inside it), so a free is placed before the next allocation
as it happens on a GPU.

Each storage has a *logical* device: "cuda" or "cpu". On the meta device
every tensor is `meta`; the logical device is what the program asked for
(fake_cuda.py pushes it for factories and `.to`/`.cuda`), else that of the
operator's first tensor input, else "cpu". Only "cuda" storages are the
device's requests; "cpu" storages are counted apart as host bytes.

A meta storage first seen as an operator's *input* existed before the
recording began: it is taken as allocated before the window (on the
recording's device), with no frames.
"""
import os
import sys
import threading

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

# Operators whose output size depends on the input's values: meta tensors
# have none, so they cannot be predicted.
_DATA_DEPENDENT = {"nonzero", "unique", "_unique", "_unique2", "unique_dim", "unique_consecutive",
                   "unique_dim_consecutive", "masked_select", "bincount", "repeat_interleave", "histc"}

# Indexing operators whose output size depends on a boolean mask's values.
_MASKED = {"index", "index_put", "index_put_", "_index_put_impl_"}

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


class PredictionError(RuntimeError):
    """The program did something a meta-device recording cannot predict: an
    operator whose output size depends on data, or one without a meta kernel.
    The message names the operator and the program's file:line."""


def _is_own_frame(filename):
    """True for frames that are not the user's: torch's own files, this
    package, and the runpy machinery that starts a script."""
    return (filename.startswith(_TORCH_DIR) or filename.startswith(_PACKAGE_DIR) or "/torch/" in filename
            or filename.endswith("runpy.py") or filename.startswith("<frozen"))


def user_frames(limit=64):
    """The Python frames of the user's code calling now, innermost first, as
    (filename, line, function name) tuples; torch's own files are skipped."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None and len(frames) < limit:
        code = frame.f_code
        if not _is_own_frame(code.co_filename):
            frames.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(frames)


def _storage_of(tensor):
    # torch 1.13: Tensor.storage() is a TypedStorage; its untyped() is the
    # StorageImpl's Python face (newer torch: Tensor.untyped_storage()).
    if hasattr(tensor, "untyped_storage"):
        return tensor.untyped_storage()
    return tensor.storage().untyped()


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


class Event:
    """One allocation or free. action: "alloc" or "free"; key: the storage's
    identity; device: "cuda" or "cpu"; stack: index into Recorder.stacks."""
    __slots__ = ("action", "key", "nbytes", "device", "stack", "before_window")

    def __init__(self, action, key, nbytes, device, stack, before_window=False):
        self.action, self.key, self.nbytes, self.device = action, key, nbytes, device
        self.stack, self.before_window = stack, before_window


class Recorder(TorchDispatchMode):
    """The dispatch mode that records: `events` in order, `stacks` of frames
    they refer to, the bytes live now and at the peak per logical device.
    Thread-safe: the autograd engine could call it from its own threads."""

    def __init__(self):
        super().__init__()
        self.events = []
        self.stacks = [()]          # stacks[0]: no frames
        self._stack_ids = {(): 0}
        self.live = {}              # key -> [StorageWeakRef, nbytes, device, the key its events use]
        self.current = {"cuda": 0, "cpu": 0}
        self.peak = {"cuda": 0, "cpu": 0}
        self.operators = 0
        self.threads = set()
        self.placeholder_reads = 0  # values read from tensors that have none
        self.device_context = threading.local()  # .stack: explicit logical devices
        self._lock = threading.RLock()
        self.in_backward = 0        # > 0 while the autograd engine runs (cuda_rules.AutogradEngine)
        self.rules = []             # after_operator(recorder, name, logical device): cuda_rules
        self.autocast = None        # cuda_ops.Autocast: CUDA autocast regions (with a gpu)

    # ---- logical devices -------------------------------------------------------------------
    def push_device(self, device):
        stack = getattr(self.device_context, "stack", None)
        if stack is None:
            stack = self.device_context.stack = []
        stack.append(device)

    def pop_device(self):
        self.device_context.stack.pop()

    def _explicit_device(self):
        stack = getattr(self.device_context, "stack", None)
        return stack[-1] if stack else None

    def logical_device(self, tensor):
        """"cuda" or "cpu": where the program thinks `tensor` is."""
        if tensor.device.type != "meta":
            return tensor.device.type
        entry = self.live.get(_storage_of(tensor)._cdata)
        return entry[2] if entry else "cuda"

    # ---- events ----------------------------------------------------------------------------
    def _stack_id(self, frames):
        found = self._stack_ids.get(frames)
        if found is None:
            found = self._stack_ids[frames] = len(self.stacks)
            self.stacks.append(frames)
        return found

    def _allocate(self, storage, device, stack, before_window=False):
        key = storage._cdata
        nbytes = storage.nbytes()
        self.live[key] = [StorageWeakRef(storage), nbytes, device, key]
        if nbytes == 0:
            return  # a zero-byte storage allocates nothing
        self.events.append(Event("alloc", key, nbytes, device, stack, before_window))
        self.current[device] += nbytes
        self.peak[device] = max(self.peak[device], self.current[device])

    def allocate_extra(self, key, nbytes, device="cuda"):
        """A request the meta recording does not see (a CUDA rule's), by the
        user's line that caused it; it lives to the end."""
        self.events.append(Event("alloc", key, nbytes, device, self._stack_id(user_frames())))
        self.current[device] += nbytes
        self.peak[device] = max(self.peak[device], self.current[device])

    def check_frees(self):
        """Emits a free for every live storage whose last reference is gone."""
        with self._lock:
            self._check_frees()

    def _check_frees(self):
        expired = [key for key, entry in self.live.items() if entry[0].expired()]
        for key in expired:
            _, nbytes, device, event_key = self.live.pop(key)
            if nbytes:
                self.events.append(Event("free", event_key, nbytes, device, 0))
                self.current[device] -= nbytes

    def _resized(self, entry, nbytes, stack):
        """A live storage grown or shrunk in place (resize_, an out= argument):
        on CUDA a new block is allocated, the bytes copied, the old one freed."""
        _, old, device, old_key = entry
        entry[1], entry[3] = nbytes, (old_key, len(self.events))
        if nbytes:
            self.events.append(Event("alloc", entry[3], nbytes, device, stack))
            self.current[device] += nbytes
            self.peak[device] = max(self.peak[device], self.current[device])
        if old:
            self.events.append(Event("free", old_key, old, device, 0))
            self.current[device] -= old

    def _register_inputs(self, args, kwargs):
        for tensor in _tensors((args, kwargs)):
            if tensor.device.type != "meta":
                continue
            storage = _storage_of(tensor)
            if storage._cdata not in self.live:
                self._allocate(storage, "cuda", 0, before_window=True)

    def _register_outputs(self, out, input_device):
        device = self._explicit_device() or input_device or "cpu"
        stack = None
        for tensor in _tensors(out):
            if tensor.device.type != "meta":
                continue
            storage = _storage_of(tensor)
            key = storage._cdata
            entry = self.live.get(key)
            if entry is not None and not entry[0].expired():
                if storage.nbytes() != entry[1]:
                    self._resized(entry, storage.nbytes(), stack if stack is not None else
                                  self._stack_id(user_frames()))
                continue
            if entry is not None:  # the key was reused after a free not yet seen
                self.check_frees()
            if stack is None:
                stack = self._stack_id(user_frames())
            self._allocate(storage, device, stack)

    # ---- the mode ----------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        with self._lock:
            self.threads.add(threading.get_ident())
            self.check_frees()
            self._register_inputs(args, kwargs)
            inputs = list(_tensors((args, kwargs)))
            first = next((t for t in inputs if t.device.type == "meta"), None)
            input_device = self.logical_device(first) if first is not None else None
        if inputs and first is None:  # real tensors only (a real host scalar): run as is, nothing to record
            return func(*args, **kwargs)
        if name == "_local_scalar_dense":
            # .item(), float(t), bool(t), int(t): a meta tensor has no value.
            self.placeholder_reads += 1
            return _placeholder(first.dtype)
        if name in _DATA_DEPENDENT or (name in _MASKED and _has_mask(args)):
            what = f"{func} with a boolean mask" if name in _MASKED else str(func)
            raise PredictionError(f"{what}: its output size depends on the input's values, which a meta-device "
                                  f"recording does not compute (at {_where()})")
        try:
            fallback = _META_FALLBACKS.get(name)
            for rule in self.rules:  # a CUDA rule may run the operator as CUDA does (cuda_ops)
                fallback = getattr(rule, "kernel", _no_kernel)(self, name, args, kwargs) or fallback
            out = fallback(*args, **kwargs) if fallback is not None else func(*args, **kwargs)
        except NotImplementedError:
            raise PredictionError(f"{func}: the installed torch {torch.__version__} has no meta kernel for it, "
                                  f"so it cannot be predicted (at {_where()})") from None
        with self._lock:
            self.operators += 1
            self._register_outputs(out, input_device)
            self.check_frees()
            for rule in self.rules:
                rule.after_operator(self, name, self._explicit_device() or input_device or "cpu")
        return out


def _no_kernel(recorder, name, args, kwargs):
    return None


def _convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    """aten.convolution_backward, which torch 1.13 lacks for meta: the
    gradients have the input's, the weight's and the bias's shapes (in the
    input's and the weight's memory formats, as cuDNN returns them)."""
    return (torch.empty_like(input) if output_mask[0] else None,
            torch.empty_like(weight) if output_mask[1] else None,
            torch.empty(bias_sizes, dtype=grad_output.dtype, device="meta") if output_mask[2] else None)


# Meta kernels that torch 1.13 lacks, by operator name: the outputs' sizes
# follow from the inputs' shapes alone.
_META_FALLBACKS = {"convolution_backward": _convolution_backward}


def _has_mask(args):
    indices = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else ()
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices)


def _placeholder(dtype):
    if dtype == torch.bool:
        return False
    if dtype.is_complex:
        return 0j
    if dtype.is_floating_point:
        return 0.0
    return 0


def _where():
    frames = user_frames(limit=1)
    if not frames:
        return "an unknown line"
    filename, line, name = frames[0]
    return f"{filename}:{line} in {name}"
