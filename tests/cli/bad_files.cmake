# Input paths that are not regular files: a directory, a FIFO (made here with mkfifo;
# opening one for reading blocks until a writer appears, so a reader that opened it
# would hang this test until its timeout) and /dev/zero (endless). Every reader of the
# kvq command refuses each with exit status 2 and one line on stderr naming the path and
# what it is; nothing is written. Empty paths and a seed with a sign are refused too.
#   cmake -DKVQ=<exe> -DWORK=<scratch dir> -P bad_files.cmake
cmake_minimum_required(VERSION 3.20)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/dir")
find_program(MKFIFO mkfifo REQUIRED)
execute_process(COMMAND ${MKFIFO} "${WORK}/fifo" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mkfifo ${WORK}/fifo failed")
endif()
# A valid example to pair each bad path with.
execute_process(COMMAND ${KVQ} verify --make-example "${WORK}/ex" --scheme e4m3 --rows 2 --cols 16
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kvq verify --make-example: exit ${rc}: ${err}")
endif()
# A directory named like a partial result, for `kvq study merge`.
file(MAKE_DIRECTORY "${WORK}/merge/citations.shard-1-of-1.json")

set(failures "")
function(expect_refused regex)
  execute_process(COMMAND ${KVQ} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  string(REPLACE ";" " " shown "${ARGN}")
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl lines)
  if(NOT rc STREQUAL "2" OR NOT lines EQUAL 1 OR NOT err MATCHES "${regex}")
    set(failures "${failures}\n  kvq ${shown}: exit ${rc}, ${lines} stderr lines, expected 2 / 1 / '${regex}': ${err}"
        PARENT_SCOPE)
  endif()
endfunction()

set(ok_in "${WORK}/ex/input.npy")
set(ok_codes "${WORK}/ex/codes.npy")
foreach(bad "dir;is a directory" "fifo;is a FIFO \\(named pipe\\)" "/dev/zero;is a character device")
  list(GET bad 0 name)
  list(GET bad 1 what)
  if(name STREQUAL "/dev/zero")
    if(NOT EXISTS /dev/zero)
      continue()
    endif()
    set(path /dev/zero)
  else()
    set(path "${WORK}/${name}")
  endif()
  expect_refused("--input '${path}' ${what}, not a regular file" verify --scheme e4m3 --input "${path}" --codes "${ok_codes}")
  expect_refused("--codes '${path}' ${what}, not a regular file" verify --scheme e4m3 --input "${ok_in}" --codes "${path}")
  expect_refused("${path} ${what}, not a regular file" mma --arch sm_90 --format bf16 --a "${path}" --b "${ok_in}")
endforeach()
expect_refused("merge: .*citations.shard-1-of-1.json is a directory, not a regular file" study merge "${WORK}/merge")
# An empty path is a wrong value, not a missing option (execute_process drops empty
# arguments, so they are written --name=, which the verifier reads as an empty value).
expect_refused("--make-example: empty path" verify --make-example=)
expect_refused("--input: empty path" verify --scheme e4m3 --input= --codes "${ok_codes}")
expect_refused("--codes: empty path" verify --scheme e4m3 --input "${ok_in}" --codes=)
# A seed with a leading space and a sign (strtoull would read 2^64 - 1).
expect_refused("--seed must be an integer in \\[0, 18446744073709551615\\], got ' -1'"
               verify --make-example "${WORK}/seed" --seed " -1")
if(EXISTS "${WORK}/seed")
  set(failures "${failures}\n  kvq verify --make-example with a bad seed created its directory")
endif()

if(failures)
  message(FATAL_ERROR "inputs that are not regular files were not refused:${failures}")
endif()
message(STATUS "directories, FIFOs and /dev/zero are refused by every reader")
