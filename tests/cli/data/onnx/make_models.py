#!/usr/bin/python3
"""Writes the small ONNX models the CLI tests read (tests/cli/onnx_tests.cmake).

Run with Debian's python3-onnx from this folder: /usr/bin/python3 make_models.py.
Each model is a few hundred bytes; the output is deterministic.
"""
import onnx
from onnx import TensorProto, helper


def save(graph, name, opset=13):
    model = helper.make_model(graph, producer_name="memplan-tests", opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, name)
    return model


def tiny_graph(nodes=None, x_type=TensorProto.FLOAT):
    # x[batch,4] @ w[4,8] -> mm; relu(mm) -> r; r + mm -> y
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 8], [0.5] * 32)
    nodes = nodes or [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
        helper.make_node("Relu", ["mm"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "mm"], ["y"], name="add"),
    ]
    return helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", x_type, ["batch", 4])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])


tiny = save(tiny_graph(), "tiny.onnx")
data = tiny.SerializeToString()
with open("truncated.onnx", "wb") as f:
    f.write(data[: len(data) // 2])

# A node of a domain ONNX does not know: shape inference leaves its output untyped.
save(tiny_graph([helper.make_node("Mystery", ["x"], ["m"], domain="com.example", name="mystery"),
                 helper.make_node("Relu", ["m"], ["y"], name="relu")]), "missing_shape.onnx")

# Strings have no fixed size in bytes.
save(tiny_graph([helper.make_node("Cast", ["x"], ["s"], to=TensorProto.STRING, name="to_string"),
                 helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT, name="to_float")]), "string_tensor.onnx")

# An element type number no ONNX version defines.
save(tiny_graph([helper.make_node("Identity", ["x"], ["i"], name="identity"),
                 helper.make_node("Identity", ["i"], ["y"], name="identity2")], x_type=99), "unknown_type.onnx")

# A subgraph: If with two branches.
then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                           [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 4])])
else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                           [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["batch", 4])])
cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
g = tiny_graph([helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g, name="branch")])
g.initializer.append(cond)
save(g, "subgraph.onnx")

# Nodes out of order: Relu reads mm before MatMul writes it.
save(tiny_graph([helper.make_node("Relu", ["mm"], ["r"], name="relu"),
                 helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
                 helper.make_node("Add", ["r", "mm"], ["y"], name="add")]), "unsorted.onnx")

# The same model under a name without .onnx: extract recognises it by its first bytes.
with open("tiny.model", "wb") as f:
    f.write(data)

# A Constant node: its output is folded (left out of the arena) unless --keep-constants.
c = helper.make_tensor("cv", TensorProto.FLOAT, [4], [1.0] * 4)
save(tiny_graph([helper.make_node("Constant", [], ["c"], value=c, name="const"),
                 helper.make_node("Add", ["x", "c"], ["y"], name="add")]), "constant.onnx")

# Nodes their operator's schema refuses. A Scan without its body: libonnx 1.12's
# shape inference reads through a null graph on it (found by the fuzz target).
save(tiny_graph([helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
                 helper.make_node("Scan", ["mm"], ["y"], name="scan")]), "scan_without_body.onnx")
# A Cast without its required attribute 'to'.
save(tiny_graph([helper.make_node("Cast", ["x"], ["y"], name="cast")]), "missing_attribute.onnx")

# ---- Shape computations memplan evaluates (one model per operator family) ----
# Each model's only graph input is x[batch,4] (or the names below), so that
# sizes depend on the --input shape through a chain of shape operators.
i64 = TensorProto.INT64


def const(name, values, dims=None, dtype=TensorProto.INT64):
    return helper.make_node("Constant", [], [name], name=name,
                            value=helper.make_tensor(name + "_v", dtype, dims if dims is not None else [len(values)], values))


def shape_model(nodes, name, inputs=None, outputs=("y",), opset=13):
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])]
    graph = helper.make_graph(nodes, name.split(".")[0], inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs])
    save(graph, name, opset)


# Shape -> Gather -> Unsqueeze -> Concat -> Reshape: y = x reshaped to [batch, 2, 2].
shape_model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
             const("zero", [0], []),
             helper.make_node("Gather", ["s", "zero"], ["b"], name="gather", axis=0),
             const("axes0", [0]),
             helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"], name="unsqueeze"),
             const("two_two", [2, 2]),
             helper.make_node("Concat", ["b1", "two_two"], ["new_shape"], name="concat", axis=0),
             helper.make_node("Reshape", ["x", "new_shape"], ["y"], name="reshape")], "fold_gather_concat.onnx")

