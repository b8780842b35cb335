#!/usr/bin/python3
"""Checks `memplan extract` on ONNX models exported from torch (label onnx).

For one model (the first argument): exports it with Debian's torch
(torch.onnx.export, weights=None: nothing is downloaded), runs
`memplan extract MODEL.onnx --input NAME=...` for each input, and checks the
problem it writes against an oracle: the same buffers (one per tensor a node
writes), the same sizes (product of the shape x element size) and the
lifetimes the front end promises (from the writing node to the last reader,
half-open; graph outputs to the end). The oracle is ONNX's own shape
inference in Python where it sizes every tensor (the CNNs), and otherwise a
run of the graph with torch on random inputs (onnx_reference.py): the
transformers compute their reshapes from Shape -> Gather -> Concat chains,
which ONNX's inference leaves open and memplan evaluates. Models exported with
dynamic axes are first refused without --input. Then plans the problem
(every registered planner for the small torch.nn models, the default
portfolio for the others), checks the arena is within 1% of the load, and
prints one summary line, `row: model nodes buffers load arena ms`.

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

import onnx_reference

SIZE = 64  # px, as in bench/data/torch, so that the arenas compare
ALIGNMENT = 64
D_MODEL = 32  # small transformers: 2 layers of width 32, 4 heads


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


class Decoder(torch.nn.Module):
    """torch.nn.TransformerDecoder with its memory as a second input."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerDecoderLayer(D_MODEL, 4, 2 * D_MODEL, dropout=0.0)
        self.decoder = torch.nn.TransformerDecoder(layer, 2)

    def forward(self, tgt, memory):
        return self.decoder(tgt, memory)


class GPT(torch.nn.Module):
    """GPT-style: token and position embeddings, pre-norm causal self-attention, a head."""

    def __init__(self, vocab=50):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, D_MODEL), torch.nn.Embedding(64, D_MODEL)
        layer = torch.nn.TransformerEncoderLayer(D_MODEL, 4, 2 * D_MODEL, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.blocks, self.head = torch.nn.TransformerEncoder(layer, 2), torch.nn.Linear(D_MODEL, vocab)

    def forward(self, ids):
        n = ids.shape[1]
        i = torch.arange(n)
        causal = torch.zeros(n, n).masked_fill(i.unsqueeze(0) > i.unsqueeze(1), float("-inf"))
        return self.head(self.blocks(self.tok(ids) + self.pos(i.unsqueeze(0).expand_as(ids)), mask=causal))


class BERT(torch.nn.Module):
    """BERT-style: token, position and type embeddings, a padding mask, a pooled head."""

    def __init__(self, vocab=50):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, D_MODEL), torch.nn.Embedding(64, D_MODEL)
        self.typ, self.norm = torch.nn.Embedding(2, D_MODEL), torch.nn.LayerNorm(D_MODEL)
        layer = torch.nn.TransformerEncoderLayer(D_MODEL, 4, 2 * D_MODEL, dropout=0.0, batch_first=True,
                                                 activation="gelu")
        self.encoder, self.pool = torch.nn.TransformerEncoder(layer, 2), torch.nn.Linear(D_MODEL, D_MODEL)

    def forward(self, ids, attention_mask):
        pos = torch.arange(ids.size(1)).unsqueeze(0).expand(ids.size(0), -1)
        x = self.norm(self.tok(ids) + self.pos(pos) + self.typ(torch.zeros_like(ids)))
        return torch.tanh(self.pool(self.encoder(x, src_key_padding_mask=attention_mask == 0)[:, 0]))


