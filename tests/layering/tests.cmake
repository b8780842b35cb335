# tests.cmake — the planning library's layers link on their own (label unit).
#
# Each program is linked from one layer's objects and the layers below it
# only (src/CMakeLists.txt): a call from the model into anything above it,
# from the readers or the renderers into the planners, from the heuristics
# into the readers, the renderers, the solvers or the registry, or from the
# solvers into the registry, is an undefined symbol and fails the build. Running each program then checks that the layer works
# alone (a valid plan of the expected size).
function(memplan_layer_program name source)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${source})
  foreach(layer ${ARGN})
    target_sources(${name} PRIVATE $<TARGET_OBJECTS:${layer}>)
  endforeach()
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PRIVATE ${LEMON_LIBRARY} Threads::Threads)
  if(MEMPLAN_WITH_CBC AND "memplan_solvers" IN_LIST ARGN)
    target_link_libraries(${name} PRIVATE PkgConfig::CBC)
  endif()
  if(MEMPLAN_WITH_CADICAL AND "memplan_solvers" IN_LIST ARGN)
    target_link_libraries(${name} PRIVATE ${CADICAL_LIBRARY})
  endif()
  add_test(NAME layering.${name} COMMAND ${name})
  set_tests_properties(layering.${name} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()

memplan_layer_program(io_and_render_link_without_the_planners render_alone.cc memplan_model memplan_io memplan_render)
memplan_layer_program(heuristics_link_alone heuristics_alone.cc memplan_model memplan_heuristics)
memplan_layer_program(solvers_link_without_the_registry solvers_alone.cc memplan_model memplan_heuristics memplan_solvers)

# Headers too: no source of the core's layers includes, directly or through
# another header, a header of the runtime (core_headers.cmake lists them).
set(_memplan_core_header_dirs ${PROJECT_BINARY_DIR}/src/generated)
foreach(_dir ${LEMON_INCLUDE_DIR} ${CADICAL_INCLUDE_DIR})
  if(_dir AND NOT _dir STREQUAL "/usr/include")
    list(APPEND _memplan_core_header_dirs ${_dir})
  endif()
endforeach()
add_test(NAME layering.core_headers_reach_no_runtime_header
  COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    "-DINCLUDE_DIRS=${_memplan_core_header_dirs}" -P ${CMAKE_CURRENT_LIST_DIR}/core_headers.cmake)
set_tests_properties(layering.core_headers_reach_no_runtime_header PROPERTIES LABELS unit TIMEOUT 120)
