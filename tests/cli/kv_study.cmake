# `kvq study outliers --quick --kv FILE` on the captured-KV test files (tests/data/kv):
#  - it runs and writes outliers.csv / outliers.json; the grid is the captured one
#    (context 16, head_dim 32, queries 2 = the --quick count, fewer than the 16 tokens);
#  - the JSON setup records the input (file, layer, head, GQA K/V head, shapes, dtype)
#    and echoes the safetensors __metadata__ ("model": "synthetic-test");
#  - layer 0 / head 0 holds the same values in every file (make_kv_files.py), so the
#    CSVs from .safetensors (F32, F16, BF16), .npz (stored, deflated) and .npy are
#    byte-identical; another head gives another CSV.
#  - by default the run is the model's own attention: causal, the last 2 captured
#    positions (14, 15) as queries, no treatment (magnitudes fixed at 0, every row m = 0),
#    all recorded in setup.kv_input; --non-causal and --kv-treatments (the query zeroing
#    alone, at --magnitudes 0) each change the CSV, and are recorded.
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

# The defaults: causal, the last rows, nothing injected.
file(READ "${WORK}/st/outliers.json" js)
foreach(re "\"causal\": true" "\"query_rows\": \\[[ \n]*14,[ \n]*15[ \n]*\\]" "\"treatments\": \\[\\]"
           "the last 2 captured queries \\(positions 14 to 15\\); causal attention" "\"outlier_model\": \"none injected")
  if(NOT js MATCHES "${re}")
    message(FATAL_ERROR "--kv defaults: outliers.json does not match ${re}:\n${js}")
  endif()
endforeach()
if(NOT stdout_st MATCHES "grid: [^\n]*magnitudes=0 ")
  message(FATAL_ERROR "--kv without --kv-treatments: magnitudes are not fixed at 0:\n${stdout_st}")
endif()
string(REGEX MATCHALL "\n[a-z0-9_]+,0,16," m0 "${csv}")
list(LENGTH m0 n_m0)
if(NOT n_m0 EQUAL ndata)
  message(FATAL_ERROR "--kv without --kv-treatments: a row with a magnitude other than 0:\n${csv}")
endif()

# --non-causal: every query sees all 16 keys, so the numbers change; recorded.
run_kv(nc small.safetensors --non-causal)
file(SHA256 "${WORK}/nc/outliers.csv" got)
if(got STREQUAL want)
  message(FATAL_ERROR "--non-causal gives the same outliers.csv as the causal default")
endif()
file(READ "${WORK}/nc/outliers.json" js)
if(NOT js MATCHES "\"causal\": false" OR NOT js MATCHES "attention over all keys \\(--non-causal\\)")
  message(FATAL_ERROR "--non-causal: outliers.json does not record it:\n${js}")
endif()

# --kv-treatments at --magnitudes 0: only the query zeroing, which changes the CSV (the
# default keeps the model's queries); with 0,100 the outliers too. Both recorded.
run_kv(tr0 small.safetensors --kv-treatments --magnitudes 0)
file(SHA256 "${WORK}/tr0/outliers.csv" got)
if(got STREQUAL want)
  message(FATAL_ERROR "--kv-treatments --magnitudes 0 gives the same outliers.csv as the default (queries not zeroed)")
endif()
run_kv(tr small.safetensors --kv-treatments --magnitudes 0,100)
file(READ "${WORK}/tr/outliers.json" js)
if(NOT js MATCHES "\"treatments\": \\[[ \n]*\"key channel outliers " OR
   NOT js MATCHES "\"queries zeroed on outlier_channels\"" OR NOT js MATCHES "\"causal\": true")
  message(FATAL_ERROR "--kv-treatments: outliers.json does not record the treatments:\n${js}")
endif()
file(READ "${WORK}/tr/outliers.csv" csv_tr)
if(NOT csv_tr MATCHES "\n[a-z0-9_]+,100,16,")
  message(FATAL_ERROR "--kv-treatments --magnitudes 0,100: no row at m = 100:\n${csv_tr}")
endif()
message(STATUS "kvq study outliers --kv: runs on every format, same values give the same bits; causal, last rows, "
               "treatments only when asked, all recorded")
