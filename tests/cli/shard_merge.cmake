# Runs one study's --quick grid once in full and once as N shards (--shard I/N, shard 1
# in one directory and the others in another), merges the shards with
# `kvq study merge`, and checks:
#  - every shard writes exactly its partial result <study>.shard-I-of-N.json, and no CSV;
#  - the merge writes the same set of files as the single run;
#  - every CSV is byte-identical to the single run's;
#  - the JSON equals the single run's once "command", "threads" and "timing" (the fields
#    that describe how a run was made) are removed from both, and a study's own wall-time
#    record (setup.fit_seconds of the compaction study);
#  - no temporary file is left behind.
#   cmake -DKVQ=<exe> -DSTUDY=<name> -DSHARDS=<N> -DWORK=<scratch dir> -P shard_merge.cmake
cmake_minimum_required(VERSION 3.20)

file(REMOVE_RECURSE "${WORK}")

function(kvq_run what)
  execute_process(COMMAND ${KVQ} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
endfunction()

kvq_run("single run" study ${STUDY} --quick --threads 2 --out "${WORK}/single")
foreach(i RANGE 1 ${SHARDS})
  if(i EQUAL 1)
    set(dir "${WORK}/parts_a")
  else()
    set(dir "${WORK}/parts_b")
  endif()
  kvq_run("shard ${i}/${SHARDS}" study ${STUDY} --quick --threads 2 --shard ${i}/${SHARDS} --out "${dir}")
  if(NOT EXISTS "${dir}/${STUDY}.shard-${i}-of-${SHARDS}.json")
    message(FATAL_ERROR "shard ${i}/${SHARDS}: ${STUDY}.shard-${i}-of-${SHARDS}.json not written")
  endif()
endforeach()
file(GLOB stray "${WORK}/parts_a/*.csv" "${WORK}/parts_b/*.csv")
if(stray)
  message(FATAL_ERROR "a shard wrote CSV files: ${stray}")
endif()

kvq_run("merge" study merge "${WORK}/parts_a" "${WORK}/parts_b" --out "${WORK}/merged")

file(GLOB want RELATIVE "${WORK}/single" "${WORK}/single/*")
file(GLOB got RELATIVE "${WORK}/merged" "${WORK}/merged/*")
list(SORT want)
list(SORT got)
if(NOT want STREQUAL got)
  message(FATAL_ERROR "merge wrote [${got}], the single run [${want}]")
endif()
foreach(f IN LISTS want)
  if(f MATCHES "\\.csv$")
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK}/single/${f}" "${WORK}/merged/${f}"
                    RESULT_VARIABLE same)
    if(NOT same EQUAL 0)
      message(FATAL_ERROR "${f}: the merge of ${SHARDS} shards differs from the single run")
    endif()
  endif()
endforeach()

file(READ "${WORK}/single/${STUDY}.json" js)
file(READ "${WORK}/merged/${STUDY}.json" jm)
foreach(key command threads timing)
  string(JSON js REMOVE "${js}" ${key})
  string(JSON jm REMOVE "${jm}" ${key})
endforeach()
# A study's own wall-time record (compaction: setup.fit_seconds, documented as not
# deterministic) differs between runs just as "timing" does.
string(JSON has ERROR_VARIABLE no_fit TYPE "${js}" setup fit_seconds)
if(NOT no_fit)
  string(JSON js REMOVE "${js}" setup fit_seconds)
  string(JSON jm REMOVE "${jm}" setup fit_seconds)
endif()
string(JSON equal EQUAL "${js}" "${jm}")
if(NOT equal)
  message(FATAL_ERROR "${STUDY}.json of the merge differs from the single run's beyond command/threads/timing:\n"
                      "single: ${js}\nmerged: ${jm}")
endif()

file(GLOB tmp "${WORK}/*/*.tmp" "${WORK}/*/.*.tmp")
if(tmp)
  message(FATAL_ERROR "temporary files left behind: ${tmp}")
endif()
file(REMOVE_RECURSE "${WORK}")
