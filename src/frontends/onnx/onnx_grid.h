// onnx_grid.h — an ONNX model at every shape of its input ranges and lists,
// and the memory it needs before it runs: the one call behind `memplan
// extract --input ids=1..512` / `--predict` and memplan.extract_shapes /
// memplan.predict in Python. Front ends print or convert the result; they
// never extract, plan or check a shape themselves.
//
//   predict_onnx_grid(model, source, options)
//     1. Samples the grid of input shapes (onnx_input_grid: a range at its
//        ends and the powers of two between, a list as given; at most
//        options.max_shapes shapes).
//     2. Extracts the model at each shape (extract_onnx_model).
//     3. Plans each shape's problem with the default planner (plan_with:
//        the plan is validated), and the upper-bound problem (every buffer at
//        its largest size, upper_bound_problem) once.
//     4. Checks that the upper-bound plan serves every shape with its offsets
//        unchanged (validate); a failure is an Internal error, a memplan bug.
//     5. Per shape: weights (initializers and folded constants) + graph
//        inputs + planned activations = total; with a capacity, whether the
//        total fits, how many do and which is the largest that does.
//   Errors name the shape they came from ("ids=1x512: ...").
//
// Thread-safety: pure functions of their arguments (they plan on the calling
// thread).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memplan/problem.h"
#include "memplan/status.h"
#include "onnx_frontend.h"

namespace memplan {

// The most shapes one grid samples: a few ranges of powers of two, not a sweep.
inline constexpr size_t kOnnxMaxShapes = 256;

struct OnnxGridOptions {
  // Each graph input's choices (parse_onnx_input_choices); a fixed shape has
  // one value per dimension.
  std::vector<OnnxInputChoices> inputs;
  // As OnnxOptions: the alignment of every buffer, and whether constants stay
  // out of the arena.
  int64_t alignment = 64;
  bool fold_constants = true;
  // The most shapes the grid may have (InvalidArgument past it).
  size_t max_shapes = kOnnxMaxShapes;
  // predict_onnx_grid: the bytes the process may hold (weights + inputs +
  // activations); 0: no budget, no shape is said to fit.
  int64_t capacity = 0;
};

// "ids=1x512 mask=1x512": the shapes as --input spells them.
std::string onnx_shapes_text(const std::vector<OnnxInputShape>& shapes);

// One shape of the grid, extracted.
struct OnnxGridShape {
  std::vector<OnnxInputShape> inputs;
  OnnxExtraction extraction;
};

struct OnnxGrid {
  std::vector<OnnxGridShape> shapes;   // in onnx_input_grid's order
  Problem upper_bound;                 // every buffer at its largest size
  std::vector<std::string> operators;  // one per buffer of upper_bound
};

// Steps 1, 2 and the upper-bound problem of step 3, without planning.
StatusOr<OnnxGrid> extract_onnx_grid(std::span<const uint8_t> model, const std::string& source,
                                     const OnnxGridOptions& options);

// One shape of a prediction.
struct OnnxShapePrediction {
  std::vector<OnnxInputShape> inputs;
  std::string label;                  // onnx_shapes_text(inputs)
  size_t buffers = 0;                 // intermediate tensors in the arena
  int64_t weights_bytes = 0;          // initializers and folded constants
  int64_t input_bytes = 0;            // graph inputs (fed by the caller)
  int64_t activation_bytes = 0;       // the default planner's arena at this shape
  int64_t activation_load_bytes = 0;  // the activations' lower bound (load)
  bool fits = false;                  // a capacity was given and total_bytes() is within it

  int64_t total_bytes() const { return weights_bytes + input_bytes + activation_bytes; }
};

struct OnnxGridPrediction {
  std::string planner;   // the planner that made every plan
  int64_t capacity = 0;  // options.capacity (0: none)
  std::vector<OnnxShapePrediction> shapes;
  Problem upper_bound;                 // its plan serves every shape (checked)
  std::vector<std::string> operators;  // one per buffer of upper_bound
  int64_t upper_bound_load_bytes = 0;
  int64_t upper_bound_activation_bytes = 0;  // the upper-bound plan's arena
  size_t fitting = 0;                        // shapes that fit the capacity
  std::optional<size_t> largest_fitting;     // index of the largest total that fits

  // A capacity was given and no shape fits it (`memplan extract` exits 2).
  bool none_fits() const { return capacity > 0 && fitting == 0; }
};

// Steps 1-5. InvalidArgument for a negative capacity or a grid past
// max_shapes; the extraction's and the planner's errors otherwise.
StatusOr<OnnxGridPrediction> predict_onnx_grid(std::span<const uint8_t> model, const std::string& source,
                                               const OnnxGridOptions& options);

}  // namespace memplan
