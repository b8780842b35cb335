# install.consumer: installs memplan into a scratch prefix and builds and runs a
# separate project that finds it with find_package(memplan); with the Python
# module, also imports the installed package with /usr/bin/python3
# (python_consumer.py) and checks it is the installed one.
set(MEMPLAN_INSTALL_TEST_DIR ${CMAKE_BINARY_DIR}/install-test)
add_test(NAME install.consumer
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${CMAKE_BINARY_DIR}
    -DWORK_DIR=${MEMPLAN_INSTALL_TEST_DIR}
    -DCONSUMER_DIR=${CMAKE_CURRENT_LIST_DIR}/consumer
    -DCXX=${CMAKE_CXX_COMPILER}
    "-DPYTHON=$<$<BOOL:${MEMPLAN_WITH_PYTHON}>:${Python_EXECUTABLE}>"
    -DPYTHON_INSTALL_DIR=${MEMPLAN_PYTHON_INSTALL_DIR}
    -DPYTHON_CONSUMER=${CMAKE_CURRENT_LIST_DIR}/python_consumer.py
    -P ${CMAKE_CURRENT_LIST_DIR}/run_consumer.cmake)
set_tests_properties(install.consumer PROPERTIES LABELS install TIMEOUT 300)

# install.pip: `pip install --no-build-isolation --no-index .` into a fresh
# virtual environment (Debian's pip and setuptools, no network), reusing this
# build folder (MEMPLAN_CMAKE_BUILD_DIR) so that nothing compiles twice; then
# python_consumer.py checks the venv's package is the one imported, with its
# preload libraries inside it.
if(MEMPLAN_WITH_PYTHON)
  add_test(NAME install.pip
    COMMAND ${CMAKE_COMMAND}
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DBUILD_DIR=${CMAKE_BINARY_DIR}
      -DWORK_DIR=${CMAKE_BINARY_DIR}/pip-test
      -DPYTHON=${Python_EXECUTABLE}
      -DPYTHON_CONSUMER=${CMAKE_CURRENT_LIST_DIR}/python_consumer.py
      -P ${CMAKE_CURRENT_LIST_DIR}/run_pip.cmake)
  set_tests_properties(install.pip PROPERTIES LABELS "install;python" TIMEOUT 600
    RESOURCE_LOCK memplan_build_dir)
endif()
