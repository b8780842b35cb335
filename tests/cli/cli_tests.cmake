# cli_tests.cmake — CTest tests (label cli) that run the built `memplan` on the
# small files in tests/cli/data and check exit status and output. Included by
# tests/CMakeLists.txt.

set(MEMPLAN_CLI_DATA ${CMAKE_CURRENT_LIST_DIR}/data)
# Not in this folder: tests/CMakeLists.txt includes every tests/cli/*.cmake.
set(MEMPLAN_CLI_RUNNER ${CMAKE_CURRENT_LIST_DIR}/runner/run_cli.cmake)

# memplan_cli_test(<name> EXIT <code> ARGS <arg>... [STDOUT <regex>] [STDERR <regex>]
#                  [FILE <name written in the work dir> [FILE_REGEX <regex>]] [WORKDIR <dir>]
#                  [STDIN <file fed to standard input>] [MAX_COLUMNS <longest stdout line>])
# Each test runs in its own work dir under the build tree unless WORKDIR names
# one shared with a fixture.
function(memplan_cli_test name)
  cmake_parse_arguments(T "" "EXIT;STDOUT;STDERR;FILE;FILE_REGEX;WORKDIR;STDIN;MAX_COLUMNS" "ARGS;FIXTURES_SETUP;FIXTURES_REQUIRED" ${ARGN})
  # A regex with an unbalanced '[' keeps CMake from splitting the arguments
  # after it, so they end up inside its value (a FIXTURES_REQUIRED lost that
  # way let a test race its fixture). Such a regex must come last.
  foreach(key EXIT STDOUT STDERR FILE FILE_REGEX WORKDIR STDIN)
    if("${T_${key}}" MATCHES ";")
      message(FATAL_ERROR "memplan_cli_test(${name}): ${key} swallowed the arguments after it "
        "(an unbalanced '[' in a regex?); put that argument last")
    endif()
  endforeach()
  if(NOT T_WORKDIR)
    set(T_WORKDIR ${CMAKE_CURRENT_BINARY_DIR}/cli/${name})
  endif()
  string(REPLACE ";" "|" joined "${T_ARGS}")
  set(defines -DMEMPLAN=$<TARGET_FILE:memplan> "-DARGS=${joined}" -DWORKDIR=${T_WORKDIR} -DEXPECT_EXIT=${T_EXIT})
  foreach(key STDOUT STDERR FILE_REGEX)
    if(DEFINED T_${key})
      set(variable ${key})
      if(NOT key STREQUAL "FILE_REGEX")
        set(variable ${key}_REGEX)
      endif()
      list(APPEND defines "-D${variable}=${T_${key}}")
    endif()
  endforeach()
  if(T_FILE)
    list(APPEND defines -DOUTPUT_FILE=${T_FILE})
  endif()
  if(T_STDIN)
    list(APPEND defines -DSTDIN_FILE=${T_STDIN})
  endif()
  if(T_MAX_COLUMNS)
    list(APPEND defines -DMAX_COLUMNS=${T_MAX_COLUMNS})
  endif()
  add_test(NAME cli_${name} COMMAND ${CMAKE_COMMAND} ${defines} -P ${MEMPLAN_CLI_RUNNER})
  set_tests_properties(cli_${name} PROPERTIES LABELS cli TIMEOUT 120)
  if(T_FIXTURES_SETUP)
    set_tests_properties(cli_${name} PROPERTIES FIXTURES_SETUP "${T_FIXTURES_SETUP}")
  endif()
  if(T_FIXTURES_REQUIRED)
    set_tests_properties(cli_${name} PROPERTIES FIXTURES_REQUIRED "${T_FIXTURES_REQUIRED}")
  endif()
endfunction()

set(small ${MEMPLAN_CLI_DATA}/small.csv)

# --help everywhere: each explains itself with an example.
memplan_cli_test(help EXIT 0 ARGS --help STDOUT "Subcommands:.*plan.*Examples:")
foreach(command planners plan validate bound bench render generate)
  memplan_cli_test(help_${command} EXIT 0 ARGS ${command} --help STDOUT "Usage: .*${command}.*Example")
