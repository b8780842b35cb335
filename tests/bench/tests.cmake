# tests.cmake — tests of the end-to-end benchmarks' shared Python module
# (bench/e2e_common.py): launching, the statistics line, summaries. Plain
# Python, no torch. Included by tests/CMakeLists.txt.
find_program(MEMPLAN_PYTHON3 NAMES python3)
if(MEMPLAN_PYTHON3)
  add_test(NAME bench.e2e_common
    COMMAND ${MEMPLAN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/bench/e2e_common_test.py ${PROJECT_SOURCE_DIR}/bench)
  set_tests_properties(bench.e2e_common PROPERTIES LABELS scripts TIMEOUT 60)
endif()
