// onnx_frontend.h — plans a model before it runs: an ONNX model plus the
// shapes of its inputs becomes a Problem, one buffer per intermediate tensor.
//
// The model's nodes keep the order the file gives them (ONNX requires graphs
// to be topologically sorted; the reader checks it). Node k runs at tick k.
// A tensor that node p writes and nodes c1 < ... < cn read lives [p, cn + 1):
// it is live while its last reader runs, so a node's inputs and outputs never
// share bytes. A tensor that no node reads lives [p, p + 1); a graph output
// lives to the end, [p, number of nodes). Example, three nodes:
//
//     tick          0      1      2
//     node          Conv   Relu   Add(relu, conv)
//     conv  (0..2)  [====================)   read by Add at tick 2
//     relu  (1..2)         [=============)
//     add   (2..3)                [======)   a graph output: to the end
//
// Initializers (weights) and graph inputs are not in the arena: they are
// owned by whoever loads the model and feeds it. So are constants: the
// outputs of nodes that read only initializers and other constants (a
// Constant node; torch's exporter writes Identity copies of shared weights),
// which a runtime computes once when it loads the model, as ONNX Runtime's
// constant folding does (random-number nodes are never constants). Their
// nodes keep their ticks. The extraction counts all three and their bytes so
// that a report can say what was left out.
//
// Sizes are product(shape) x element size. Shapes come from ONNX's own shape
// inference run with the input shapes given, alternated with memplan's
// evaluation of the shape computations exporters write (Shape -> Gather ->
// Concat -> Reshape and the like; shape_values.h): given only the graph
// inputs' shapes, every tensor of a transformer export gets a concrete size.
// An If whose condition is known before the run is replaced by the branch it
// takes. What the front end cannot size is an error that names the node or
// tensor and why, never a guess: a graph input's dimension left symbolic, a
// node output still without a concrete shape (the first one in order: its
// size depends on data, or on a value computed from data or by an operator
// memplan does not evaluate), an element type without a fixed size
// (strings), a non-tensor value (sequences, maps, optionals), an If on a
// condition not known before the run, and Loop and Scan, whose tensors live
// by rules this simple model of a graph does not describe.
//
// This header names no ONNX or protobuf type: the CLI includes it without
// ONNX's headers. Thread-safety: extract_onnx_model may run on several
// threads at once (ONNX's schema registry is built once, thread-safely).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

// One `--input NAME=1x3x224x224`: the shape a graph input is given.
struct OnnxInputShape {
  std::string name;
  std::vector<int64_t> dims;
};

// Parses "NAME=D0xD1x...xDn" (each D >= 0; a scalar input is "NAME="). The
// name may contain '=' only before the last one.
StatusOr<OnnxInputShape> parse_onnx_input_shape(const std::string& text);

// One `--input` whose dimensions may each be a value (128), a range
// (1..512) or a list (1,2,4,8), separated by 'x': "ids=4x1..512",
// "ids=1,2,4,8x128". A range is sampled at its ends and at the powers of two
// between them (1..512: 1, 2, 4, ..., 512; 3..20: 3, 4, 8, 16, 20).
struct OnnxInputChoices {
  std::string name;
  std::vector<std::vector<int64_t>> dims;  // per dimension, the values to try, ascending, distinct
};

// Parses "NAME=D0xD1x..." as above; a fixed shape has one value per dimension.
StatusOr<OnnxInputChoices> parse_onnx_input_choices(const std::string& text);

// Every combination of the choices, one shape per input each, the last
// dimension of the last input varying fastest. InvalidArgument past `limit`
// combinations (the message says how many there would be).
StatusOr<std::vector<std::vector<OnnxInputShape>>> onnx_input_grid(const std::vector<OnnxInputChoices>& inputs,
                                                                   size_t limit);

// The problem an upper-bound plan is made for: the buffers every problem has,
// each at its largest size. The problems must have the same buffers in the
// same order with the same lifetimes and alignments (the same graph at other
// input shapes); a plan of the result serves each of them with its offsets
// unchanged. InvalidArgument, naming the buffer, when they differ.
StatusOr<Problem> upper_bound_problem(std::span<const Problem> problems);

struct OnnxOptions {
  // Shapes for graph inputs; each must name a graph input that is not an
  // initializer, and must agree with every dimension the model fixes.
  std::vector<OnnxInputShape> inputs;
  // The alignment every buffer gets (a power of two). 64: a cache line, and
  // what ONNX Runtime's CPU allocator aligns to.
  int64_t alignment = 64;
  // Leave constants out of the arena (see above). false: every tensor a node
  // writes is a buffer, constants included.
  bool fold_constants = true;
};

// What an extraction found besides the problem.
struct OnnxExtraction {
  Problem problem;          // one buffer per intermediate tensor; id = tensor name
  int64_t ir_version = 0;   // the model's IR version
  int64_t opset = 0;        // the default domain's opset version
  std::string producer;     // "pytorch 1.13.1", or "" when the model does not say
  size_t nodes = 0;         // ticks 0 .. nodes - 1
  size_t initializers = 0;  // left out of the arena: weights
  int64_t initializer_bytes = 0;
  size_t graph_inputs = 0;  // left out of the arena: fed by the caller
  int64_t graph_input_bytes = 0;
  size_t constants = 0;  // left out of the arena: folded constants
  int64_t constant_bytes = 0;
  size_t graph_outputs = 0;  // in the arena when a node writes them, live to the end
  size_t unread = 0;         // node outputs no node reads and that are no graph output
  // One per buffer: the operator and name of the node that writes it,
  // "MatMul /layers.0/self_attn/MatMul" (the operator alone for unnamed nodes).
  std::vector<std::string> operators;
  size_t evaluated = 0;         // tensors whose values were computed before the run (shape computations)
  size_t inference_rounds = 0;  // runs of ONNX's shape inference (see resolve_shapes)
};

// Reads a serialized ModelProto, runs shape inference with `options.inputs`
// and builds the problem. `source` names the model in messages. Errors:
// InvalidArgument for a model that is not one (truncated, not protobuf, no
// graph), for shapes that are missing or symbolic (naming the node and why)
// and for element types without a size; Unimplemented for Loop, Scan and
// non-tensor values.
StatusOr<OnnxExtraction> extract_onnx_model(std::span<const uint8_t> bytes, const std::string& source,
                                            const OnnxOptions& options = {});

// The operators whose values the front end computes before the run (shape
// computations; shape_values.h), sorted: what docs/formats.md lists.
const std::vector<std::string>& onnx_evaluated_operators();

// Telling a model from a trace or a profile by its first bytes is
// memplan/file_kind.h's (sniff_file_kind), shared by every front end.

}  // namespace memplan