# Shape with start/end (opset 15), Slice, Squeeze, Div, Mul, Sub, Cast, Min, Max:
# y = x reshaped to [batch * 4 / 2 - 0, 2] via arithmetic on its own shape.
shape_model([helper.make_node("Shape", ["x"], ["s1"], name="shape_end", start=1),     # [4]
             helper.make_node("Shape", ["x"], ["s0"], name="shape_start", end=1),     # [batch]
             const("zero", [0]), const("one", [1]),
             helper.make_node("Slice", ["s1", "zero", "one"], ["w"], name="slice"),   # [4]
             helper.make_node("Mul", ["s0", "w"], ["n"], name="mul"),                 # [batch*4]
             const("two", [2]),
             helper.make_node("Div", ["n", "two"], ["h"], name="div"),                # [batch*2]
             helper.make_node("Sub", ["h", "zero"], ["h0"], name="sub"),
             helper.make_node("Cast", ["h0"], ["hf"], name="to_float", to=TensorProto.FLOAT),
             helper.make_node("Cast", ["hf"], ["hi"], name="to_int", to=TensorProto.INT64),
             const("big", [1 << 40]),
             helper.make_node("Min", ["hi", "big"], ["lo"], name="min"),
             helper.make_node("Max", ["lo", "one"], ["rows"], name="max"),
             helper.make_node("Concat", ["rows", "two"], ["new_shape"], name="concat", axis=0),
             helper.make_node("Squeeze", ["two", "zero"], ["two_scalar"], name="squeeze"),
             helper.make_node("Unsqueeze", ["two_scalar", "zero"], ["two_again"], name="unsqueeze"),
             helper.make_node("Reshape", ["x", "new_shape"], ["r"], name="reshape"),
             helper.make_node("Expand", ["r", "two_again"], ["y"], name="expand")],
            "fold_arithmetic.onnx", opset=15)

# Range -> Expand, as position ids: y = range(0, 4) expanded to x's shape, as float.
shape_model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
             const("one", [1], []),
             helper.make_node("Gather", ["s", "one"], ["n"], name="gather", axis=0),   # 4, a scalar
             const("start", [0], []), const("step", [1], []),
             helper.make_node("Range", ["start", "n", "step"], ["positions"], name="range"),
             helper.make_node("Expand", ["positions", "s"], ["e"], name="expand"),
             helper.make_node("Cast", ["e"], ["ef"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "ef"], ["y"], name="add")], "fold_range_expand.onnx")

# ConstantOfShape, Equal, Where: torch's expand-by-shape idiom, where(shape == -1, ones, shape).
shape_model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("ConstantOfShape", [ "rank"], ["ones"], name="constant_of_shape",
                              value=helper.make_tensor("one", i64, [1], [1])),
             const("minus_one", [-1]),
             helper.make_node("Equal", ["s", "minus_one"], ["is_open"], name="equal"),
             helper.make_node("Where", ["is_open", "ones", "s"], ["target"], name="where"),
             helper.make_node("Expand", ["x", "target"], ["y"], name="expand")],
            "fold_where.onnx")
# (the rank, as a 1-element shape, comes first)
_g = onnx.load("fold_where.onnx")
_g.graph.node.insert(0, const("rank", [2]))
onnx.save(_g, "fold_where.onnx")

# ---- What still stops extraction (one model per error) ----
# A reshape by the values of a graph input: not known before the model runs.
shape_model([helper.make_node("Cast", ["shape_in"], ["target"], name="cast", to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")], "reshape_by_data.onnx",
            inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
                    helper.make_tensor_value_info("shape_in", TensorProto.FLOAT, [2])])
# NonZero: its output's size depends on the data.
shape_model([helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
             helper.make_node("Cast", ["nz"], ["y"], name="cast", to=TensorProto.FLOAT)], "nonzero.onnx")
# An If whose condition is a graph input: which branch runs is not known.
then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                           [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 4])])
else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                           [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["batch", 4])])
shape_model([helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g, name="branch")],
            "if_on_input.onnx", inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
                                        helper.make_tensor_value_info("flag", TensorProto.BOOL, [])])
# A shape computation through an operator memplan does not evaluate (ReduceProd).
shape_model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("ReduceProd", ["s"], ["n"], name="reduce_prod", keepdims=1),
             helper.make_node("Reshape", ["x", "n"], ["y"], name="reshape")], "not_evaluated.onnx")
# A Scan without its body inside an If's branch: checked before shape
# inference walks into the branch (found by the fuzz target).
scan_branch = helper.make_graph([helper.make_node("Scan", ["x"], ["t"], name="scan")], "then", [],
                                [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 4])])
g = tiny_graph([helper.make_node("If", ["cond"], ["y"], then_branch=scan_branch, else_branch=else_g, name="branch")])
g.initializer.append(cond)
save(g, "scan_in_branch.onnx")
# A Constant whose raw data is shorter than its dims say: refused before shape
# inference reads it (found by the fuzz target).
short = helper.make_tensor("short_v", TensorProto.INT64, [2], [4, 8])
short.raw_data = b"\x04\x00\x00"
del short.int64_data[:]
save(tiny_graph([helper.make_node("Constant", [], ["shape"], value=short, name="short"),
                 helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]), "short_constant.onnx")
# An INT64 Constant whose value sits in int32_data, which ONNX does not read for INT64.
misplaced = helper.make_tensor("misplaced_v", TensorProto.INT32, [2], [4, 8])
misplaced.data_type = TensorProto.INT64
save(tiny_graph([helper.make_node("Constant", [], ["shape"], value=misplaced, name="misplaced"),
                 helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]), "misplaced_constant.onnx")
