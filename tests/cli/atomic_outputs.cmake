# The study's output set goes through the one atomic writer (kvq/core/atomic_file.hpp):
#  - a symbolic link planted at <study>.csv is refused (exit 2, one line naming the link),
#    the link and its target are left alone, and no file of the set is written;
#  - with the link gone the set is written and no temporary file is left behind.
#   cmake -DKVQ=<exe> -DWORK=<scratch dir> -P atomic_outputs.cmake
cmake_minimum_required(VERSION 3.20)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/out")
file(WRITE "${WORK}/victim" "victim")
file(CREATE_LINK "${WORK}/victim" "${WORK}/out/outliers.csv" SYMBOLIC)
set(run ${KVQ} study outliers --quick --contexts 1k --schemes bf16 --threads 2 --quiet --out "${WORK}/out")
execute_process(COMMAND ${run} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "^kvq: [^\n]*outliers\\.csv'[^\n]*symbolic link[^\n]*\n$")
  message(FATAL_ERROR "a link at outliers.csv: exit ${rc}, stderr:\n${err}")
endif()
file(READ "${WORK}/victim" v)
if(NOT v STREQUAL "victim" OR NOT IS_SYMLINK "${WORK}/out/outliers.csv")
  message(FATAL_ERROR "the planted link or its target was changed")
endif()
if(EXISTS "${WORK}/out/outliers.json")
  message(FATAL_ERROR "outliers.json was written although outliers.csv was refused")
endif()
file(GLOB tmp "${WORK}/out/*.tmp" "${WORK}/out/.*.tmp")
if(tmp)
  message(FATAL_ERROR "temporary files left behind: ${tmp}")
endif()

file(REMOVE "${WORK}/out/outliers.csv")
execute_process(COMMAND ${run} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS "${WORK}/out/outliers.csv" OR NOT EXISTS "${WORK}/out/outliers.json")
  message(FATAL_ERROR "kvq study outliers: exit ${rc}\n${err}")
endif()
file(GLOB tmp "${WORK}/out/*.tmp" "${WORK}/out/.*.tmp")
if(tmp)
  message(FATAL_ERROR "temporary files left behind: ${tmp}")
endif()
message(STATUS "links refused, sets complete, no temporary files")
