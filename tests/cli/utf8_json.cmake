# Every file kvq writes is valid: with invalid UTF-8 bytes in the arguments (the --out
# path and a grid value, both echoed into the JSON), <study>.json still decodes as strict
# UTF-8 and parses as JSON (Python's json module and UTF-8 codec are the oracle), the
# bytes replaced by U+FFFD.
#   cmake -DKVQ=<exe> -DPYTHON=<python3> -DWORK=<scratch dir> -P utf8_json.cmake
cmake_minimum_required(VERSION 3.20)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
string(ASCII 255 ff)
string(ASCII 192 c0)
set(dir "${WORK}/out${ff}${c0}dir")
execute_process(COMMAND ${KVQ} study outliers --quick --quiet --schemes bf16 --contexts 256 --queries 1
                        --magnitudes "0,1${ff}" --out "${dir}"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
# A grid value with a stray byte is a usage error: one line, nothing written.
if(NOT rc EQUAL 2 OR EXISTS "${dir}")
  message(FATAL_ERROR "bad --magnitudes: exit ${rc}, expected 2 with nothing written: ${err}")
endif()
execute_process(COMMAND ${KVQ} study outliers --quick --quiet --schemes bf16 --contexts 256 --queries 1 --out "${dir}"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kvq study outliers --out <invalid UTF-8>: exit ${rc}: ${err}")
endif()
file(GLOB jsons "${WORK}/*/outliers.json")
list(LENGTH jsons n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one outliers.json under ${WORK}, found ${n}")
endif()
execute_process(COMMAND ${PYTHON} -c
  "import json,sys; t=open(sys.argv[1],'rb').read().decode('utf-8'); j=json.loads(t); assert '\\ufffd' in j['command'], j['command']"
  ${jsons} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "outliers.json is not valid UTF-8 JSON with the bytes replaced: ${err}")
endif()
message(STATUS "the JSON of a run with invalid UTF-8 arguments is valid UTF-8 JSON")
