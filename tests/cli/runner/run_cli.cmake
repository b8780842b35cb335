# run_cli.cmake — runs one `memplan` command for a CLI test and checks its exit
# status, stdout, stderr and (optionally) a file it writes. Called by CTest as
#   cmake -DMEMPLAN=<binary> -DARGS=<args separated by |> -DWORKDIR=<dir>
#         -DEXPECT_EXIT=<code> [-DSTDOUT_REGEX=..] [-DSTDERR_REGEX=..]
#         [-DOUTPUT_FILE=<path> -DFILE_REGEX=..] [-DSTDIN_FILE=<path>] [-DMAX_COLUMNS=<n>] -P run_cli.cmake
# MAX_COLUMNS: no line of stdout may be longer (a table meant for a terminal).
# A plain CTest test can only tell zero from non-zero; the CLI promises
# specific codes (exit_codes.h), so each test checks the exact one.
string(REPLACE "|" ";" arguments "${ARGS}")
file(MAKE_DIRECTORY "${WORKDIR}")
if(DEFINED OUTPUT_FILE)
  file(REMOVE "${WORKDIR}/${OUTPUT_FILE}")
endif()
set(stdin_option)
if(DEFINED STDIN_FILE)
  set(stdin_option INPUT_FILE "${STDIN_FILE}")
endif()
execute_process(COMMAND "${MEMPLAN}" ${arguments}
                WORKING_DIRECTORY "${WORKDIR}" ${stdin_option}
                RESULT_VARIABLE exit_code OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(JOIN " " command_line ${arguments})
set(report "command: memplan ${command_line}\nexit status: ${exit_code}\n--- stdout ---\n${out}\n--- stderr ---\n${err}")
if(NOT exit_code STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "expected exit status ${EXPECT_EXIT}\n${report}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_REGEX}'\n${report}")
endif()
if(DEFINED MAX_COLUMNS)
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    string(LENGTH "${line}" columns)
    if(columns GREATER MAX_COLUMNS)
      message(FATAL_ERROR "a line of stdout has ${columns} columns, more than ${MAX_COLUMNS}: '${line}'\n${report}")
    endif()
  endforeach()
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}'\n${report}")
endif()
if(DEFINED OUTPUT_FILE)
  if(NOT EXISTS "${WORKDIR}/${OUTPUT_FILE}")
    message(FATAL_ERROR "${OUTPUT_FILE} was not written\n${report}")
  endif()
  file(READ "${WORKDIR}/${OUTPUT_FILE}" content)
  if(DEFINED FILE_REGEX AND NOT content MATCHES "${FILE_REGEX}")
    message(FATAL_ERROR "${OUTPUT_FILE} does not match '${FILE_REGEX}'\n${report}")
  endif()
endif()