class Families(torch.nn.Module):
    """One shape computation family per model (the name after 'fold_'), as torch's exporter writes it."""

    def __init__(self, family):
        super().__init__()
        self.family = family

    def forward(self, x, y):
        if self.family == "view":  # Shape -> Gather -> Unsqueeze -> Concat -> Reshape
            return x.reshape(x.size(0), -1) * 2
        if self.family == "mul":  # the same with Mul on the gathered sizes
            return x.reshape(x.shape[0], x.shape[1] * x.shape[2]) + 1
        if self.family == "arange":  # Range on a gathered size, Cast
            return x + torch.arange(x.size(2)).to(x.dtype)
        if self.family == "expand":  # Expand by a shape with -1: ConstantOfShape, Equal, Where
            return x[:1].expand(y.size(0), -1, -1) + 1
        if self.family == "slice":  # Slice ends from Div on a gathered size
            return x[:, : x.size(1) // 2] * 2
        if self.family == "nonzero":  # NonZero: a size that depends on the data
            return torch.nonzero(x > 0).to(x.dtype) * 2
        if self.family == "reshape_by_data":  # a reshape by a value read from an input's data
            return x.reshape(-1, y.long()[0, 0, 0]) * 2
        raise ValueError(self.family)


# The errors a model of Families gives, by family: the node and why.
FAMILY_ERRORS = {
    "nonzero": r"node \d+ \(NonZero '/NonZero'\) writes '[^']+' with no concrete shape .*depends on the values of its "
               r"input, not on shapes",
    "reshape_by_data": r"node \d+ \(Reshape '/Reshape'\) writes '[^']+' with no concrete shape .*value of input 1 .*"
                       r"not known before the model runs: it is computed from the values of graph input 'y'",
}


def family(name):
    """(module, feeds, axes, opset) for fold_FAMILY and error_FAMILY names; None for other names."""
    kind, _, which = name.partition("_")
    if kind not in ("fold", "error"):
        return None
    feeds = {"x": torch.randn(3, 8, 4), "y": torch.full((5, 8, 4), 2.0)}
    axes = {"x": {0: "a", 1: "b", 2: "c"}, "y": {0: "d", 1: "e", 2: "f"}}
    return Families(which), feeds, axes, 13


def transformer(name):
    """(module, {input: example tensor}, {input: {axis: name}} or None, opset) for a transformer test name,
    e.g. encoder_dynamic_opset14; None for other names."""
    parts = name.split("_")
    if len(parts) != 3 or parts[1] not in ("fixed", "dynamic") or not parts[2].startswith("opset"):
        return None
    kind, dynamic, opset = parts[0], parts[1] == "dynamic", int(parts[2][5:])
    tokens = lambda: torch.randint(0, 50, (2, 16))  # noqa: E731
    if kind == "encoder":
        layer = torch.nn.TransformerEncoderLayer(D_MODEL, 4, 2 * D_MODEL, dropout=0.0)
        module, feeds, axes = torch.nn.TransformerEncoder(layer, 2), {"src": torch.randn(12, 2, D_MODEL)}, \
            {"src": {0: "seq", 1: "batch"}}
    elif kind == "decoder":
        module, feeds = Decoder(), {"tgt": torch.randn(10, 2, D_MODEL), "memory": torch.randn(12, 2, D_MODEL)}
        axes = {"tgt": {0: "target", 1: "batch"}, "memory": {0: "source", 1: "batch"}}
    elif kind == "gpt":
        module, feeds, axes = GPT(), {"ids": tokens()}, {"ids": {0: "batch", 1: "seq"}}
    elif kind == "bert":
        mask = torch.ones(2, 16, dtype=torch.int64)
        mask[1, 10:] = 0
        module, feeds = BERT(), {"ids": tokens(), "attention_mask": mask}
        axes = {"ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    elif kind == "vit":  # torchvision's VisionTransformer, small: 2 layers, 32 px, 8 px patches
        module = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                      hidden_dim=D_MODEL, mlp_dim=2 * D_MODEL)
        feeds, axes = {"input": torch.randn(2, 3, 32, 32)}, {"input": {0: "batch"}}
    elif kind == "swin":  # torchvision's SwinTransformer, small: 2 stages of 2 blocks, 4x4 windows
        module = torchvision.models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                                                    window_size=[4, 4])
        feeds, axes = {"input": torch.randn(2, 3, 32, 32)}, {"input": {0: "batch"}}
    else:
        return None
    return module, feeds, axes if dynamic else None, opset


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


