# Trace tests: the reader, extraction and statistics (pure), and the tracer
# itself, run on small programs whose allocations are known. Included by
# tests/CMakeLists.txt.

# Programs run under libmemplan_trace.so. Never sanitized: a sanitizer runtime
# insists on being the first library loaded, and the tracer is preloaded.
# They declare memplan_mark() weak and bind to the preloaded tracer's at run time.
set(MEMPLAN_TRACE_TEST_PROGRAMS known_allocations.c cxx_new.cc stress.c)
foreach(source ${MEMPLAN_TRACE_TEST_PROGRAMS})
  get_filename_component(name ${source} NAME_WE)
  set(target memplan_trace_program_${name})
  add_executable(${target} ${CMAKE_CURRENT_SOURCE_DIR}/trace/programs/${source})
  set_target_properties(${target} PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "")
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE -O0 -fno-sanitize=all)
  target_link_libraries(${target} PRIVATE Threads::Threads)
  list(APPEND MEMPLAN_TRACE_PROGRAM_DEFINITIONS "MEMPLAN_TRACE_PROGRAM_${name}=\"$<TARGET_FILE:${target}>\"")
  list(APPEND MEMPLAN_TRACE_PROGRAM_TARGETS ${target})
endforeach()

file(GLOB MEMPLAN_TRACE_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/trace/*.cc)
add_executable(memplan_trace_tests ${MEMPLAN_TRACE_TEST_SOURCES})
target_link_libraries(memplan_trace_tests PRIVATE memplan::trace GTest::gtest GTest::gtest_main GTest::gmock)
target_include_directories(memplan_trace_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(memplan_trace_tests PRIVATE ${MEMPLAN_TRACE_PROGRAM_DEFINITIONS}
  MEMPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(memplan_trace_tests ${MEMPLAN_TRACE_PROGRAM_TARGETS})
# GoogleTest's headers once (a precompiled header), each file on its own even
# in a unity build (the files share helper names).
target_precompile_headers(memplan_trace_tests PRIVATE <gtest/gtest.h>)
set_target_properties(memplan_trace_tests PROPERTIES UNITY_BUILD OFF)
gtest_discover_tests(memplan_trace_tests PROPERTIES LABELS trace DISCOVERY_TIMEOUT 60)

# The trace commands of the CLI, on the known program (memplan_cli_test comes
# from tests/cli/cli_tests.cmake, included before this file).
if(COMMAND memplan_cli_test)
  set(MEMPLAN_TRACE_CLI_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli/trace)
  set(known $<TARGET_FILE:memplan_trace_program_known_allocations>)
  memplan_cli_test(trace_runs_a_command EXIT 0 WORKDIR ${MEMPLAN_TRACE_CLI_DIR}
    ARGS trace --output known.trace -- ${known}
    STDERR "traced [0-9]+ allocation events and 4 marks on 4 thread\\(s\\) into .*known.trace"
    FILE known.trace FIXTURES_SETUP memplan_trace_known)
  memplan_cli_test(trace_info_describes_iterations EXIT 0 WORKDIR ${MEMPLAN_TRACE_CLI_DIR}
    ARGS trace-info known.trace
    STDOUT "complete.*4 marks \\(iterations 0..4\\).*\n1 +20 +11 +9 "
    FIXTURES_REQUIRED memplan_trace_known)
  memplan_cli_test(extract_writes_an_iteration EXIT 0 WORKDIR ${MEMPLAN_TRACE_CLI_DIR}
    ARGS extract known.trace --iteration 1 --output iteration1.csv
    STDOUT "buffers +10,.*left out +1 escaping the iteration \\(77 B\\)"
    FILE iteration1.csv FILE_REGEX "^id,lower,upper,size,alignment\n0,0,3,100,16\n1,1,10,200,16\n"
    FIXTURES_REQUIRED memplan_trace_known)
  # From standard input: sniffed by its first bytes as a trace, the same iteration.
  memplan_cli_test(extract_reads_a_trace_from_stdin EXIT 0 WORKDIR ${MEMPLAN_TRACE_CLI_DIR}
    ARGS extract - --iteration 1 --output - STDIN ${MEMPLAN_TRACE_CLI_DIR}/known.trace
    STDERR "iteration +1 of <stdin>:.*buffers +10,"
    STDOUT "^id,lower,upper,size,alignment\n0,0,3,100,16\n1,1,10,200,16\n"
    FIXTURES_REQUIRED memplan_trace_known)
  memplan_cli_test(extract_min_size_leaves_out_small_buffers EXIT 0 WORKDIR ${MEMPLAN_TRACE_CLI_DIR}
    ARGS extract known.trace --iteration 1 --min-size 1000 --output iteration1_large.csv
    STDOUT "buffers +3,.*7 below --min-size"
    FIXTURES_REQUIRED memplan_trace_known)
  memplan_cli_test(extract_names_a_missing_iteration EXIT 1 WORKDIR ${MEMPLAN_TRACE_CLI_DIR}
    ARGS extract known.trace --iteration 9 --output nothing.csv
    STDERR "iteration 9 is not in the trace: it has 4 marks"
    FIXTURES_REQUIRED memplan_trace_known)
  memplan_cli_test(trace_info_rejects_a_file_that_is_not_a_trace EXIT 1
    ARGS trace-info ${PROJECT_SOURCE_DIR}/bench/data/dsa/minimalloc/examples/input.12.csv
    STDERR "not a memplan trace")
  memplan_cli_test(trace_passes_on_the_exit_status EXIT 3
    ARGS trace --output status.trace -- /bin/sh -c "exit 3"
    STDERR "exited with status 3")
  memplan_cli_test(trace_marks_on_a_signal EXIT 0
    ARGS trace --mark-signal USR2 --output signal.trace -- /bin/sh -c "kill -USR2 $$ && kill -USR2 $$ && exit 0"
    STDERR "and 2 marks")
  memplan_cli_test(trace_needs_a_command EXIT 100 ARGS trace --output none.trace STDERR "no command to trace")  # a usage error
  # A version-2 trace with operator records (tests/fuzz/corpus/trace/operators.trace:
  # conv2d 4 KiB, empty 256 B, relu 64 B, 32 B outside any operator).
  memplan_cli_test(trace_info_ranks_operators_by_bytes EXIT 0
    ARGS trace-info ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/trace/operators.trace --operators 3
    STDOUT "top operators by bytes allocated, iterations 1..1.*\naten::conv2d +1 +4.00 KiB +92.1%\naten::empty +1 +256 B +5.8%\naten::relu +1 +64 B +1.4%\n$")
endif()

# With Debian's python3-torch and python3-torchvision: a real forward pass
# under the tracer repeats exactly (tests/trace/torch_iterations_repeat.sh:
# ~7 s of CPU, mostly reading the 2.2 million events of torch's import; 20 s
# of wall time on the shared 2-core machine). Not under the sanitizers: the tracer and the interpreter are
# not instrumented, and the check is about the tracer, not the sanitized code.
if(NOT MEMPLAN_SANITIZE AND NOT MEMPLAN_BUILD_FUZZ)
  set(MEMPLAN_TORCH_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with torch and torchvision, for the torch trace tests")
  execute_process(COMMAND ${MEMPLAN_TORCH_PYTHON} -c "import torch, torchvision"
                  RESULT_VARIABLE memplan_torch_python_result OUTPUT_QUIET ERROR_QUIET TIMEOUT 60)
  if(memplan_torch_python_result EQUAL 0)
    add_test(NAME trace_torchvision_iterations_repeat
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/trace/torch_iterations_repeat.sh $<TARGET_FILE:memplan>
                     ${MEMPLAN_TORCH_PYTHON} ${PROJECT_SOURCE_DIR}/examples/trace_torchvision.py
                     ${CMAKE_CURRENT_BINARY_DIR}/trace/torch_iterations_repeat)
    set_tests_properties(trace_torchvision_iterations_repeat PROPERTIES LABELS "trace;torch" TIMEOUT 120)
    # The libtorch example with the operator recorder (src/trace/torch/):
    # ~4 s of CPU beyond torch's own start-up.
    if(TARGET memplan_torchscript_trace)
      add_test(NAME trace_torchscript_operators
               COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/trace/torch_operators.sh $<TARGET_FILE:memplan>
                       $<TARGET_FILE:memplan_torchscript_trace> ${MEMPLAN_TORCH_PYTHON}
                       ${CMAKE_CURRENT_BINARY_DIR}/trace/torch_operators)
      set_tests_properties(trace_torchscript_operators PROPERTIES LABELS "trace;torch" TIMEOUT 180)
    endif()
  else()
    message(STATUS "memplan: ${MEMPLAN_TORCH_PYTHON} cannot import torch and torchvision: torch trace tests skipped")
  endif()
endif()
