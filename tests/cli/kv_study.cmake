# `kvq study outliers --quick --kv FILE` on the captured-KV test files (tests/data/kv):
#  - it runs and writes outliers.csv / outliers.json; the grid is the captured one
#    (context 16, head_dim 32, queries 2 = the --quick count, fewer than the 16 tokens);
#  - the JSON setup records the input (file, layer, head, GQA K/V head, shapes, dtype)
#    and echoes the safetensors __metadata__ ("model": "synthetic-test");
#  - layer 0 / head 0 holds the same values in every file (make_kv_files.py), so the
#    CSVs from .safetensors (F32, F16, BF16), .npz (stored, deflated) and .npy are
#    byte-identical; another head gives another CSV.
#   cmake -DKVQ=<exe> -DDATA=<tests/data/kv> -DWORK=<scratch> -P kv_study.cmake
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK}")

function(run_kv name file)
  execute_process(COMMAND ${KVQ} study outliers --quick --threads 2 --kv ${DATA}/${file} ${ARGN} --out ${WORK}/${name}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "kvq study outliers --kv ${file} ${ARGN}: exit ${rc}\n${out}\n${err}")
  endif()
  if(NOT EXISTS "${WORK}/${name}/outliers.csv" OR NOT EXISTS "${WORK}/${name}/outliers.json")
    message(FATAL_ERROR "--kv ${file}: outliers.csv/json not written\n${out}")
  endif()
  set(stdout_${name} "${out}" PARENT_SCOPE)
endfunction()

run_kv(st small.safetensors)
if(NOT stdout_st MATCHES "grid: [^\n]*contexts=16 [^\n]*head-dim=32 queries=2")
  message(FATAL_ERROR "--kv: the grid is not the captured one:\n${stdout_st}")
endif()
file(READ "${WORK}/st/outliers.csv" csv)
string(REGEX MATCHALL "\n[a-z0-9_]+,[0-9.e+]+,16,[0-9.]+,2," rows "${csv}")
list(LENGTH rows nrows)
string(REGEX MATCHALL "\n" lines "${csv}")
list(LENGTH lines nlines)
math(EXPR ndata "${nlines} - 1")
if(nrows EQUAL 0 OR NOT nrows EQUAL ndata)
  message(FATAL_ERROR "--kv: expected every row at context 16 with 2 queries (${nrows} of ${nlines} lines):\n${csv}")
endif()
file(READ "${WORK}/st/outliers.json" js)
foreach(key "\"kv_input\"" "\"format\": \"safetensors\"" "\"layer\": 0" "\"q_heads\": 2" "\"kv_heads\": 1"
            "\"tokens\": 16" "\"head_dim\": 32" "\"queries_used\": 2" "\"model\": \"synthetic-test\"" "captured: layer 0")
  string(FIND "${js}" "${key}" at)
  if(at LESS 0)
    message(FATAL_ERROR "--kv: outliers.json has no ${key}")
  endif()
endforeach()

run_kv(f16 small_f16.safetensors)
run_kv(bf16 small_bf16.safetensors)
run_kv(npz small.npz)
run_kv(npzc small_compressed.npz)
run_kv(npy small.npy)
file(SHA256 "${WORK}/st/outliers.csv" want)
foreach(n f16 bf16 npz npzc npy)
  file(SHA256 "${WORK}/${n}/outliers.csv" got)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "--kv: ${n} gives another outliers.csv than small.safetensors for the same values")
  endif()
endforeach()
run_kv(head1 small.safetensors --kv-head 1 --kv-layer 1)
file(SHA256 "${WORK}/head1/outliers.csv" other)
if(other STREQUAL want)
  message(FATAL_ERROR "--kv: layer 1 head 1 gives the same CSV as layer 0 head 0 (the file is not read)")
endif()
run_kv(pre small.safetensors --kv-rope pre)
message(STATUS "kvq study outliers --kv: runs on every format, same values give the same bits")
