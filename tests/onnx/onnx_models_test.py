#!/usr/bin/python3
"""Checks `memplan extract` on ONNX models exported from torch (label onnx).

For one model (the first argument): exports it with Debian's torch
(torch.onnx.export, weights=None: nothing is downloaded), runs
`memplan extract MODEL.onnx --input input=...`, and checks the problem it
writes against ONNX's own shape inference in Python: the same buffers (one
per tensor a node writes), the same sizes (product of the inferred shape x
element size) and the lifetimes the front end promises (from the writing
node to the last reader, half-open; graph outputs to the end). Then plans
the problem (every registered planner for the small torch.nn models, the
default portfolio for the torchvision ones) and prints one summary line,
`row: model nodes buffers load arena ms`, for docs/benchmarks.md.

Usage: onnx_models_test.py MODEL MEMPLAN WORKDIR
Exit 77 (skipped) when torch, torchvision or onnx cannot be imported.
"""
import json
import os
import re
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnx.shape_inference
    import torch
    import torchvision
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: {e} (install python3-torch python3-torchvision python3-onnx)")
    sys.exit(77)

SIZE = 64  # px, as in bench/data/torch, so that the arenas compare
ALIGNMENT = 64


class Residual(torch.nn.Module):
    """A small CNN with a skip connection and a pooled head."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        a = torch.relu(self.conv1(x))
        b = torch.relu(self.conv2(a)) + a
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(b, 1), 1))


def build(name):
    """(module, input shape) for a model name."""
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)), (4, 32)
    if name == "residual":
        return Residual(), (1, 3, SIZE, SIZE)
    if name == "vit_b_16":
        return torchvision.models.vit_b_16(weights=None, image_size=SIZE), (1, 3, SIZE, SIZE)
    return getattr(torchvision.models, name)(weights=None), (1, 3, SIZE, SIZE)


def element_size(elem_type):
    return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type]).itemsize


def csv_id(name):
    return re.sub(r"[,\x00-\x20\x7f]", "_", name) or "_"


def expected_buffers(path, shape):
    """id -> (lower, upper, size) from ONNX's shape inference in Python."""
    model = onnx.load(path)
    inits = {t.name for t in model.graph.initializer}
    feeds = [i for i in model.graph.input if i.name not in inits]
    dims = feeds[0].type.tensor_type.shape.dim
    for d, v in zip(dims, shape):
        d.Clear()
        d.dim_value = v
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    types = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    nodes = list(inferred.graph.node)
    outputs = {o.name for o in inferred.graph.output}
    writer, last, constant = {}, {}, set()
    random = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}
    for k, node in enumerate(nodes):
        folded = node.op_type not in random and all(n in inits or n in constant for n in node.input if n)
        for name in node.input:
            if name in writer:
                last[name] = k
        for name in node.output:
            if name:
                writer[name] = k
                last[name] = k
                if folded:
                    constant.add(name)
    buffers = {}
    for name, k in writer.items():
        if name in constant:
            continue  # computed once at load, outside the arena
        t = types[name].tensor_type
        size = element_size(t.elem_type)
        for d in t.shape.dim:
            assert d.HasField("dim_value"), f"{name}: dimension left open by ONNX's inference"
            size *= d.dim_value
        upper = len(nodes) if name in outputs else last[name] + 1
        buffers[csv_id(name)] = (k, upper, size)
    return buffers, len(nodes)


def open_in_python(path):
    """Names of tensors ONNX's Python inference leaves without a full shape."""
    inferred = onnx.shape_inference.infer_shapes(onnx.load(path), strict_mode=True, data_prop=True)
    return [v.name for v in inferred.graph.value_info
            if not v.type.tensor_type.HasField("shape")
            or any(not d.HasField("dim_value") for d in v.type.tensor_type.shape.dim)]


