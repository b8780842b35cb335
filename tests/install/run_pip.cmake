# Script mode: a fresh venv (with the system site packages, for Debian's
# setuptools and wheel), `pip install .` of SOURCE_DIR built in BUILD_DIR, and
# python_consumer.py run by the venv's interpreter from outside the source tree.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY ${WORK_DIR})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${PYTHON} -m venv --system-site-packages ${WORK_DIR}/venv)
run(${CMAKE_COMMAND} -E env MEMPLAN_CMAKE_BUILD_DIR=${BUILD_DIR}
    MEMPLAN_PIP_BUILD_BASE=${WORK_DIR}/setuptools PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
    ${WORK_DIR}/venv/bin/python -m pip install --no-build-isolation --no-index ${SOURCE_DIR})
run(${CMAKE_COMMAND} -E env PYTHONNOUSERSITE=1 --unset=PYTHONPATH
    ${WORK_DIR}/venv/bin/python ${PYTHON_CONSUMER} ${WORK_DIR}/venv)
