# libFuzzer targets (only with -DMEMPLAN_BUILD_FUZZ=ON and clang; the top-level
# CMakeLists.txt then compiles everything with -fsanitize=fuzzer-no-link,address,undefined).
# Each target runs as a CTest labelled `fuzz` for a fixed time over its seed
# corpus. New inputs go to a corpus folder in the build tree, so the seeds in
# the source tree stay as committed; crashes are written to fuzz-artifacts/.
if(NOT MEMPLAN_BUILD_FUZZ)
  return()
endif()

set(MEMPLAN_FUZZ_SECONDS 30 CACHE STRING "Seconds each libFuzzer CTest runs")
# `cmake --build . --target memplan_fuzz_targets` builds every fuzz target and
# nothing else (scripts/test.sh uses it so that the fuzz stage stays short).
add_custom_target(memplan_fuzz_targets)

# memplan_fuzz_target(<source name> <test name> <seed folder under corpus/> <dictionary or "">
#                     [libraries beyond memplan::core...])
function(memplan_fuzz_target name test seeds dict)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
  target_link_libraries(${name} PRIVATE memplan::core ${ARGN})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer-no-link)  # tests/CMakeLists.txt leaves it out
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(memplan_fuzz_targets ${name})
  set(work ${CMAKE_CURRENT_BINARY_DIR}/fuzz/${name})
  file(MAKE_DIRECTORY ${work}/corpus ${work}/artifacts)
  set(dict_option)
  if(dict)
    set(dict_option -dict=${CMAKE_CURRENT_LIST_DIR}/${dict})
  endif()
  add_test(NAME ${test}
           COMMAND ${name} -max_total_time=${MEMPLAN_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048
                   ${dict_option} -artifact_prefix=${work}/artifacts/
                   -print_final_stats=1
                   ${work}/corpus ${CMAKE_CURRENT_LIST_DIR}/corpus/${seeds}
           WORKING_DIRECTORY ${work})
  set_tests_properties(${test} PROPERTIES LABELS fuzz TIMEOUT 300)
endfunction()

memplan_fuzz_target(csv_reader_fuzz fuzz.csv_reader csv csv.dict)
memplan_fuzz_target(trace_reader_fuzz fuzz.trace_reader trace "" memplan::trace)
memplan_fuzz_target(replay_fuzz fuzz.replay replay "" memplan::runtime)
memplan_fuzz_target(torch_profile_fuzz fuzz.torch_profile torch_profile torch_profile.dict)
memplan_fuzz_target(snapshot_reader_fuzz fuzz.snapshot_reader snapshot "")
memplan_fuzz_target(plan_file_fuzz fuzz.plan_file plan_file plan_file.dict)
# The ONNX front end, when it is built (see onnx_model_fuzz.cc for why it must be asked for).
if(MEMPLAN_WITH_ONNX)
  memplan_fuzz_target(onnx_model_fuzz fuzz.onnx_model onnx "" memplan::onnx)
endif()
