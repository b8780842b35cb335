# Allocator model tests (include/memplan/allocator_model.h): each caching
# allocator rule on a hand-made trace, expandable segments, memplan's steady
# state against its cold start, and properties on random traces. Included by
# tests/CMakeLists.txt.
add_executable(memplan_simulate_tests ${CMAKE_CURRENT_SOURCE_DIR}/simulate/allocator_model_test.cc)
target_link_libraries(memplan_simulate_tests PRIVATE memplan::simulate GTest::gtest GTest::gtest_main)
target_include_directories(memplan_simulate_tests PRIVATE ${PROJECT_SOURCE_DIR}/src)
gtest_discover_tests(memplan_simulate_tests PROPERTIES LABELS simulate DISCOVERY_TIMEOUT 60)
