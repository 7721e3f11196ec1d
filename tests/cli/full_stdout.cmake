# A command whose standard output cannot be written (/dev/full: every write fails with
# ENOSPC) exits 1 with one line on stderr instead of reporting success (the reason is
# known when the last flush fails; an earlier failed write leaves only the error flag).
#   cmake -DKVQ=<exe> -P full_stdout.cmake
cmake_minimum_required(VERSION 3.20)
if(NOT EXISTS /dev/full)
  message(STATUS "no /dev/full: nothing to check")
  return()
endif()
foreach(cmd "formats" "memory" "--version" "memory;--csv")
  execute_process(COMMAND ${KVQ} ${cmd} OUTPUT_FILE /dev/full RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "^kvq: error: cannot write the standard output(: No space left on device)?\n$")
    message(FATAL_ERROR "kvq ${cmd} > /dev/full: exit ${rc}, stderr:\n${err}")
  endif()
endforeach()
message(STATUS "every failed write to the standard output exits 1")