endforeach()
# run --help lists every knob of the runtime with its default (replay_knobs()).
memplan_cli_test(help_run_lists_the_knobs EXIT 0 ARGS run --help
  STDOUT "Usage: .*run.*Knobs.*MEMPLAN_PROFILE_ITERATIONS \\[2\\].*MEMPLAN_MIN_SEQUENCED_SIZE \\[4160\\].*MEMPLAN_PLAN_TIME_SHARE \\[0.05\\].*MEMPLAN_PREDICT \\[1\\].*Example")
memplan_cli_test(no_command_is_a_usage_error EXIT 100 STDERR "subcommand is required")
# Every usage error exits 100 (exit_codes.h), whether CLI11's parser finds it
# (each kind had its own code: 105, 106, 109, 114) or the command does.
memplan_cli_test(unknown_option_is_a_usage_error EXIT 100 ARGS plan ${small} --bogus STDERR "not expected: --bogus")
memplan_cli_test(missing_option_value_is_a_usage_error EXIT 100 ARGS plan ${small} --planner STDERR "--planner: 1 required")
memplan_cli_test(missing_file_argument_is_a_usage_error EXIT 100 ARGS plan STDERR "problem is required")
memplan_cli_test(help_exits_0_after_the_usage_remap EXIT 0 ARGS plan --help STDOUT "Usage: ")
memplan_cli_test(plan_capacity_with_banks_is_a_usage_error EXIT 100 ARGS plan ${small} --capacity 1M --bank sram
  STDERR "--capacity and --bank exclude each other")
# run --help says which backing allocator this build's drop-in uses.
if(MEMPLAN_WITH_MIMALLOC)
  memplan_cli_test(help_run_names_the_backing_of_this_build EXIT 0 ARGS run --help
    STDOUT "go to the backing allocator, in this build mimalloc\n\\(libmimalloc\\.so\\.[0-9]+, loaded privately; MEMPLAN_BACKING=next: the next malloc, glibc's\\)")
else()
  memplan_cli_test(help_run_names_the_backing_of_this_build EXIT 0 ARGS run --help
    STDOUT "go to the backing allocator, in this build the\nnext malloc in the lookup order \\(glibc's; memplan was built without mimalloc\\)")
endif()

memplan_cli_test(planners_lists_the_default EXIT 0 ARGS planners STDOUT "portfolio \\* +composite +fast.*naive +offsets")

# plan
memplan_cli_test(plan_prints_arena_load_and_gap EXIT 0 ARGS plan ${small} --planner naive
  STDOUT "buffers +5\nload +7168 B \\(7.00 KiB\\)\narena +8704 B \\(8.50 KiB\\)\ngap +21.43%")
memplan_cli_test(plan_with_default_planner_succeeds EXIT 0 ARGS plan ${small} STDOUT "planner +portfolio.*arena +[0-9]+ B")
memplan_cli_test(plan_capacity_too_small_exits_2 EXIT 2 ARGS plan ${small} --capacity 4K
  STDOUT "capacity +4096 B \\(4.00 KiB\\), does not fit"
  STDERR "memplan: proven: no plan fits in capacity 4096 B .*: capacity 4096 B \\(4.00 KiB\\) is below the load: the buffers live at tick 3 need 7168 B")
memplan_cli_test(plan_capacity_that_fits_exits_0 EXIT 0 ARGS plan ${small} --planner naive --capacity 1MiB
  STDOUT "capacity +1048576 B \\(1.00 MiB\\), fits")
memplan_cli_test(plan_rejects_malformed_byte_size EXIT 100 ARGS plan ${small} --capacity 12x
  STDERR "\"12x\" is not a byte size")
memplan_cli_test(plan_rejects_alignment_not_power_of_two EXIT 1 ARGS plan ${small} --alignment 24
  STDERR "--alignment: 24 is not a power of two")
