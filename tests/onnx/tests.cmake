# tests.cmake — the ONNX front end on models exported from torch (label onnx):
# onnx_models_test.py exports each model with Debian's torch, runs `memplan
# extract` and checks the problem against ONNX's shape inference in Python or,
# where that leaves shapes open, against a run of the graph
# (onnx_reference.py). Transformer names read KIND_{fixed,dynamic}_opsetN;
# fold_FAMILY models exercise one family of shape computations each, and
# error_FAMILY models must be refused with a message naming the node and why.
# Only with MEMPLAN_WITH_ONNX; SKIPPED (exit 77) without python3-torch,
# python3-torchvision or python3-onnx.
if(NOT MEMPLAN_WITH_ONNX)
  return()
endif()
foreach(model mlp residual resnet18 mobilenet_v2 squeezenet1_1 shufflenet_v2_x1_0 vit_b_16
              encoder_fixed_opset13 encoder_dynamic_opset14 encoder_dynamic_opset17
              decoder_dynamic_opset13 decoder_fixed_opset16 gpt_dynamic_opset14
              bert_dynamic_opset13 bert_dynamic_opset17 vit_dynamic_opset13 swin_dynamic_opset13
              swin_fixed_opset17 fold_view fold_mul fold_arange fold_expand fold_slice
              error_nonzero error_reshape_by_data)
  add_test(NAME onnx_${model}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/onnx_models_test.py ${model} $<TARGET_FILE:memplan>
            ${CMAKE_CURRENT_BINARY_DIR}/onnx/${model})
  set_tests_properties(onnx_${model} PROPERTIES LABELS onnx TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()

# onnx_grid_test.cc and shape_values_test.cc: the front end's library calls
# (predict_onnx_grid on the small models of tests/cli/data/onnx) and its table
# of evaluated operators, as GoogleTest cases (label onnx).
file(GLOB MEMPLAN_ONNX_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cc)
add_executable(memplan_onnx_tests ${MEMPLAN_ONNX_TEST_SOURCES})
# shape_values_test.cc builds ONNX's NodeProto: ONNX's headers and libraries too.
target_link_libraries(memplan_onnx_tests PRIVATE memplan::onnx memplan::core onnx onnx_proto GTest::gtest
                                                 GTest::gtest_main)
target_include_directories(memplan_onnx_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/frontends/onnx)
target_compile_definitions(memplan_onnx_tests PRIVATE MEMPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gtest_discover_tests(memplan_onnx_tests PROPERTIES LABELS onnx DISCOVERY_TIMEOUT 60)
