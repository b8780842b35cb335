// shape_values.h — the values of the small tensors a model computes its
// shapes from, evaluated before the model runs.
//
// Exporters write a reshape by a size known only at run time as a chain of
// operators on small integer tensors: Shape -> Gather -> Unsqueeze -> Concat
// -> Reshape. ONNX's shape inference types that chain but, apart from a few
// operators its data propagation follows, does not compute its values, so the
// Reshape's output stays without a shape. Once the graph inputs' shapes are
// given, every value in such a chain is fixed: this file computes them, one
// node at a time, from the values of the node's inputs (and, for Shape and
// Size, from its input's shape alone). The front end feeds the values back to
// shape inference as initializers and repeats until nothing new is learnt.
//
// Only small tensors are evaluated (at most kMaxKnownElements elements), of
// the integer, boolean, float and double element types; anything else is
// "not known" and keeps its shape from shape inference. Evaluation follows
// the ONNX operator definitions for the operators listed in
// evaluated_operators(); an operator outside the list is never evaluated.
//
// Internal to the ONNX front end (it names ONNX's protobuf types).
// Thread-safety: pure functions.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memplan::onnx_values {

// The most elements a known tensor may have: enough for any shape, index or
// position tensor a shape computation uses, small enough that evaluating a
// graph's worth of them costs nothing next to shape inference.
inline constexpr int64_t kMaxKnownElements = 1 << 16;

// A tensor with its values. Integer and boolean types keep their values in
// `ints`, FLOAT and DOUBLE in `reals`; the other vector is empty.
struct KnownTensor {
  int32_t type = 0;           // onnx::TensorProto data type
  std::vector<int64_t> dims;  // {} for a scalar
  std::vector<int64_t> ints;
  std::vector<double> reals;

  bool is_real() const;
  int64_t elements() const;
};

// True if values of this element type can be known (see above).
bool is_known_type(int32_t type);

// The values of an initializer or of a Constant's tensor; nullopt when its
// type is not one of the known types, it has more than kMaxKnownElements
// elements, or its data is malformed (stored in an external file, or with a
// length that disagrees with its dims).
std::optional<KnownTensor> read_tensor(const onnx::TensorProto& tensor);

// The same values as a TensorProto named `name`, to give shape inference as
// an initializer.
onnx::TensorProto write_tensor(const KnownTensor& value, const std::string& name);

// What a node's evaluation needs besides its inputs' values: the concrete
// shape of an input (for Shape and Size), or nullopt when that is unknown.
struct InputFacts {
  const KnownTensor* value = nullptr;         // nullptr: value unknown (or the input left out)
  std::optional<std::vector<int64_t>> shape;  // concrete dims, when shape inference gave them
  bool present = false;                       // false: an optional input left out ("")
};

// The outcome of evaluating one node.
struct Evaluation {
  std::vector<KnownTensor> outputs;  // one per node output when evaluated
  std::string why_not;               // when not evaluated: the reason, e.g. "memplan does not evaluate MatMul"
  int missing_input = -1;            // when not evaluated for want of an input's value: that input
};

// Evaluates `node` (of opset `opset`) from what is known about its inputs.
// Never throws; bad attributes or inputs give a reason, not a value.
Evaluation evaluate(const onnx::NodeProto& node, const std::vector<InputFacts>& inputs, int64_t opset);

// The operators evaluate() computes, sorted: the names of the one table of
// operators in shape_values.cc (docs/formats.md lists them; a test compares).
const std::vector<std::string>& evaluated_operators();

// Operators whose output shape depends on an input's values, with which
// inputs: the inputs to name when such an output has no shape.
std::vector<int> shape_inputs(const onnx::NodeProto& node, int64_t opset);

// Operators whose output shape depends on the data itself (NonZero, Unique,
// ...): no evaluation of shapes alone can size them.
bool is_data_dependent(const onnx::NodeProto& node);

}  // namespace memplan::onnx_values
