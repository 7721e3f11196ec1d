# Runs `kvq mma` on one recorded tensor-core vector file set and requires its output to
# be byte-identical to the recorded hardware d. Used by tests/cli/CMakeLists.txt:
#   cmake -DKVQ=<exe> -DGZIP=<gzip> -DDIR=<data dir> -DGPU=H100 -DFMT=E4M3 -DARCH=sm_90
#         -DOUT=fp32 [-DWITH_C=1] -DSCRATCH=<dir> -P mma_replay.cmake
cmake_minimum_required(VERSION 3.20)

string(TOLOWER "${FMT}" fmt)
set(base "${DIR}/${GPU}/${FMT}")
set(args mma --arch ${ARCH} --format ${fmt} --a ${base}/a_${GPU}_${FMT}.txt.gz --b ${base}/b_${GPU}_${FMT}.txt.gz
    --gz --out-format ${OUT})
if(WITH_C)
  list(APPEND args --c ${base}/c_${GPU}_fp32.txt.gz)
endif()
file(MAKE_DIRECTORY "${SCRATCH}")
set(got "${SCRATCH}/mma_${GPU}_${FMT}_${OUT}.got.txt")
set(want "${SCRATCH}/mma_${GPU}_${FMT}_${OUT}.want.txt")
execute_process(COMMAND ${KVQ} ${args} RESULT_VARIABLE rc OUTPUT_FILE "${got}" ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kvq ${args}: exit status ${rc}\n${err}")
endif()
execute_process(COMMAND ${GZIP} -dc ${base}/d_${GPU}_${OUT}.txt.gz RESULT_VARIABLE rc OUTPUT_FILE "${want}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${GZIP} -dc ${base}/d_${GPU}_${OUT}.txt.gz failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${got}" "${want}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kvq ${args}: output differs from the recorded ${base}/d_${GPU}_${OUT}.txt.gz")
endif()
