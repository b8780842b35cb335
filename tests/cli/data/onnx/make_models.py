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
