# Runtime tests: the slab and the replay allocator (unit tests on a mock
# backing allocator), and the stress program, linked with the allocator and
# run under LD_PRELOAD of libmemplan_replay.so. Included by tests/CMakeLists.txt.
file(GLOB MEMPLAN_RUNTIME_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/runtime/*.cc)
add_executable(memplan_runtime_tests ${MEMPLAN_RUNTIME_TEST_SOURCES})
target_link_libraries(memplan_runtime_tests PRIVATE memplan::runtime GTest::gtest GTest::gtest_main)
target_include_directories(memplan_runtime_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
# The CUDA pool tests: built with the toolkit, skipped on a machine without a GPU.
if(MEMPLAN_WITH_CUDA)
  target_sources(memplan_runtime_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/runtime/cuda/cuda_pool_test.cc)
endif()
# GoogleTest's headers once (a precompiled header), each file on its own even
# in a unity build (the files share helper names, BackingAllocator, ...).
target_precompile_headers(memplan_runtime_tests PRIVATE <gtest/gtest.h>)
set_target_properties(memplan_runtime_tests PROPERTIES UNITY_BUILD OFF)
gtest_discover_tests(memplan_runtime_tests PROPERTIES LABELS runtime DISCOVERY_TIMEOUT 60)

set(MEMPLAN_STRESS_SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/runtime/programs/replay_stress.cc)
add_executable(memplan_replay_stress_direct ${MEMPLAN_STRESS_SOURCE})
target_compile_definitions(memplan_replay_stress_direct PRIVATE MEMPLAN_STRESS_DIRECT=1)
target_link_libraries(memplan_replay_stress_direct PRIVATE memplan::runtime Threads::Threads)
add_test(NAME runtime.stress_linked COMMAND memplan_replay_stress_direct --expect-replay)
set_tests_properties(runtime.stress_linked PROPERTIES LABELS runtime TIMEOUT 300)
add_test(NAME runtime.stress_linked_keyed COMMAND memplan_replay_stress_direct --expect-replay)
set_tests_properties(runtime.stress_linked_keyed PROPERTIES LABELS runtime TIMEOUT 300 ENVIRONMENT "MEMPLAN_STRESS_KEYED=1")

# ThreadSanitizer: the stress program with the runtime's sources compiled in
# and instrumented; memplan_core (the planner, run at boundaries on one
# thread) stays uninstrumented, so the build costs only the runtime's few
# files. scripts/test.sh turns it on in its Release stage.
if(MEMPLAN_TSAN AND NOT MEMPLAN_SANITIZE AND NOT MEMPLAN_BUILD_FUZZ)
  file(GLOB MEMPLAN_TSAN_RUNTIME_SOURCES CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/src/runtime/*.cc ${PROJECT_SOURCE_DIR}/src/runtime/os/*.cc)
  add_executable(memplan_replay_stress_tsan ${MEMPLAN_TSAN_RUNTIME_SOURCES} ${MEMPLAN_STRESS_SOURCE})
  target_compile_definitions(memplan_replay_stress_tsan PRIVATE MEMPLAN_STRESS_DIRECT=1)
  target_include_directories(memplan_replay_stress_tsan PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(memplan_replay_stress_tsan PRIVATE -fsanitize=thread -O1 -g -ftls-model=initial-exec)
  target_link_options(memplan_replay_stress_tsan PRIVATE -fsanitize=thread)
  target_link_libraries(memplan_replay_stress_tsan PRIVATE memplan_core Threads::Threads)
  add_test(NAME runtime.stress_tsan COMMAND memplan_replay_stress_tsan --expect-replay)
  set_tests_properties(runtime.stress_tsan PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
  # With background planning the plan is adopted at a boundary after the
  # planner thread finishes, which on a loaded machine can be after the last
  # one (seen: served 0 with two busy loops beside the run), so the background
  # runs check the cookies and the races, not that replay happened;
  # replay_background_test checks adoption by waiting for the planner.
  # Keyed marks: three kinds of iteration, each with its own plan, switched
  # between while other threads free blocks and the fork child marks.
  add_test(NAME runtime.stress_tsan_keyed COMMAND memplan_replay_stress_tsan --expect-replay)
  set_tests_properties(runtime.stress_tsan_keyed PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66;MEMPLAN_STRESS_KEYED=1")
  add_test(NAME runtime.stress_tsan_keyed_background COMMAND memplan_replay_stress_tsan)
  set_tests_properties(runtime.stress_tsan_keyed_background PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66;MEMPLAN_STRESS_KEYED=1;MEMPLAN_PLAN_IN_BACKGROUND=1")
  add_test(NAME runtime.stress_tsan_background COMMAND memplan_replay_stress_tsan)
  set_tests_properties(runtime.stress_tsan_background PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66;MEMPLAN_PLAN_IN_BACKGROUND=1")
endif()

# The preloaded run: a plain program (never sanitized, see tests/trace/tests.cmake).
if(TARGET memplan_replay_preload)
  # Plan files under the drop-in: saved, loaded, and given to another
  # program and to other shapes (tests/runtime/plans_preloaded.sh).
  add_executable(memplan_plans_program ${CMAKE_CURRENT_SOURCE_DIR}/runtime/programs/plans_program.cc)
  set_target_properties(memplan_plans_program PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "")
  target_compile_options(memplan_plans_program PRIVATE -fno-sanitize=all)
  add_test(NAME runtime.plans_preloaded
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/runtime/plans_preloaded.sh $<TARGET_FILE:memplan>
      $<TARGET_FILE:memplan_replay_preload> $<TARGET_FILE:memplan_plans_program>)
  set_tests_properties(runtime.plans_preloaded PROPERTIES LABELS runtime TIMEOUT 300)
  add_executable(memplan_replay_stress ${MEMPLAN_STRESS_SOURCE})
  set_target_properties(memplan_replay_stress PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "")
  target_compile_options(memplan_replay_stress PRIVATE -fno-sanitize=all)
  target_link_libraries(memplan_replay_stress PRIVATE Threads::Threads)
  add_test(NAME runtime.stress_preloaded COMMAND memplan_replay_stress --expect-replay)
  set_tests_properties(runtime.stress_preloaded PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_PLANNER=greedy_by_size;MEMPLAN_STATS=1;MEMPLAN_PLAN_IN_BACKGROUND=0")
  # No --expect-replay with background planning: see runtime.stress_tsan_background.
  add_test(NAME runtime.stress_preloaded_background COMMAND memplan_replay_stress)
  set_tests_properties(runtime.stress_preloaded_background PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_PLANNER=greedy_by_size;MEMPLAN_PLAN_IN_BACKGROUND=1;MEMPLAN_STATS=1")
  add_test(NAME runtime.stress_preloaded_keyed COMMAND memplan_replay_stress --expect-replay)
  set_tests_properties(runtime.stress_preloaded_keyed PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_PLANNER=greedy_by_size;MEMPLAN_STATS=1;MEMPLAN_STRESS_KEYED=1;MEMPLAN_PLAN_IN_BACKGROUND=0")
  add_test(NAME runtime.stress_preloaded_portfolio COMMAND memplan_replay_stress --expect-replay)
  set_tests_properties(runtime.stress_preloaded_portfolio PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_STATS=1;MEMPLAN_PLAN_IN_BACKGROUND=0")
  # Note [Planning at exit]: exit(0) in the middle of a background plan (the
  # portfolio with a 900 s limit) ends at once, with no planner thread left
  # when the program's own exit handler runs. TIMEOUT is the watchdog: a plan
  # that was not cancelled would hold exit for 900 s.
  add_executable(memplan_exit_while_planning ${CMAKE_CURRENT_SOURCE_DIR}/runtime/programs/exit_while_planning.cc)
  set_target_properties(memplan_exit_while_planning PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "")
  target_compile_options(memplan_exit_while_planning PRIVATE -fno-sanitize=all)
  add_test(NAME runtime.exit_while_planning COMMAND memplan_exit_while_planning)
  set_tests_properties(runtime.exit_while_planning PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_PLAN_IN_BACKGROUND=1;MEMPLAN_PLAN_TIME_LIMIT=900;MEMPLAN_PLAN_TIME_SHARE=1;MEMPLAN_PLAN_TOLERANCE=0"
    PASS_REGULAR_EXPRESSION "one thread left at exit")
endif()

# The backing allocator (docs/runtime.md, "The backing allocator"): one
# program under each MEMPLAN_BACKING value mixes every interposed function,
# frees and reallocates blocks made before the drop-in's constructor (by its
# dependency memplan_early_blocks) and checks which library's malloc and
# operator new the process resolves; the drop-in neither exports nor needs
# mimalloc's symbols; a bad value names the variable.
if(TARGET memplan_replay_preload)
  add_library(memplan_early_blocks SHARED ${CMAKE_CURRENT_SOURCE_DIR}/runtime/programs/early_blocks.cc)
  set_target_properties(memplan_early_blocks PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "")
  target_compile_options(memplan_early_blocks PRIVATE -fno-sanitize=all)
  target_link_libraries(memplan_early_blocks PRIVATE ${CMAKE_DL_LIBS})
  add_executable(memplan_backing_mix ${CMAKE_CURRENT_SOURCE_DIR}/runtime/programs/backing_mix.cc)
  set_target_properties(memplan_backing_mix PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS "")
  target_compile_options(memplan_backing_mix PRIVATE -fno-sanitize=all)
  target_link_libraries(memplan_backing_mix PRIVATE memplan_early_blocks ${CMAKE_DL_LIBS})
  if(MEMPLAN_WITH_MIMALLOC)
    target_compile_definitions(memplan_backing_mix PRIVATE MEMPLAN_MIMALLOC_SONAME="${MEMPLAN_MIMALLOC_SONAME}")
  endif()
  set(_memplan_backings next)
  if(MEMPLAN_WITH_MIMALLOC)
    list(APPEND _memplan_backings mimalloc)
  endif()
  foreach(backing IN LISTS _memplan_backings)
    add_test(NAME runtime.backing_mix_${backing} COMMAND memplan_backing_mix)
    set_tests_properties(runtime.backing_mix_${backing} PROPERTIES LABELS runtime TIMEOUT 300
      ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_BACKING=${backing};MEMPLAN_PLANNER=greedy_by_size;MEMPLAN_PLAN_IN_BACKGROUND=0"
      PASS_REGULAR_EXPRESSION "backing_mix: ok" FAIL_REGULAR_EXPRESSION "memplan replay: MEMPLAN_BACKING")
  endforeach()
  # mimalloc preloaded under the drop-in: the next allocator and the backing
  # one are then the same library.
  find_library(MEMPLAN_PLAIN_MIMALLOC NAMES libmimalloc.so.2)
  if(MEMPLAN_PLAIN_MIMALLOC)
    foreach(backing IN LISTS _memplan_backings)
      add_test(NAME runtime.backing_mix_${backing}_over_preloaded_mimalloc COMMAND memplan_backing_mix)
      set_tests_properties(runtime.backing_mix_${backing}_over_preloaded_mimalloc PROPERTIES LABELS runtime TIMEOUT 300
        ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload> ${MEMPLAN_PLAIN_MIMALLOC};MEMPLAN_BACKING=${backing};MEMPLAN_PLANNER=greedy_by_size;MEMPLAN_PLAN_IN_BACKGROUND=0"
        PASS_REGULAR_EXPRESSION "backing_mix: ok" FAIL_REGULAR_EXPRESSION "memplan replay: MEMPLAN_BACKING")
    endforeach()
  endif()
  # The stress program over the next allocator too (the other stress_preloaded
  # tests run over the default backing).
  add_test(NAME runtime.stress_preloaded_next COMMAND memplan_replay_stress --expect-replay)
  set_tests_properties(runtime.stress_preloaded_next PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_BACKING=next;MEMPLAN_PLANNER=greedy_by_size;MEMPLAN_STATS=1;MEMPLAN_PLAN_IN_BACKGROUND=0")
  add_test(NAME runtime.backing_not_exported
    COMMAND sh -c "! nm -D --defined-only \"$1\" | grep -E ' (mi_[a-z_]+|_Znwm|_ZdlPv|__libc_malloc)$' && ! readelf -d \"$1\" | grep -i 'NEEDED.*mimalloc'" sh $<TARGET_FILE:memplan_replay_preload>)
  set_tests_properties(runtime.backing_not_exported PROPERTIES LABELS runtime TIMEOUT 60)
  add_test(NAME runtime.backing_bad_value_names_the_variable COMMAND memplan_backing_mix)
  set_tests_properties(runtime.backing_bad_value_names_the_variable PROPERTIES LABELS runtime TIMEOUT 300
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memplan_replay_preload>;MEMPLAN_BACKING=glibc"
    PASS_REGULAR_EXPRESSION "MEMPLAN_BACKING='glibc': expected one of mimalloc, next; that knob keeps its default")
endif()

# `memplan run` (memplan_cli_test comes from tests/cli/cli_tests.cmake, included before this file).
if(COMMAND memplan_cli_test AND TARGET memplan_replay_stress)
  memplan_cli_test(run_serves_the_stress_program_from_slabs EXIT 0
    ARGS run --profile-iterations 2 --planner greedy_by_size --stats -- $<TARGET_FILE:memplan_replay_stress> --expect-replay
    STDOUT "all cookies held" STDERR "memplan replay: threads [0-9]+, iterations [0-9]+, .*served [1-9]")
  # --expect-replay needs the plan before the run ends: planned at the boundary.
  set_tests_properties(cli_run_serves_the_stress_program_from_slabs PROPERTIES ENVIRONMENT "MEMPLAN_PLAN_IN_BACKGROUND=0")
  memplan_cli_test(run_passes_on_the_exit_status EXIT 3 ARGS run -- /bin/sh -c "exit 3" STDERR "exited with status 3")
  memplan_cli_test(run_needs_a_command EXIT 100 ARGS run STDERR "no command to run")  # a usage error
endif()
