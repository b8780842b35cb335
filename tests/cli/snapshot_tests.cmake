# snapshot_tests.cmake — `memplan snapshot` on the small snapshots in
# tests/cli/data (written by data/make_snapshot_fixtures.py with pickle.dumps
# of plain dicts): the report, the JSON contract, the HTML page, and one test
# per error. Included by tests/CMakeLists.txt with the other tests/cli/*.cmake.

set(snapshot_training ${MEMPLAN_CLI_DATA}/snapshot_training.pickle)
set(snapshot_oom ${MEMPLAN_CLI_DATA}/snapshot_newer_oom.pickle)

memplan_cli_test(snapshot_help EXIT 0 ARGS snapshot --help
  STDOUT "Usage: .*snapshot.*plain data.*_dump_snapshot.*Examples:")

# The report: peaks and when, live at the peak with the user's frame, the plan,
# the iterations found by repetition, the models.
memplan_cli_test(snapshot_reports_peaks_live_blocks_and_plan EXIT 0 ARGS snapshot ${snapshot_training} --device 0
  STDOUT "older format.*device 0\n  peak reserved 22.00 MiB = 9.00 MiB of live tensors \\+ 13.00 MiB cached or fragmented\n  live at the peak allocated \\(9.00 MiB\\), by source line:.*4.00 MiB +44.4% +1 +me/train.py:7 forward.*no setting tried reserves less than the caching allocator as recorded \\(22.00 MiB\\).*start +allocated 4.00 MiB, reserved 20.00 MiB.*peak allocated +9437484 B \\(9.00 MiB\\) after event 6.*peak reserved +23068672 B \\(22.00 MiB\\) after event 0.*small \\(<= 1 MiB\\) +1 +2.00 MiB.*live at the peak allocated: 4 blocks.*4.00 MiB +large .*me/train.py:7 forward.*300 B +small .*me/train.py:22 forward.*out-of-memory events: none.*load +9437696 B.*arena +9437696 B \\(9.00 MiB\\), gap 0.00%.*below peak +13.00 MiB .*: a bound, not a setting.*iterations: 3, found by repetition \\(4 allocs each\\).*caching +22.00 MiB +1.000x")
memplan_cli_test(snapshot_reports_every_device EXIT 0 ARGS snapshot ${snapshot_training} --no-simulate
  STDOUT "2 devices.*device 0.*device 1.*me/train.py:40 forward")
memplan_cli_test(snapshot_lists_iterations EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --iterations --no-simulate
  STDOUT "iteration +events +buffers +load +arena.*0 +\\[1, 13\\).*2 +\\[25, 37\\)")
memplan_cli_test(snapshot_reports_oom_and_settings EXIT 0 ARGS snapshot ${snapshot_oom}
  STDOUT "newer format.*PYTORCH_CUDA_ALLOC_CONF +max_split_size_mb:128.*out-of-memory events: 1.*request 64.00 MiB; device free 1.00 MiB; allocated 12.00 MiB, reserved 20.00 MiB.*live 12.00 MiB me/train.py:30 forward")

# The JSON contract.
memplan_cli_test(snapshot_json_contract EXIT 0 ARGS snapshot ${snapshot_training} --json
  STDOUT "\"format\": \"older\".*\"devices\": \\[.*\"device\": 0,.*\"recorded\": {.*\"peak_reserved_bytes\": 23068672,.*\"peak_allocated_bytes\": 9437484,.*\"load_bytes\": 9437696,.*\"planned\": {.*\"arena_bytes\": 9437696,.*\"iterations\": {.*\"count\": 3,.*\"found_by\": \"repetition\".*\"simulated\": {.*\"caching\": {.*\"peak_reserved_bytes\": 23068672.*\"expandable_segments\": {.*\"memplan\": {.*\"memplan_cold\": {.*\"memplan_warm\": {.*\"live_at_peak\": \\[.*\"allocated_by\": \"me/train.py:7 forward\".*\"device\": 1,")
memplan_cli_test(snapshot_json_without_models EXIT 0 ARGS snapshot ${snapshot_oom} --json --no-simulate
  STDOUT "\"format\": \"newer\".*\"ooms\": \\[.*\"requested_bytes\": 67108864")

# The HTML page: the window's plan with each buffer's frame as its operator.
memplan_cli_test(snapshot_writes_html EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --no-simulate --html window.html
  STDOUT "wrote window.html \\(device 0, 13 buffers" FILE window.html FILE_REGEX "memplan-report.*me/train.py:21 forward.*<h2>Recorded usage</h2>.*peak reserved 22.00 MiB, peak allocated 9.00 MiB.*<polyline")

# Errors: each named, exit 1, nothing run.
memplan_cli_test(snapshot_refuses_code EXIT 1 ARGS snapshot ${MEMPLAN_CLI_DATA}/snapshot_global.pickle
  STDERR "snapshot_global.pickle: offset 2: GLOBAL: refused opcode GLOBAL \\(0x63\\): it would import or call code")
memplan_cli_test(snapshot_truncated_is_an_error EXIT 1 ARGS snapshot ${MEMPLAN_CLI_DATA}/snapshot_truncated.pickle
  STDERR "snapshot_truncated.pickle: offset 2139: the pickle ends before its STOP opcode \\(truncated\\?\\)")
memplan_cli_test(snapshot_not_a_snapshot EXIT 1 ARGS snapshot ${MEMPLAN_CLI_DATA}/snapshot_not_a_snapshot.pickle
  STDERR "the top level is a list, not a dict with 'segments' and 'device_traces'")
