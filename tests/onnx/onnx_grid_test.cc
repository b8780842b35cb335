// onnx_grid_test.cc — predict_onnx_grid, the one call behind `memplan
// extract --predict` and memplan.predict, on the small models of
// tests/cli/data/onnx (made by make_models.py there), checked against
// extractions of each shape on their own; and the evaluated operators
// against the list docs/formats.md gives.
#include "onnx_grid.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "onnx_frontend.h"

namespace memplan {
namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(MEMPLAN_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::span<const uint8_t> bytes_of(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

OnnxGridOptions grid_of(const std::string& input, int64_t capacity = 0) {
  OnnxGridOptions options;
  options.inputs.push_back(parse_onnx_input_choices(input).value());
  options.capacity = capacity;
  return options;
}

// fold_gather_concat.onnx: x[n,4] reshaped to [n,2,2] by a shape computed
// from its own (Shape -> Gather -> Unsqueeze -> Concat -> Reshape); 32 B of
// weights and constants.
const std::string kFoldModel = "tests/cli/data/onnx/fold_gather_concat.onnx";

TEST(OnnxGrid, PredictsEachShapeAsItsOwnExtractionSays) {
  const std::string model = read_source_file(kFoldModel);
  StatusOr<OnnxGridPrediction> p = predict_onnx_grid(bytes_of(model), "fold", grid_of("x=1..4x4", 160));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->shapes.size(), 3u);  // 1, 2, 4: the ends and the powers of two between
  const std::vector<int64_t> batches = {1, 2, 4};
  for (size_t i = 0; i < p->shapes.size(); ++i) {
    const OnnxShapePrediction& row = p->shapes[i];
    const OnnxOptions one{.inputs = {{.name = "x", .dims = {batches[i], 4}}}};
    StatusOr<OnnxExtraction> x = extract_onnx_model(bytes_of(model), "fold", one);
    ASSERT_TRUE(x.ok()) << x.status().message();
    EXPECT_EQ(row.label, "x=" + std::to_string(batches[i]) + "x4");
    EXPECT_EQ(row.weights_bytes, x->initializer_bytes + x->constant_bytes);
    EXPECT_EQ(row.input_bytes, batches[i] * 4 * 4);  // float32 x[n,4]
    EXPECT_EQ(row.activation_load_bytes, load(x->problem));
    EXPECT_GE(row.activation_bytes, row.activation_load_bytes);
    EXPECT_LE(row.activation_bytes, p->upper_bound_activation_bytes);
    EXPECT_EQ(row.fits, row.total_bytes() <= 160);
  }
  // The totals `memplan extract --predict` prints for this model: 128, 152, 184 B.
  EXPECT_EQ(p->shapes[0].total_bytes(), 128);
  EXPECT_EQ(p->shapes[1].total_bytes(), 152);
  EXPECT_EQ(p->shapes[2].total_bytes(), 184);
  EXPECT_EQ(p->fitting, 2u);
  ASSERT_TRUE(p->largest_fitting.has_value());
  EXPECT_EQ(*p->largest_fitting, 1u);
  EXPECT_FALSE(p->none_fits());
  EXPECT_EQ(p->planner, "portfolio");
  // The upper-bound problem: each buffer at its largest, the batch-4 shape's here.
  ASSERT_EQ(p->upper_bound.size(), p->operators.size());
  EXPECT_EQ(p->upper_bound_load_bytes, load(p->upper_bound));
  EXPECT_EQ(p->upper_bound_activation_bytes, 88);
}

TEST(OnnxGrid, SaysWhenNoShapeFits) {
  const std::string model = read_source_file(kFoldModel);
  StatusOr<OnnxGridPrediction> p = predict_onnx_grid(bytes_of(model), "fold", grid_of("x=4,1x4", 127));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->none_fits());
  EXPECT_EQ(p->fitting, 0u);
  EXPECT_FALSE(p->largest_fitting.has_value());
  // Without a capacity nothing is said to fit, and that is no verdict.
  StatusOr<OnnxGridPrediction> open = predict_onnx_grid(bytes_of(model), "fold", grid_of("x=4,1x4"));
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->none_fits());
  EXPECT_FALSE(open->shapes[0].fits);
}

TEST(OnnxGrid, ErrorsNameTheShape) {
  const std::string model = read_source_file("tests/cli/data/onnx/tiny.onnx");
  StatusOr<OnnxGridPrediction> p = predict_onnx_grid(bytes_of(model), "tiny", grid_of("x=1..2x5"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message().rfind("x=1x5: ", 0), 0u) << p.status().message();
  EXPECT_NE(p.status().message().find("fixes dim 1 at 4"), std::string::npos) << p.status().message();
  EXPECT_FALSE(predict_onnx_grid(bytes_of(model), "tiny", grid_of("x=2x4", -1)).ok());
  OnnxGridOptions many = grid_of("x=1..512x4");
  many.max_shapes = 3;
  EXPECT_FALSE(predict_onnx_grid(bytes_of(model), "tiny", many).ok());
}

TEST(OnnxGrid, ExtractsEveryShapeWithoutPlanning) {
  const std::string model = read_source_file(kFoldModel);
  StatusOr<OnnxGrid> grid = extract_onnx_grid(bytes_of(model), "fold", grid_of("x=3,1x4"));
  ASSERT_TRUE(grid.ok()) << grid.status().message();
  ASSERT_EQ(grid->shapes.size(), 2u);
  EXPECT_EQ(onnx_shapes_text(grid->shapes[0].inputs), "x=1x4");
  EXPECT_EQ(onnx_shapes_text(grid->shapes[1].inputs), "x=3x4");
  const Problem& small = grid->shapes[0].extraction.problem;
  const Problem& large = grid->shapes[1].extraction.problem;
  ASSERT_EQ(grid->upper_bound.size(), small.size());
  for (size_t i = 0; i < small.size(); ++i) {
    EXPECT_EQ(grid->upper_bound.buffers[i].size, std::max(small.buffers[i].size, large.buffers[i].size));
  }
  EXPECT_EQ(onnx_shapes_text({{.name = "ids", .dims = {1, 64}}, {.name = "mask", .dims = {}}}), "ids=1x64 mask=");
}

// docs/formats.md lists the operators the front end evaluates; the table in
// shape_values.cc is the one place they are named, and this keeps the two equal.
TEST(OnnxEvaluatedOperators, AreTheOnesTheFormatsDocumentLists) {
  const std::string doc = read_source_file("docs/formats.md");
  const size_t begin = doc.find("by these operators:");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("; initializers", begin);
  ASSERT_NE(end, std::string::npos);
  const std::string list = doc.substr(begin, end - begin);
  std::vector<std::string> documented;
  const std::regex name("`([A-Za-z]+)`");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), name); it != std::sregex_iterator(); ++it) {
    documented.push_back((*it)[1]);
  }
  // `start` and `end` are Shape's attributes, named beside it.
  std::erase_if(documented, [](const std::string& s) { return s == "start" || s == "end"; });
  EXPECT_EQ(documented, onnx_evaluated_operators());
}

}  // namespace
}  // namespace memplan
