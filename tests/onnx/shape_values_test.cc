// shape_values_test.cc — the operator table of the ONNX front end's
// evaluator (src/frontends/onnx/shape_values.cc), one operator family at a
// time, against values worked out by hand from the ONNX operator definitions.
#include "shape_values.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace memplan::onnx_values {
namespace {

using T = onnx::TensorProto;

KnownTensor ints_of(std::vector<int64_t> values, int32_t type = T::INT64) {
  return {.type = type, .dims = {static_cast<int64_t>(values.size())}, .ints = std::move(values)};
}

KnownTensor reals_of(std::vector<double> values) {
  return {.type = T::FLOAT, .dims = {static_cast<int64_t>(values.size())}, .reals = std::move(values)};
}

onnx::NodeProto node_of(const std::string& op, int64_t fmod = -1) {
  onnx::NodeProto node;
  node.set_op_type(op);
  if (fmod >= 0) {
    onnx::AttributeProto* a = node.add_attribute();
    a->set_name("fmod");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(fmod);
  }
  return node;
}

Evaluation run(const onnx::NodeProto& node, const std::vector<const KnownTensor*>& values) {
  std::vector<InputFacts> facts;
  for (const KnownTensor* v : values) facts.push_back({.value = v, .shape = v->dims, .present = true});
  return evaluate(node, facts, 17);
}

std::vector<int64_t> ints_result(const std::string& op, const KnownTensor& a, const KnownTensor& b, int64_t fmod = -1) {
  const Evaluation e = run(node_of(op, fmod), {&a, &b});
  EXPECT_TRUE(e.why_not.empty()) << op << ": " << e.why_not;
  return e.outputs.empty() ? std::vector<int64_t>{} : e.outputs[0].ints;
}

TEST(ShapeValues, IntegerArithmeticFollowsOnnx) {
  const KnownTensor a = ints_of({7, -7, 7, -7}), b = ints_of({2, 2, -2, -2});
  EXPECT_EQ(ints_result("Add", a, b), (std::vector<int64_t>{9, -5, 5, -9}));
  EXPECT_EQ(ints_result("Sub", a, b), (std::vector<int64_t>{5, -9, 9, -5}));
  EXPECT_EQ(ints_result("Mul", a, b), (std::vector<int64_t>{14, -14, -14, 14}));
  EXPECT_EQ(ints_result("Div", a, b), (std::vector<int64_t>{3, -3, -3, 3}));     // truncates
  EXPECT_EQ(ints_result("Mod", a, b), (std::vector<int64_t>{1, 1, -1, -1}));     // the divisor's sign
  EXPECT_EQ(ints_result("Mod", a, b, 1), (std::vector<int64_t>{1, -1, 1, -1}));  // fmod: the dividend's
  EXPECT_EQ(ints_result("Min", a, b), (std::vector<int64_t>{2, -7, -2, -7}));
  EXPECT_EQ(ints_result("Max", a, b), (std::vector<int64_t>{7, 2, 7, -2}));
  EXPECT_EQ(ints_result("Sum", a, b), (std::vector<int64_t>{9, -5, 5, -9}));
}

TEST(ShapeValues, ElementsWithoutAValueAreRefused) {
  const KnownTensor big = ints_of({INT64_MAX}), one = ints_of({1}), zero = ints_of({0});
  EXPECT_NE(run(node_of("Add"), {&big, &one}).why_not.find("no value"), std::string::npos);
  EXPECT_NE(run(node_of("Div"), {&one, &zero}).why_not.find("division by zero"), std::string::npos);
  EXPECT_FALSE(run(node_of("Pow"), {&one, &one}).why_not.empty());  // Pow on integers: not evaluated
  const KnownTensor small = ints_of({100}, T::INT8);
  EXPECT_FALSE(run(node_of("Add"), {&small, &small}).why_not.empty());  // 200 does not fit INT8
}

TEST(ShapeValues, ComparisonsAndLogicGiveBooleans) {
  const KnownTensor a = reals_of({1.5, 2.0, 3.0}), b = reals_of({2.0, 2.0, 2.0});
  for (const auto& [op, expected] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"Equal", {0, 1, 0}},
                                                                 {"Less", {1, 0, 0}},
                                                                 {"Greater", {0, 0, 1}},
                                                                 {"LessOrEqual", {1, 1, 0}},
                                                                 {"GreaterOrEqual", {0, 1, 1}}}) {
    const Evaluation e = run(node_of(op), {&a, &b});
    ASSERT_TRUE(e.why_not.empty()) << op << ": " << e.why_not;
    EXPECT_EQ(e.outputs[0].type, T::BOOL) << op;
    EXPECT_EQ(e.outputs[0].ints, expected) << op;
  }
  const KnownTensor p = ints_of({0, 0, 1, 1}, T::BOOL), q = ints_of({0, 1, 0, 1}, T::BOOL);
  EXPECT_EQ(ints_result("And", p, q), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(ints_result("Or", p, q), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(ints_result("Xor", p, q), (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(ShapeValues, UnaryOperatorsOnBothKinds) {
  const KnownTensor x = ints_of({-3, 4});
  const Evaluation neg = run(node_of("Neg"), {&x}), abs = run(node_of("Abs"), {&x});
  EXPECT_EQ(neg.outputs.at(0).ints, (std::vector<int64_t>{3, -4}));
  EXPECT_EQ(abs.outputs.at(0).ints, (std::vector<int64_t>{3, 4}));
  const KnownTensor r = reals_of({4.0, 2.5});
  EXPECT_EQ(run(node_of("Sqrt"), {&r}).outputs.at(0).reals, (std::vector<double>{2.0, std::sqrt(2.5)}));
  EXPECT_EQ(run(node_of("Floor"), {&r}).outputs.at(0).reals, (std::vector<double>{4.0, 2.0}));
  EXPECT_EQ(run(node_of("Ceil"), {&r}).outputs.at(0).reals, (std::vector<double>{4.0, 3.0}));
  EXPECT_EQ(run(node_of("Reciprocal"), {&r}).outputs.at(0).reals, (std::vector<double>{0.25, 0.4}));
  const KnownTensor b = ints_of({0, 1}, T::BOOL);
  EXPECT_EQ(run(node_of("Not"), {&b}).outputs.at(0).ints, (std::vector<int64_t>{1, 0}));
}

TEST(ShapeValues, SaysWhyItDoesNotEvaluate) {
  const KnownTensor x = ints_of({1});
  EXPECT_EQ(run(node_of("ReduceProd"), {&x}).why_not, "memplan does not evaluate ReduceProd");
  EXPECT_EQ(run(node_of("Add"), {&x}).why_not, "it needs 2 inputs");
  EXPECT_EQ(run(node_of("Where"), {&x, &x}).why_not, "it needs 3 inputs");
  EXPECT_EQ(run(node_of("Add"), {}).why_not, "it has no input");
  const Evaluation missing = evaluate(node_of("Add"), {{.value = &x, .present = true}, {.present = true}}, 17);
  EXPECT_EQ(missing.missing_input, 1);
  onnx::NodeProto foreign = node_of("Add");
  foreign.set_domain("com.microsoft");
  EXPECT_EQ(run(foreign, {&x, &x}).why_not, "it is not of the default ONNX domain");
}

TEST(ShapeValues, ListsEachOperatorOnceSorted) {
  const std::vector<std::string>& ops = evaluated_operators();
  EXPECT_EQ(ops.size(), 41u);
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_EQ(std::adjacent_find(ops.begin(), ops.end()), ops.end());
}

}  // namespace
}  // namespace memplan::onnx_values
