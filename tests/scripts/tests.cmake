# tests.cmake — tests of the project's own scripts (label scripts).
#
# scripts/run-ctest.sh is how scripts/test.sh runs every stage; it must fail
# when no test ran (a build folder configured without tests, or a label filter
# that selects nothing) and when fewer tests ran than the stage expects.
set(_memplan_ctest_fixtures ${CMAKE_CURRENT_BINARY_DIR}/scripts)
# A build folder with no tests at all, and one with a single passing test.
file(WRITE ${_memplan_ctest_fixtures}/empty/CTestTestfile.cmake "# no tests\n")
file(WRITE ${_memplan_ctest_fixtures}/one/CTestTestfile.cmake
  "add_test(one_passing_test \"${CMAKE_COMMAND}\" -E true)\nset_tests_properties(one_passing_test PROPERTIES LABELS fast)\n")
# And one whose passing test leaves a memplan_preload_* folder in its TMPDIR.
file(WRITE ${_memplan_ctest_fixtures}/leaves_folder/CTestTestfile.cmake
  "add_test(passing_test_that_leaves_a_folder sh -c \"mkdir \\\"$TMPDIR/memplan_preload_left\\\"\")\n")

# Each test passes only on the script's own verdict line (the exit status alone
# would also be non-zero if the script were missing or broken).
function(memplan_script_test name verdict)
  add_test(NAME scripts.${name} COMMAND ${PROJECT_SOURCE_DIR}/scripts/run-ctest.sh ${ARGN})
  # Unset the tally of an enclosing scripts/test.sh: these runs are not its tests.
  set_tests_properties(scripts.${name} PROPERTIES LABELS scripts TIMEOUT 60 PASS_REGULAR_EXPRESSION "${verdict}"
    ENVIRONMENT "MEMPLAN_CTEST_TALLY=")
endfunction()

memplan_script_test(run_ctest_fails_when_no_test_exists "run-ctest: ctest failed in .*empty"
  ${_memplan_ctest_fixtures}/empty 0)
memplan_script_test(run_ctest_fails_when_the_label_selects_nothing "run-ctest: ctest failed in .*one"
  ${_memplan_ctest_fixtures}/one 0 -L no_such_label)
memplan_script_test(run_ctest_fails_below_the_expected_count "run-ctest: only 1 tests ran in .*one, expected at least 2"
  ${_memplan_ctest_fixtures}/one 2)
memplan_script_test(run_ctest_passes_when_enough_tests_pass "run-ctest: 1 tests ran and passed in .*one"
  ${_memplan_ctest_fixtures}/one 1)
memplan_script_test(run_ctest_fails_when_a_passing_test_leaves_a_folder
  "run-ctest: the passing tests left temporary folders behind in .*leaves_folder.*memplan_preload_left"
  ${_memplan_ctest_fixtures}/leaves_folder 1)

# scripts/gpu-check.sh --dry-run: every step of the GPU check that needs no GPU
# (the minimal configure, the workloads at tiny sizes on the CPU, a repeat run
# compared bit for bit, the table and JSON, which the script then checks); it
# prints its verdict line only when all of that held. Not in the sanitizer
# and fuzz builds: it builds nothing of theirs, and runs Debian's Python.
if(NOT MEMPLAN_SANITIZE AND NOT MEMPLAN_BUILD_FUZZ)
  add_test(NAME scripts.gpu_check_dry_run
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh --dry-run --out ${CMAKE_CURRENT_BINARY_DIR}/gpu-check-dry-run)
  set_tests_properties(scripts.gpu_check_dry_run PROPERTIES LABELS scripts TIMEOUT 120
    PASS_REGULAR_EXPRESSION "gpu-check: dry run passed"
    ENVIRONMENT "PYTHON=${Python_EXECUTABLE};PYTHONDONTWRITEBYTECODE=1")
  # What decides the table's words (the comparison, the served fraction, the
  # library's statistics line, the snapshot's trimming), case by case.
  if(Python_EXECUTABLE)
    add_test(NAME scripts.gpu_check_parts
      COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}/test_gpu_check.py
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(scripts.gpu_check_parts PROPERTIES LABELS scripts TIMEOUT 60
      ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;MEMPLAN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  endif()
endif()

# scripts/check-format.sh (scripts/test.sh's first step) fails on a file that
# is not formatted, naming it, and passes on one that is.
file(WRITE ${_memplan_ctest_fixtures}/format/unformatted.cc "int  f( ){return 1;}\n")
file(WRITE ${_memplan_ctest_fixtures}/format/formatted.cc "int f() { return 1; }\n")
find_program(MEMPLAN_CLANG_FORMAT clang-format)
if(MEMPLAN_CLANG_FORMAT)
  add_test(NAME scripts.check_format_fails_on_an_unformatted_file
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-format.sh ${_memplan_ctest_fixtures}/format/unformatted.cc)
  set_tests_properties(scripts.check_format_fails_on_an_unformatted_file PROPERTIES LABELS scripts TIMEOUT 60
    WILL_FAIL TRUE)
  add_test(NAME scripts.check_format_names_the_unformatted_file
    COMMAND sh -c "${PROJECT_SOURCE_DIR}/scripts/check-format.sh ${_memplan_ctest_fixtures}/format/unformatted.cc 2>&1; true")
  set_tests_properties(scripts.check_format_names_the_unformatted_file PROPERTIES LABELS scripts TIMEOUT 60
    PASS_REGULAR_EXPRESSION "1 file\\(s\\) not formatted.*format/unformatted.cc")
  add_test(NAME scripts.check_format_passes_a_formatted_file
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-format.sh ${_memplan_ctest_fixtures}/format/formatted.cc)
  set_tests_properties(scripts.check_format_passes_a_formatted_file PROPERTIES LABELS scripts TIMEOUT 60
    PASS_REGULAR_EXPRESSION "check-format: 1 files formatted")
endif()
