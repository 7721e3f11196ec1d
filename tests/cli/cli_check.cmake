# Runs the kvq command once and checks what it did. Used by tests/cli/CMakeLists.txt:
#   cmake -DKVQ=<exe> -DARGS=<;-list> [-DRC=<expected exit status>]
#         [-DSTDOUT_REGEX=<regex>] [-DSTDERR_REGEX=<regex>] [-DSTDERR_LINES=<n>]
#         [-DSTDOUT_EMPTY=1] [-DOUT_DIR=<dir that must stay empty or absent>]
#         [-DOUT_FILES=<;-list of files that must exist>] [-DOUT_ABSENT=<dir that must not be created>]
#         -P cli_check.cmake
# ARGS uses '|' instead of ';' (ctest passes -D values through the shell-free command
# line, where ';' would split them).
cmake_minimum_required(VERSION 3.20)

string(REPLACE "|" ";" args "${ARGS}")
if(DEFINED OUT_DIR)
  file(REMOVE_RECURSE "${OUT_DIR}")
endif()
if(DEFINED OUT_ABSENT)
  file(REMOVE_RECURSE "${OUT_ABSENT}")
endif()
execute_process(COMMAND ${KVQ} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)

set(where "kvq ${args}")
if(DEFINED RC AND NOT rc STREQUAL RC)
  message(FATAL_ERROR "${where}: exit status ${rc}, expected ${RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "${where}: stdout does not match '${STDOUT_REGEX}':\n${out}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "${where}: stderr does not match '${STDERR_REGEX}':\n${err}")
endif()
if(DEFINED STDOUT_EMPTY AND NOT out STREQUAL "")
  message(FATAL_ERROR "${where}: expected no stdout, got:\n${out}")
endif()
if(DEFINED STDERR_LINES)
  # Count newline characters: "one line" means exactly one terminated line.
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl n)
  string(LENGTH "${err}" len)
  if(NOT n EQUAL STDERR_LINES)
    message(FATAL_ERROR "${where}: ${n} stderr lines, expected ${STDERR_LINES}:\n${err}")
  endif()
  if(STDERR_LINES EQUAL 1 AND NOT err MATCHES "\n$")
    message(FATAL_ERROR "${where}: stderr line is not newline-terminated:\n${err}")
  endif()
endif()
if(DEFINED OUT_DIR AND EXISTS "${OUT_DIR}")
  file(GLOB left "${OUT_DIR}/*" "${OUT_DIR}/.*")
  if(left)
    message(FATAL_ERROR "${where}: bad input still wrote into ${OUT_DIR}: ${left}")
  endif()
endif()
if(DEFINED OUT_ABSENT AND EXISTS "${OUT_ABSENT}")
  message(FATAL_ERROR "${where}: bad input created ${OUT_ABSENT}")
endif()
foreach(f IN LISTS OUT_FILES)
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "${where}: expected file ${f} was not written")
  endif()
endforeach()
