"""Runs an ONNX graph node by node with torch and numpy: the test oracle for
the sizes `memplan extract` gives the tensors of models whose shapes ONNX's
own inference leaves open (transformer exports compute their reshapes from
Shape -> Gather -> Concat chains at run time).

run(model, feeds) -> {tensor name: (element size in bytes, shape)} for every
tensor a node writes, from the real values: an implementation independent of
memplan's (which evaluates only the shape computations, in C++). Covers the
operators torch 1.13's exporter writes for torch.nn transformers, torchvision's
ViT, Swin and the CNNs of tests/onnx; any other operator is an error naming it.
"""
import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _np(t):
    return t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def _t(a):
    a = np.asarray(a)
    return torch.from_numpy(a.copy()) if a.dtype != np.bool_ else torch.from_numpy(a.copy()).bool()


def _axes(a, inputs, index, opset, since=13):
    if opset >= since:
        return [int(v) for v in _np(inputs[index])] if len(inputs) > index and inputs[index] is not None else None
    return list(a["axes"]) if "axes" in a else None


def _pads_2d(pads):
    n = len(pads) // 2
    return [p for i in reversed(range(n)) for p in (pads[i], pads[i + n])]


def _slice(x, inputs, a, opset):
    x = _np(x)
    if opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = _np(inputs[1]).tolist(), _np(inputs[2]).tolist()
        axes = _np(inputs[3]).tolist() if len(inputs) > 3 and inputs[3] is not None else None
        steps = _np(inputs[4]).tolist() if len(inputs) > 4 and inputs[4] is not None else None
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, ax, k in zip(starts, ends, axes, steps):
        index[ax] = slice(s, e, k)
    return _t(x[tuple(index)])


def _reshape(x, shape, allowzero):
    shape = [int(v) for v in _np(shape)]
    if not allowzero:
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _binary(op):
    def run(n, i, a, opset):
        x, y = i
        if op == "Div" and not x.is_floating_point():
            return torch.div(x, y, rounding_mode="trunc")
        return {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow,
                "Equal": torch.eq, "Less": torch.lt, "Greater": torch.gt, "LessOrEqual": torch.le,
                "GreaterOrEqual": torch.ge, "And": torch.logical_and, "Or": torch.logical_or}[op](x, y)
    return run


def _conv(n, i, a, opset):
    x, w = i[0], i[1]
    b = i[2] if len(i) > 2 else None
    pads = a.get("pads", [0] * (2 * (x.dim() - 2)))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("Conv auto_pad")
    x = F.pad(x, _pads_2d(pads))
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    return conv(x, w, b, stride=a.get("strides", 1), dilation=a.get("dilations", 1), groups=a.get("group", 1))


def _pool(kind):
    def run(n, i, a, opset):
        x = i[0]
        pads = a.get("pads", [0] * (2 * (x.dim() - 2)))
        x = F.pad(x, _pads_2d(pads), value=float("-inf") if kind == "max" else 0.0)
        k, s = a["kernel_shape"], a.get("strides", 1)
        ceil = bool(a.get("ceil_mode", 0))
        if kind == "max":
            return F.max_pool2d(x, k, s, ceil_mode=ceil, dilation=a.get("dilations", 1))
        return F.avg_pool2d(x, k, s, ceil_mode=ceil, count_include_pad=bool(a.get("count_include_pad", 0)))
    return run


def _scatter_nd(n, i, a, opset):
    data, indices, updates = _np(i[0]).copy(), _np(i[1]), _np(i[2])
    k = indices.shape[-1]
    flat = indices.reshape(-1, k)
    upd = updates.reshape((flat.shape[0],) + data.shape[k:])
    for row, u in zip(flat, upd):
        data[tuple(row)] = u
    return _t(data)


def _gemm(n, i, a, opset):
    x, w = i[0], i[1]
    if a.get("transA", 0):
        x = x.t()
    if a.get("transB", 0):
        w = w.t()
    y = a.get("alpha", 1.0) * (x @ w)
    return y + a.get("beta", 1.0) * i[2] if len(i) > 2 and i[2] is not None else y


def _layer_norm(n, i, a, opset):
    x = i[0]
    axis = a.get("axis", -1) % x.dim()
    return F.layer_norm(x, x.shape[axis:], i[1], i[2] if len(i) > 2 else None, a.get("epsilon", 1e-5))


