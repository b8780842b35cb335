// onnx_binding.cc — ONNX models from Python (built with MEMPLAN_WITH_ONNX):
// a model plus its input shapes as a problem, one buffer per intermediate
// tensor, through the front end `memplan extract model.onnx` uses
// (src/frontends/onnx/onnx_frontend.h), so problems and messages are the CLI's.
#include "bindings.h"
#include "errors.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/planner.h"
#include "onnx_frontend.h"

namespace memplan::python {
namespace {

// inputs: {"input": (1, 3, 224, 224)} or ["input=1x3x224x224", ...] (the CLI's --input).
std::vector<OnnxInputShape> input_shapes(py::handle inputs) {
  std::vector<OnnxInputShape> shapes;
  if (inputs.is_none()) return shapes;
  if (py::isinstance<py::dict>(inputs)) {
    for (auto [name, dims] : py::reinterpret_borrow<py::dict>(inputs)) {
      const std::string n = py::str(name);
      shapes.push_back({.name = n, .dims = int64_column(dims, "inputs['" + n + "']")});
    }
    return shapes;
  }
  // One "NAME=DIMS" string, or a sequence of them.
  const py::object texts = py::isinstance<py::str>(inputs) ? py::object(py::make_tuple(inputs))
                                                           : py::reinterpret_borrow<py::object>(inputs);
  for (py::handle text : texts) {
    shapes.push_back(value_or_raise(parse_onnx_input_shape(py::str(text))));
  }
  return shapes;
}

// inputs for extract_shapes: {"ids": ("4", "1..512")} (each dimension an int
// or a string of the CLI's forms) or ["ids=4x1..512", ...].
std::vector<OnnxInputChoices> input_choices(py::handle inputs) {
  std::vector<OnnxInputChoices> choices;
  if (py::isinstance<py::dict>(inputs)) {
    for (auto [name, dims] : py::reinterpret_borrow<py::dict>(inputs)) {
      std::string text = std::string(py::str(name)) + "=";
      bool first = true;
      for (py::handle d : dims) {
        text += (first ? "" : "x") + std::string(py::str(d));
        first = false;
      }
      choices.push_back(value_or_raise(parse_onnx_input_choices(text)));
    }
    return choices;
  }
  const py::object texts = py::isinstance<py::str>(inputs) ? py::object(py::make_tuple(inputs))
                                                           : py::reinterpret_borrow<py::object>(inputs);
  for (py::handle text : texts) choices.push_back(value_or_raise(parse_onnx_input_choices(py::str(text))));
  return choices;
}

// The most shapes one call samples, as the CLI's.
constexpr size_t kMaxShapes = 256;

OnnxOptions options_from(py::handle alignment, bool keep_constants) {
  OnnxOptions options;
  options.fold_constants = !keep_constants;
  if (!alignment.is_none()) {
    options.alignment = bytes_from(alignment, "alignment");
    if (!is_power_of_two(options.alignment)) {
      raise_input_error("alignment: " + std::to_string(options.alignment) + " is not a power of two");
    }
  }
  return options;
}

// Every shape of the choices, extracted: (the shape as {name: dims}, its extraction).
std::vector<std::pair<py::dict, OnnxExtraction>> extract_grid(py::handle path, py::handle inputs,
                                                              OnnxOptions options) {
  const std::string p = py::str(py::module_::import("os").attr("fspath")(path));
  const std::vector<std::vector<OnnxInputShape>> grid =
      value_or_raise(onnx_input_grid(input_choices(inputs), kMaxShapes));
  const std::string bytes = value_or_raise(read_text_file(p), ErrorSource::kFile);
  std::vector<std::pair<py::dict, OnnxExtraction>> out;
  for (const std::vector<OnnxInputShape>& shape : grid) {
    options.inputs = shape;
    OnnxExtraction x = value_or_raise(
        extract_onnx_model({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, p, options));
    py::dict given;
    for (const OnnxInputShape& s : shape) given[py::str(s.name)] = py::tuple(py::cast(s.dims));
    out.emplace_back(std::move(given), std::move(x));
  }
  return out;
}

}  // namespace

py::object extract_onnx_file(const std::string& path, py::handle inputs, py::handle alignment, bool keep_constants) {
  OnnxOptions options = options_from(alignment, keep_constants);
  options.inputs = input_shapes(inputs);
  const std::string bytes = value_or_raise(read_text_file(path), ErrorSource::kFile);
  return py::cast(value_or_raise(
      extract_onnx_model({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, path, options)));
}

void bind_onnx(py::module_& m) {
  m.def(
      "extract_shapes",
      [](py::object path, py::handle inputs, py::handle alignment, bool keep_constants) {
        py::list shapes;
        std::vector<Problem> problems;
        for (auto& [given, x] : extract_grid(path, inputs, options_from(alignment, keep_constants))) {
          problems.push_back(x.problem);
          shapes.append(py::make_tuple(given, py::cast(std::move(x))));
        }
        return py::make_tuple(shapes, py::cast(value_or_raise(upper_bound_problem(problems))));
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
        const int64_t budget = capacity.is_none() ? 0 : bytes_from(capacity, "capacity");
        py::list shapes;
        std::vector<Problem> problems;
        py::object largest = py::none();
        int64_t largest_total = -1;
        for (auto& [given, x] : extract_grid(path, inputs, options_from(alignment, keep_constants))) {
          const Plan plan = value_or_raise(plan_with(kDefaultPlanner, x.problem));
          const int64_t weights = x.initializer_bytes + x.constant_bytes;
          const int64_t total = weights + x.graph_input_bytes + plan.arena;
          py::dict row;
          row["inputs"] = given;
          row["weights_bytes"] = weights;
          row["input_bytes"] = x.graph_input_bytes;
          row["activation_bytes"] = plan.arena;
          row["activation_load_bytes"] = load(x.problem);
          row["total_bytes"] = total;
          if (budget > 0) {
            row["fits"] = total <= budget;
            if (total <= budget && total > largest_total) {
              largest_total = total;
              largest = given;
            }
          }
          shapes.append(row);
          problems.push_back(std::move(x.problem));
        }
        const Problem bound = value_or_raise(upper_bound_problem(problems));
        py::dict result;
        result["shapes"] = shapes;
        result["capacity"] = budget;
        result["upper_bound_activation_bytes"] = value_or_raise(plan_with(kDefaultPlanner, bound)).arena;
        result["largest_fitting"] = largest;
        return result;
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
      .def_property_readonly("problem", [](const OnnxExtraction& x) { return x.problem; },
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
