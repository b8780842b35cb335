// onnx_binding.cc — ONNX models from Python (built with MEMPLAN_WITH_ONNX):
// a model plus its input shapes as a problem, one buffer per intermediate
// tensor, through the front end `memplan extract model.onnx` uses
// (src/frontends/onnx/onnx_frontend.h), so problems and messages are the CLI's;
// a grid of shapes and its prediction through the one library call the CLI's
// --input ranges and --predict print (onnx_grid.h), converted, never recomputed.
#include <span>

#include "bindings.h"
#include "errors.h"
#include "memplan/csv.h"
#include "onnx_grid.h"

namespace memplan::python {
namespace {

// The text of one input: "NAME=DIMS" from a dict entry whose dimensions are
// a string of the CLI's forms ({"ids": "1,4x64..512"}: one spec, as --input
// ids=1,4x64..512) or a sequence of ints and such strings ({"ids": (4,
// "1..512")}).
std::string input_text(py::handle name, py::handle dims) {
  std::string text = std::string(py::str(name)) + "=";
  if (py::isinstance<py::str>(dims)) return text + std::string(py::str(dims));
  bool first = true;
  for (py::handle d : dims) {
    text += (first ? "" : "x") + std::string(py::str(d));
    first = false;
  }
  return text;
}

// The texts of `inputs`: a dict {name: dims}, one "NAME=DIMS" string, or a
// sequence of them (the CLI's --input).
std::vector<std::string> input_texts(py::handle inputs) {
  std::vector<std::string> texts;
  if (inputs.is_none()) return texts;
  if (py::isinstance<py::dict>(inputs)) {
    for (auto [name, dims] : py::reinterpret_borrow<py::dict>(inputs)) texts.push_back(input_text(name, dims));
    return texts;
  }
  if (py::isinstance<py::str>(inputs)) return {std::string(py::str(inputs))};
  for (py::handle text : inputs) texts.push_back(py::str(text));
  return texts;
}

// inputs for one shape: {"input": (1, 3, 224, 224)}, {"input": "1x3x224x224"}
// or ["input=1x3x224x224", ...] (the CLI's --input).
std::vector<OnnxInputShape> input_shapes(py::handle inputs) {
  std::vector<OnnxInputShape> shapes;
  if (py::isinstance<py::dict>(inputs)) {
    for (auto [name, dims] : py::reinterpret_borrow<py::dict>(inputs)) {
      const std::string n = py::str(name);
      if (py::isinstance<py::str>(dims)) {
        shapes.push_back(value_or_raise(parse_onnx_input_shape(input_text(name, dims))));
      } else {
        shapes.push_back({.name = n, .dims = int64_column(dims, "inputs['" + n + "']")});
      }
    }
    return shapes;
  }
  for (const std::string& text : input_texts(inputs)) shapes.push_back(value_or_raise(parse_onnx_input_shape(text)));
  return shapes;
}

// The alignment every buffer gets: a power of two, or the front end's default.
int64_t alignment_from(py::handle alignment) {
  if (alignment.is_none()) return OnnxOptions{}.alignment;
  const int64_t bytes = bytes_from(alignment, "alignment");
  if (!is_power_of_two(bytes)) raise_input_error("alignment: " + std::to_string(bytes) + " is not a power of two");
  return bytes;
}

// The grid's options: the choices of `inputs` (every dimension a value, a
// range or a list), the alignment and whether constants are folded.
OnnxGridOptions grid_options(py::handle inputs, py::handle alignment, bool keep_constants) {
  OnnxGridOptions options{.alignment = alignment_from(alignment), .fold_constants = !keep_constants};
  for (const std::string& text : input_texts(inputs)) {
    options.inputs.push_back(value_or_raise(parse_onnx_input_choices(text)));
  }
  return options;
}

std::string model_bytes(const std::string& path) { return value_or_raise(read_text_file(path), ErrorSource::kFile); }

std::span<const uint8_t> as_bytes(const std::string& bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

// {name: dims}: a shape as Python names it.
py::dict shape_dict(const std::vector<OnnxInputShape>& shape) {
  py::dict given;
  for (const OnnxInputShape& s : shape) given[py::str(s.name)] = py::tuple(py::cast(s.dims));
  return given;
}

// The library's prediction as memplan.predict returns it.
py::dict prediction_dict(const OnnxGridPrediction& p) {
  py::list shapes;
  for (const OnnxShapePrediction& r : p.shapes) {
    py::dict row;
    row["inputs"] = shape_dict(r.inputs);
    row["weights_bytes"] = r.weights_bytes;
    row["input_bytes"] = r.input_bytes;
    row["activation_bytes"] = r.activation_bytes;
    row["activation_load_bytes"] = r.activation_load_bytes;
    row["total_bytes"] = r.total_bytes();
    if (p.capacity > 0) row["fits"] = r.fits;
    shapes.append(row);
  }
  py::dict result;
  result["shapes"] = shapes;
  result["capacity"] = p.capacity;
  result["upper_bound_activation_bytes"] = p.upper_bound_activation_bytes;
  result["largest_fitting"] =
      p.largest_fitting ? py::object(shape_dict(p.shapes[*p.largest_fitting].inputs)) : py::object(py::none());
  return result;
}

std::string path_text(py::handle path) { return py::str(py::module_::import("os").attr("fspath")(path)); }

}  // namespace

py::object extract_onnx_file(const std::string& path, py::handle inputs, py::handle alignment, bool keep_constants) {
  const int64_t bytes = alignment_from(alignment);  // checked first, as before the inputs
  const OnnxOptions options{.inputs = input_shapes(inputs), .alignment = bytes, .fold_constants = !keep_constants};
  return py::cast(value_or_raise(extract_onnx_model(as_bytes(model_bytes(path)), path, options)));
}

void bind_onnx(py::module_& m) {
  m.def(
      "extract_shapes",
      [](py::object path, py::handle inputs, py::handle alignment, bool keep_constants) {
        const std::string p = path_text(path);
        const OnnxGridOptions options = grid_options(inputs, alignment, keep_constants);
        OnnxGrid grid = value_or_raise(extract_onnx_grid(as_bytes(model_bytes(p)), p, options));
        py::list shapes;
        for (OnnxGridShape& shape : grid.shapes) {
          shapes.append(py::make_tuple(shape_dict(shape.inputs), py::cast(std::move(shape.extraction))));
        }
        return py::make_tuple(shapes, py::cast(std::move(grid.upper_bound)));
      },
      py::arg("path"), py::kw_only(), py::arg("inputs"), py::arg("alignment") = py::none(),
      py::arg("keep_constants") = false,
      "An ONNX model at every shape of ranges and lists, as `memplan extract --input ids=4x1..512` samples them "
      "(a range: its ends and the powers of two between; a list: 1,2,4,8). Returns ([(inputs, OnnxExtraction), "
      "...], upper_bound): each shape's extraction, and the problem whose plan serves every shape (each buffer at "
      "its largest size).");
  m.def(
      "predict",
      [](py::object path, py::handle inputs, py::handle capacity, py::handle alignment, bool keep_constants) {
        const std::string p = path_text(path);
        OnnxGridOptions options = grid_options(inputs, alignment, keep_constants);
        options.capacity = capacity.is_none() ? 0 : bytes_from(capacity, "capacity");
        return prediction_dict(value_or_raise(predict_onnx_grid(as_bytes(model_bytes(p)), p, options)));
      },
      py::arg("path"), py::kw_only(), py::arg("inputs"), py::arg("capacity") = py::none(),
      py::arg("alignment") = py::none(), py::arg("keep_constants") = false,
      "Memory before the run, as `memplan extract --predict`: for every shape of the ranges and lists (as "
      "extract_shapes samples them), the bytes of weights and constants, graph inputs and planned activations "
      "(the default planner's arena) and their total. capacity (bytes, or a string such as '16GiB'): each shape "
      "says whether it fits, and 'largest_fitting' names the largest total that does (None if none). Returns a "
      "dict: shapes (a list of dicts), capacity, upper_bound_activation_bytes, largest_fitting.");
  py::class_<OnnxExtraction>(m, "OnnxExtraction",
                             "An ONNX model as a problem (memplan extract model.onnx), and what stayed outside "
                             "the arena.")
      .def_property_readonly(
          "problem", [](const OnnxExtraction& x) { return x.problem; },
          "One buffer per intermediate tensor (id = tensor name); node k is tick k.")
      .def_readonly("ir_version", &OnnxExtraction::ir_version)
      .def_readonly("opset", &OnnxExtraction::opset)
      .def_readonly("producer", &OnnxExtraction::producer)
      .def_readonly("nodes", &OnnxExtraction::nodes)
      .def_readonly("initializers", &OnnxExtraction::initializers, "Weights: left out of the arena.")
      .def_readonly("initializer_bytes", &OnnxExtraction::initializer_bytes)
      .def_readonly("graph_inputs", &OnnxExtraction::graph_inputs, "Fed by the caller: left out of the arena.")
      .def_readonly("graph_input_bytes", &OnnxExtraction::graph_input_bytes)
      .def_readonly("constants", &OnnxExtraction::constants, "Folded constants: left out of the arena.")
      .def_readonly("constant_bytes", &OnnxExtraction::constant_bytes)
      .def_readonly("graph_outputs", &OnnxExtraction::graph_outputs)
      .def_readonly("unread", &OnnxExtraction::unread, "Node outputs no node reads (each lives one tick).")
      .def_readonly("operators", &OnnxExtraction::operators,
                    "One per buffer: the operator and name of the node that writes it ('MatMul /layers.0/MatMul').")
      .def_readonly("evaluated", &OnnxExtraction::evaluated,
                    "Tensors of shape computations whose values were computed before the run.")
      .def_readonly("inference_rounds", &OnnxExtraction::inference_rounds, "Runs of ONNX's shape inference.")
      .def("__repr__", [](const OnnxExtraction& x) {
        return "<memplan.OnnxExtraction: " + std::to_string(x.nodes) + " nodes, " + std::to_string(x.problem.size()) +
               " buffers, " + std::to_string(x.initializers) + " initializers>";
      });
}

}  // namespace memplan::python
