# Bad input to `kvq study merge`: shards that do not make one run. Each case must exit
# with status 2, print exactly one line on stderr naming the problem, and write nothing
# (no <study>.csv/.json in the output directory, which must not even be created).
#   cmake -DKVQ=<exe> -DWORK=<scratch dir> -P shard_bad.cmake
cmake_minimum_required(VERSION 3.20)

file(REMOVE_RECURSE "${WORK}")
set(S citations)
set(grid --quick --threads 2 --contexts 256 --queries 8 --seeds 2)

function(shard dir spec)
  execute_process(COMMAND ${KVQ} study ${S} ${grid} --shard ${spec} --out "${WORK}/${dir}" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "shard ${spec} into ${dir}: exit ${rc}\n${out}\n${err}")
  endif()
endfunction()

# bad_merge(<case> <stderr regex> DIR...)
function(bad_merge name regex)
  set(dirs)
  foreach(d IN LISTS ARGN)
    list(APPEND dirs "${WORK}/${d}")
  endforeach()
  execute_process(COMMAND ${KVQ} study merge ${dirs} --out "${WORK}/out_${name}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "${name}: exit ${rc}, expected 2\n${out}\n${err}")
  endif()
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl lines)
  if(NOT lines EQUAL 1)
    message(FATAL_ERROR "${name}: ${lines} lines on stderr, expected 1:\n${err}")
  endif()
  if(NOT err MATCHES "${regex}")
    message(FATAL_ERROR "${name}: stderr does not match '${regex}':\n${err}")
  endif()
  if(EXISTS "${WORK}/out_${name}")
    message(FATAL_ERROR "${name}: the merge created its output directory")
  endif()
  foreach(d IN LISTS dirs)
    if(EXISTS "${d}/${S}.csv" OR EXISTS "${d}/${S}.json")
      message(FATAL_ERROR "${name}: the merge wrote into ${d}")
    endif()
  endforeach()
endfunction()

shard(one_of_two 1/2)                     # shard 2/2 missing
shard(two_of_two 2/2)
shard(other_seed 2/2 --seed 7)
shard(other_grid 2/2 --contexts 512)
shard(one_of_three 1/3)
shard(one_of_two_again 1/2)
file(MAKE_DIRECTORY "${WORK}/empty")

bad_merge(missing "shard 2/2 of study citations is missing" one_of_two)
bad_merge(duplicate "shard 1/2 of study citations given twice" one_of_two one_of_two_again two_of_two)
bad_merge(seed "are from different seeds" one_of_two other_seed)
bad_merge(grid "are from different grids" one_of_two other_grid)
bad_merge(count "into different shard counts" one_of_two two_of_two one_of_three)
bad_merge(empty "no partial results .* in '.*empty'" empty)
bad_merge(no_dir "'.*nonexistent' is not a directory" nonexistent)

# Another library version: the same shard, relabelled.
file(MAKE_DIRECTORY "${WORK}/other_version")
file(READ "${WORK}/two_of_two/${S}.shard-2-of-2.json" j)
string(JSON j SET "${j}" kvq_version "\"0.0.0\"")
file(WRITE "${WORK}/other_version/${S}.shard-2-of-2.json" "${j}")
bad_merge(version "are from different library versions" one_of_two other_version)

# A shard file holding a task another shard owns (overlap): shard 2/2 claims task 0.
file(MAKE_DIRECTORY "${WORK}/overlap")
file(READ "${WORK}/two_of_two/${S}.shard-2-of-2.json" j)
string(JSON slot GET "${j}" calls 0 results 0 1)
string(JSON j SET "${j}" calls 0 results 0 "[0, ${slot}]")
file(WRITE "${WORK}/overlap/${S}.shard-2-of-2.json" "${j}")
bad_merge(overlap "holds task 0 of phase 1, which is not its own" one_of_two overlap)

# The good merge of the same files works (the cases above fail for their stated reason).
execute_process(COMMAND ${KVQ} study merge "${WORK}/one_of_two" "${WORK}/two_of_two" --out "${WORK}/good"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS "${WORK}/good/${S}.csv")
  message(FATAL_ERROR "good merge: exit ${rc}\n${out}\n${err}")
endif()
file(REMOVE_RECURSE "${WORK}")
