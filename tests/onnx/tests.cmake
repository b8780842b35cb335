# tests.cmake — the ONNX front end on models exported from torch (label onnx):
# onnx_models_test.py exports each model with Debian's torch, runs `memplan
# extract` and checks the problem against ONNX's shape inference in Python.
# Only with MEMPLAN_WITH_ONNX; SKIPPED (exit 77) without python3-torch,
# python3-torchvision or python3-onnx.
if(NOT MEMPLAN_WITH_ONNX)
  return()
endif()
foreach(model mlp residual resnet18 mobilenet_v2 squeezenet1_1 shufflenet_v2_x1_0 vit_b_16)
  add_test(NAME onnx_${model}
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/onnx_models_test.py ${model} $<TARGET_FILE:memplan>
            ${CMAKE_CURRENT_BINARY_DIR}/onnx/${model})
  set_tests_properties(onnx_${model} PROPERTIES LABELS onnx TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()