memplan_cli_test(snapshot_csv_is_not_a_pickle EXIT 1 ARGS snapshot ${MEMPLAN_CLI_DATA}/small.csv
  STDERR "small.csv: offset 0: not a pickle of protocol 2 or later \\(snapshots begin with the PROTO opcode 0x80; this file begins with byte 0x69\\)")
memplan_cli_test(snapshot_missing_file EXIT 1 ARGS snapshot no_such_snapshot.pickle
  STDERR "no_such_snapshot.pickle: cannot open")
memplan_cli_test(snapshot_directory EXIT 1 ARGS snapshot ${MEMPLAN_CLI_DATA}
  STDERR "is a directory, not a snapshot")
memplan_cli_test(snapshot_unknown_device EXIT 1 ARGS snapshot ${snapshot_training} --device 5
  STDERR "no device 5 \\(devices: 0, 1\\)")
memplan_cli_test(snapshot_html_needs_one_device EXIT 100 ARGS snapshot ${snapshot_training} --html out.html
  STDERR "--html draws one device; name it with --device")
memplan_cli_test(snapshot_html_folder_must_exist EXIT 1 ARGS snapshot ${snapshot_training} --device 0 --html no/such/out.html
  STDERR "--html no/such/out.html: folder no/such does not exist")
memplan_cli_test(snapshot_unknown_planner EXIT 1 ARGS snapshot ${snapshot_training} --device 0 --planner nope
  STDERR "unknown planner .nope. \\(registered: portfolio")
memplan_cli_test(snapshot_html_to_stdout_alone EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --no-simulate --html -
  STDOUT "^<!DOCTYPE html>")
memplan_cli_test(snapshot_html_stdout_and_json_conflict EXIT 100 ARGS snapshot ${snapshot_training} --device 0 --json --html -
  STDERR "--html - and --json both write to standard output")

# Standard input, as every file argument takes it; the same report as the file's.
memplan_cli_test(snapshot_reads_standard_input EXIT 0 ARGS snapshot - --device 0 --no-simulate STDIN ${snapshot_training}
  STDOUT "snapshot  - \\(.*older format.*peak allocated +9437484 B \\(9.00 MiB\\) after event 6.*load +9437696 B")
# --top limits the JSON's live_at_peak too (device 0 has 4 blocks live at its peak).
memplan_cli_test(snapshot_top_limits_json_rows EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --no-simulate --json --top 1
  STDOUT "\"live_at_peak\": \\[\n +{\n +\"size_bytes\": 4194304,[^{]*}\n +\\],")
# The page draws the recorded layout beside the plan, on one time axis (ticks).
memplan_cli_test(snapshot_html_shows_the_recorded_layout EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --no-simulate --html layout.html
  FILE layout.html FILE_REGEX "recorded layout \\(addresses, untouched ranges left out\\).*memplan plan \\(portfolio\\).*<h2>Recorded usage</h2>.*the heap maps' time axis.*tick 0</text>.*tick 24</text>")
# Text and JSON name the tick of each peak event: one time base with the page.
memplan_cli_test(snapshot_peaks_name_their_tick EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --no-simulate
  STDOUT "peak allocated +9437484 B \\(9.00 MiB\\) after event 6 \\(tick 5, \\+0.000 s\\)")
memplan_cli_test(snapshot_json_peak_ticks EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --no-simulate --json
  STDOUT "\"peak_allocated_event\": 6,\n +\"peak_reserved_tick\": 0,\n +\"peak_allocated_tick\": 5,")
# An out-of-memory event: the failing request's frame, the largest free block, and whether each
# model, given the device's memory then and the failed request, runs out too (64 MiB in 21 MiB: all do).
memplan_cli_test(snapshot_oom_names_request_and_models EXIT 0 ARGS snapshot ${snapshot_oom}
  STDOUT "event 1: request 64.00 MiB.*requested by [^\n]*; largest free block then [0-9.]+ [KM]iB.*replayed with the device's memory then \\(21.00 MiB = reserved \\+ free at the first\\): caching 1 out of memory; expandable_segments 1 out of memory; memplan [0-9]+ out of memory;")

# Plans that outlive the process: the steady model's plans of the window as
# a device plan file, and the warm model starting from a file.
set(snapshot_plans ${CMAKE_CURRENT_BINARY_DIR}/cli/snapshot_training.plans)
memplan_cli_test(snapshot_saves_plans EXIT 0 ARGS snapshot ${snapshot_training} --device 0 --save-plans ${snapshot_plans}
  STDOUT "memplan_warm +10.00 MiB +0.455x +the window alone, from plans made of this window"
  STDERR "saved plans to .*snapshot_training.plans \\(1 unit, 2 variants\\)"
  FIXTURES_SETUP snapshot_plans)
memplan_cli_test(snapshot_warm_model_from_another_files_plans EXIT 0
  ARGS snapshot ${snapshot_oom} --plans ${snapshot_plans} --json
  STDOUT "\"memplan_warm\": {.*\"peak_reserved_bytes\""
  FIXTURES_REQUIRED snapshot_plans)
memplan_cli_test(snapshot_refuses_a_file_that_is_not_plans EXIT 1 ARGS snapshot ${snapshot_training} --plans ${snapshot_training}
  STDERR "snapshot_training.pickle:1: not a memplan plan file")
memplan_cli_test(snapshot_plans_need_the_models EXIT 100 ARGS snapshot ${snapshot_training} --no-simulate --save-plans x.plans
  STDERR "--plans and --save-plans need the allocator models")