memplan_cli_test(plan_json_on_stdout EXIT 0 ARGS plan ${small} --planner naive --json
  STDOUT "^\\{\"planner\":\"naive\".*\"arena\":8704,\"load\":7168")
memplan_cli_test(plan_unknown_planner_is_named EXIT 1 ARGS plan ${small} --planner no_such_planner
  STDERR "memplan: unknown planner 'no_such_planner' \\(registered: portfolio, naive")
memplan_cli_test(plan_bad_csv_names_file_and_line EXIT 1 ARGS plan ${MEMPLAN_CLI_DATA}/bad_size.csv
  STDERR "bad_size\\.csv:3: .*size.*12x")
memplan_cli_test(plan_missing_file_is_an_error EXIT 1 ARGS plan no_such_problem.csv STDERR "no_such_problem\\.csv")

# plan --output, then validate what it wrote (a fixture shares the work dir).
set(roundtrip_dir ${CMAKE_CURRENT_BINARY_DIR}/cli/plan_roundtrip)
memplan_cli_test(plan_writes_plan_csv EXIT 0 ARGS plan ${small} --output plan.csv WORKDIR ${roundtrip_dir}
  FILE plan.csv FILE_REGEX "^id,lower,upper,size,offset\na,0,2,1024,[0-9]+\n" FIXTURES_SETUP cli_written_plan)
memplan_cli_test(validate_accepts_written_plan EXIT 0 ARGS validate ${small} plan.csv WORKDIR ${roundtrip_dir}
  STDOUT "^valid: 5 buffers" FIXTURES_REQUIRED cli_written_plan)
memplan_cli_test(plan_writes_json_for_json_name EXIT 0 ARGS plan ${small} --output plan.json
  FILE plan.json FILE_REGEX "^\\{\"planner\":\"portfolio\"")

# validate
memplan_cli_test(validate_good_plan_exits_0 EXIT 0 ARGS validate ${small} ${MEMPLAN_CLI_DATA}/small_plan_valid.csv
  STDOUT "^valid: 5 buffers, arena 7168 B \\(7.00 KiB\\), load 7168 B \\(7.00 KiB\\), gap 0.00%")
memplan_cli_test(validate_overlapping_plan_exits_1_with_reason EXIT 1
  ARGS validate ${small} ${MEMPLAN_CLI_DATA}/small_plan_overlap.csv
  STDERR "memplan: invalid plan .*small_plan_overlap\\.csv: .*'b'.*'e'.*tick 3")
memplan_cli_test(validate_plan_without_offsets_is_an_error EXIT 1 ARGS validate ${small} ${small} STDERR "small\\.csv.*offset")
memplan_cli_test(validate_checks_capacity_when_given EXIT 1
  ARGS validate ${small} ${MEMPLAN_CLI_DATA}/small_plan_valid.csv --capacity 7000 STDERR "capacity")

# bound
memplan_cli_test(bound_prints_load_and_bounds EXIT 0 ARGS bound ${small}
  STDOUT "buffers +5\ntotal size +8704 B.*max live buffers +3\nload +7168 B \\(7.00 KiB\\)\nload tick +3\npositional maximums +[0-9]+ B")

# bench
memplan_cli_test(bench_directory_prints_table EXIT 0 ARGS bench ${MEMPLAN_CLI_DATA}/bench --planners naive,portfolio
  STDOUT "naive +portfolio.*instance +buffers +load +arena +gap +arena +gap +result +naive +portfolio\n-+\nsmall +5 +7168 +8704 +21.43% +7168 +0.00% +optimal .*\nstairs +6 .*geomean gap, total time +11 ")
memplan_cli_test(bench_csv_is_machine_readable EXIT 0 ARGS bench ${small} --planners naive --csv
  STDOUT "^instance,buffers,load,arena:naive,gap:naive,ms:naive\nsmall,5,7168,8704,0.214286,[0-9.]+\n$")
