# `kvq verify --dump FILE` on a target that cannot be written (/dev/full: every write fails
# with ENOSPC) is a failed run, exit 1 with one line naming it, as a failed standard
# output; a refused target (a symbolic link) stays bad input, exit 2.
#   cmake -DKVQ=<exe> -DWORK=<scratch dir> -P verify_dump_full.cmake
cmake_minimum_required(VERSION 3.20)
if(NOT EXISTS /dev/full)
  message(STATUS "no /dev/full: nothing to check")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${KVQ} verify --make-example "${WORK}/ex" --scheme nvfp4_te --rows 2 --cols 32
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "verify with: [^\n]* verify ([^\n]*)\n")
  message(FATAL_ERROR "kvq verify --make-example: exit ${rc}: ${out}${err}")
endif()
separate_arguments(args UNIX_COMMAND "${CMAKE_MATCH_1}")
execute_process(COMMAND ${KVQ} verify ${args} --dump /dev/full RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "^kvq[^\n]*: error: [^\n]*/dev/full[^\n]*No space left on device\n$")
  message(FATAL_ERROR "kvq verify --dump /dev/full: exit ${rc} (expected 1), stderr:\n${err}")
endif()
file(CREATE_LINK "${WORK}/victim" "${WORK}/link.csv" SYMBOLIC)
execute_process(COMMAND ${KVQ} verify ${args} --dump "${WORK}/link.csv" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "symbolic link" OR EXISTS "${WORK}/victim")
  message(FATAL_ERROR "kvq verify --dump <link>: exit ${rc} (expected 2), stderr:\n${err}")
endif()
message(STATUS "a failed --dump write exits 1, a refused target 2")
