# predict_tests.cmake — `memplan predict`'s own part (label cli): its help and
# its errors before any Python runs. The prediction itself is tested from
# Python (tests/python/test_predict.py, which also runs `memplan predict`).

memplan_cli_test(predict_help EXIT 0 ARGS predict --help
  STDOUT "Usage: .*predict.*--capacity.*--steps.*python3 -m memplan.predict.*meta device.*Examples:")
memplan_cli_test(predict_needs_a_command EXIT 1 ARGS predict --json
  STDERR "memplan: no command: memplan predict \\[options\\] -- python3 train.py ARGS")
memplan_cli_test(predict_needs_a_script EXIT 1 ARGS predict -- python3 -u
  STDERR "memplan: no script to predict: memplan predict -- python3 train.py ARGS")
memplan_cli_test(predict_reports_a_missing_interpreter EXIT 127 ARGS predict -- /nonexistent/python3 train.py
  STDERR "memplan: cannot run /nonexistent/python3: No such file or directory.*the prediction failed \\(status 127\\)")