memplan_cli_test(bench_progress_goes_to_stderr EXIT 0 ARGS bench ${MEMPLAN_CLI_DATA}/bench --planners naive --progress
  STDERR "\\[1/2\\] small: 5 buffers.*\\[2/2\\] stairs: 6 buffers")
memplan_cli_test(bench_writes_heap_maps EXIT 0 ARGS bench ${MEMPLAN_CLI_DATA}/bench --planners naive --svg-dir maps
  FILE maps/stairs.svg FILE_REGEX "^<svg .*naive: arena")
memplan_cli_test(bench_unknown_planner_is_named EXIT 1 ARGS bench ${small} --planners naive,nope
  STDERR "unknown planner 'nope'")
# scripts/demo.sh's table over the shipped instances (the longest instance
# names and sizes): the default planner's columns on the terminal, every
# planner's in the CSV. The other planners' columns do not reach the table,
# so two stand for every fast one; --time-limit 0 keeps it short.
memplan_cli_test(bench_narrow_fits_100_columns EXIT 0
  ARGS bench ${PROJECT_SOURCE_DIR}/bench/data/torch ${PROJECT_SOURCE_DIR}/bench/data/dsa --narrow --time-limit 0
    --planners portfolio,greedy_by_size --matrix-csv planners.csv
  MAX_COLUMNS 100
  FILE planners.csv FILE_REGEX "^instance,buffers,load,arena:portfolio,gap:portfolio,result:portfolio,arena:greedy_by_size,.*,best found \\(heuristics\\),"
  STDOUT "portfolio\n *instance +buffers +load +arena +gap +result +ms\n.*idealloc/somas_tensors/pangu_2.6B .* best found +[0-9.]+\n.*geomean gap, total time")
memplan_cli_test(bench_matrix_csv_is_what_csv_prints EXIT 0 ARGS bench ${small} --planners naive,greedy_by_size
    --matrix-csv m.csv
  FILE m.csv FILE_REGEX "^instance,buffers,load,arena:naive,gap:naive,arena:greedy_by_size,gap:greedy_by_size,ms:naive,ms:greedy_by_size\nsmall,5,7168,8704,0.214286,[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+\n$")

# render
memplan_cli_test(render_writes_svg EXIT 0
  ARGS render ${small} ${MEMPLAN_CLI_DATA}/small_plan_valid.csv --svg heap.svg --width 800 --height 400
  STDOUT "wrote heap.svg" FILE heap.svg FILE_REGEX "^<svg [^>]*width=\"800\" height=\"400\".*<title>e: ticks \\[3, 5\\), 4096 B.*load-line.*</svg>")
memplan_cli_test(render_plans_when_no_plan_given EXIT 0 ARGS render ${small} --planner naive --svg heap.svg
  FILE heap.svg FILE_REGEX "naive: arena 8.50 KiB")
memplan_cli_test(render_draws_invalid_plan_with_warning EXIT 0
  ARGS render ${small} ${MEMPLAN_CLI_DATA}/small_plan_overlap.csv --svg heap.svg
  STDERR "warning: the plan is invalid" FILE heap.svg)

# generate
memplan_cli_test(generate_writes_problem EXIT 0 ARGS generate --shape random --buffers 50 --seed 3 --output random.csv
  STDOUT "wrote random.csv: 50 buffers" FILE random.csv FILE_REGEX "^id,lower,upper,size\n")
memplan_cli_test(generate_rejects_unknown_shape EXIT 100 ARGS generate --shape square --buffers 5 STDERR "square")

# The exact planner reports its outcome, proven bound and search statistics.
set(MEMPLAN_CLI_INSTANCE_A ${PROJECT_SOURCE_DIR}/bench/data/dsa/minimalloc/challenging/A.1048576.csv)
# The best plans known for D and J, shipped as the evidence for the upper
# bounds docs/exact.md states: each must stay valid, at its arena.
foreach(pair "D;997376 B \\(974.00 KiB\\)" "J;1003520 B \\(980.00 KiB\\)")
  list(GET pair 0 name)
  list(GET pair 1 arena)
  memplan_cli_test(validate_best_known_plan_${name} EXIT 0
    ARGS validate ${PROJECT_SOURCE_DIR}/bench/data/dsa/minimalloc/challenging/${name}.1048576.csv
         ${PROJECT_SOURCE_DIR}/bench/data/plans/minimalloc/${name}.1048576.plan.csv
    STDOUT "^valid: [0-9]+ buffers, arena ${arena}, load")
