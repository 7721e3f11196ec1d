# Runs one study twice, with --threads 1 and --threads 2, and checks:
#  - both runs succeed and write <study>.csv and <study>.json;
#  - every CSV is byte-identical between the two runs (thread-count invariance);
#  - the CSV header is exactly the stated column list COLUMNS ('|'-separated);
#  - the JSON carries the configuration: library version, seed, grid, setup, timing,
#    and the column list;
#  - no temporary file is left behind;
#  - stderr (a pipe) holds only plain progress lines, and nothing with --quiet.
#   cmake -DKVQ=<exe> -DSTUDY=<name> -DARGS=<'|'-list of grid options> -DCOLUMNS=<'|'-list>
#         -DWORK=<scratch dir> -P cli_outputs.cmake
cmake_minimum_required(VERSION 3.20)

string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" "," header "${COLUMNS}")
file(REMOVE_RECURSE "${WORK}")

foreach(t 1 2)
  execute_process(COMMAND ${KVQ} study ${STUDY} --quick ${args} --threads ${t} --out "${WORK}/t${t}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "kvq study ${STUDY} --threads ${t}: exit ${rc}\n${out}\n${err}")
  endif()
  # stderr is a pipe here: progress comes as plain lines "[<study>]  40%  1.2 s" (no
  # carriage return, no terminal escapes), and nothing else.
  string(ASCII 27 esc)
  if(err MATCHES "[\r${esc}]")
    message(FATAL_ERROR "kvq study ${STUDY}: terminal control characters on a piped stderr:\n${err}")
  endif()
  string(REGEX REPLACE "\\[${STUDY}\\] +[0-9]+%  [0-9]+\\.[0-9] s\n" "" rest "${err}")
  if(NOT rest STREQUAL "")
    message(FATAL_ERROR "kvq study ${STUDY}: stderr holds more than progress lines:\n${err}")
  endif()
  if(NOT err MATCHES "\\[${STUDY}\\] +[0-9]+%  ")
    message(FATAL_ERROR "kvq study ${STUDY}: no progress on a piped stderr")
  endif()
  if(t EQUAL 1)  # --quiet: no progress at all
    execute_process(COMMAND ${KVQ} study ${STUDY} --quick ${args} --threads ${t} --quiet
                    RESULT_VARIABLE qrc OUTPUT_QUIET ERROR_VARIABLE qerr)
    if(NOT qrc EQUAL 0 OR NOT qerr STREQUAL "")
      message(FATAL_ERROR "kvq study ${STUDY} --quiet: exit ${qrc}, stderr:\n${qerr}")
    endif()
  endif()
  foreach(f "${STUDY}.csv" "${STUDY}.json")
    if(NOT EXISTS "${WORK}/t${t}/${f}")
      message(FATAL_ERROR "kvq study ${STUDY} --threads ${t}: ${f} not written")
    endif()
  endforeach()
  file(GLOB tmp "${WORK}/t${t}/*.tmp" "${WORK}/t${t}/.*.tmp")
  if(tmp)
    message(FATAL_ERROR "temporary files left behind: ${tmp}")
  endif()
endforeach()

file(GLOB csvs RELATIVE "${WORK}/t1" "${WORK}/t1/*.csv")
foreach(f IN LISTS csvs)
  file(SHA256 "${WORK}/t1/${f}" h1)
  file(SHA256 "${WORK}/t2/${f}" h2)
  if(NOT h1 STREQUAL h2)
    message(FATAL_ERROR "${f} differs between --threads 1 and --threads 2")
  endif()
endforeach()

file(STRINGS "${WORK}/t1/${STUDY}.csv" lines LIMIT_COUNT 2)
list(GET lines 0 got)
if(NOT got STREQUAL header)
  message(FATAL_ERROR "${STUDY}.csv header:\n  ${got}\nexpected:\n  ${header}")
endif()
list(LENGTH lines nlines)
if(nlines LESS 2)
  message(FATAL_ERROR "${STUDY}.csv has no data rows")
endif()

file(READ "${WORK}/t1/${STUDY}.json" json)
foreach(key kvq_version seed grid setup timing wall_seconds columns)
  if(NOT json MATCHES "\"${key}\"")
    message(FATAL_ERROR "${STUDY}.json lacks \"${key}\"")
  endif()
endforeach()
if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.19)
  string(JSON v ERROR_VARIABLE jerr GET "${json}" kvq_version)
  if(jerr)
    message(FATAL_ERROR "${STUDY}.json is not valid JSON: ${jerr}")
  endif()
  string(JSON s GET "${json}" study)
  if(NOT s STREQUAL STUDY)
    message(FATAL_ERROR "${STUDY}.json names study '${s}'")
  endif()
endif()
file(REMOVE_RECURSE "${WORK}")