def read_problem(path):
    rows = {}
    with open(path) as f:
        header = f.readline().strip().split(",")
        assert header[:5] == ["id", "lower", "upper", "size", "alignment"], header
        for line in f:
            fields = line.rstrip("\n").split(",")
            rows[fields[0]] = tuple(int(x) for x in fields[1:4])
            assert int(fields[4]) == ALIGNMENT, line
    return rows


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    name, memplan, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    module, shape = build(name)
    module.eval()
    onnx_path = os.path.join(work, f"{name}.onnx")
    # The batch is exported as a symbolic dimension, which the extract must be
    # told, except for the models that compute shapes from tensors at run time
    # (shufflenet's channel shuffle reads x.size(); vit reshapes by it): ONNX
    # 1.12's shape inference does not follow Shape -> Gather -> Concat ->
    # Reshape, so those are exported with fixed shapes (torch folds them).
    dynamic = name not in ("shufflenet_v2_x1_0", "vit_b_16")
    axes = {"input": {0: "batch"}, "output": {0: "batch"}} if dynamic else None
    # Not under no_grad: in eval mode with grad off, torch 1.13's attention
    # takes a fused fast path that has no ONNX export.
    torch.onnx.export(module, torch.randn(*shape), onnx_path, input_names=["input"], output_names=["output"],
                      opset_version=13, dynamic_axes=axes)
    csv_path = os.path.join(work, f"{name}.csv")

    if dynamic:
        left_open = subprocess.run([memplan, "extract", onnx_path, "--output", csv_path], capture_output=True, text=True)
        assert left_open.returncode == 1 and "symbolic dimensions left open: batch" in left_open.stderr, left_open

    dims = "x".join(str(d) for d in shape)
    if not dynamic:
        # Even with fixed input shapes these graphs compute shapes at run time
        # (Shape -> Gather -> Div -> Slice; Expand by a computed shape) that
        # ONNX 1.12's inference leaves open, in Python as in C++. memplan must
        # refuse them with a message naming a tensor, not plan a guess.
        refused = subprocess.run([memplan, "extract", onnx_path, "--input", f"input={dims}", "--output", csv_path],
                                 capture_output=True, text=True)
        assert refused.returncode == 1, refused
        assert re.search(r"tensor '[^']+' \(written by node \d+", refused.stderr), refused.stderr
        assert open_in_python(onnx_path), "ONNX's Python inference sizes every tensor; memplan should too"
        print(f"row: {name} refused: {refused.stderr.strip()[:300]}")
        print(f"OK: {name}: refused with a clear error, as ONNX's own inference leaves tensors open")
        return
    report = run(memplan, "extract", onnx_path, "--input", f"input={dims}", "--output", csv_path)
    print(report, end="")
    got = read_problem(csv_path)
    want, nodes = expected_buffers(onnx_path, shape)
    assert len(got) == len(want), f"{len(got)} buffers, ONNX's inference has {len(want)}"
    for key, value in want.items():
        assert got.get(key) == value, f"{key}: memplan {got.get(key)}, ONNX's inference {value}"
    assert f"{nodes} nodes" in report, report

    planners = ["portfolio"]
    if name in ("mlp", "residual"):
        lines = run(memplan, "planners").splitlines()[2:]  # below the header and its rule
        planners = [line.split()[0] for line in lines if line.strip()]
    for planner in planners:
        plan = json.loads(run(memplan, "plan", csv_path, "--planner", planner, "--time-limit", "5", "--json"))
        seconds = plan["seconds"]  # measured by memplan: planning only
        arena, load = plan["arena"], plan["load"]
        assert arena >= load > 0, (planner, arena, load)
        if planner == "portfolio":
            print(f"row: {name} nodes={nodes} buffers={len(got)} load={load} arena={arena} "
                  f"ms={seconds * 1000:.2f}")
        else:
            print(f"{planner}: arena {arena} B, load {load} B")
    if name == "residual":
        svg, html = os.path.join(work, f"{name}.svg"), os.path.join(work, f"{name}.html")
        run(memplan, "render", csv_path, "--svg", svg)
        run(memplan, "report", csv_path, "--html", html)
        assert open(svg).read().lstrip().startswith("<"), svg
        assert "<html" in open(html).read(1000).lower(), html
    print(f"OK: {name}: {len(got)} buffers match ONNX's shape inference; planned by {len(planners)} planner(s)")


if __name__ == "__main__":
    main()