endforeach()
memplan_cli_test(plan_exact_proves_the_optimum EXIT 0 ARGS plan ${MEMPLAN_CLI_INSTANCE_A} --planner exact
  STDOUT "gap +0.00%\nexact +optimal, proven lower bound 1048576 B \\(1.00 MiB\\), [0-9]+ nodes")
memplan_cli_test(plan_exact_proves_infeasibility_with_exit_2 EXIT 2
  ARGS plan ${MEMPLAN_CLI_INSTANCE_A} --planner exact --capacity 1048575
  STDERR "memplan: proven: no plan fits in capacity 1048575 B")
# --seed: the decision searches other orderings (other node counts; seed 0
# takes 28,637 nodes here), with the same verdict.
memplan_cli_test(plan_exact_seed_searches_other_orderings EXIT 0
  ARGS plan ${MEMPLAN_CLI_INSTANCE_A} --planner exact --capacity 1048576 --seed 7
  STDOUT "exact +optimal, proven lower bound 1048576 B \\(1.00 MiB\\), 12878 nodes.*\nresult +optimal\n")
# Every run says what it ended in (text and --json).
memplan_cli_test(plan_result_optimal EXIT 0 ARGS plan ${MEMPLAN_CLI_INSTANCE_A} --planner exact
  STDOUT "\nresult +optimal\ntime")
memplan_cli_test(plan_result_optimal_in_json EXIT 0 ARGS plan ${MEMPLAN_CLI_INSTANCE_A} --planner exact --json
  STDOUT "\"lower_bound\": *1048576, *\"result\": *\"optimal\"")
memplan_cli_test(plan_result_does_not_fit EXIT 2 ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --capacity 162
  STDOUT "\nresult +does not fit\n")
memplan_cli_test(plan_result_fits EXIT 0 ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --capacity 200
  STDOUT "\nresult +fits\n")
# The band repair's windows line, when the repair ran, counts no passes (only
# the windows of large problems make them).
memplan_cli_test(plan_result_best_found_at_the_time_limit EXIT 0
  ARGS plan ${PROJECT_SOURCE_DIR}/bench/data/dsa/minimalloc/challenging/D.1048576.csv --planner exact --time-limit 1
  STDOUT "\nexact +[^\n]*\n(windows +[0-9]+ re-solved, [0-9]+ improved the plan(, every window tried)?\n)?best by +[a-z ()]+ at [0-9.]+ (ms|s) \\([0-9]+ improvements?\\)\nresult +best found \\(time limit\\)\n")
# --threads: helpers run seeded restarts beside the search; the optimum and
# its proof stay the same, and the summary names the step that found the plan.
memplan_cli_test(plan_exact_threads_keep_the_optimum EXIT 0
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --planner exact --threads 3
  STDOUT "arena +163 B.*\nexact +optimal, proven lower bound 163 B.*\nbest by +[a-z ()]+ at .*\nresult +optimal\n")
