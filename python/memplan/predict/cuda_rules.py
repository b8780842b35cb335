"""cuda_rules.py — what the CUDA side adds to a meta recording, one rule per
PyTorch source, for the GPU named by `gpu` ("h100", "a100").

Rule: the cuBLAS workspace (PyTorch 2.1 and later,
aten/src/ATen/cuda/CublasHandlePool.cpp). getCurrentCUDABlasHandle() gives
each (cuBLAS handle, stream) pair one workspace, allocated through the
caching allocator (getNewWorkspace) the first time the pair runs a cuBLAS
call and kept for the process's life (until clearCublasWorkspaces).
Handles come from a per-thread pool window, so the program's thread and
the autograd engine's device thread hold one each: on one stream, a
training step has two workspaces, the forward's (at its first matmul) and
the backward's (at the backward's first matmul). Size
(parseChosenWorkspaceSize): CUBLAS_WORKSPACE_CONFIG as ":SIZE:COUNT"
entries, the sum of SIZE KiB x COUNT; unset, 4096 KiB x 8 = 32 MiB on sm90
(compute capability 9.0) and 4096 KiB x 2 + 16 KiB x 8 = 8,519,680 bytes
elsewhere; set but unparseable, the default. The workspace is requested
right after the operator's output (the output is allocated before the gemm
asks for its handle).
"""
import os
import re

GPUS = {
    "h100": {"name": "NVIDIA H100 80GB HBM3", "capability": (9, 0), "memory": 80 << 30},
    "a100": {"name": "NVIDIA A100-SXM4-80GB", "capability": (8, 0), "memory": 80 << 30},
}

# ATen operators that call cuBLAS on CUDA (matmul and linear decompose into these).
CUBLAS_OPERATORS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "_addmm_activation"}


def gpu_spec(name):
    """The GPU called `name` (case-insensitive); ValueError naming the known ones."""
    spec = GPUS.get(str(name).lower())
    if spec is None:
        raise ValueError(f"gpu {name!r}: expected one of {', '.join(sorted(GPUS))}")
    return spec


def cublas_workspace_bytes(capability, config=None):
    """One cuBLAS workspace's bytes on a GPU of `capability` (major, minor)
    with CUBLAS_WORKSPACE_CONFIG `config` (None: unset)."""
    default = 4096 * 8 * 1024 if tuple(capability) == (9, 0) else 4096 * 1024 * 2 + 16 * 1024 * 8
    if config is None:
        return default
    entries = re.findall(r":([0-9]+):([0-9]+)", config)
    if not entries:
        return default
    return sum(int(size) * 1024 * int(count) for size, count in entries)


class CublasWorkspaces:
    """The rule, applied after each operator: the first cuBLAS operator of
    the forward and of the backward each allocate a workspace on the device."""

    def __init__(self, gpu, config=None):
        spec = gpu_spec(gpu)
        self.bytes = cublas_workspace_bytes(spec["capability"], config)
        self.allocated = []  # "forward" / "backward", in order

    @classmethod
    def from_environment(cls, gpu):
        return cls(gpu, os.environ.get("CUBLAS_WORKSPACE_CONFIG"))

    def after_operator(self, recorder, name, device):
        if name not in CUBLAS_OPERATORS or device != "cuda":
            return
        phase = "backward" if recorder.in_backward else "forward"
        if phase not in self.allocated:
            self.allocated.append(phase)
            recorder.allocate_extra(("cublas workspace", phase), self.bytes)


class AutogradEngine:
    """Stands in for torch.autograd's engine to tell the recorder when a
    backward runs (torch 1.13 has no query for it); everything else is the
    engine's."""

    def __init__(self, engine, recorder):
        self._engine = engine
        self._recorder = recorder

    def run_backward(self, *args, **kwargs):
        self._recorder.in_backward += 1
        try:
            return self._engine.run_backward(*args, **kwargs)
        finally:
            self._recorder.in_backward -= 1

    def __getattr__(self, name):
        return getattr(self._engine, name)


def engine_patch(recorder):
    """(target, replacements) for fake_cuda.patched: the engine stand-in."""
    import torch
    variable = torch.autograd.Variable
    return variable, {"_execution_engine": AutogradEngine(variable._execution_engine, recorder)}
