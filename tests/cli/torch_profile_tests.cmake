# torch_profile_tests.cmake — `memplan extract` on PyTorch profiler chrome
# traces (tests/torch_profiler/data, recorded by record_profile.py there).
set(MEMPLAN_TORCH_PROFILE ${PROJECT_SOURCE_DIR}/tests/torch_profiler/data/resnet18_32px_3steps.json)

memplan_cli_test(extract_profile_step_writes_operators EXIT 0
  ARGS extract ${MEMPLAN_TORCH_PROFILE} --iteration 1 --output step1.csv
  STDOUT "step +ProfilerStep#1 of .*resnet18_32px_3steps.json \\(3 steps\\): 217 memory events.*buffers +108, 1.57 MiB in all, load 208.00 KiB; 108 with an operator.*left out +0 escaping the step \\(0 B\\), 1 allocated before it"
  FILE step1.csv FILE_REGEX "^id,lower,upper,size,alignment,operator\n0,0,[0-9]+,[0-9]+,16,aten::[a-z_]+\n")
memplan_cli_test(extract_profile_defaults_to_the_first_step EXIT 0
  ARGS extract ${MEMPLAN_TORCH_PROFILE} --output -
  STDERR "step +ProfilerStep#0 of"
  STDOUT "^id,lower,upper,size,alignment,operator\n")
# From standard input: the same step as from the file, the source named <stdin>.
memplan_cli_test(extract_profile_from_stdin EXIT 0
  ARGS extract - --iteration 1 --output - STDIN ${MEMPLAN_TORCH_PROFILE}
  STDERR "step +ProfilerStep#1 of <stdin> \\(3 steps\\): 217 memory events.*buffers +108, 1.57 MiB in all"
  STDOUT "^id,lower,upper,size,alignment,operator\n0,0,[0-9]+,[0-9]+,16,aten::[a-z_]+\n")
memplan_cli_test(extract_profile_min_size_leaves_small_buffers_out EXIT 0
  ARGS extract ${MEMPLAN_TORCH_PROFILE} --iteration 2 --min-size 4K --output step2.csv
  STDOUT "below --min-size")
memplan_cli_test(extract_profile_unknown_step_is_a_user_error EXIT 1
  ARGS extract ${MEMPLAN_TORCH_PROFILE} --iteration 7 --output x.csv
  STDERR "no ProfilerStep#7 in the profile \\(steps 0 to 2\\)")
memplan_cli_test(extract_profile_damaged_event_names_index_and_field EXIT 1
  ARGS extract ${MEMPLAN_CLI_DATA}/profile_bad_bytes.json --output x.csv
  STDERR "profile_bad_bytes.json: traceEvents\\[0\\]: field 'args.Bytes'")
# The operator column reaches the HTML report.
set(MEMPLAN_PROFILE_REPORT_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli/profile_report)
memplan_cli_test(extract_profile_for_report EXIT 0 WORKDIR ${MEMPLAN_PROFILE_REPORT_DIR}
  ARGS extract ${MEMPLAN_TORCH_PROFILE} --iteration 0 --output step0.csv
  FIXTURES_SETUP profile_step0)
memplan_cli_test(report_shows_profile_operators EXIT 0 WORKDIR ${MEMPLAN_PROFILE_REPORT_DIR}
  ARGS report step0.csv --html step0.html FIXTURES_REQUIRED profile_step0
  FILE step0.html FILE_REGEX "\"operator_names\":\\[\"aten::empty\",\"aten::mkldnn_convolution\"")
