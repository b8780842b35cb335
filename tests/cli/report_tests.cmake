# report_tests.cmake — CLI tests (label cli) of `memplan report`, the HTML
# report. What the page does in a browser is tested in tests/browser.
# Included after cli_tests.cmake (alphabetical), which defines memplan_cli_test and ${small}.

memplan_cli_test(help_report EXIT 0 ARGS report --help STDOUT "Usage: .*report.*--html.*Example")
memplan_cli_test(report_writes_html EXIT 0 ARGS report ${small} ${MEMPLAN_CLI_DATA}/small_plan_valid.csv --html report.html
  STDOUT "wrote report.html \\(5 buffers, 1 plan, [0-9]+ bytes\\)" FILE report.html
  FILE_REGEX "^<!DOCTYPE html>.*\"ids\":\\[\"a\",\"b\",\"c\",\"d\",\"e\"\\],\n\"lower\":\\[0,2,0,1,3\\].*\"name\":\"small_plan_valid.csv\".*</html>\n$")
memplan_cli_test(report_plans_when_no_plan_given EXIT 0 ARGS report ${small} --planner naive --html report.html
  FILE report.html FILE_REGEX "\"name\":\"naive\",\"arena\":8704,\"gap\":0.214286,\"valid\":true")
memplan_cli_test(report_compares_planners_and_plan_files EXIT 0
  ARGS report ${small} ${MEMPLAN_CLI_DATA}/small_plan_valid.csv --planner naive,greedy_by_size --html report.html
  STDOUT "3 plans" FILE report.html
  FILE_REGEX "\"name\":\"naive\".*\"name\":\"greedy_by_size\".*\"name\":\"small_plan_valid.csv\"")
memplan_cli_test(report_reads_a_json_plan EXIT 0 ARGS report ${small} plan.json --html report.html
  WORKDIR ${CMAKE_CURRENT_BINARY_DIR}/cli/json_plans FIXTURES_REQUIRED json_plan
  FILE report.html FILE_REGEX "\"name\":\"plan.json\",\"arena\":7168")
memplan_cli_test(report_reads_stdin_and_writes_stdout EXIT 0 ARGS report - --planner naive --html - STDIN ${small}
  STDOUT "^<!DOCTYPE html>.*\"title\":\"stdin\"")
memplan_cli_test(report_reads_stdin_only_once EXIT 1 ARGS report - - --html report.html STDIN ${small}
  STDERR "standard input \\('-'\\) can be read only once")
memplan_cli_test(report_draws_an_invalid_plan_with_a_warning EXIT 0
  ARGS report ${small} ${MEMPLAN_CLI_DATA}/small_plan_overlap.csv --html report.html
  STDERR "warning: plan 'small_plan_overlap.csv' is invalid" FILE report.html FILE_REGEX "\"valid\":false,\"message\":\"[^\"]+\"")
memplan_cli_test(report_reads_the_operator_column EXIT 0
  ARGS report ${PROJECT_SOURCE_DIR}/tests/browser/data/conv_block.csv --planner naive --html report.html --title "conv <block>"
  FILE report.html
  FILE_REGEX "<title>memplan report: conv &lt;block&gt;</title>.*\"operator_names\":\\[\"aten::conv2d\",\"aten::batch_norm\",.*\"operator\":\\[-1,0,0,1,")
memplan_cli_test(render_names_operators_in_tooltips EXIT 0
  ARGS render ${PROJECT_SOURCE_DIR}/tests/browser/data/conv_block.csv --planner naive --svg -
  STDOUT "<title>[^<]+ at offset [0-9]+</title>.*<title>[^<]+ at offset [0-9]+, from aten::conv2d</title>")
memplan_cli_test(report_output_into_a_missing_folder_is_refused_first EXIT 1 ARGS report ${small} --html no/such/report.html
  STDERR "--html no/such/report.html: folder no/such does not exist")
memplan_cli_test(report_unknown_planner_is_named EXIT 1 ARGS report ${small} --planner naive,nope --html report.html
  STDERR "unknown planner 'nope'")
memplan_cli_test(report_bad_problem_names_the_line EXIT 1 ARGS report ${MEMPLAN_CLI_DATA}/bad_size.csv --html report.html
  STDERR "bad_size.csv:3: field 'size'")
