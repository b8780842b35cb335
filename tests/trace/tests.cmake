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
gtest_discover_tests(memplan_trace_tests PROPERTIES LABELS trace DISCOVERY_TIMEOUT 60)