def inferred_sizes(model, shapes):
    """{tensor: (element size, shape)} from ONNX's shape inference in Python, or None where it leaves one open."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for i in model.graph.input:
        if i.name in shapes:
            for d, v in zip(i.type.tensor_type.shape.dim, shapes[i.name]):
                d.Clear()
                d.dim_value = v
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    sizes = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output):
        t = v.type.tensor_type
        if not t.HasField("shape") or any(not d.HasField("dim_value") for d in t.shape.dim):
            return None
        sizes[v.name] = (element_size(t.elem_type), tuple(d.dim_value for d in t.shape.dim))
    return sizes


def expected_buffers(model, sizes):
    """id -> (lower, upper, size) for the tensors of `model` with the sizes given."""
    inits = {t.name for t in model.graph.initializer}
    nodes = list(model.graph.node)
    outputs = {o.name for o in model.graph.output}
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
        element, dims = sizes[name]
        size = element * int(np.prod(dims, dtype=np.int64))
        upper = len(nodes) if name in outputs else last[name] + 1
        buffers[csv_id(name)] = (k, upper, size)
    return buffers, len(nodes)


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


def export(name, work):
    """Exports the model; (path, {input: example tensor}, dynamic) ."""
    spec = transformer(name) or family(name)
    if spec is not None:
        module, feeds, axes, opset = spec
    else:
        module, shape = build(name)
        feeds, opset = {"input": torch.randn(*shape)}, 13
        # The batch as a symbolic dimension, which the extract must be told.
        axes = {"input": {0: "batch"}, "output": {0: "batch"}}
    module.eval()
    path = os.path.join(work, f"{name}.onnx")
    # Not under no_grad: in eval mode with grad off, torch 1.13's attention
    # takes a fused fast path that has no ONNX export.
    torch.onnx.export(module, tuple(feeds.values()), path, input_names=list(feeds), output_names=["output"],
                      opset_version=opset, dynamic_axes=axes)
    kept = {i.name for i in onnx.load(path).graph.input}  # the exporter drops inputs the model does not read
    return path, {k: v for k, v in feeds.items() if k in kept}, axes is not None


def main():
    name, memplan, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    onnx_path, feeds, dynamic = export(name, work)
    csv_path = os.path.join(work, f"{name}.csv")

    if dynamic:
        left_open = subprocess.run([memplan, "extract", onnx_path, "--output", csv_path], capture_output=True, text=True)
        assert left_open.returncode == 1 and "symbolic dimensions left open: " in left_open.stderr, left_open

    inputs = []
    for key, value in feeds.items():
        inputs += ["--input", f"{key}=" + "x".join(str(d) for d in value.shape)]
    if name.startswith("error_"):
        refused = subprocess.run([memplan, "extract", onnx_path, *inputs, "--output", csv_path], capture_output=True,
                                 text=True)
        assert refused.returncode == 1 and not os.path.exists(csv_path), refused
        assert re.search(FAMILY_ERRORS[name[len("error_"):]], refused.stderr), refused.stderr
        print(f"OK: {name}: refused: {refused.stderr.strip()}")
        return
    report = run(memplan, "extract", onnx_path, *inputs, "--output", csv_path)
    print(report, end="")
    got = read_problem(csv_path)
    model = onnx.load(onnx_path)
    sizes = inferred_sizes(model, {k: tuple(v.shape) for k, v in feeds.items()})
    oracle = "ONNX's shape inference"
    if sizes is None:
        sizes = onnx_reference.run(model, {k: v.numpy() for k, v in feeds.items()})
        oracle = "a reference run of the graph"
    want, nodes = expected_buffers(model, sizes)
    assert len(got) == len(want), f"{len(got)} buffers, {oracle} has {len(want)}"
    for key, value in want.items():
        assert got.get(key) == value, f"{key}: memplan {got.get(key)}, {oracle} {value}"
    assert f"{nodes} nodes" in report, report

    planners = ["portfolio"]
    if name in ("mlp", "residual"):
        lines = run(memplan, "planners").splitlines()[2:]  # below the header and its rule
        planners = [line.split()[0] for line in lines if line.strip()]
    for planner in planners:
        plan = json.loads(run(memplan, "plan", csv_path, "--planner", planner, "--time-limit", "2", "--json"))
        seconds = plan["seconds"]  # measured by memplan: planning only
        arena, load = plan["arena"], plan["load"]
        assert arena >= load > 0, (planner, arena, load)
        if planner == "portfolio":
            assert arena <= load * 1.01, f"portfolio's arena {arena} B is more than 1% above the load {load} B"
            print(f"row: {name} nodes={nodes} buffers={len(got)} load={load} arena={arena} "
                  f"ms={seconds * 1000:.2f}")
        else:
            print(f"{planner}: arena {arena} B, load {load} B")
    if name == "residual":
        svg, html = os.path.join(work, f"{name}.svg"), os.path.join(work, f"{name}.html")
        run(memplan, "render", csv_path, "--svg", svg)
        run(memplan, "report", csv_path, "--html", html)
        assert open(svg).read().lstrip().startswith("<"), svg
        page = open(html).read()
        assert "<html" in page[:1000].lower(), html
        assert "Conv /conv1/Conv" in page, "the report names the ONNX node that writes each buffer"
    print(f"OK: {name}: {len(got)} buffers match {oracle}; planned by {len(planners)} planner(s)")


if __name__ == "__main__":
    main()
