# A study run on a captured-KV file writes its JSON setup with the input it read:
# runs `kvq ARGS... --out WORK`, checks stdout against GRID (the captured grid) and that
# WORK/STUDY.json contains every string of KEYS.
#   cmake -DKVQ=<exe> "-DARGS=<|-list>" -DSTUDY=<name> -DWORK=<dir> "-DGRID=<regex>" "-DKEYS=<|-list>" -P kv_setup.cmake
cmake_minimum_required(VERSION 3.20)
string(REPLACE "|" ";" ARGS "${ARGS}")
string(REPLACE "|" ";" KEYS "${KEYS}")
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND ${KVQ} ${ARGS} --out ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kvq ${ARGS}: exit ${rc}\n${out}\n${err}")
endif()
if(NOT out MATCHES "${GRID}")
  message(FATAL_ERROR "kvq ${ARGS}: the grid is not the captured one ('${GRID}'):\n${out}")
endif()
file(READ "${WORK}/${STUDY}.json" js)
foreach(key IN LISTS KEYS)
  string(FIND "${js}" "${key}" at)
  if(at LESS 0)
    message(FATAL_ERROR "kvq ${ARGS}: ${STUDY}.json has no ${key}")
  endif()
endforeach()