# With --capacity and threads, a SAT solver races the search (CaDiCaL builds;
# otherwise the search alone): the answers stay the same on both sides of
# the optimum.
memplan_cli_test(plan_exact_decision_with_threads_refutes_below_the_optimum EXIT 2
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --planner exact --capacity 162 -j 2
  STDOUT "exact +infeasible, proven lower bound 163 B.*
result +does not fit
")
memplan_cli_test(plan_exact_decision_with_threads_fits_at_the_optimum EXIT 0
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --planner exact --capacity 163 -j 2
  STDOUT "arena +163 B.*
result +(fits|optimal)
")
memplan_cli_test(plan_threads_out_of_range_is_a_usage_error EXIT 100
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --threads 257 STDERR "--threads: Value 257 not in range 0 to 256")
# -j 0 (the default) is one thread per hardware thread; the exact line names
# the threads when there is more than one.
memplan_cli_test(plan_exact_names_its_threads EXIT 0
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --planner exact -j 2
  STDOUT "exact +optimal, proven lower bound 163 B.*, [0-9]+ backtracks, 2 threads\n")
memplan_cli_test(plan_exact_one_thread_names_none EXIT 0
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --planner exact -j 1
  STDOUT "exact +optimal, proven lower bound 163 B.*, [0-9]+ backtracks\n")
memplan_cli_test(plan_portfolio_hands_remaining_time_to_exact EXIT 0
  ARGS plan ${MEMPLAN_CLI_INSTANCE_A} --time-limit 30
  STDOUT "planner +portfolio\n.*gap +0.00%\nexact +optimal")

# A capacity is a question: the default planner answers fits / does not fit
# (with the proof) / unknown (with the best plan found), and exit 0 / 2 / 4.
set(gap ${MEMPLAN_CLI_DATA}/gap_above_load.csv)
set(minimalloc_a ${PROJECT_SOURCE_DIR}/bench/data/dsa/minimalloc/challenging/A.1048576.csv)
memplan_cli_test(plan_capacity_the_heuristics_miss_is_decided_by_exact EXIT 0 ARGS plan ${minimalloc_a} --capacity 1MiB
  STDOUT "arena +1048576 B.*capacity +1048576 B \\(1.00 MiB\\), fits\nexact +optimal")
memplan_cli_test(plan_capacity_refuted_by_the_exact_search_exits_2 EXIT 2 ARGS plan ${gap} --capacity 162
  STDOUT "bound +163 B \\(163 B\\) proven\ncapacity +162 B \\(162 B\\), does not fit"
  STDERR "proven: no plan fits in capacity 162 B .*the exact search proved that every plan needs at least 163 B")
memplan_cli_test(plan_capacity_at_the_optimum_above_the_load_fits EXIT 0 ARGS plan ${gap} --capacity 163 --output plan.csv
  STDOUT "arena +163 B.*capacity +163 B \\(163 B\\), fits" FILE plan.csv FILE_REGEX "b11,6,13,58,[0-9]+")
memplan_cli_test(plan_heuristic_above_the_capacity_is_unknown_exits_4 EXIT 4 ARGS plan ${small} --planner naive --capacity 7K
  STDOUT "arena +8704 B \\(8.50 KiB\\) \\(best found, above the capacity\\).*capacity +7168 B \\(7.00 KiB\\), unknown"
  STDERR "unknown after .*the best plan found needs 8704 B.*a heuristic result, not a proof")
memplan_cli_test(plan_capacity_below_a_fixed_buffer_is_proven EXIT 2 ARGS plan ${MEMPLAN_CLI_DATA}/fixed_high.csv --capacity 8K
  STDERR "proven: no plan fits .*capacity 8192 B \\(8.00 KiB\\) is below the top of buffer 'pinned' \\(fixed at offset 8192, it ends at 9216 B")
# The time limit covers planning and validation; reading and writing are reported apart.
memplan_cli_test(plan_reports_planning_validation_reading_and_writing_times EXIT 0 ARGS plan ${small} --time-limit 1
  STDOUT "time +[0-9.]+ ms \\(planning [0-9.]+ ms, validation [0-9.]+ ms; reading [0-9.]+ ms, writing [0-9.]+ ms\\)")
# A user's mistake is a user error (exit 1), named, never an internal error.
foreach(planner portfolio exact naive)
  memplan_cli_test(plan_fixed_offsets_that_overlap_are_bad_input_${planner} EXIT 1
    ARGS plan ${MEMPLAN_CLI_DATA}/fixed_clash.csv --planner ${planner}
    STDERR "fixed_clash.csv:3: field 'offset': fixed offset 512 overlaps buffer \"first\" \\(line 2, also fixed\\): both hold bytes \\[512, 1024\\) at tick 2")
endforeach()

# Conventions: --version, unknown commands and planners with a suggestion,
# - for standard input and output, JSON plans read back, --json everywhere.
memplan_cli_test(version_prints_the_version EXIT 0 ARGS --version STDOUT "^memplan [0-9]+\\.[0-9]+\\.[0-9]+")
memplan_cli_test(unknown_command_suggests_the_nearest EXIT 100 ARGS plna ${small}
  STDERR "unknown command 'plna'; did you mean 'plan'\\?")
memplan_cli_test(unknown_planner_suggests_the_nearest EXIT 1 ARGS plan ${small} --planner greedy_by_siz
  STDERR "unknown planner 'greedy_by_siz'; did you mean 'greedy_by_size'\\?")
memplan_cli_test(plan_reads_stdin_and_writes_stdout EXIT 0 ARGS plan - --planner naive --output - STDIN ${small}
  STDOUT "^id,lower,upper,size,offset\na,0,2,1024,0\n")
memplan_cli_test(plan_json_fixture EXIT 0 ARGS plan ${small} --output plan.json
  WORKDIR ${CMAKE_CURRENT_BINARY_DIR}/cli/json_plans FIXTURES_SETUP json_plan)
memplan_cli_test(validate_reads_a_json_plan EXIT 0 ARGS validate ${small} plan.json --json
  WORKDIR ${CMAKE_CURRENT_BINARY_DIR}/cli/json_plans FIXTURES_REQUIRED json_plan
  STDOUT "^\\{\"valid\":true,\"buffers\":5,\"arena\":7168,\"load\":7168,\"gap\":0\\.0\\}")
memplan_cli_test(render_reads_a_json_plan EXIT 0 ARGS render ${small} plan.json --svg heap.svg
  WORKDIR ${CMAKE_CURRENT_BINARY_DIR}/cli/json_plans FIXTURES_REQUIRED json_plan FILE heap.svg FILE_REGEX "<svg")
memplan_cli_test(validate_json_reports_the_reason EXIT 1 ARGS validate ${small} ${MEMPLAN_CLI_DATA}/small_plan_overlap.csv --json
  STDOUT "\"valid\":false.*\"reason\":\".*'b'.*'e'.*tick 3")
memplan_cli_test(bound_json EXIT 0 ARGS bound ${small} --json
  STDOUT "\"buffers\":5,\"total_size\":8704,\"max_live_buffers\":3,\"load\":7168,\"load_tick\":3")
memplan_cli_test(bench_json EXIT 0 ARGS bench ${small} --planners naive,greedy_by_size --json
  STDOUT "\"planners\": \\[.*\"naive\",.*\"greedy_by_size\".*\"load\": 7168,.*\"naive\": \\{.*\"outcome\": \"valid\",.*\"arena\": 8704")
memplan_cli_test(bench_reports_a_bad_file_and_goes_on EXIT 1
  ARGS bench ${small} ${MEMPLAN_CLI_DATA}/bad_size.csv --planners naive
  STDOUT "small +5 +7168 +8704"
  STDERR "skipping .*bad_size.csv:3: field 'size'.*1 input\\(s\\) could not be read")

# User mistakes are user errors (exit 1) with the file and field, checked
# before any work starts.
memplan_cli_test(trace_info_on_a_directory_is_a_user_error EXIT 1 ARGS trace-info ${MEMPLAN_CLI_DATA}
  STDERR "data: is a directory, not a trace file")
memplan_cli_test(extract_on_a_directory_is_a_user_error EXIT 1 ARGS extract ${MEMPLAN_CLI_DATA} --iteration 1 --output x.csv
  STDERR "data: is a directory, not a trace file")
memplan_cli_test(trace_into_a_missing_folder_is_refused_first EXIT 1 ARGS trace --output no/such/dir/run.trace -- true
  STDERR "--output no/such/dir/run.trace: folder no/such/dir does not exist")
memplan_cli_test(trace_unknown_mark_signal_is_refused EXIT 1 ARGS trace --mark-signal FOO -- true
  STDERR "--mark-signal FOO: not a signal this tracer can use")
memplan_cli_test(plan_output_into_a_missing_folder_is_refused_first EXIT 1 ARGS plan ${small} --output no/such/plan.csv
  STDERR "--output no/such/plan.csv: folder no/such does not exist")
memplan_cli_test(render_output_into_a_missing_folder_is_refused_first EXIT 1 ARGS render ${small} --svg no/such/heap.svg
  STDERR "--svg no/such/heap.svg: folder no/such does not exist")
memplan_cli_test(huge_alignment_blames_the_alignment_field EXIT 1 ARGS plan ${MEMPLAN_CLI_DATA}/huge_alignment.csv
  STDERR "huge_alignment.csv:2: field 'alignment': alignment 4611686018427387904 leaves no room")
memplan_cli_test(run_unknown_planner_is_refused EXIT 1 ARGS run --planner foo -- true
  STDERR "unknown planner 'foo'")
# Ctrl-C keeps the best plan found so far (exit 130).
add_test(NAME cli_plan_sigint_writes_the_best_plan_found
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/sigint_keeps_the_best_plan.sh $<TARGET_FILE:memplan>
    ${PROJECT_SOURCE_DIR}/bench/data/dsa/minimalloc/challenging/D.1048576.csv ${CMAKE_CURRENT_BINARY_DIR}/cli/sigint)
set_tests_properties(cli_plan_sigint_writes_the_best_plan_found PROPERTIES LABELS cli TIMEOUT 300
  PASS_REGULAR_EXPRESSION "PASS: exit 130")
# Runtime knobs under `memplan run`: a bad value is reported and rejects that
# knob alone; MEMPLAN_STATS takes the usual spellings.
if(TARGET memplan_replay_preload)  # not built under the sanitizers
  add_test(NAME cli_run_bad_knob_rejects_that_knob_only COMMAND $<TARGET_FILE:memplan> run -- true)
  set_tests_properties(cli_run_bad_knob_rejects_that_knob_only PROPERTIES LABELS cli TIMEOUT 60
    ENVIRONMENT "MEMPLAN_HUGE_PAGES=maybe;MEMPLAN_STATS=yes;MEMPLAN_PLANNER=foo"
    PASS_REGULAR_EXPRESSION "MEMPLAN_HUGE_PAGES='maybe': expected 1/0.*keeps its default.*MEMPLAN_PLANNER='foo': no such planner.*memplan replay: threads [0-9]+, iterations")
endif()

# The default planner without --time-limit: the heuristics, then a short exact
# search where they leave a gap; the proof it finds is the result. With
# --time-limit 0, the heuristics alone.
memplan_cli_test(plan_default_search_proves_what_the_heuristics_leave_open EXIT 0
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv
  STDOUT "bound +163 B \\(163 B\\) proven\nexact +optimal.*\nresult +optimal\n")
memplan_cli_test(plan_time_limit_zero_keeps_the_heuristics_alone EXIT 0
  ARGS plan ${MEMPLAN_CLI_DATA}/gap_above_load.csv --time-limit 0
  STDOUT "result +best found \\(heuristics\\)\n")
memplan_cli_test(plan_default_search_budget_ending_is_named EXIT 0
  ARGS plan ${PROJECT_SOURCE_DIR}/bench/data/dsa/minimalloc/challenging/D.1048576.csv -j 1
  STDOUT "result +best found \\(default search budget\\)\n +\\(the default 1 s of exact search; --time-limit SECONDS searches longer\\)\n")
memplan_cli_test(bench_default_planner_says_what_each_run_ended_in EXIT 0
  ARGS bench ${MEMPLAN_CLI_DATA}/gap_above_load.csv --planners portfolio,naive
  STDOUT "result.*gap_above_load .* optimal ")