OPS = {
    "Constant": lambda n, i, a, o: _t(numpy_helper.to_array(a["value"])) if "value" in a else _t(
        np.array(a.get("value_int", a.get("value_ints", a.get("value_float", a.get("value_floats")))))),
    "Identity": lambda n, i, a, o: i[0],
    "Dropout": lambda n, i, a, o: (i[0], torch.ones(i[0].shape, dtype=torch.bool)),  # inference: no dropout
    "Shape": lambda n, i, a, o: torch.tensor(list(i[0].shape)[a.get("start", 0):a.get("end", None)], dtype=torch.int64),
    "Size": lambda n, i, a, o: torch.tensor(i[0].numel(), dtype=torch.int64),
    "Gather": lambda n, i, a, o: _t(np.take(_np(i[0]), _np(i[1]).astype(np.int64), axis=a.get("axis", 0))),
    "Unsqueeze": lambda n, i, a, o: _t(np.expand_dims(_np(i[0]), tuple(_axes(a, i, 1, o)))),
    "Squeeze": lambda n, i, a, o: _t(np.squeeze(_np(i[0]), axis=None if _axes(a, i, 1, o) is None
                                                else tuple(_axes(a, i, 1, o)))),
    "Concat": lambda n, i, a, o: torch.cat(i, dim=a["axis"]),
    "Slice": lambda n, i, a, o: _slice(i[0], i, a, o),
    "Reshape": lambda n, i, a, o: _reshape(i[0], i[1], a.get("allowzero", 0)),
    "Flatten": lambda n, i, a, o: i[0].reshape(int(np.prod(i[0].shape[:a.get("axis", 1)])), -1),
    "Expand": lambda n, i, a, o: i[0].expand(np.broadcast_shapes(tuple(i[0].shape), tuple(_np(i[1]).tolist())))
    .clone(),
    "Range": lambda n, i, a, o: torch.arange(i[0].item(), i[1].item(), i[2].item(), dtype=i[0].dtype),
    "ConstantOfShape": lambda n, i, a, o: _t(np.full(_np(i[0]).tolist(), numpy_helper.to_array(a["value"])[0]
                                                     if "value" in a else np.float32(0))),
    "Where": lambda n, i, a, o: torch.where(i[0], i[1], i[2]),
    "Not": lambda n, i, a, o: torch.logical_not(i[0]),
    "Neg": lambda n, i, a, o: -i[0],
    "Sqrt": lambda n, i, a, o: torch.sqrt(i[0]),
    "Erf": lambda n, i, a, o: torch.erf(i[0]),
    "Tanh": lambda n, i, a, o: torch.tanh(i[0]),
    "Relu": lambda n, i, a, o: torch.relu(i[0]),
    "Sigmoid": lambda n, i, a, o: torch.sigmoid(i[0]),
    "Clip": lambda n, i, a, o: torch.clamp(i[0], i[1] if len(i) > 1 else None, i[2] if len(i) > 2 else None),
    "Mod": lambda n, i, a, o: torch.fmod(i[0], i[1]) if a.get("fmod", 0) else torch.remainder(i[0], i[1]),
    "Cast": lambda n, i, a, o: _t(_np(i[0]).astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])),
    "MatMul": lambda n, i, a, o: torch.matmul(i[0], i[1]),
    "Gemm": _gemm,
    "Transpose": lambda n, i, a, o: i[0].permute(*a["perm"]) if "perm" in a else i[0].permute(
        *reversed(range(i[0].dim()))),
    "Softmax": lambda n, i, a, o: torch.softmax(i[0], dim=a.get("axis", -1)),
    "ReduceMean": lambda n, i, a, o: torch.mean(i[0], dim=a["axes"], keepdim=bool(a.get("keepdims", 1))),
    "LayerNormalization": _layer_norm,
    "Conv": _conv,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": lambda n, i, a, o: torch.mean(i[0], dim=tuple(range(2, i[0].dim())), keepdim=True),
    "Pad": lambda n, i, a, o: F.pad(i[0], _pads_2d(_np(i[1]).tolist()), value=float(i[2]) if len(i) > 2 and
                                    i[2] is not None else 0.0),
    "ScatterND": _scatter_nd,
}
for _op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And",
            "Or"):
    OPS[_op] = _binary(_op)


def run(model, feeds):
    """{name: (element size, shape)} of every tensor a node writes, by running the graph."""
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    env = {t.name: _t(numpy_helper.to_array(t)) for t in model.graph.initializer}
    env.update({k: torch.as_tensor(v) for k, v in feeds.items()})
    sizes = {}
    with torch.no_grad():
        for k, node in enumerate(model.graph.node):
            if node.op_type not in OPS:
                raise NotImplementedError(f"the reference run has no {node.op_type} (node {k} '{node.name}')")
            inputs = [env[name] if name else None for name in node.input]
            out = OPS[node.op_type](node, inputs, _attrs(node), opset)
            out = out if isinstance(out, (list, tuple)) else [out]
            for name, value in zip(node.output, out):
                if name:
                    env[name] = value
                    sizes[name] = (value.element_size(), tuple(value.shape))
    return sizes
