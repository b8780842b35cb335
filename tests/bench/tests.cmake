# tests.cmake — tests of the end-to-end benchmarks' shared Python module
# (bench/e2e_common.py): launching, the statistics line, summaries. Plain
# Python, no torch. Included by tests/CMakeLists.txt.
find_program(MEMPLAN_PYTHON3 NAMES python3)
if(MEMPLAN_PYTHON3)
  add_test(NAME bench.e2e_common
    COMMAND ${MEMPLAN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/bench/e2e_common_test.py ${PROJECT_SOURCE_DIR}/bench)
  set_tests_properties(bench.e2e_common PROPERTIES LABELS scripts TIMEOUT 60)
endif()

# bench_cbp_bound (CBC builds only): the position-indexed LP bound on the small
# problem whose optimum is above its load (tests/cli/data/gap_above_load.csv:
# load 157 B, no plan fits in 162 B). The LP is too weak to see that: it is
# feasible at the load; the integer model (CBC) refutes the load. Below the
# load the LP itself is infeasible (a section's bytes do not fit).
if(MEMPLAN_WITH_CBC AND MEMPLAN_BUILD_BENCH)  # the target is defined in bench/, after tests/
  set(_cbp_gap ${CMAKE_CURRENT_SOURCE_DIR}/cli/data/gap_above_load.csv)
  add_test(NAME bench.cbp_bound_lp_feasible_ip_refutes_load
    COMMAND bench_cbp_bound ${_cbp_gap} --capacity 157 --ip 60)
  set_tests_properties(bench.cbp_bound_lp_feasible_ip_refutes_load PROPERTIES LABELS bench TIMEOUT 120
    PASS_REGULAR_EXPRESSION "load 157 B \\(157 units\\).*157 B \\(157 units\\): LP feasible .*: IP infeasible")
  add_test(NAME bench.cbp_bound_lp_refutes_below_load
    COMMAND bench_cbp_bound ${_cbp_gap} --capacity 156)
  set_tests_properties(bench.cbp_bound_lp_refutes_below_load PROPERTIES LABELS bench TIMEOUT 60
    PASS_REGULAR_EXPRESSION "156 B \\(156 units\\): LP infeasible")
  add_test(NAME bench.cbp_bound_bisect_finds_the_load
    COMMAND bench_cbp_bound ${_cbp_gap} --bisect --upper 200 --quiet)
  set_tests_properties(bench.cbp_bound_bisect_finds_the_load PROPERTIES LABELS bench TIMEOUT 60
    PASS_REGULAR_EXPRESSION "lp bound: 157 B \\(157 units; load 157 B; = the load\\)")
  add_test(NAME bench.cbp_bound_help COMMAND bench_cbp_bound --help)
  set_tests_properties(bench.cbp_bound_help PROPERTIES LABELS bench TIMEOUT 20
    PASS_REGULAR_EXPRESSION "--bisect.*--capacity BYTES.*non-zeros")
endif()

# bench_sat_bound (CaDiCaL builds only): the SAT decision on the order encoding.
# It refutes gap_above_load's load and every capacity up to 162 B (the LP
# cannot), and on twelve more problems whose optimum lies above the load its
# bisection proves the same optimum as the exact planner.
if(MEMPLAN_WITH_CADICAL AND MEMPLAN_BUILD_BENCH)
  set(_sat_gap ${CMAKE_CURRENT_SOURCE_DIR}/cli/data/gap_above_load.csv)
  add_test(NAME bench.sat_bound_refutes_load
    COMMAND bench_sat_bound ${_sat_gap} --capacity 157 --upper 200)
  set_tests_properties(bench.sat_bound_refutes_load PROPERTIES LABELS bench TIMEOUT 60
    PASS_REGULAR_EXPRESSION "capacity 157 B \\(157 units\\): UNSAT.*bounds: 158 B <= optimum <= 163 B \\(load 157 B")
  add_test(NAME bench.sat_bound_descend_proves_optimum
    COMMAND bench_sat_bound ${_sat_gap} --descend --upper 200)
  set_tests_properties(bench.sat_bound_descend_proves_optimum PROPERTIES LABELS bench TIMEOUT 60
    PASS_REGULAR_EXPRESSION "capacity 162 B \\(162 units\\): UNSAT.*bounds: 163 B <= optimum <= 163 B: optimal")
  add_test(NAME bench.sat_bound_agrees_with_exact_on_gap_problems
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench/sat_bound_gaps.sh $<TARGET_FILE:bench_sat_bound>
            $<TARGET_FILE:memplan> ${CMAKE_CURRENT_SOURCE_DIR}/bench/data/sat_gaps)
  set_tests_properties(bench.sat_bound_agrees_with_exact_on_gap_problems PROPERTIES LABELS bench TIMEOUT 120
    PASS_REGULAR_EXPRESSION "sat_bound_gaps: 12 problems agree")
  add_test(NAME bench.sat_bound_help COMMAND bench_sat_bound --help)
  set_tests_properties(bench.sat_bound_help PROPERTIES LABELS bench TIMEOUT 20
    PASS_REGULAR_EXPRESSION "--descend.*--bisect.*UNSAT at C proves")
endif()

# bench_exact --mode scan: decisions over a range of capacities, bounded by
# nodes and/or seconds each (the reference a minimisation is measured
# against, docs/exact.md). J fits at 992 KiB after 161,046 nodes; a time limit
# alone lets that decision finish, a node budget of 1,000 stops it first.
if(MEMPLAN_BUILD_BENCH)
  add_test(NAME bench.exact_scan_time_limit_decides_like_memplan_plan
    COMMAND bench_exact --mode scan --instances J --capacities 1015808:1015808:1024 --time-limit 30)
  set_tests_properties(bench.exact_scan_time_limit_decides_like_memplan_plan PROPERTIES LABELS bench TIMEOUT 60
    PASS_REGULAR_EXPRESSION "at most 30 s each.*J +0 +1015808 feasible +1015808 .*smallest arena of any decision: 1015808")
  add_test(NAME bench.exact_scan_nodes_and_time_the_first_reached_ends
    COMMAND bench_exact --mode scan --instances J --capacities 1015808:1015808:1024 --nodes 1000 --time-limit 30)
  set_tests_properties(bench.exact_scan_nodes_and_time_the_first_reached_ends PROPERTIES LABELS bench TIMEOUT 60
    PASS_REGULAR_EXPRESSION "at most 1000 nodes and 30 s each.*J +0 +1015808 timed out +-1 +1000 .*smallest arena of any decision: -1")
endif()
