# The citations study's gap and verdict against scripts/citations_verdict.py, which
# recomputes them from the CSV's counts (its own port of the paired interval): run a small
# grid with contexts beyond 32k and require the script's --check to pass.
#   cmake -DKVQ=<exe> -DPYTHON=<python3> -DSCRIPT=<citations_verdict.py> -DWORK=<dir> -P citations_verdict.cmake
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND ${KVQ} study citations --contexts 4096,40000,50000 --seeds 2 --queries 64
                        --schemes fp8_e4m3,nvfp4_te,bf16 --threads 2 --out "${WORK}"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kvq study citations: exit ${rc}\n${err}")
endif()
execute_process(COMMAND ${PYTHON} ${SCRIPT} "${WORK}" --check RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "check: the study's gap, interval, verdict and power columns agree")
  message(FATAL_ERROR "citations_verdict.py --check: exit ${rc}\n${out}\n${err}")
endif()
