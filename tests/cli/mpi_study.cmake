# `mpirun -n RANKS kvq-mpi study STUDY --quick` against a single `kvq study STUDY --quick`
# run: every CSV byte-identical, the same set of files.
#   cmake -DKVQ=<kvq> -DKVQ_MPI=<kvq-mpi> -DMPIEXEC=<mpirun> "-DMPIEXEC_FLAGS=<;-list>" -DRANKS=<n>
#         -DSTUDY=<name> -DWORK=<scratch dir> -P mpi_study.cmake
cmake_minimum_required(VERSION 3.20)

file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND ${KVQ} study ${STUDY} --quick --threads 2 --out "${WORK}/single"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "single run: exit ${rc}\n${out}\n${err}")
endif()
execute_process(COMMAND ${MPIEXEC} ${MPIEXEC_FLAGS} -n ${RANKS} ${KVQ_MPI} study ${STUDY} --quick --threads 1
                        --out "${WORK}/mpi"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun -n ${RANKS} kvq-mpi: exit ${rc}\n${out}\n${err}")
endif()
file(GLOB want RELATIVE "${WORK}/single" "${WORK}/single/*")
file(GLOB got RELATIVE "${WORK}/mpi" "${WORK}/mpi/*")
list(SORT want)
list(SORT got)
if(NOT want STREQUAL got)
  message(FATAL_ERROR "kvq-mpi wrote [${got}], the single run [${want}]")
endif()
foreach(f IN LISTS want)
  if(f MATCHES "\\.csv$")
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK}/single/${f}" "${WORK}/mpi/${f}"
                    RESULT_VARIABLE same)
    if(NOT same EQUAL 0)
      message(FATAL_ERROR "${f}: kvq-mpi over ${RANKS} ranks differs from the single run")
    endif()
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
