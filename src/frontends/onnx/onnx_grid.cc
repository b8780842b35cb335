// onnx_grid.cc — a model over a grid of input shapes, and its prediction
// (see onnx_grid.h).
#include "onnx_grid.h"

#include <utility>

#include "memplan/bounds.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

// `status` with `context` before its message, its code kept.
Status with_context(const Status& status, const std::string& context) {
  return Status(status.code(), context + ": " + status.message());
}

// Step 4: the upper-bound plan's offsets place every shape's buffers
// validly. upper_bound_problem promises it; this checks the promise.
Status check_upper_bound_serves(const OnnxGrid& grid, const Plan& bound_plan) {
  for (const OnnxGridShape& shape : grid.shapes) {
    const Problem& problem = shape.extraction.problem;
    const Plan served{.offsets = bound_plan.offsets, .arena = arena_of(problem, bound_plan.offsets)};
    const ValidationResult v = validate(problem, served);
    if (!v.ok()) {
      return Internal("the upper-bound plan does not serve " + onnx_shapes_text(shape.inputs) + ": " + v.message);
    }
  }
  return Status();
}

}  // namespace

std::string onnx_shapes_text(const std::vector<OnnxInputShape>& shapes) {
  std::string s;
  for (const OnnxInputShape& shape : shapes) {
    if (!s.empty()) s += ' ';
    s += shape.name;
    s += '=';
    for (size_t i = 0; i < shape.dims.size(); ++i) {
      if (i > 0) s += 'x';
      s += std::to_string(shape.dims[i]);
    }
  }
  return s;
}

StatusOr<OnnxGrid> extract_onnx_grid(std::span<const uint8_t> model, const std::string& source,
                                     const OnnxGridOptions& options) {
  MEMPLAN_ASSIGN_OR_RETURN(const std::vector<std::vector<OnnxInputShape>> grid,
                           onnx_input_grid(options.inputs, options.max_shapes));
  OnnxGrid out;
  std::vector<Problem> problems;
  for (const std::vector<OnnxInputShape>& inputs : grid) {
    const OnnxOptions one{.inputs = inputs, .alignment = options.alignment, .fold_constants = options.fold_constants};
    StatusOr<OnnxExtraction> x = extract_onnx_model(model, source, one);
    if (!x.ok()) return with_context(x.status(), onnx_shapes_text(inputs));
    if (out.operators.empty()) out.operators = x->operators;
    problems.push_back(x->problem);
    out.shapes.push_back({.inputs = inputs, .extraction = std::move(x).value()});
  }
  StatusOr<Problem> bound = upper_bound_problem(problems);
  if (!bound.ok()) return with_context(bound.status(), source);
  out.upper_bound = std::move(bound).value();
  return out;
}

StatusOr<OnnxGridPrediction> predict_onnx_grid(std::span<const uint8_t> model, const std::string& source,
                                               const OnnxGridOptions& options) {
  if (options.capacity < 0) return InvalidArgument("capacity " + std::to_string(options.capacity) + " is negative");
  MEMPLAN_ASSIGN_OR_RETURN(OnnxGrid grid, extract_onnx_grid(model, source, options));
  OnnxGridPrediction out{.planner = std::string(kDefaultPlanner), .capacity = options.capacity};
  for (const OnnxGridShape& shape : grid.shapes) {
    const OnnxExtraction& x = shape.extraction;
    OnnxShapePrediction row{.inputs = shape.inputs,
                            .label = onnx_shapes_text(shape.inputs),
                            .buffers = x.problem.size(),
                            .weights_bytes = x.initializer_bytes + x.constant_bytes,
                            .input_bytes = x.graph_input_bytes,
                            .activation_load_bytes = load(x.problem)};
    StatusOr<Plan> plan = plan_with(out.planner, x.problem);
    if (!plan.ok()) return with_context(plan.status(), row.label);
    row.activation_bytes = plan->arena;
    row.fits = options.capacity > 0 && row.total_bytes() <= options.capacity;
    if (row.fits) {
      ++out.fitting;
      if (!out.largest_fitting || row.total_bytes() > out.shapes[*out.largest_fitting].total_bytes()) {
        out.largest_fitting = out.shapes.size();
      }
    }
    out.shapes.push_back(std::move(row));
  }
  StatusOr<Plan> bound_plan = plan_with(out.planner, grid.upper_bound);
  if (!bound_plan.ok()) return with_context(bound_plan.status(), "the upper-bound plan");
  MEMPLAN_RETURN_IF_ERROR(check_upper_bound_serves(grid, *bound_plan));
  out.upper_bound_load_bytes = load(grid.upper_bound);
  out.upper_bound_activation_bytes = bound_plan->arena;
  out.upper_bound = std::move(grid.upper_bound);
  out.operators = std::move(grid.operators);
  return out;
}

}  // namespace memplan
