# kvq-mpi with one rank whose command line is bad, or differs from rank 0's (mpirun's
# "A : B" form): every rank exits 2 within the time limit (it used to hang, the bad rank
# silent), kvq-mpi prints one line naming the rank and the problem, and --out is not
# created. A failed write of the standard output exits 1, as in kvq.
#   cmake -DKVQ_MPI=<exe> -DMPIEXEC=<mpirun> -DMPIEXEC_FLAGS=<;-list> -DWORK=<dir> -P mpi_bad_rank.cmake
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ok study outliers --quick --contexts 1k --schemes bf16 --threads 1 --quiet --out "${WORK}/out")
set(failures "")
# expect_two(<stderr regex> <rank 0's args> <rank 1's args>): the ";:;" splits them.
function(expect_two regex)
  set(all ${ARGN})
  list(FIND all ":" at)
  list(SUBLIST all 0 ${at} a)
  math(EXPR from "${at} + 1")
  list(SUBLIST all ${from} -1 b)
  execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 1 ${KVQ_MPI} ${a} : -n 1 ${KVQ_MPI} ${b}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  string(REGEX MATCHALL "kvq-mpi[^\n]*\n" ours "${err}")
  list(LENGTH ours n)
  if(NOT rc STREQUAL "2" OR NOT n EQUAL 1 OR NOT err MATCHES "${regex}" OR EXISTS "${WORK}/out")
    string(REPLACE ";" " " shown "${a} : ${b}")
    set(failures "${failures}\n  ${shown}: exit ${rc} (expected 2), ${n} kvq-mpi lines (expected 1 matching '${regex}'), --out ${WORK}/out exists: ${out}${err}" PARENT_SCOPE)
  endif()
endfunction()

expect_two("kvq-mpi: rank 1: --contexts: 1 is not a valid context length" ${ok} : study outliers --quick --contexts 1 --out "${WORK}/out")
expect_two("kvq-mpi: unknown study 'nonesuch'" study nonesuch --out "${WORK}/out" : ${ok})
expect_two("kvq-mpi: rank 1: its command line differs from rank 0's" ${ok} : --help)
expect_two("kvq-mpi: rank 1: its command line differs from rank 0's" ${ok} : ${ok} --seed 2)

# Rank 0's standard output is /dev/full: exit 1, one line.
if(EXISTS /dev/full)
  find_program(SH sh REQUIRED)
  string(REPLACE ";" " " okcmd "${ok}")
  execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n 2 ${SH} -c "exec '${KVQ_MPI}' ${okcmd} > /dev/full"
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET TIMEOUT 60)
  if(NOT rc STREQUAL "1" OR NOT err MATCHES "kvq-mpi: error: cannot write the standard output")
    set(failures "${failures}\n  standard output /dev/full: exit ${rc} (expected 1): ${err}")
  endif()
endif()
if(failures)
  message(FATAL_ERROR "kvq-mpi:${failures}")
endif()
message(STATUS "a bad or differing rank stops every rank with exit 2 and one line; a lost stdout exits 1")
