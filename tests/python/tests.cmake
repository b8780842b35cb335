# tests.cmake — the Python module (label python): pytest files run with
# /usr/bin/python3 against the package assembled in the build tree
# (<build>/python). Only with MEMPLAN_WITH_PYTHON, which is off under the
# sanitizers. MEMPLAN_CLI is the built `memplan`, for tests that compare the
# module's results and messages with the CLI's.
# PYTHONDONTWRITEBYTECODE: no __pycache__ beside the test files in the source tree.
if(NOT MEMPLAN_WITH_PYTHON)
  return()
endif()
file(GLOB MEMPLAN_PYTHON_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/test_*.py)
foreach(file ${MEMPLAN_PYTHON_TESTS})
  get_filename_component(name ${file} NAME_WE)
  string(REGEX REPLACE "^test_" "" name ${name})
  # -p no:cacheprovider: no .pytest_cache in the source tree.
  add_test(NAME python.${name}
    COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider ${file}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(python.${name} PROPERTIES LABELS python TIMEOUT 300
    ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;PYTHONDONTWRITEBYTECODE=1;MEMPLAN_CLI=$<TARGET_FILE:memplan>;MEMPLAN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()
