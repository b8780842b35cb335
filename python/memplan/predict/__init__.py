"""memplan.predict — a training step's GPU memory, predicted without a GPU.

The program runs unchanged on PyTorch's meta device (no data, no compute, no
memory) while every storage it creates and frees is recorded; the recording
is written as a CUDA memory snapshot and explained by memplan's allocator
models. Reference: docs/predict.md.

    with memplan.predict.recording(device="cuda") as rec:
        step()
    rec.snapshot("p.pickle")
    rec.summary(capacity="24GiB")

    python3 -m memplan.predict [--capacity 24GiB] [--json] train.py ARGS

`memplan.predict(model, inputs=...)`, the ONNX shape-range prediction of the
C++ module, is still this name: the module is callable and delegates to it.

torch is imported only when a name that needs it is used, so `import
memplan` stays light where torch is not installed.
"""
import sys
import types

_LAZY = {"recording": "recording", "Recording": "recording", "parse_bytes": "units",
         "Recorder": "recorder", "PredictionError": "recorder", "fake_cuda": "fake_cuda",
         "snapshot_dict": "snapshot_writer", "allocator_settings": "snapshot_writer",
         "analyze_snapshot": "analysis", "AnalysisError": "analysis", "cuda_rules": None}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'memplan.predict' has no attribute {name!r}")
    import importlib
    module = _LAZY[name]
    # A None entry is a submodule itself (memplan.predict.cuda_rules).
    value = importlib.import_module(f"{__name__}.{module or name}")
    if module is not None:
        value = getattr(value, name)
    globals()[name] = value
    return value


class _CallableModule(types.ModuleType):
    """memplan.predict(path, inputs=..., capacity=...) is the ONNX prediction
    it was before this package existed (memplan._memplan.predict)."""

    def __call__(self, *args, **kwargs):
        from .. import _memplan
        onnx_predict = getattr(_memplan, "predict", None)
        if onnx_predict is None:
            raise TypeError("memplan.predict(model, inputs=...) needs memplan built with its ONNX front end")
        return onnx_predict(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
