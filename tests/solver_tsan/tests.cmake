# ThreadSanitizer for the exact minimiser's helper threads: seeded_helpers.cc
# and its test compiled with -fsanitize=thread, linked with the uninstrumented
# memplan_core (each helper's CanonicalSearch is its own), so the build costs
# two files. The linker takes the instrumented SeededHelpers from the test's
# objects and never pulls the library's copy. scripts/test.sh turns
# MEMPLAN_TSAN on in its Release stage (with the runtime's TSan programs).
if(MEMPLAN_TSAN AND NOT MEMPLAN_SANITIZE AND NOT MEMPLAN_BUILD_FUZZ)
  add_executable(memplan_seeded_helpers_tsan
    ${CMAKE_CURRENT_LIST_DIR}/seeded_helpers_tsan_test.cc ${PROJECT_SOURCE_DIR}/src/solver/seeded_helpers.cc)
  target_include_directories(memplan_seeded_helpers_tsan PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(memplan_seeded_helpers_tsan PRIVATE MEMPLAN_SHARED_DATA_DIR="${PROJECT_SOURCE_DIR}/bench/data")
  target_compile_options(memplan_seeded_helpers_tsan PRIVATE -fsanitize=thread -O1 -g)
  target_link_options(memplan_seeded_helpers_tsan PRIVATE -fsanitize=thread)
  target_link_libraries(memplan_seeded_helpers_tsan PRIVATE memplan_core GTest::gtest GTest::gtest_main Threads::Threads)
  gtest_discover_tests(memplan_seeded_helpers_tsan PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
  # The SAT helper thread (CaDiCaL builds only), the same way.
  if(MEMPLAN_WITH_CADICAL)
    add_executable(memplan_sat_helper_tsan
      ${CMAKE_CURRENT_LIST_DIR}/sat_helper_tsan_test.cc ${PROJECT_SOURCE_DIR}/src/solver/sat/sat_helper.cc)
    target_include_directories(memplan_sat_helper_tsan PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests ${CADICAL_INCLUDE_DIR})
    target_compile_options(memplan_sat_helper_tsan PRIVATE -fsanitize=thread -O1 -g)
    target_link_options(memplan_sat_helper_tsan PRIVATE -fsanitize=thread)
    target_link_libraries(memplan_sat_helper_tsan PRIVATE memplan_core ${CADICAL_LIBRARY} GTest::gtest GTest::gtest_main
                          Threads::Threads)
    gtest_discover_tests(memplan_sat_helper_tsan PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60
      ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
  endif()
endif()
